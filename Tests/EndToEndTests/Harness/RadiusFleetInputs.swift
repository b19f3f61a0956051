import Foundation
import VPNProvTestHarness

/// A VPN node of the accounts scenario.
struct RadiusNodeSpec: Sendable {
    var name: String
    var address: String
    /// "free" or "pro".
    var tier: String
}

/// What the accounts scenario runs: the nodes' strongSwan files, the RADIUS servers' configuration directories,
/// the database schema and the account operations (`RadiusGeneratedInputs`: what `vpnprov generate` and
/// `vpnprov accounts` make).
protocol RadiusFleetInputs: AnyObject {
    /// The nodes, the free one first, then the pro one.
    var nodes: [RadiusNodeSpec] { get }
    /// The RADIUS servers in the nodes' order of preference.
    var radiusServers: [(name: String, address: String)] { get }
    /// Creates the schema in the empty database.
    func migrate() throws
    /// A RADIUS server's configuration directory and the environment it reads.
    func radiusConfiguration(_ server: String) throws -> (directory: String, environment: [String: String])
    /// A node's strongswan.conf snippets (absolute paths) and its swanctl.conf (credentials beside it).
    func nodeSettingsIncludes(_ node: String) throws -> [String]
    func nodeConfFile(_ node: String) throws -> String
    /// The node's RADIUS relay (`servers/<node>/radius-relay/`, a FreeRADIUS configuration directory run in the node's
    /// namespace); nil when the inputs have none (charon then talks to the RADIUS servers itself).
    func nodeRelayDirectory(_ node: String) throws -> String?
    /// The node's nftables ruleset (`nft -f` text), loaded into its namespace; nil when the inputs have none.
    func nodeFirewall(_ node: String) throws -> String?
    /// The RADIUS server's IPsec side of the node-RADIUS path (its swanctl.conf and nftables ruleset), nil when the
    /// path is in clear (`accounts.protection: none`).
    func radiusIPsec(_ server: String) throws -> (confFile: String, firewall: String)?
    /// The node's RADIUS shared secret (as the state holds it).
    func radiusSecret(_ node: String) throws -> String
    /// The secret between the node's charon and its RADIUS relay.
    func relaySecret(_ node: String) throws -> String
    /// The node's Disconnect-Request (DAE) secret.
    func daeSecret(_ node: String) throws -> String
    /// Puts the node's right RADIUS shared secret, or a wrong one, where the node keeps it (its relay's proxy.conf)
    /// and restarts the node's relay, which reads it only when it starts.
    func setNodeSecret(_ node: String, correct: Bool, lab: RadiusLab) throws
    /// Makes RADIUS treat `node` as a node of `tier` (a mis-set RADIUS), or (nil) as it is.
    func setRadiusTier(of node: String, to tier: String?, lab: RadiusLab) throws
    /// A client swanctl.conf (credentials beside it) holding `user`'s account, with connections
    /// `clientConnection(node:ikeVersion:)`, each with the child `clientChild`.
    func clientConf(user: String, password: String) throws -> String
    /// A client swanctl.conf holding only `node`'s PSK, with identity `identity`: connections
    /// `<node>-psk-ikev2-pubkey` and `<node>-psk-ikev2-psk` (IKEv2, the client authenticates with the PSK,
    /// the node with its certificate or the PSK) and `<node>-psk-ikev1-psk` (IKEv1 Main Mode PSK without an
    /// XAuth round), each with the child `clientChild`.
    func pskOnlyClientConf(node: String, identity: String) throws -> String
    func clientConnection(node: String, ikeVersion: Int) -> String
    var clientChild: String { get }

    /// The seed app's code path for `node` (its catalogue entries' four fields → `SeedAppTranslator`), one client
    /// setup per entry the seed's model can use, labelled by service.
    func seedAppSetups(node: String, user: String, password: String) throws -> [(label: String, setup: ClientSetup)]

    /// Account operations, as the app backend (or `vpnprov accounts`) performs them.
    func addAccount(_ user: String, password: String, tier: String, devices: Int, lab: RadiusLab) throws
    func setTier(_ user: String, _ tier: String, lab: RadiusLab) throws
    /// Creates the account as an app backend would: the same rows, without the inventory's checks (`vpnprov accounts
    /// add --database` without `--inventory`).
    func addAccountBypassingInventory(_ user: String, password: String, tier: String, devices: Int) throws
    /// `vpnprov accounts import` of a JSON Lines file holding `lines`; returns what it printed.
    func importAccounts(_ lines: [String]) throws -> String
    /// Replaces the account's password and ends its live sessions (`vpnprov accounts set-password`); returns what
    /// it printed.
    func setPassword(_ user: String, password: String) throws -> String
    /// Disables the account and ends its live sessions (Disconnect-Request to every node it has one on);
    /// returns a description of what it did, for messages.
    func disable(_ user: String, lab: RadiusLab) throws -> String

    /// The nodes' `accounts.accounting_interval` (seconds between Interim-Updates).
    var accountingInterval: Int { get }
    /// What `vpnprov accounts ARGUMENTS` printed on standard output (it must succeed).
    func accountsOutput(_ arguments: [String]) throws -> String

    /// Secrets that must appear in no log (node RADIUS/DAE secrets, PSKs); account passwords are the test's.
    var secrets: [String] { get }
}

/// A strongSwan client holding one account: per node an IKEv2 EAP-MSCHAPv2 connection (server certificate) and
/// an IKEv1 Main Mode PSK + XAuth connection, each with one child for the LAN behind the node.
enum RadiusClientConf {
    struct Node {
        var ikev2: String
        var ikev1: String
        var address: String
        /// The node's identity (its certificate's and its PSK's).
        var id: String
        var psk: String
    }

    struct Account {
        var user: String
        var password: String
        /// Appended to the names of the account's connections and secrets ("" when the client holds one account).
        var suffix = ""
    }

    static func text(user: String, password: String, child: String, nodes: [Node]) throws -> String {
        try text(accounts: [Account(user: user, password: password)], child: child, nodes: nodes)
    }

    static func text(accounts: [Account], child: String, nodes: [Node]) throws -> String {
        var w = SwanctlWriter()
        try w.section("connections") { w in
            for account in accounts {
                try connections(&w, user: account.user, suffix: account.suffix, child: child, nodes: nodes)
            }
        }
        try w.section("secrets") { w in
            for account in accounts {
                try w.section("eap-user\(account.suffix)") { w in
                    try w.set("id", account.user)
                    w.raw("secret", SwanctlWriter.secret(account.password))
                }
                try w.section("xauth-user\(account.suffix)") { w in
                    try w.set("id", account.user)
                    w.raw("secret", SwanctlWriter.secret(account.password))
                }
            }
            for (index, node) in nodes.enumerated() {
                try w.section("ike-\(index + 1)") { w in
                    try w.set("id", node.id)
                    w.raw("secret", SwanctlWriter.secret(node.psk))
                }
            }
        }
        return w.text
    }

    private static func connections(
        _ w: inout SwanctlWriter, user: String, suffix: String, child: String, nodes: [Node]
    ) throws {
        for node in nodes {
            for version in [2, 1] {
                try w.section((version == 2 ? node.ikev2 : node.ikev1) + suffix) { w in
                    w.raw("version", "\(version)")
                    try w.set("remote_addrs", node.address)
                    w.raw("vips", "0.0.0.0")
                    w.raw("proposals", version == 2 ? "aes256gcm16-prfsha256-ecp256" : "aes256-sha256-ecp256")
                    if version == 2 {
                        try w.section("local") { w in
                            w.raw("auth", "eap-mschapv2")
                            try w.set("id", user)
                            try w.set("eap_id", user)
                        }
                    } else {
                        w.section("local") { w in w.raw("auth", "psk") }
                        try w.section("local-xauth") { w in
                            w.raw("auth", "xauth")
                            try w.set("xauth_id", user)
                        }
                    }
                    try w.section("remote") { w in
                        w.raw("auth", version == 2 ? "pubkey" : "psk")
                        try w.set("id", node.id)
                    }
                    w.section("children") { w in
                        w.section(child) { w in
                            w.raw("remote_ts", RadiusLab.lanPrefix)
                            w.raw("esp_proposals", version == 2 ? "aes256gcm16-ecp256-modpnone" : "aes256gcm16")
                        }
                    }
                }
            }
        }
    }
}
