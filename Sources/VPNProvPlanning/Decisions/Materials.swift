import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

// The bridge between the PKI/state layer and the renderers: every secret and certificate the
// output needs, resolved for one run. Renderers are pure functions of (Inventory, Materials).

/// Secret and certified material for one node.
package struct NodeMaterials: Sendable, Hashable {
    package var certificatePEM: String
    package var privateKeyPEM: String
    /// The node's PSK when it offers a PSK service (resolved from gen/env/file/literal).
    package var psk: String?
    /// With `accounts: radius`: the node's RADIUS shared secret and its Disconnect-Request listener's.
    package var radiusSecret: String?
    package var daeSecret: String?
    /// With `accounts.protection: ipsec`: the IKE pre-shared key of its connections to the RADIUS servers.
    package var radiusIPsecSecret: String?
    /// With `accounts: radius`: the secret between the node's charon and its local RADIUS relay (loopback).
    package var radiusRelaySecret: String?
    package init(
        certificatePEM: String, privateKeyPEM: String, psk: String?, radiusSecret: String? = nil,
        daeSecret: String? = nil, radiusIPsecSecret: String? = nil, radiusRelaySecret: String? = nil
    ) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.psk = psk
        self.radiusSecret = radiusSecret
        self.daeSecret = daeSecret
        self.radiusIPsecSecret = radiusIPsecSecret
        self.radiusRelaySecret = radiusRelaySecret
    }
}

/// Secret and certified material for one (non-revoked) user.
package struct UserMaterials: Sendable, Hashable {
    /// EAP/XAuth password when a service of the user's nodes needs one.
    package var password: String?
    package var certificatePEM: String?
    package var privateKeyPEM: String?
    /// PKCS#12 (PBE-SHA1-3DES, SHA-1 MAC) holding key, certificate and CA; stored in the state so
    /// its bytes are stable across runs.
    package var p12: [UInt8]?
    package var p12Password: String?
    package var keyType: KeyType?
    /// The same key and certificate with the empty password (same algorithms), embedded in the
    /// Android `.sswan` profiles: the Android certificate installer tries the empty password before
    /// it asks, so importing needs no typing. Never given to Apple devices.
    package var openP12: [UInt8]?
    /// The user's post-quantum preshared key (RFC 8784) when the user reaches a node with `quantum_safe.ppk`.
    package var ppk: String?
    package init(
        password: String?, certificatePEM: String? = nil, privateKeyPEM: String? = nil, p12: [UInt8]? = nil,
        p12Password: String? = nil, keyType: KeyType? = nil, openP12: [UInt8]? = nil
    ) {
        self.openP12 = openP12
        self.password = password
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.p12 = p12
        self.p12Password = p12Password
        self.keyType = keyType
    }
}

/// The identity that signs Apple profiles, as read for this run (PEM text).
package struct ProfileSigner: Sendable, Hashable {
    package var certificatePEM: String
    package var keyPEM: String
    /// Intermediate certificates (PEM, possibly several), "" when none.
    package var chainPEM: String
    /// The key's signatures differ from one signing to the next (ECDSA with a random nonce, as in
    /// OpenSSL 3.0): an unchanged profile already in the tree is then kept rather than re-signed.
    package var randomizedSignatures = false
    package init(certificatePEM: String, keyPEM: String, chainPEM: String) {
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
        self.chainPEM = chainPEM
    }
}

/// What servers need during the overlap of a CA rotation (see PKISession+Rotation).
package struct RotationMaterials: Sendable, Hashable {
    /// The previous CA: still the servers' trust root, so profiles that pin it keep working.
    package var previousCACertificatePEM: String
    /// The new CA's name and key certified by the previous CA; servers send it with their certificate.
    package var crossCertificatePEM: String
    /// The previous CA's CRL.
    package var previousCRLPEM: String
    package init(previousCACertificatePEM: String, crossCertificatePEM: String, previousCRLPEM: String) {
        self.previousCACertificatePEM = previousCACertificatePEM
        self.crossCertificatePEM = crossCertificatePEM
        self.previousCRLPEM = previousCRLPEM
    }
}

package struct Materials: Sendable, Hashable {
    /// Signs every `.mobileconfig` when set (`pki.profile_signing`).
    package var profileSigner: ProfileSigner?
    /// The CA new profiles trust (during a rotation: the new one).
    package var caCertificatePEM: String
    /// The CA's subject common name (Apple ServerCertificateIssuerCommonName).
    package var caCommonName: String
    package var caKeyType: KeyType
    /// The current CRL in PEM form.
    package var crlPEM: String
    package var nodes: [String: NodeMaterials]
    /// Only users that are not revoked.
    package var users: [String: UserMaterials]
    /// Set during the overlap of a CA rotation.
    package var rotation: RotationMaterials?
    /// The connection string the RADIUS servers use (`accounts.radius_database`), when a node uses them.
    package var radiusDatabase: String?
    /// The nodes' trust root allows the node policies of client certificates, so nodes require them
    /// (`cert_policy`). False while the trust root is a CA from before node scoping (no `anyPolicy`),
    /// which strongSwan 5.9 would hold against every client certificate.
    package var nodeScoping = true
    /// `acme.ca_bundle`'s certificates (PEM), shipped to the ACME nodes; nil without one.
    package var acmeCABundlePEM: String?
    package init(
        caCertificatePEM: String, caCommonName: String, caKeyType: KeyType, crlPEM: String,
        nodes: [String: NodeMaterials], users: [String: UserMaterials]
    ) {
        self.caCertificatePEM = caCertificatePEM
        self.caCommonName = caCommonName
        self.caKeyType = caKeyType
        self.crlPEM = crlPEM
        self.nodes = nodes
        self.users = users
    }
}
