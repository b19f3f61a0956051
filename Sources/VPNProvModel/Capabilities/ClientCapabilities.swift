import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// What the validator, the server plan, the client plan and the renderers all need to know about
// clients, as properties of the inventory's own values: the Apple options in effect for a user on a
// node, and the group name hybrid clients send. Which client kinds can use a service is derived from
// the kinds' descriptions (ClientKinds/ClientKind.swift, `Service.devices`).

extension AppleOptions {
    /// Apple options in effect: the user's, else the node's (with `defaults:`), else the built-in ones:
    /// no on-demand, PFS on, revocation checking on, DPD medium, no idle disconnect, local networks
    /// outside the kill switch, and the kill switch on exactly when the node has no IPv6 pool (it is
    /// how an Apple device keeps IPv6 from bypassing an IPv4-only tunnel: IncludeAllNetworks routes
    /// every packet into the tunnel, and one the tunnel cannot carry is dropped).
    package static func effective(user: User?, node: Node) -> (
        onDemand: Bool, trustedSSIDs: [String], includeAllNetworks: Bool, excludeLocalNetworks: Bool, pfs: Bool,
        crlCheck: Bool, dpd: AppleDPDRate, disconnectOnIdle: Int
    ) {
        let o = (user?.apple ?? AppleOptions()).over(node.apple)
        return (
            o.onDemand ?? false, o.trustedSSIDs ?? [], o.includeAllNetworks ?? (node.pool6 == nil),
            o.excludeLocalNetworks ?? true, o.pfs ?? true, o.crlCheck ?? true, o.dpd ?? .medium, o.disconnectOnIdle ?? 0
        )
    }
}

extension Inventory {
    /// The group name (Apple LocalIdentifier, key ID) ipsec-xauth-hybrid clients send: Apple
    /// switches an IPSec configuration to hybrid authentication when it ends in "hybrid". The
    /// server accepts any key ID there (the client is authenticated by XAuth alone).
    package var hybridGroupName: String { "\(name)-hybrid" }
}
