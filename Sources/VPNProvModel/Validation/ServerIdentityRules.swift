import Foundation
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// A client accepts a server that proves the identity its profile names (the node's `id`) with a
// certificate from the deployment's CA. strongSwan checks that the certificate carries that identity
// as its subject DN or in a subjectAltName (x509_cert.c has_subject), not what kind of certificate it
// is. So if a client certificate of the same CA carries a node's identity, whoever holds that client
// certificate can pose as the node to every client. Node identities and the identities on client
// certificates must therefore be disjoint. They are compared the way strongSwan compares them, but
// more loosely where that is safer: FQDN and e-mail identities and DN values ignoring case, DNs
// ignoring the order of their RDNs, IP addresses as bytes.

package enum ServerIdentityRules {
    /// An identity in the form strongSwan compares it.
    package enum MatchKey: Hashable {
        case dn([String])
        case fqdn(String)
        case email(String)
        case ip([UInt8])
    }

    package static func key(_ dn: DistinguishedName) -> MatchKey {
        .dn(dn.attributes.map { "\($0.type.lowercased())=\($0.value.lowercased())" }.sorted())
    }

    package static func key(_ name: GeneralName) -> MatchKey {
        switch name {
        case .dnsName(let v): return .fqdn(v.lowercased())
        case .rfc822Name(let v): return .email(v.lowercased())
        case .ipAddress(let b): return .ip(b)
        }
    }

    /// What a client checks a server certificate against; nil for key IDs (strongSwan compares those
    /// with key identifiers, fingerprints and serial numbers, which vpnprov draws at random).
    package static func key(_ id: IKEIdentity) -> MatchKey? {
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
            guard let profile = try? CertificateNames.client(user, in: inventory) else { continue }
            for k in keys(subject: profile.subject, subjectAltNames: profile.subjectAltNames) where clients[k] == nil {
                clients[k] = user
            }
        }
        for node in inventory.nodes {
            guard let k = key(node.id), let user = clients[k] else { continue }
            d.append(
                .error(
                    .serverIdentityOverlap,
                    "node '\(node.name)': identity '\(node.id.value)' is also on user '\(user.name)''s client certificate; "
                        + "its holder could pose as this server to every client",
                    at: node.fieldLocations[.key(.id)] ?? node.location(of: .address),
                    notes: [
                        .init(
                            location: user.location(of: .id), message: "user '\(user.name)''s certificate carries it")
                    ]))
        }
    }
}
