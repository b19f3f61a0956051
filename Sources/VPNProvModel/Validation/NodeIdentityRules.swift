import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Identities that must stay apart, compared as strongSwan compares them (ServerIdentityRules.MatchKey:
// IP addresses as bytes, FQDN and e-mail ignoring case, DNs by their RDNs) but more loosely where that
// is safer (an IPv4-mapped IPv6 address counts as the IPv4 address).
//
// Password identities. A password user's secret is written into every node's secrets.conf as
// `eap-uNNNN { id = "<user name>" }`, and strongSwan reads that id with identification_create_from_string
// (`192.0.2.1` is an IPv4 identity, `vpn.example.com` an FQDN). When the server looks for an EAP or
// XAuth secret it asks for one owned by its own identity *or* by the peer's (mem_cred.c: a secret
// matches when either owner matches), so a password whose id equals the node's identity is found for
// every EAP name, and XAuth tries it for every user: whoever knows it logs in under any name. A
// password id that strongSwan reads as a pattern (`0.0.0.0` is %any, `10.0.0.1-10.0.0.9` a range)
// matches the server's identity the same way. Both are refused, against every node's identity.
//
// Nodes among themselves. Two nodes with the same identity, or whose certificates carry a common
// identity (each server certificate carries the node's identity and its address), let one node's
// key pose as the other to every client. Two nodes whose Linux client connection names coincide
// (`a.b` and `a_b` both become `a_b-ikev2-eap`) make one user's swanctl.conf hold one connection twice.

enum NodeIdentityRules {
    typealias MatchKey = ServerIdentityRules.MatchKey

    /// `key` with an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) made the IPv4 address.
    static func loose(_ key: MatchKey) -> MatchKey {
        if case .ip(let bytes) = key, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF,
            bytes[11] == 0xFF
        {
            return .ip(Array(bytes[12...]))
        }
        return key
    }

    /// What a node's identity is compared by: its match key, or for a key ID its bytes (strongSwan
    /// compares key IDs as bytes), so two nodes with one key ID are found too.
    enum NodeKey: Hashable {
        case identity(MatchKey)
        case keyID(String)
    }

    static func nodeKey(_ id: IKEIdentity) -> NodeKey? {
        if case .keyID(let v) = id { return .keyID(v) }
        return ServerIdentityRules.key(id).map { .identity(loose($0)) }
    }

    /// The identity strongSwan reads from a password user's `id` (the user name) in secrets.conf.
    static func passwordIdentity(_ user: User) -> IKEIdentity { IKEIdentity.classify(user.name) }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        var nodeKeys: [NodeKey: Node] = [:]
        var certificateKeys: [MatchKey: Node] = [:]
        var sections: [String: Node] = [:]
        for node in inventory.nodes {
            let reported = checkNodeIdentity(node, against: &nodeKeys, into: &d)
            checkCertificateOverlap(
                node, inventory: inventory, reported: reported, against: &certificateKeys, into: &d)
            checkConnectionNames(node, against: &sections, into: &d)
        }
        checkPasswordIdentities(inventory, nodeKeys: nodeKeys, into: &d)
    }

    /// A node whose identity an earlier node has too; records it otherwise. Returns whether the node's
    /// identity is already reported (as wrong in itself, or as a duplicate).
    private static func checkNodeIdentity(
        _ node: Node, against nodeKeys: inout [NodeKey: Node], into d: inout [Diagnostic]
    ) -> Bool {
        let idLocation = node.fieldLocations[.key(.id)] ?? node.location(of: .address)
        // An identity that is itself wrong (invalid-identity, identity-pattern) is reported once, as that.
        let valid = !IdentityRules.findings(node.id).contains { $0.severity == .error }
        var reported = !valid
        if valid, let k = nodeKey(node.id) {
            if let other = nodeKeys[k] {
                reported = true
                d.append(
                    .error(
                        .duplicateNodeIdentity,
                        "node '\(node.name)': identity \(TextCheck.quoted(node.id.value)) is also node '\(other.name)''s identity; "
                            + "either node could pose as the other to every client",
                        at: idLocation,
                        notes: [
                            .init(
                                location: other.fieldLocations[.key(.id)] ?? other.location(of: .address),
                                message: "node '\(other.name)' has it here")
                        ]))
            } else {
                nodeKeys[k] = node
            }
        }
        return reported
    }

    /// Every identity this node's certificate carries (as vpnprov issues it), against the earlier nodes'. A
    /// sibling of a draining node carries that node's identity on purpose (DrainGroups): not an overlap.
    private static func checkCertificateOverlap(
        _ node: Node, inventory: Inventory, reported: Bool, against certificateKeys: inout [MatchKey: Node],
        into d: inout [Diagnostic]
    ) {
        if let profile = try? CertificateNames.server(node, in: inventory, drainedIdentities: false) {
            var mine: [MatchKey] = []
            for k in ServerIdentityRules.keys(subject: profile.subject, subjectAltNames: profile.subjectAltNames)
                .map(loose)
            where !mine.contains(k) {
                mine.append(k)
            }
            // Nodes with one address (duplicate-address) or names differing in case (name-case-collision)
            // are reported by those rules already.
            let earlier = certificateKeys
            if !reported, let (k, other) = mine.lazy.compactMap({ k in earlier[k].map { (k, $0) } }).first,
                !sameAddress(node, other), node.name.lowercased() != other.name.lowercased()
            {
                d.append(
                    .error(
                        .nodeCertificateOverlap,
                        "node '\(node.name)': its certificate would carry \(describe(k)), which node '\(other.name)''s certificate carries too; "
                            + "either node could pose as the other to clients that expect it",
                        at: node.location,
                        notes: [.init(location: other.location, message: "node '\(other.name)' is here")]))
            }
            for k in mine where certificateKeys[k] == nil { certificateKeys[k] = node }
        }
    }

    /// Two nodes whose client connections would share a swanctl section name.
    private static func checkConnectionNames(
        _ node: Node, against sections: inout [String: Node], into d: inout [Diagnostic]
    ) {
        let section = TextCheck.swanctlSectionName(node.name)
        if let other = sections[section] {
            d.append(
                .error(
                    .connectionNameCollision,
                    "node '\(node.name)': its client connections would have the same names as node '\(other.name)''s "
                        + "('\(section)-<service>' in the Linux swanctl.conf); rename one of them",
                    at: node.location,
                    notes: [.init(location: other.location, message: "node '\(other.name)' is here")]))
        } else {
            sections[section] = node
        }
    }

    /// A password user whose name, as the password's identity, is not a valid identity or is a node's.
    private static func checkPasswordIdentities(
        _ inventory: Inventory, nodeKeys: [NodeKey: Node], into d: inout [Diagnostic]
    ) {
        // A name that is not a valid name is reported as such (invalid-name) and never rendered.
        for user in inventory.users where user.password != nil && NameRules.problem(user.name) == nil {
            let id = passwordIdentity(user)
            if let problem = IdentityPatterns.problem(id) {
                d.append(
                    .error(
                        .identityPattern,
                        "user '\(user.name)': the name is the password's identity in the nodes' secrets.conf, and \(TextCheck.quoted(user.name)) \(problem); "
                            + "strongSwan would offer this password for the server's own identity",
                        at: user.location))
                continue
            }
            guard let k = nodeKey(id), let node = nodeKeys[k] else { continue }
            d.append(
                .error(
                    .passwordIdentityOverlap,
                    "user '\(user.name)': the name is the password's identity in the nodes' secrets.conf and equals node '\(node.name)''s identity "
                        + "\(TextCheck.quoted(node.id.value)); strongSwan picks a password whose identity matches either side, so this password "
                        + "would log in under any EAP name and, with XAuth, as every user",
                    at: user.location,
                    notes: [
                        .init(
                            location: node.fieldLocations[.key(.id)] ?? node.location(of: .address),
                            message: "node '\(node.name)''s identity")
                    ]))
        }
    }

    static func sameAddress(_ a: Node, _ b: Node) -> Bool {
        if let x = IPAddressText.parse(a.address), let y = IPAddressText.parse(b.address) { return x == y }
        return a.address.lowercased() == b.address.lowercased()
    }

    static func describe(_ key: MatchKey) -> String {
        switch key {
        case .dn(let rdns): return "the subject '\(rdns.joined(separator: ", "))'"
        case .fqdn(let v): return "the name \(TextCheck.quoted(v))"
        case .email(let v): return "the e-mail address \(TextCheck.quoted(v))"
        case .ip(let b): return "the address \(IPAddressText.format(b))"
        }
    }
}
