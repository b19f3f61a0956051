import VPNProvSupport

// Central accounts (`accounts:` and a node's `accounts: radius`, docs/accounts.md).
//
// Decisions: a RADIUS node needs the `accounts:` section and its `radius_database` (the RADIUS
// servers cannot be configured without them); the servers' names become directories
// (`radius/<name>/`), so they follow the node-name rules; their addresses follow a node address's
// rules. Disconnect-Requests are accepted only from `disconnect_from` (by default the servers written
// as IP addresses): with none, a node's listener would have no one it may hear, which is an error.
// A RADIUS node may not offer ikev2-psk (`radius-psk-service`): its only client credential is the
// node PSK, which every account of the node's ipsec-xauth-psk / ikev2-psk-eap services holds, so it
// would admit anyone past tiers, disabling, deletion and device limits (docs/decisions.md, "A RADIUS
// node offers no PSK-only service"). `disconnect_from` may not be every address (`/0`) or reach into a
// RADIUS node's pool (`disconnect-from-wide`): the node's firewall is the only thing that keeps a
// captured Disconnect-Request from being replayed, since charon checks no Event-Timestamp.

extension RuleCode {
    /// A node says `accounts: radius` but the inventory has no `accounts:` section.
    static let accountsMissing = RuleCode("accounts-missing")
    /// `accounts:` is written but no node says `accounts: radius`.
    static let accountsUnused = RuleCode("accounts-unused")
    /// RADIUS nodes exist but `accounts.radius_database` is not set.
    static let radiusDatabaseMissing = RuleCode("radius-database-missing")
    /// A RADIUS server's name or address is unusable.
    static let invalidRadiusServer = RuleCode("invalid-radius-server")
    /// No address may send Disconnect-Requests (servers are host names and `disconnect_from` is not set).
    static let disconnectFromEmpty = RuleCode("disconnect-from-empty")
    /// A node says `accounts: radius` but offers no password service.
    static let radiusWithoutPasswordService = RuleCode("radius-without-password-service")
    /// `accounts.protection: none`: RADIUS between the nodes and the RADIUS servers travels in clear.
    static let radiusCleartext = RuleCode("radius-cleartext")
    /// A RADIUS node offers ikev2-psk, whose only client credential is the node PSK.
    static let radiusPSKService = RuleCode("radius-psk-service")
    /// `disconnect_from` admits every address or addresses of a RADIUS node's pool.
    static let disconnectFromWide = RuleCode("disconnect-from-wide")
    /// A node's `radius_address` is unused (no `accounts: radius`) or unusable: another node's address, in a pool,
    /// or of another family than a RADIUS server's address.
    package static let radiusAddress = RuleCode("radius-address")
}

enum AccountsRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let radiusNodes = inventory.nodes.filter(\.usesRadius)
        checkRadiusAddresses(inventory, into: &d)
        for node in radiusNodes where !node.services.contains(where: \.needsPassword) {
            d.append(
                .warning(
                    .radiusWithoutPasswordService,
                    "node '\(node.name)': accounts is radius but the node offers no password service (ikev2-eap, ikev2-psk-eap, ipsec-xauth-psk, ipsec-xauth-hybrid); its RADIUS settings are unused",
                    at: node.location(of: .accounts), about: .node(node.name)))
        }
        for node in radiusNodes where node.services.contains(.ikev2PSK) {
            d.append(
                .error(
                    .radiusPSKService,
                    "node '\(node.name)': ikev2-psk admits whoever holds the node PSK, and on an 'accounts: radius' node every account holds it (ipsec-xauth-psk and ikev2-psk-eap hand it to the app); that login would pass by tiers, disabling, deletion and device limits. Remove ikev2-psk from this node (staff use ikev2-cert), or offer it on a node without 'accounts: radius'",
                    at: node.location(of: .services)))
        }
        guard let accounts = inventory.accounts else {
            for node in radiusNodes {
                d.append(
                    .error(
                        .accountsMissing,
                        "node '\(node.name)': accounts is radius, but the inventory has no 'accounts:' section naming the RADIUS servers",
                        at: node.location(of: .accounts)))
            }
            return
        }
        if radiusNodes.isEmpty {
            d.append(
                .warning(
                    .accountsUnused,
                    "'accounts:' is written but no node says 'accounts: radius'; no node uses the RADIUS servers",
                    at: accounts.location))
        } else if accounts.radiusDatabase == nil {
            d.append(
                .error(
                    .radiusDatabaseMissing,
                    "'accounts': radius_database is not set; the RADIUS servers need the connection string of the accounts database (env:VAR or file:PATH)",
                    at: accounts.location))
        }
        var seen: [String: SourceLocation] = [:]
        for server in accounts.servers {
            let what = "RADIUS server \(TextCheck.quoted(server.name))"
            if let problem = NameRules.problem(server.name) {
                d.append(.error(.invalidRadiusServer, "\(what): the name \(problem)", at: server.location))
            } else if server.name.lowercased() == "migrations" {
                d.append(
                    .error(
                        .invalidRadiusServer,
                        "\(what): radius/migrations/ holds the database's migrations; name the server otherwise",
                        at: server.location))
            } else if let first = seen[server.name.lowercased()] {
                d.append(
                    .error(
                        .invalidRadiusServer,
                        "\(what): the name differs from another server's only in case; their directories would collide",
                        at: server.location, notes: [.init(location: first, message: "the other server is here")]))
            } else if inventory.nodes.contains(where: { $0.name.lowercased() == server.name.lowercased() }) {
                d.append(
                    .error(
                        .invalidRadiusServer,
                        "\(what): a node has the same name; the Ansible inventory names every host once (use the same machine under two names, or rename one)",
                        at: server.location))
            } else {
                seen[server.name.lowercased()] = server.location
            }
            if let (severity, _, text) = NetworkRules.addressProblem(server.address), severity == .error {
                d.append(
                    .error(
                        .invalidRadiusServer, "\(what): address \(TextCheck.quoted(server.address)) \(text)",
                        at: server.location))
            }
            if server.authPort == server.acctPort {
                d.append(
                    .error(
                        .invalidRadiusServer,
                        "\(what): auth_port and acct_port are both \(server.authPort); RADIUS needs two ports",
                        at: server.location))
            }
        }
        if !radiusNodes.isEmpty && accounts.protection == .none {
            d.append(
                .warning(
                    .radiusCleartext,
                    "'accounts': protection is none, so RADIUS between the nodes and the RADIUS servers travels in clear: anyone on that path reads every account name, the clients' real addresses and the MSCHAPv2 exchange, from which a password's NT hash (enough to log in) is recovered offline; remove it (the default, ipsec, generates an IPsec connection between each node and each RADIUS server) unless the path is protected otherwise, and acknowledge this warning then",
                    at: accounts.location(of: .protection), about: .deployment))
        }
        checkDisconnectFrom(accounts, radiusNodes: radiusNodes, into: &d)
        if !radiusNodes.isEmpty && !accounts.servers.isEmpty && accounts.effectiveDisconnectFrom.isEmpty {
            d.append(
                .error(
                    .disconnectFromEmpty,
                    "'accounts': no RADIUS server is written as an IP address, so no address may send Disconnect-Requests to the nodes; set disconnect_from to the networks 'vpnprov accounts' runs from",
                    at: accounts.location))
        }
    }

    /// `radius_address` (the node's own address towards its RADIUS servers, docs/accounts.md): only on a RADIUS node,
    /// no other node's address (a RADIUS client is known by its address), outside every pool (clients would speak
    /// as the node), and of the family of the servers written as addresses (the node sends from it to them).
    static func checkRadiusAddresses(_ inventory: Inventory, into d: inout [Diagnostic]) {
        /// Every node's address and RADIUS address in canonical form, with whose it is.
        var holders: [[UInt8]: (node: String, what: String)] = [:]
        for node in inventory.nodes {
            if let bytes = IPAddressText.parse(node.address) {
                holders[bytes] = holders[bytes] ?? (node.name, "address")
            }
        }
        for node in inventory.nodes {
            guard let text = node.radiusAddress, let bytes = IPAddressText.parse(text) else { continue }
            let at = node.location(of: .radiusAddress)
            let what = "node '\(node.name)': radius_address \(text)"
            guard node.usesRadius else {
                d.append(
                    .warning(
                        .radiusAddress, "\(what) is unused: the node does not say 'accounts: radius'", at: at,
                        about: .node(node.name)))
                continue
            }
            if let holder = holders[bytes], holder.node != node.name {
                d.append(
                    .error(
                        .radiusAddress,
                        "\(what) is also the \(holder.what) of node '\(holder.node)'; the RADIUS servers know each node by the address its RADIUS comes from",
                        at: at))
            } else {
                holders[bytes] = (node.name, "radius_address")
            }
            let single = CIDR(address: bytes, prefix: bytes.count * 8)
            for other in inventory.nodes {
                for pool in [other.pool, other.pool6].compactMap({ $0 }) where ClientReach.contains(pool, single) {
                    d.append(
                        .error(
                            .radiusAddress,
                            "\(what) lies in the pool \(pool) of node '\(other.name)': a client given that address would speak to the RADIUS servers as the node",
                            at: at))
                }
            }
            let otherFamily = (inventory.accounts?.servers ?? []).filter { server in
                IPAddressText.parse(server.address).map { $0.count != bytes.count } ?? false
            }
            if !otherFamily.isEmpty {
                d.append(
                    .error(
                        .radiusAddress,
                        "\(what) is IPv\(bytes.count == 4 ? 4 : 6) but "
                            + otherFamily.map { "RADIUS server '\($0.name)' is at \($0.address)" }.joined(
                                separator: ", ")
                            + "; the node sends its RADIUS from this address, so both must be of one family",
                        at: at))
            }
        }
    }

    /// Every `disconnect_from` network that is every address of its family, or overlaps the pool of a
    /// RADIUS node (a tunnel client could then send Disconnect-Requests to the node), is an error at
    /// its entry; without `disconnect_from`, a server address in a pool is one at the server.
    static func checkDisconnectFrom(_ accounts: AccountsSettings, radiusNodes: [Node], into d: inout [Diagnostic]) {
        let entries: [(CIDR, SourceLocation)]
        if let networks = accounts.disconnectFrom {
            entries = networks.enumerated().map { index, network in
                (
                    network,
                    index < accounts.disconnectFromLocations.count
                        ? accounts.disconnectFromLocations[index] : accounts.location(of: .disconnectFrom)
                )
            }
        } else {
            entries = accounts.servers.compactMap { server in
                IPAddressText.parse(server.address).map { (CIDR(address: $0, prefix: $0.count * 8), server.location) }
            }
        }
        for (network, location) in entries {
            if network.prefix == 0 {
                d.append(
                    .error(
                        .disconnectFromWide,
                        "'accounts.disconnect_from': \(network) lets every address send Disconnect-Requests to the nodes; the node checks no time stamp, so a captured request could be replayed from anywhere. Name the networks 'vpnprov accounts' runs from",
                        at: location))
                continue
            }
            for node in radiusNodes {
                for (key, pool) in [(InventoryDecoder.NodeKey.pool, node.pool), (.pool6, node.pool6)] {
                    guard let pool, NetworkRules.overlaps(pool, network) else { continue }
                    d.append(
                        .error(
                            .disconnectFromWide,
                            "\(accounts.disconnectFrom == nil ? "'accounts': a RADIUS server's address (the default disconnect_from)" : "'accounts.disconnect_from'"): \(network) overlaps node '\(node.name)''s \(key.rawValue) \(pool); the node's tunnel clients could send it Disconnect-Requests (a captured one replayed ends another account's tunnel). Name only the networks 'vpnprov accounts' runs from",
                            at: location,
                            notes: [.init(location: node.location(of: key), message: "the pool is here")]))
                }
            }
        }
    }
}
