import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// IKE/ESP proposals: syntax with the shared keyword table (Capabilities/Proposal.swift), weak algorithms, and
// whether every client kind the node serves can agree with it (strongSwan's proposal keywords; Apple's
// IKESecurityAssociationParameters).
//
// Decisions: every IKEv2 node must offer an Apple-expressible IKE and ESP combination (Apple profiles
// pin exactly one; error `no-apple-proposal`); Android and Linux use strongSwan, which speaks every
// keyword in the table. IKEv1 (ipsec-xauth-psk, ipsec-xauth-hybrid) cannot negotiate AEAD IKE SAs: if every IKE
// proposal
// is AEAD the node warns (`no-ikev1-proposal`) because the server plan then has to fall back to its
// own IKEv1 set.

enum ProposalRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        for node in inventory.nodes { checkNode(node, into: &d) }
    }

    static func checkNode(_ node: Node, into d: inout [Diagnostic]) {
        let owner = "node '\(node.name)'"
        var parsed: [Proposal.Purpose: [Proposal]] = [.ike: [], .esp: []]
        for (purpose, list, field, label) in [
            (Proposal.Purpose.ike, node.proposals.ike, NodeField.proposals(.ike), "IKE"),
            (.esp, node.proposals.esp, .proposals(.esp), "ESP"),
        ] {
            let location = node.location(nested: field)
            if list.isEmpty {
                d.append(
                    .error(
                        .missingProposal,
                        "\(owner): no \(label) proposal; list at least one (e.g. \(purpose == .ike ? Proposals.defaults.ike[0] : Proposals.defaults.esp[0]))",
                        at: location))
                continue
            }
            parsed[purpose] = parsedProposals(list, purpose: purpose, label: label, of: node, at: location, into: &d)
        }
        let ike = parsed[.ike]!
        let esp = parsed[.esp]!
        // Only judge client support when both lists have something valid; otherwise the errors above say it.
        guard !ike.isEmpty, !esp.isEmpty else { return }
        checkClientSupport(of: node, ike: ike, esp: esp, into: &d)
    }

    /// One list's proposals that parse, with a finding for each listed twice, invalid, or weak.
    private static func parsedProposals(
        _ list: [String], purpose: Proposal.Purpose, label: String, of node: Node, at location: SourceLocation,
        into d: inout [Diagnostic]
    ) -> [Proposal] {
        let owner = "node '\(node.name)'"
        var parsed: [Proposal] = []
        var seen: Set<String> = []
        for text in list {
            if !seen.insert(text).inserted {
                d.append(
                    .warning(.duplicateEntry, "\(owner): \(label) proposal '\(text)' is listed twice", at: location)
                )
                continue
            }
            let proposal: Proposal
            do {
                proposal = try Proposal.parse(text, purpose: purpose)
            } catch {
                d.append(
                    .error(
                        .invalidProposal, "\(owner): \(label) proposal \(TextCheck.quoted(text)): \(error.message)",
                        at: location))
                continue
            }
            parsed.append(proposal)
            let weak = proposal.weakKeywords
            if !weak.isEmpty {
                let list = weak.joined(separator: ", ")
                if node.proposals.allowWeak {
                    d.append(
                        .warning(
                            .weakProposal,
                            "\(owner): \(label) proposal '\(text)' uses weak algorithms (\(list)); allowed by proposals.allow_weak",
                            at: location, about: .node(node.name)))
                } else {
                    d.append(
                        .error(
                            .weakProposal,
                            "\(owner): \(label) proposal '\(text)' uses weak algorithms (\(list)); remove them or set proposals.allow_weak: true",
                            at: location))
                }
            }
        }
        return parsed
    }

    /// Proposals Apple's IKEv2 profiles and IKEv1 clients can use, when the node offers those services.
    private static func checkClientSupport(
        of node: Node, ike: [Proposal], esp: [Proposal], into d: inout [Diagnostic]
    ) {
        let owner = "node '\(node.name)'"
        if node.services.contains(where: { $0.ikeVersion == 2 })
            && AppleSAParameters.firstPair(ike: ike, esp: esp) == nil
        {
            d.append(
                .error(
                    .noAppleProposal,
                    "\(owner): no IKE and ESP proposal pair an Apple IKEv2 profile can express; add e.g. \(Proposals.defaults.ike[0]) and \(Proposals.defaults.esp[0])",
                    at: node.location(of: .proposals)))
        }
        if node.services.contains(where: { $0.ikeVersion == 1 }) && !ike.contains(where: { !$0.isAEAD }) {
            d.append(
                .warning(
                    .noIKEv1Proposal,
                    "\(owner): \(node.services.filter { $0.ikeVersion == 1 }.map(\.rawValue).joined(separator: " and ")) \(node.services.filter { $0.ikeVersion == 1 }.count == 1 ? "needs" : "need") a non-AEAD IKE proposal (IKEv1 has no AEAD IKE SA); add e.g. aes256-sha256-modp2048",
                    at: node.location(nested: .proposals(.ike)),
                    about: .node(node.name, services: node.services.filter { $0.ikeVersion == 1 })))
        }
    }
}
