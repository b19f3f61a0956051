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
    public init(
        password: String?, certificatePEM: String? = nil, privateKeyPEM: String? = nil, p12: [UInt8]? = nil,
        p12Password: String? = nil, keyType: KeyType? = nil
    ) {
        self.password = password
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.p12 = p12
        self.p12Password = p12Password
        self.keyType = keyType
    }
}

public struct Materials: Sendable, Hashable {
    public var caCertificatePEM: String
    /// The CA's subject common name (Apple ServerCertificateIssuerCommonName).
    public var caCommonName: String
    public var caKeyType: KeyType
    /// The current CRL in PEM form.
    public var crlPEM: String
    public var nodes: [String: NodeMaterials]
    /// Only users that are not revoked.
    public var users: [String: UserMaterials]
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
