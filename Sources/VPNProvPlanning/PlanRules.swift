import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

// The rules of the inventory that ask a planning decision (the validator's rules need none): they run
// with the validator, before anything is planned, and report the same way (`Pipeline.loadInventory`).
//
// Windows' built-in IKEv2 client can only be set to a narrow set of algorithms (Decisions/WindowsIPsec.swift
// lists them with their source). A node that some user reaches with a Windows device must offer one
// IKE and one ESP proposal in that set, or the user's script would have nothing it could configure
// that the node accepts: error `no-windows-proposal` at the node's proposals. Nodes no Windows user
// reaches are not judged, so an inventory without Windows devices keeps every proposal choice.

package enum PlanRules {
    /// Every finding of these rules, in no particular order (the caller sorts them with the validator's).
    package static func check(_ inventory: Inventory) -> [Diagnostic] {
        var d: [Diagnostic] = []
        windows(inventory, into: &d)
        return d
    }

    /// `no-windows-proposal`: a node some user reaches with a Windows device offers no IKE and ESP
    /// proposal pair Windows can be set to (`WindowsIPsec.derive`).
    static func windows(_ inventory: Inventory, into d: inout [Diagnostic]) {
        for node in inventory.nodes where node.services.contains(where: Device.windows.speaks) {
            // Broken proposals are reported by ProposalRules; only judge lists that parse. The users
            // are looked for only when the proposals leave Windows out (a fleet has thousands).
            let parses = { (list: [String], purpose: Proposal.Purpose) in
                !list.isEmpty && list.allSatisfy { (try? Proposal.parse($0, purpose: purpose)) != nil }
            }
            guard parses(node.proposals.ike, .ike), parses(node.proposals.esp, .esp),
                WindowsIPsec.derive(from: node.proposals) == nil
            else { continue }
            let users = inventory.users.filter { user in
                !user.revoked && user.devices.contains(.windows) && user.nodes.contains(node.name)
                    && node.inventoryUserServices.contains { s in
                        Device.windows.speaks(s) && (s.needsClientCert ? user.cert : user.password != nil)
                    }
            }
            if !users.isEmpty {
                let names =
                    users.prefix(3).map { "'\($0.name)'" }.joined(separator: ", ") + (users.count > 3 ? ", ..." : "")
                d.append(
                    .error(
                        .noWindowsProposal,
                        "node '\(node.name)': Windows users (\(names)) reach it, but no IKE and ESP proposal pair is one Windows' IKEv2 client can be set to (\(WindowsIPsec.supportedSummary)); add e.g. aes256-sha256-modp2048 and aes256-sha256, or remove windows from those users' devices",
                        at: node.location(of: .proposals)))
            }
        }
    }
}
