import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// How strongSwan matches a client's proposals against a server's, for the consistency check and
// for the client catalogue (what a device with default parameters can reach).

extension Proposal {
    /// Whether some proposal of `client` and some of `server` share an algorithm of every kind, the
    /// way strongSwan selects proposals. `default` (or an unparseable keyword, which the validator
    /// reports) on either side counts as a match. ESP groups only count for rekeying (`withGroups`).
    package static func intersects(_ client: [String], _ server: [String], purpose: Proposal.Purpose, withGroups: Bool)
        -> Bool
    {
        if client.contains("default") || server.contains("default") { return true }
        let cs = client.compactMap { try? Proposal.parse($0, purpose: purpose, additionalKeyExchanges: true) }
        let ss = server.compactMap { try? Proposal.parse($0, purpose: purpose, additionalKeyExchanges: true) }
        if cs.count != client.count || ss.count != server.count { return true }
        return cs.contains { c in ss.contains { s in compatible(c, s, withGroups: withGroups) } }
    }

    static func compatible(_ a: Proposal, _ b: Proposal, withGroups: Bool) -> Bool {
        func common(_ x: [AlgorithmInfo], _ y: [AlgorithmInfo]) -> Bool {
            let xs = Set(x.map(\.keyword))
            return y.contains { xs.contains($0.keyword) }
        }
        guard common(a.encryption, b.encryption) else { return false }
        if !a.isAEAD && !common(a.integrity, b.integrity) { return false }
        if a.purpose == .ike {
            guard common(a.effectivePRFs, b.effectivePRFs), common(a.groups, b.groups) else { return false }
            // Each additional key exchange slot: a side without transforms for it takes `none` (proposal.c's
            // select_algo: an optional slot matches a peer that proposes none), so a classical client matches
            // only a slot with `none`, and a client with ML-KEM only a slot offering one of its methods.
            for slot in Set(a.additionalKeyExchanges.keys).union(b.additionalKeyExchanges.keys) {
                let x = a.additionalKeyExchanges[slot] ?? ["none"]
                let y = b.additionalKeyExchanges[slot] ?? ["none"]
                if x.isDisjoint(with: y) { return false }
            }
        } else if withGroups {
            var ga = Set(a.groups.compactMap(\.group))
            var gb = Set(b.groups.compactMap(\.group))
            if a.groups.isEmpty || a.groupOptional { ga.insert(0) }
            if b.groups.isEmpty || b.groupOptional { gb.insert(0) }
            if ga.isDisjoint(with: gb) { return false }
        }
        return true
    }
}
