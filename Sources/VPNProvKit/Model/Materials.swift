// The bridge between the PKI/state layer and the renderers: every secret and certificate the
// output needs, resolved for one run. Renderers are pure functions of (Inventory, Materials).

/// Secret and certified material for one node.
public struct NodeMaterials: Sendable, Hashable {
    public var certificatePEM: String
    public var privateKeyPEM: String
    /// The node's PSK when it offers a PSK service (resolved from gen/env/file/literal).
    public var psk: String?
    public init(certificatePEM: String, privateKeyPEM: String, psk: String?) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.psk = psk
    }
}

/// Secret and certified material for one (non-revoked) user.
public struct UserMaterials: Sendable, Hashable {
    /// EAP/XAuth password when a service of the user's nodes needs one.
    public var password: String?
    public var certificatePEM: String?
    public var privateKeyPEM: String?
    /// PKCS#12 (PBE-SHA1-3DES, SHA-1 MAC) holding key, certificate and CA; stored in the state so
    /// its bytes are stable across runs.
    public var p12: [UInt8]?
    public var p12Password: String?
    public var keyType: KeyType?
    /// The same key and certificate with the empty password (same algorithms), embedded in the
    /// Android `.sswan` profiles: the Android certificate installer tries the empty password before
    /// it asks, so importing needs no typing. Never given to Apple devices.
    public var openP12: [UInt8]?
    public init(
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
public struct ProfileSigner: Sendable, Hashable {
    public var certificatePEM: String
    public var keyPEM: String
    /// Intermediate certificates (PEM, possibly several), "" when none.
    public var chainPEM: String
    /// The key's signatures differ from one signing to the next (ECDSA with a random nonce, as in
    /// OpenSSL 3.0): an unchanged profile already in the tree is then kept rather than re-signed.
    public var randomizedSignatures = false
    public init(certificatePEM: String, keyPEM: String, chainPEM: String) {
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
        self.chainPEM = chainPEM
    }
}

/// What servers need during the overlap of a CA rotation (see PKISession+Rotation).
public struct RotationMaterials: Sendable, Hashable {
    /// The previous CA: still the servers' trust root, so profiles that pin it keep working.
    public var previousCACertificatePEM: String
    /// The new CA's name and key certified by the previous CA; servers send it with their certificate.
    public var crossCertificatePEM: String
    /// The previous CA's CRL.
    public var previousCRLPEM: String
    public init(previousCACertificatePEM: String, crossCertificatePEM: String, previousCRLPEM: String) {
        self.previousCACertificatePEM = previousCACertificatePEM
        self.crossCertificatePEM = crossCertificatePEM
        self.previousCRLPEM = previousCRLPEM
    }
}

public struct Materials: Sendable, Hashable {
    /// Signs every `.mobileconfig` when set (`pki.profile_signing`).
    public var profileSigner: ProfileSigner?
    /// The CA new profiles trust (during a rotation: the new one).
    public var caCertificatePEM: String
    /// The CA's subject common name (Apple ServerCertificateIssuerCommonName).
    public var caCommonName: String
    public var caKeyType: KeyType
    /// The current CRL in PEM form.
    public var crlPEM: String
    public var nodes: [String: NodeMaterials]
    /// Only users that are not revoked.
    public var users: [String: UserMaterials]
    /// Set during the overlap of a CA rotation.
    public var rotation: RotationMaterials?
    /// The nodes' trust root allows the node policies of client certificates, so nodes require them
    /// (`cert_policy`). False while the trust root is a CA from before node scoping (no `anyPolicy`),
    /// which strongSwan 5.9 would hold against every client certificate.
    public var nodeScoping = true
    public init(
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
