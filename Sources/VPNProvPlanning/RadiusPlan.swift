import VPNProvModel

// The AAA path of a RADIUS node (docs/accounts.md): what the node's eap-radius plugin is told, and
// what the RADIUS servers know about each node. Both sides are rendered from this one plan.

/// A node's view of the RADIUS servers, in the order it prefers them.
package struct RadiusPlan: Sendable, Hashable {
    package struct Server: Sendable, Hashable {
        /// `servers.<section>` of the eap-radius plugin: numbered, never built from a name.
        package var section: String
        package var name: String
        package var address: String
        package var authPort: Int
        package var acctPort: Int
        /// eap-radius picks the reachable server with the highest preference.
        package var preference: Int
    }

    package var node: String
    /// The node's NAS-Identifier: its name, which is also its RADIUS client's short name.
    package var nasIdentifier: String
    package var servers: [Server]
    package var accountingInterval: Int
    package var daePort: Int
    /// The node's tier, which its RADIUS client section tells the policy.
    package var tier: Tier

    /// Groups a node of `tier` requires of a RADIUS account (swanctl `groups`): every tier but the
    /// lowest, whose nodes admit every account.
    package static func requiredGroups(for tier: Tier) -> [String] {
        tier == .free ? [] : [tier.rawValue]
    }

    /// nil for a node that does not use RADIUS (or an inventory without `accounts:`).
    package static func make(for node: Node, in inventory: Inventory) -> RadiusPlan? {
        guard node.usesRadius, let accounts = inventory.accounts else { return nil }
        let count = accounts.servers.count
        let servers = accounts.servers.enumerated().map { i, s in
            Server(
                section: "server\(i + 1)", name: s.name, address: s.address, authPort: s.authPort,
                acctPort: s.acctPort, preference: (count - 1 - i) * 10)
        }
        return RadiusPlan(
            node: node.name, nasIdentifier: node.name, servers: servers,
            accountingInterval: accounts.accountingInterval, daePort: AccountsSettings.daePort, tier: node.tier)
    }
}
