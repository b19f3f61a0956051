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
// node offers no PSK-only service"); for the same reason no other node's ikev2-psk may have that PSK
// (`radius-psk-reused`: the same reference or literal here, the same resolved value at generate time).
// `disconnect_from` may not be every address (`/0`) or hold an address a tunnel client can appear as (a
// pool, a node's address or radius_address: `disconnect-from-wide`): the node's firewall is the only thing
// that keeps a captured Disconnect-Request from being replayed, since charon checks no Event-Timestamp.

package enum AccountsRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let radiusNodes = inventory.nodes.filter(\.usesRadius)
        checkRadiusAddresses(inventory, into: &d)
        checkServices(of: radiusNodes, into: &d)
        d += accountPSKReuse(inventory, same: "is also") { node in node.psk.flatMap(SecretRules.reuseKey)?.key }
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
        } else if accounts.radiusDatabase == nil && accounts.cluster == nil {
            d.append(
                .error(
                    .radiusDatabaseMissing,
                    "'accounts': radius_database is not set; the RADIUS servers need the connection string of the accounts database (env:VAR or file:PATH)",
                    at: accounts.location))
        }
        checkServers(accounts, nodes: inventory.nodes, into: &d)
        if !radiusNodes.isEmpty && accounts.protection == .none {
            d.append(
                .warning(
                    .radiusCleartext,
                    "'accounts': protection is none, so RADIUS between the nodes and the RADIUS servers travels in clear: anyone on that path reads every account name, the clients' real addresses and the MSCHAPv2 exchange, from which a password's NT hash (enough to log in) is recovered offline; remove it (the default, ipsec, generates an IPsec connection between each node and each RADIUS server) unless the path is protected otherwise, and acknowledge this warning then",
                    at: accounts.location(of: .protection), about: .deployment))
        }
        checkDisconnectFrom(accounts, nodes: inventory.nodes, into: &d)
        if let cluster = accounts.cluster { checkCluster(cluster, accounts, inventory, into: &d) }
        if !radiusNodes.isEmpty { checkQuotaDisconnect(accounts, into: &d) }
        if !radiusNodes.isEmpty && !accounts.servers.isEmpty && accounts.effectiveDisconnectFrom.isEmpty {
            d.append(
                .error(
                    .disconnectFromEmpty,
                    "'accounts': no RADIUS server is written as an IP address, so no address may send Disconnect-Requests to the nodes; set disconnect_from to the networks 'vpnprov accounts' runs from",
                    at: accounts.location))
        }
    }

    /// What a RADIUS node's services must be: a password service to use the servers for, and no PSK-only
    /// service (whoever holds the node PSK, every account of the node, would pass every account check).
    private static func checkServices(of radiusNodes: [Node], into d: inout [Diagnostic]) {
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
    }

    /// Each RADIUS server: a name that is a directory and a host of its own, a usable address, two ports.
    private static func checkServers(_ accounts: AccountsSettings, nodes: [Node], into d: inout [Diagnostic]) {
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
            } else if nodes.contains(where: { $0.name.lowercased() == server.name.lowercased() }) {
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
    }

    /// A RADIUS server ends the sessions of an account that used up its data quota (docs/accounts.md, "Data
    /// quotas"): the nodes' firewalls must let its Disconnect-Requests in.
    private static func checkQuotaDisconnect(_ accounts: AccountsSettings, into d: inout [Diagnostic]) {
        if !accounts.dataQuotas.isEmpty {
            let allowed = accounts.effectiveDisconnectFrom
            for server in accounts.servers {
                guard let bytes = IPAddressText.parse(server.address) else { continue }
                let inside = allowed.contains { $0.address.count == bytes.count && NetworkRules.contains($0, bytes) }
                if !inside {
                    d.append(
                        .warning(
                            .quotaDisconnectBlocked,
                            "'accounts': quotas are set but RADIUS server '\(server.name)' (\(server.address)) is not in disconnect_from, so the nodes drop the Disconnect-Requests it sends when an account uses up its quota, and such sessions run on until they end; add its address to disconnect_from",
                            at: accounts.location(of: .quotas), about: .deployment))
                }
            }
        }
    }

    /// `accounts.cluster` (docs/accounts.md, "A replicated accounts database"): one monitor, at least two data nodes
    /// (a failover needs a standby to promote), names that are Ansible hosts of their own, addresses of their own (the
    /// monitor on a data node's host would go down with it: a primary that reaches neither the monitor nor its standby
    /// demotes itself), and vpnprov writing the RADIUS servers' connection string itself (`radius_database` beside the
    /// cluster would be a second, conflicting one).
    static func checkCluster(
        _ cluster: AccountsCluster, _ accounts: AccountsSettings, _ inventory: Inventory, into d: inout [Diagnostic]
    ) {
        if accounts.radiusDatabase != nil {
            d.append(
                .error(
                    .accountsCluster,
                    "'accounts': radius_database is written beside 'cluster'; with a cluster vpnprov writes the RADIUS servers' connection string itself (every data node, read-write only, certificate login), so remove radius_database",
                    at: accounts.location(of: .radiusDatabase)))
        }
        let monitors = cluster.monitors
        if monitors.isEmpty && !cluster.hosts.isEmpty {
            d.append(
                .error(
                    .accountsCluster,
                    "'accounts.cluster': no host has 'role: monitor'; pg_auto_failover needs one monitor (a small PostgreSQL of its own, on a host of its own) to decide a failover",
                    at: cluster.location(of: .hosts)))
        }
        for extra in monitors.dropFirst() {
            d.append(
                .error(
                    .accountsCluster,
                    "database host \(TextCheck.quoted(extra.name)): a second monitor; a formation has exactly one (its own standby is not supported by pg_auto_failover)",
                    at: extra.location,
                    notes: [.init(location: monitors[0].location, message: "the monitor is here")]))
        }
        if cluster.dataNodes.count < 2 && !cluster.hosts.isEmpty {
            d.append(
                .error(
                    .accountsCluster,
                    "'accounts.cluster': \(cluster.dataNodes.count == 0 ? "no data node" : "one data node"); a failover needs at least two (a primary and a standby to promote), for one database server use radius_database and database without 'cluster'",
                    at: cluster.location(of: .hosts)))
        }
        let others = Set(inventory.nodes.map { $0.name.lowercased() } + accounts.servers.map { $0.name.lowercased() })
        var seenNames: [String: SourceLocation] = [:]
        var seenAddresses: [[UInt8]: DatabaseHost] = [:]
        for host in cluster.hosts {
            let what = "database host \(TextCheck.quoted(host.name))"
            if let problem = NameRules.problem(host.name) {
                d.append(.error(.accountsCluster, "\(what): the name \(problem)", at: host.location))
            } else if let first = seenNames[host.name.lowercased()] {
                d.append(
                    .error(
                        .accountsCluster, "\(what): the name differs from another host's only in case",
                        at: host.location, notes: [.init(location: first, message: "the other host is here")]))
            } else if others.contains(host.name.lowercased()) {
                d.append(
                    .error(
                        .accountsCluster,
                        "\(what): a node or RADIUS server has the same name; the Ansible inventory names every host once",
                        at: host.location))
            } else {
                seenNames[host.name.lowercased()] = host.location
            }
            if let (severity, _, text) = NetworkRules.addressProblem(host.address), severity == .error {
                d.append(
                    .error(
                        .accountsCluster, "\(what): address \(TextCheck.quoted(host.address)) \(text)",
                        at: host.location))
            } else if let bytes = IPAddressText.parse(host.address) {
                if let other = seenAddresses[bytes] {
                    let monitorInvolved = host.role == .monitor || other.role == .monitor
                    d.append(
                        .error(
                            .accountsCluster,
                            monitorInvolved
                                ? "\(what): the monitor and data node \(TextCheck.quoted(host.role == .monitor ? other.name : host.name)) share the address \(host.address); the monitor must not share a host with a data node (a primary that reaches neither the monitor nor its standby demotes itself, so losing that host would stop the database)"
                                : "\(what): the address \(host.address) is also database host \(TextCheck.quoted(other.name))'s; each data node needs a host of its own",
                            at: host.location,
                            notes: [.init(location: other.location, message: "the other host is here")]))
                } else {
                    seenAddresses[bytes] = host
                }
            }
        }
        if let monitor = monitors.first, let region = monitor.region,
            let sharing = cluster.dataNodes.first(where: { $0.region == region })
        {
            d.append(
                .warning(
                    .accountsClusterRegion,
                    "database host \(TextCheck.quoted(monitor.name)): the monitor is in region \(TextCheck.quoted(region)) with data node \(TextCheck.quoted(sharing.name)); losing that region loses the monitor and a data node together, and the other data node is then not promoted. Put the monitor in a third region",
                    at: monitor.location, about: .deployment))
        }
    }

    /// `radius_address` (the node's own address towards its RADIUS servers, docs/accounts.md): only on a RADIUS node,
    /// a unicast address (not unspecified, "this network", loopback, link-local, multicast, broadcast or reserved,
    /// nor IPv4-mapped: `NetworkRules.reserved4`/`reserved6`; `0.0.0.0` would become `remote_addrs = 0.0.0.0`, any
    /// IPv4 peer, on the servers), no RADIUS server's address, no other node's address (a RADIUS client is known by
    /// its address), outside every pool (clients would speak as the node), and of the family of the servers
    /// written as addresses (the node sends from it to them).
    static func checkRadiusAddresses(_ inventory: Inventory, into d: inout [Diagnostic]) {
        /// Every node's address and RADIUS address in canonical form, with whose it is.
        var holders: [[UInt8]: (node: String, what: String)] = [:]
        for node in inventory.nodes {
            if let bytes = IPAddressText.parse(node.address) {
                holders[bytes] = holders[bytes] ?? (node.name, "address")
            }
        }
        let servers = (inventory.accounts?.servers ?? []).compactMap { server in
            IPAddressText.parse(server.address).map { (name: server.name, bytes: $0) }
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
            if let reserved = (bytes.count == 4 ? NetworkRules.reserved4 : NetworkRules.reserved6).first(where: {
                NetworkRules.contains($0.cidr, bytes)
            }) {
                d.append(
                    .error(
                        .radiusAddress,
                        "\(what) is \(reserved.why): the node's RADIUS and its IPsec to the RADIUS servers start at this address and the servers know the node by it, so it must be one unicast address of the node's own",
                        at: at))
                continue
            }
            if let server = servers.first(where: { $0.bytes == bytes }) {
                d.append(
                    .error(
                        .radiusAddress,
                        "\(what) is the address of RADIUS server '\(server.name)': the node's RADIUS must start at an address of the node's own",
                        at: at))
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

    /// Every `disconnect_from` network that is every address of its family, or holds an address a tunnel client can
    /// appear as (`NetworkRules.clientSources`: any node's pools, its address and radius_address, which it
    /// masquerades its clients to; a tunnel client could then send Disconnect-Requests to the nodes), is an error at
    /// its entry; without `disconnect_from`, such a server address is one at the server.
    static func checkDisconnectFrom(_ accounts: AccountsSettings, nodes: [Node], into d: inout [Diagnostic]) {
        let sources = NetworkRules.clientSources(nodes)
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
            for source in sources where NetworkRules.overlaps(source.network, network) {
                d.append(
                    .error(
                        .disconnectFromWide,
                        "\(accounts.disconnectFrom == nil ? "'accounts': a RADIUS server's address (the default disconnect_from)" : "'accounts.disconnect_from'"): \(network) overlaps node '\(source.node.name)''s \(source.what) (\(NetworkRules.clientReason(source))); a tunnel client could send Disconnect-Requests to the nodes (a captured one replayed ends another account's tunnel). Name only the networks 'vpnprov accounts' runs from, on hosts that are not nodes",
                        at: location,
                        notes: [
                            .init(
                                location: source.node.location(of: source.key),
                                message: "the \(source.key.rawValue) is here")
                        ]))
            }
        }
    }
}

extension AccountsRules {
    /// Whether every app account of `node` holds its PSK: a RADIUS node's `ipsec-xauth-psk` and `ikev2-psk-eap` hand
    /// it to the app (the account's XAuth or EAP round follows it).
    static func handsPSKToAccounts(_ node: Node) -> Bool {
        node.usesRadius && node.psk != nil
            && (node.services.contains(.ipsecXauthPSK) || node.services.contains(.ikev2PSKEAP))
    }

    /// Whether one of the two nodes hands its PSK to app accounts and the other offers `ikev2-psk`, which admits
    /// whoever holds the PSK and asks nothing else: were their PSKs one, every account holder would get a tunnel
    /// without an account check.
    static func opensAccountBypass(_ a: Node, _ b: Node) -> Bool {
        a.name != b.name
            && ((handsPSKToAccounts(a) && b.services.contains(.ikev2PSK))
                || (handsPSKToAccounts(b) && a.services.contains(.ikev2PSK)))
    }

    /// `radius-psk-reused` at every node that offers `ikev2-psk` with the PSK another node hands its app accounts,
    /// two PSKs being one when `key` gives both the same text (nil: unknown, never one with another). The
    /// validator compares them as written (`SecretRules.reuseKey`: "is also"); a run compares the values it resolved
    /// ("holds the same value as"). Messages name a PSK by its reference, never by its value.
    static func accountPSKReuse(_ inventory: Inventory, same: String, key: (Node) -> String?) -> [Diagnostic] {
        // Per key, up to two holders: an ikev2-psk node that holds it itself still meets the other.
        var holders: [String: [Node]] = [:]
        for node in inventory.nodes where handsPSKToAccounts(node) {
            guard let k = key(node), holders[k, default: []].count < 2 else { continue }
            holders[k, default: []].append(node)
        }
        guard !holders.isEmpty else { return [] }
        var out: [Diagnostic] = []
        for node in inventory.nodes where node.psk != nil && node.services.contains(.ikev2PSK) {
            guard let k = key(node), let holder = holders[k]?.first(where: { $0.name != node.name }) else { continue }
            out.append(
                .error(
                    .radiusPSKReused,
                    "node '\(node.name)': its PSK (\(node.psk?.reference ?? "")) \(same) the PSK node '\(holder.name)' hands every app account (\(holder.services.filter { $0 == .ipsecXauthPSK || $0 == .ikev2PSKEAP }.map(\.rawValue).joined(separator: ", ")), accounts: radius); ikev2-psk admits whoever holds it, so every account holder, disabled, deleted or of any tier, would get a tunnel here without an account check. Give this node a PSK of its own (psk: gen)",
                    at: node.location(of: .psk),
                    notes: [
                        .init(
                            location: holder.location(of: .psk),
                            message: "node '\(holder.name)' hands it to its accounts here")
                    ]))
        }
        return out
    }

    /// `radius-psk-reused` by value, once a run has resolved every PSK (`values`, by node name): two references the
    /// validator tells apart (`file:a` and `file:./a`, an `env:` variable and a file, a literal) may still hold one
    /// PSK. What the validator reports (the same reference) is left to it.
    package static func resolvedPSKReuse(_ inventory: Inventory, values: [String: String]) -> [Diagnostic] {
        let written = Set(
            accountPSKReuse(inventory, same: "is also") { node in node.psk.flatMap(SecretRules.reuseKey)?.key }
                .compactMap(\.location))
        return accountPSKReuse(inventory, same: "holds the same value as") { values[$0.name] }
            .filter { $0.location.map { !written.contains($0) } ?? true }
    }
}
