import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

// The one IKE and Child SA parameter set each Apple IKEv2 profile of a node pins, decided from the node's
// proposals: the server plan accepts what Apple devices send, and the client plan makes them send it,
// from this one derivation. What Apple can express at all is the model's (`AppleSAParameters`).

/// What an Apple IKEv2 profile pins: exactly one IKE and one Child SA parameter set.
package struct AppleSA: Sendable, Hashable {
    package var ike: AppleSAParameters
    package var child: AppleSAParameters
    /// Child SA rekeys with the child's DH group (EnablePFS).
    package var enablePFS: Bool
    package var ikeLifetimeMinutes: Int
    package var childLifetimeMinutes: Int

    /// Lifetimes that avoid the macOS 14 rekey trouble (1410 minutes: docs/decisions.md, "Clients").
    static let defaultLifetimeMinutes = 1410

    /// The proposals the device sends with these parameters.
    package var offer: ProposalOffer {
        ProposalOffer(
            ike: [ike.strongSwanProposal(purpose: .ike)],
            esp: [child.strongSwanProposal(purpose: .esp, pfs: enablePFS)])
    }

    /// Derives the parameters from a node's proposals: the first IKE proposal Apple can express and
    /// the first ESP proposal it can express, so the single proposal the device sends is one of the
    /// node's own. nil when no proposal of the node can be expressed. With `pfs` the device rekeys
    /// Child SAs with the child group (EnablePFS); the server accepts that because its ESP proposals
    /// are `serverESPProposals(from:pfs:)`. Without, PFS is on only when the node's ESP proposal
    /// itself names the group.
    package static func derive(from proposals: Proposals, pfs: Bool = false) -> AppleSA? {
        guard let found = choose(from: proposals) else { return nil }
        return AppleSA(
            ike: found.ike, child: found.child, enablePFS: pfs || found.namesGroup,
            ikeLifetimeMinutes: defaultLifetimeMinutes, childLifetimeMinutes: defaultLifetimeMinutes)
    }

    /// The node's ESP proposals as its server offers them: with `pfs`, the proposal the Apple Child SA
    /// parameters come from gains the child DH group and `modpnone` when it names no group, so the
    /// device's PFS rekey (KE payload with that group) is accepted and clients without PFS still are
    /// (`aes256gcm16` -> `aes256gcm16-ecp256-modpnone`). Everything else stays as written.
    package static func serverESPProposals(from proposals: Proposals, pfs: Bool) -> [String] {
        guard pfs, let found = choose(from: proposals), !found.namesGroup else { return proposals.esp }
        var esp = proposals.esp
        let group = AlgorithmTable.all.values.filter { $0.group == found.child.diffieHellmanGroup }.map(\.keyword)
            .min()!
        esp[found.espIndex] += "-\(group)-modpnone"
        return esp
    }

    private static func choose(from proposals: Proposals)
        -> (ike: AppleSAParameters, child: AppleSAParameters, espIndex: Int, namesGroup: Bool)?
    {
        let parse = { (texts: [String], purpose: Proposal.Purpose) in
            texts.map { try? Proposal.parse($0, purpose: purpose) }
        }
        let esp = parse(proposals.esp, .esp)
        guard let found = AppleSAParameters.firstPair(ike: parse(proposals.ike, .ike), esp: esp) else { return nil }
        let namesGroup = esp[found.espIndex]!.groups.contains { $0.group == found.child.diffieHellmanGroup }
        return (found.ike, found.child, found.espIndex, namesGroup)
    }
}
