import VPNProvModel
import VPNProvSupport

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
            node: node.name, pathAddress: pathAddress(of: node), nasAddress: nasAddress(of: node),
            nasIdentifier: node.name, servers: servers,
            accountingInterval: accounts.accountingInterval, daePort: AccountsSettings.daePort, tier: node.tier,
            protection: accounts.protection, ipsecPath: node.network.ipsec)
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
