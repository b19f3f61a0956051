import VPNProvYAML

/// Where a node's server certificate comes from (`certificate:` on a node or in `defaults:`).
package enum CertificateSource: String, Sendable, Hashable, CaseIterable {
    /// Issued by vpnprov from the deployment CA (shipped in the node's `swanctl/x509/`).
    case ca
    /// Obtained and renewed on the node from an ACME CA (docs/acme.md): publicly trusted, so a device that
    /// never installed a profile (an app's user) can verify the node.
    case acme
}

/// The deployment's ACME account and issuance settings (`acme:`), used by every node with
/// `certificate: acme`.
package struct ACMESettings: Sendable, Hashable {
    /// Let's Encrypt's production directory (the default).
    static let letsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"
    /// Let's Encrypt's staging directory (untrusted certificates, far higher rate limits).
    static let letsEncryptStaging = "https://acme-staging-v02.api.letsencrypt.org/directory"
    /// Renew when fewer days than this are left (Let's Encrypt suggests renewing at two thirds of the lifetime).
    static let defaultRenewDays = 30
    static let renewDaysRange = 1...60

    /// How the CA checks that the node holds its name.
    package enum Challenge: String, Sendable, Hashable, CaseIterable {
        /// The CA fetches a token from the node's port 80 (RFC 8555 section 8.3).
        case http01 = "http-01"
    }

    /// The node's ACME key; the names are lego's `--key-type` values (lego 4.9, Debian 12, has no rsa3072).
    package enum Key: String, Sendable, Hashable, CaseIterable {
        case rsa2048, rsa4096, ec256, ec384

        package var isRSA: Bool { self == .rsa2048 || self == .rsa4096 }
    }

    package var directory = letsEncrypt
    package var email: String?
    package var challenge = Challenge.http01
    package var key = Key.rsa2048
    /// A PEM file (as written, relative to the inventory's directory) of the CAs the nodes trust for the
    /// ACME directory's own HTTPS: a private ACME server.
    package var caBundle: String?
    package var renewDays = defaultRenewDays
    /// Where a Linux swanctl client finds the ACME CA's roots (absolute paths on the client): charon reads no
    /// system trust store, so the client's connection names them (`cacerts`). Let's Encrypt's by default, as
    /// Debian's ca-certificates installs it.
    package var roots = defaultRoots
    package static let defaultRoots = ["/etc/ssl/certs/ISRG_Root_X1.pem"]
    package var location: SourceLocation
    /// Where each key's value was written.
    package var fieldLocations: [InventoryDecoder.ACMEKey: SourceLocation] = [:]

    package init(location: SourceLocation) { self.location = location }

    /// Best location for a key: its own, else the section's.
    package func location(of key: InventoryDecoder.ACMEKey) -> SourceLocation { fieldLocations[key] ?? location }

    /// The key a node gets: `key`, except that a node offering `ipsec-xauth-hybrid` gets RSA (IKEv1 hybrid
    /// authentication signs with RSA; docs/acme.md), 2048 bits unless an RSA size is chosen.
    package func key(for node: Node) -> Key {
        node.services.contains(.ipsecXauthHybrid) && !key.isRSA ? .rsa2048 : key
    }
}
