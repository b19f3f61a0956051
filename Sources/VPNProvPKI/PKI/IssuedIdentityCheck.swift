import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

// The server-identity rule of ServerIdentityRules, applied to what the state has issued rather than
// to the inventory: it needs the state index, so it lives with the PKI, which runs it before issuing.

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
                    at: node.fieldLocations[.key(.id)] ?? node.location(of: .address))
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
