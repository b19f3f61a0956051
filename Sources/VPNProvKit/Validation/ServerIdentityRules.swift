import Foundation
import VPNProvCrypto

// A client accepts a server that proves the identity its profile names (the node's `id`) with a
// certificate from the deployment's CA. strongSwan checks that the certificate carries that identity
// as its subject DN or in a subjectAltName (x509_cert.c has_subject), not what kind of certificate it
// is. So if a client certificate of the same CA carries a node's identity, whoever holds that client
// certificate can pose as the node to every client. Node identities and the identities on client
// certificates must therefore be disjoint. They are compared the way strongSwan compares them, but
// more loosely where that is safer: FQDN and e-mail identities and DN values ignoring case, DNs
// ignoring the order of their RDNs, IP addresses as bytes.

enum ServerIdentityRules {
    /// An identity in the form strongSwan compares it.
    enum MatchKey: Hashable {
        case dn([String])
        case fqdn(String)
        case email(String)
        case ip([UInt8])
    }

    static func key(_ dn: DistinguishedName) -> MatchKey {
        .dn(dn.attributes.map { "\($0.type.lowercased())=\($0.value.lowercased())" }.sorted())
    }

    static func key(_ name: GeneralName) -> MatchKey {
        switch name {
        case .dnsName(let v): return .fqdn(v.lowercased())
        case .rfc822Name(let v): return .email(v.lowercased())
        case .ipAddress(let b): return .ip(b)
        }
    }

    /// What a client checks a server certificate against; nil for key IDs (strongSwan compares those
    /// with key identifiers, fingerprints and serial numbers, which vpnprov draws at random).
    static func key(_ id: IKEIdentity) -> MatchKey? {
        switch id {
        case .dn(let v): return DistinguishedName.parse(v).map(key)
        case .fqdn(let v): return .fqdn(v.lowercased())
        case .userFQDN(let v): return .email(v.lowercased())
        case .ipv4(let v), .ipv6(let v): return IPAddressText.parse(v).map(MatchKey.ip)
        case .keyID: return nil
        }
    }

    /// Every identity a client certificate with this subject and these subjectAltNames can prove.
    static func keys(subject: DistinguishedName, subjectAltNames: [GeneralName]) -> [MatchKey] {
        [key(subject)] + subjectAltNames.map(key)
    }

    /// Each node identity that a certificate user's certificate (as vpnprov issues it now, revoked
    /// users included: not every client fetches the CRL) also carries.
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        var clients: [MatchKey: User] = [:]
        for user in inventory.users where user.cert {
            guard let profile = try? CertificateProfile.client(user, inventory: inventory) else { continue }
            for k in keys(subject: profile.subject, subjectAltNames: profile.subjectAltNames) where clients[k] == nil {
                clients[k] = user
            }
        }
        for node in inventory.nodes {
            guard let k = key(node.id), let user = clients[k] else { continue }
            d.append(.error(
                .serverIdentityOverlap,
                "node '\(node.name)': identity '\(node.id.value)' is also on user '\(user.name)''s client certificate; "
                    + "its holder could pose as this server to every client",
                at: node.fieldLocations["id"] ?? node.location(of: "address"),
                notes: [.init(location: user.location(of: "id"), message: "user '\(user.name)''s certificate carries it")]))
        }
    }
}

extension ServerIdentityRules {
    /// The same rule for the client certificates the state has issued: a user removed from the
    /// inventory, or one whose identity changed, still holds a certificate that is valid until it
    /// expires (revoked ones included). Throws for the first node identity one of them carries.
    static func checkIssued(_ index: StateIndex, nodes: [Node], now: Date) throws {
        var nodeKeys: [MatchKey: Node] = [:]
        for node in nodes {
            if let k = key(node.id), nodeKeys[k] == nil { nodeKeys[k] = node }
        }
        if nodeKeys.isEmpty { return }
        for serial in index.certificates.keys.sorted() {
            let record = index.certificates[serial]!
            guard record.kind == .client, record.notAfter > now else { continue }
            var carried: [MatchKey] = []
            if let subject = DistinguishedName.parseDescription(record.subject) { carried.append(key(subject)) }
            carried += record.subjectAltNames.compactMap(parseSubjectAltName).map(key)
            for k in carried {
                guard let node = nodeKeys[k] else { continue }
                throw PKIError(
                    .serverIdentityOverlap,
                    "node '\(node.name)': identity '\(node.id.value)' is on the client certificate \(serial) issued to '\(record.holder)' "
                        + "(\(record.status == .revoked ? "revoked, " : "")valid until \(ISO8601DateFormatter().string(from: record.notAfter))); "
                        + "its holder could pose as this server to every client",
                    at: node.fieldLocations["id"] ?? node.location(of: "address"))
            }
        }
    }

    /// A subjectAltName as the state index records it (`GeneralName.description`).
    static func parseSubjectAltName(_ text: String) -> GeneralName? {
        if text.hasPrefix("DNS:") { return .dnsName(String(text.dropFirst(4))) }
        if text.hasPrefix("email:") { return .rfc822Name(String(text.dropFirst(6))) }
        if text.hasPrefix("IP:") { return IPAddressText.parse(String(text.dropFirst(3))).map(GeneralName.ipAddress) }
        return nil
    }
}
