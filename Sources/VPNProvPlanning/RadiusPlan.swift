import VPNProvModel
import VPNProvSupport

// The AAA path of a RADIUS node (docs/accounts.md): what the node's eap-radius plugin is told, what its
// local RADIUS relay forwards where, and what the RADIUS servers know about each node. Every side is
// rendered from this one plan.

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
        /// The address the node's relay sends to this server from (FreeRADIUS's `src_ipaddr`): the node's path
        /// address, so the server sees the address its client section names and the packet enters the node's
        /// IPsec to it; nil when either is a DNS name or they differ in family (the kernel's choice, as for
        /// charon's own RADIUS sockets).
        package var relaySource: String?
    }

    /// The node's local RADIUS relay (docs/accounts.md, "The node's RADIUS relay"): a FreeRADIUS on the node
    /// that charon's eap-radius talks to over loopback. It sends logins and accounting records to the first
    /// RADIUS server alive (one that answers; Status-Server finds out when a silent one is back); a record no
    /// server answers goes to the node's disk before charon gets its answer, and is sent on until one took it.
    package struct Relay: Sendable, Hashable {
        /// Loopback only: nothing off the node reaches it.
        package var address: String
        package var authPort: Int
        package var acctPort: Int
        /// What the relay requires of an accounting record's NAS-IP-Address (NAS-IPv6-Address) before it keeps
        /// it: what the servers' policy requires (`vpnprov_acct_node`), so that no record waits in the relay's
        /// buffer for an answer the servers will never give. nil: not checked here (the servers compare it with
        /// an address the relay does not know, or with nothing).
        package var nasAddress: String?
    }

    package var node: String
    /// The node's own address on its path to the servers (`pathAddress(of:)`): its RADIUS client's address there, the
    /// source of its RADIUS, its end of the IPsec connections and where its Disconnect-Requests go.
    package var pathAddress: String
    /// What the RADIUS servers hold the node's NAS-IP-Address (NAS-IPv6-Address) to, when its RADIUS comes from
    /// another address than clients dial; nil when it must be the packet's source.
    package var nasAddress: NASAddress?
    /// The node's NAS-Identifier: its name, which is also its RADIUS client's short name.
    package var nasIdentifier: String
    package var servers: [Server]
    package var accountingInterval: Int
    package var daePort: Int
    /// The node's tier, which its RADIUS client section tells the policy.
    package var tier: Tier
    /// How the path to the servers is protected (`accounts.protection`).
    package var protection: RadiusProtection
    /// Where the node's IPsec runs: with libipsec, charon must keep its own IKE and ESP packets out of
    /// the routes it installs to the servers (strongswan.d, docs/accounts.md).
    package var ipsecPath: NodeNetwork.IPsecPath
    package var relay: Relay

    /// strongSwan's NAS-IP-Address is the address the client reached the node at (eap_radius.c: the IKE_SA's own
    /// host). With `radius_address` the packet comes from elsewhere, so the servers compare it with the node's
    /// `address` instead; a node dialled by DNS name has no address the servers could know, and its NAS-Identifier
    /// (with the client's secret and source address) is what binds its accounting to it.
    package enum NASAddress: Sendable, Hashable {
        /// The node's `address`, canonical text.
        case address(String)
        /// The node's `address` is a DNS name.
        case unknown

        /// The value of the RADIUS client's `vpn_nas_address` (policy.d/vpnprov).
        package var clientValue: String {
            switch self {
            case .address(let text): text
            case .unknown: "any"
            }
        }
    }

    /// The RADIUS servers' name for the node's Disconnect-Request listener (a FreeRADIUS `home_server` of type
    /// `coa`, its client's `coa_server`): where a server sends the node a Disconnect-Request for an account that
    /// used up its data quota. Home servers and clients are apart in FreeRADIUS, so the suffix only reads well.
    package static func disconnectHomeServer(of node: Node) -> String { node.name + "-dae" }

    /// The node's own address on its path to the RADIUS servers: `radius_address`, or what clients dial.
    package static func pathAddress(of node: Node) -> String { node.radiusAddress ?? node.address }

    /// nil when the node's RADIUS comes from `address` itself (`NASAddress`).
    package static func nasAddress(of node: Node) -> NASAddress? {
        guard node.radiusAddress != nil else { return nil }
        guard let bytes = IPAddressText.parse(node.address) else { return .unknown }
        return .address(IPAddressText.format(bytes))
    }

    /// IKE and ESP proposals of the node↔RADIUS connections: both ends are vpnprov's, so one strong
    /// suite (AES-256-GCM, ECP-384, PFS at every rekey) that strongSwan 5.9 and 6.0 on Debian offer.
    package static let ipsecProposals = "aes256gcm16-prfsha384-ecp384"
    package static let ipsecESPProposals = "aes256gcm16-ecp384"
    /// Marks charon puts on its own IKE and ESP-in-UDP packets on a libipsec node (socket-default),
    /// and the routing rule of its routes skips (kernel-netlink `!mark`): strongSwan's libipsec
    /// host-to-host setup (testing/tests/libipsec/host2host-cert).
    package static let libipsecBypassMark = "0x42"

    /// The relay's loopback address and ports: apart from a RADIUS server's 1812 and 1813 on the same host.
    package static let relayAddress = "127.0.0.1"
    package static let relayAuthPort = 11812
    package static let relayAcctPort = 11813
    /// charon → relay: strongSwan's own retransmission defaults (eap-radius.opt: 2 s, base 1.4) with three
    /// attempts (at 0, 2 and 4.8 s; given up at 8.7 s). The relay gives a silent server `relayResponseWindow` and
    /// then drops a login unanswered, so charon's retransmission at 2 s is a new request, which goes to
    /// the next server (docs/decisions.md, "The node's RADIUS relay").
    package static let relayRetransmitTries = 3
    package static let relayRetransmitTimeout = "2.0"
    package static let relayRetransmitBase = "1.4"
    /// charon's sockets to the relay: eap-radius lends one socket to one request at a time (radius_config.c,
    /// get_socket), so logins that wait for a failing-over server would hold back accounting with one.
    package static let relaySockets = 8
    /// Relay → RADIUS server: how long a login or a record waits for its answer before the server counts as not
    /// responding (FreeRADIUS's `response_window`): below charon's first retransmission (2 s), so charon has its
    /// answer (a record in the node's buffer) or sends a login again, to the next server, by then.
    package static let relayResponseWindow = "1.5"
    /// A server without answers is a "zombie": asked nothing while another answers, sent Status-Server every
    /// `relayCheckInterval` s (FreeRADIUS's least is 6), alive again at its first answer; dead after
    /// `relayZombiePeriod` s without one, then alive after `relayAnswersToAlive` answers (FreeRADIUS's least 3).
    /// The zombie period also decides how recent another answer of the server may be for a timeout not to count
    /// ((period + 3) / 4 seconds, process.c mark_home_server_zombie): 8 gives 2 s, so a login's second request
    /// (at 2 s, timed out at 3.5 s) always makes a dead server a zombie and its third (at 4.8 s) goes elsewhere,
    /// and a server back within 8 s is taken back at its first answer.
    package static let relayZombiePeriod = 8
    package static let relayCheckInterval = 6
    package static let relayCheckTimeout = 2
    package static let relayAnswersToAlive = 3

    /// charon's per-address limit of half-open IKE_SAs on a RADIUS node (`charon.block_threshold`, default 5): many
    /// app users behind one carrier-grade NAT address log in at once. docs/decisions.md, "Central accounts".
    package static let blockThreshold = 50

    /// swanctl name of the node↔server connection (both sides: the node names the server, the server the node).
    package static func connectionName(_ peer: String) -> String { "radius-\(peer)" }

    /// Groups a node of `tier` requires of a RADIUS account (swanctl `groups`): every tier but the
    /// lowest, whose nodes admit every account.
    static func requiredGroups(for tier: Tier) -> [String] {
        tier == .free ? [] : [tier.rawValue]
    }

    /// The RADIUS servers in the order a node of `region` asks them: those of its region first, each group in the
    /// inventory's order (a node without a region, or with no server in its region, keeps that order).
    package static func preferred(_ servers: [RadiusServer], region: String?) -> [RadiusServer] {
        guard let region else { return servers }
        return servers.filter { $0.region == region } + servers.filter { $0.region != region }
    }

    /// nil for a node that does not use RADIUS (or an inventory without `accounts:`).
    package static func make(for node: Node, in inventory: Inventory) -> RadiusPlan? {
        guard node.usesRadius, let accounts = inventory.accounts else { return nil }
        let count = accounts.servers.count
        let path = pathAddress(of: node)
        let pathBytes = IPAddressText.parse(path)
        let servers = preferred(accounts.servers, region: node.region).enumerated().map { i, s in
            let serverBytes = IPAddressText.parse(s.address)
            let sameFamily = pathBytes != nil && pathBytes?.count == serverBytes?.count
            return Server(
                section: "server\(i + 1)", name: s.name, address: s.address, authPort: s.authPort,
                acctPort: s.acctPort, preference: (count - 1 - i) * 10,
                relaySource: sameFamily ? pathBytes.map(IPAddressText.format) : nil)
        }
        let nas = nasAddress(of: node)
        // The servers hold the NAS address to vpn_nas_address, or (without one) to the packet's source, which is
        // the path address the relay sends from.
        let relayNAS: String? =
            switch nas {
            case .address(let text): text
            case .unknown: nil
            case nil: pathBytes.map(IPAddressText.format)
            }
        return RadiusPlan(
            node: node.name, pathAddress: path, nasAddress: nas,
            nasIdentifier: node.name, servers: servers,
            accountingInterval: accounts.accountingInterval, daePort: AccountsSettings.daePort, tier: node.tier,
            protection: accounts.protection, ipsecPath: node.network.ipsec,
            relay: Relay(
                address: relayAddress, authPort: relayAuthPort, acctPort: relayAcctPort, nasAddress: relayNAS))
    }
}

extension RadiusPlan {
    /// `text` as strongSwan compares identities: ASCII letters folded to lower case (identification.c
    /// compares FQDN and e-mail identities with strncasecmp; the names are ASCII).
    package static func foldedIdentity(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The inventory's identities an app account's name must never equal (folded, `foldedIdentity`), each
    /// with what holds it, sorted: every user's name (its EAP and XAuth identity) and IKE identity (its
    /// certificate's), every node's identity and address, and the identity of IKEv2 PSK+EAP clients. A node
    /// takes an account with such a name for that peer: its login ended the staff member's tunnel (strongSwan's
    /// uniqueness check) and got the staff member's virtual address (pool leases are kept per identity). Only
    /// identities an account name can spell (`A-Z a-z 0-9 . _ @ + -`) are listed: DNs, key IDs and IPv6
    /// addresses cannot collide.
    package static func inventoryIdentities(in inventory: Inventory) -> [(identity: String, owner: String)] {
        var owners: [String: String] = [:]
        func add(_ identity: String, _ owner: String) {
            let spellable =
                !identity.isEmpty && identity.utf8.count <= 64
                && identity.utf8.allSatisfy { c in
                    (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                        || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "@")
                        || c == UInt8(ascii: "+") || c == UInt8(ascii: "-")
                }
            guard spellable else { return }
            let folded = foldedIdentity(identity)
            if owners[folded] == nil { owners[folded] = owner }
        }
        func add(_ identity: IKEIdentity, _ owner: String) {
            switch identity {
            case .fqdn(let v), .userFQDN(let v), .ipv4(let v): add(v, owner)
            case .ipv6, .dn, .keyID: break
            }
        }
        for node in inventory.nodes {
            add(node.id, "the IKE identity of node '\(node.name)'")
            add(node.address, "the address of node '\(node.name)'")
            if let address = node.radiusAddress { add(address, "the RADIUS address of node '\(node.name)'") }
        }
        for user in inventory.users {
            add(user.name, "the EAP/XAuth identity of user '\(user.name)'")
            add(user.id, "the IKE identity of user '\(user.name)'")
        }
        add(ClientPlan.pskEAPLocalIdentity(in: inventory), "the IKE identity of the IKEv2 PSK+EAP clients")
        return owners.map { ($0.key, $0.value) }.sorted { $0.identity.precedesByUTF8($1.identity) }
    }
}

/// The RADIUS servers' side (`radius/<server>/`): every RADIUS node as a client of each server, the servers,
/// and what their policy refuses as an account name.
package struct RadiusServersPlan: Sendable, Hashable {
    /// A RADIUS node as the servers know it (its RADIUS client section).
    package struct Client: Sendable, Hashable {
        package var node: String
        /// Where its RADIUS comes from (`RadiusPlan.pathAddress(of:)`).
        package var pathAddress: String
        package var tier: Tier
        /// What its NAS-IP-Address must be (`RadiusPlan.NASAddress`), nil when it must be the packet's source.
        package var nasAddress: RadiusPlan.NASAddress?
        /// The FreeRADIUS home server the servers send its Disconnect-Requests to
        /// (`RadiusPlan.disconnectHomeServer(of:)`).
        package var disconnectHomeServer: String
    }

    /// A RADIUS server: its directory's name and the ports it answers on.
    package struct Server: Sendable, Hashable {
        package var name: String
        package var authPort: Int
        package var acctPort: Int
        /// Its region: with a cluster, its connection string names that region's data nodes first.
        package var region: String?
    }

    /// The RADIUS nodes, in inventory order.
    package var clients: [Client]
    /// `accounts.servers`, in the order written.
    package var servers: [Server]
    package var protection: RadiusProtection
    /// Seconds after which a session without accounting counts as gone.
    package var staleAfter: Int
    /// `accounts.accounting_interval`: the Interim-Update interval the nodes send (a quota's Disconnect bound).
    package var accountingInterval: Int
    /// With `accounts.cluster`: the cluster, whose hosts each server's connection string names (vpnprov writes
    /// it); without, every server gets the operator's `radius_database`.
    package var cluster: AccountsDatabasePlan?
    /// The inventory's identities no account name may equal (`RadiusPlan.inventoryIdentities`).
    package var identities: [String]

    /// nil when no node uses the RADIUS servers (or there is no `accounts:`).
    package static func make(_ inventory: Inventory) -> RadiusServersPlan? {
        let nodes = inventory.nodes.filter(\.usesRadius)
        guard let accounts = inventory.accounts, !nodes.isEmpty else { return nil }
        return RadiusServersPlan(
            clients: nodes.map {
                Client(
                    node: $0.name, pathAddress: RadiusPlan.pathAddress(of: $0), tier: $0.tier,
                    nasAddress: RadiusPlan.nasAddress(of: $0),
                    disconnectHomeServer: RadiusPlan.disconnectHomeServer(of: $0))
            },
            servers: accounts.servers.map {
                Server(name: $0.name, authPort: $0.authPort, acctPort: $0.acctPort, region: $0.region)
            },
            protection: accounts.protection, staleAfter: accounts.staleAfter,
            accountingInterval: accounts.accountingInterval,
            cluster: AccountsDatabasePlan.make(inventory),
            identities: RadiusPlan.inventoryIdentities(in: inventory).map(\.identity))
    }
}
