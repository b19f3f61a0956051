import VPNProvYAML

extension InventoryDecoder {
    /// The accounting interval accepted (seconds): strongSwan's Interim-Updates, which also keep the
    /// database's open sessions (and so the device limits) current.
    static let accountingIntervalRange = 30...86_400
    /// The device limits accepted.
    static let deviceLimitRange = 1...100

    /// `accounts: {database, radius_database, secret: gen, accounting_interval, device_limit,
    /// disconnect_from, protection, servers: {NAME: {address, auth_port, acct_port}}, quotas: {TIER: SIZE}}`
    /// (docs/accounts.md).
    func decodeAccounts(_ node: YAMLNode, _ cx: DecodingContext) -> AccountsSettings? {
        guard let entries = cx.mapping(node, "'accounts'", keys: AccountsKey.self) else { return nil }
        var settings = AccountsSettings(servers: [], location: cx.location(node))
        var sawServers = false
        for (key, _, value) in entries {
            let field = "'accounts.\(key.rawValue)'"
            settings.fieldLocations[key] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .database, .radiusDatabase:
                guard let source = cx.secret(value, field) else { continue }
                switch source {
                case .env, .file:
                    if key == .database { settings.database = source } else { settings.radiusDatabase = source }
                case .generate, .literal:
                    cx.error(
                        .invalidValue,
                        "\(field) must be env:VAR or file:PATH: a connection string holds the database password, "
                            + "so it never lives in the inventory", at: value)
                }
            case .secret:
                // Each node's shared secret is generated and kept in the state: one per node, so a
                // leaked secret exposes one node and cannot speak for another.
                if value.scalar != "gen" {
                    if value.scalar.map({ !$0.hasPrefix("env:") && !$0.hasPrefix("file:") }) ?? false {
                        cx.markSecret(value)
                    }
                    cx.error(
                        .invalidValue,
                        "\(field) must be gen: every node gets its own generated RADIUS secret, kept in the state",
                        at: value)
                }
            case .accountingInterval:
                if let n = cx.integer(
                    value, field, minimum: Self.accountingIntervalRange.lowerBound,
                    maximum: Self.accountingIntervalRange.upperBound)
                {
                    settings.accountingInterval = n
                }
            case .deviceLimit:
                if let n = cx.integer(
                    value, field, minimum: Self.deviceLimitRange.lowerBound, maximum: Self.deviceLimitRange.upperBound)
                {
                    settings.deviceLimit = n
                }
            case .disconnectFrom:
                guard let list = cx.stringList(value, field) else { continue }
                var networks: [CIDR] = []
                for (text, item) in list {
                    let single = IPAddressText.parse(text).map { CIDR(address: $0, prefix: $0.count * 8) }
                    if let single {
                        networks.append(single)
                    } else if let network = cx.cidr(item, "\(field) entry", ipv6: text.contains(":")) {
                        networks.append(network)
                    } else {
                        continue
                    }
                    settings.disconnectFromLocations.append(cx.location(item))
                }
                settings.disconnectFrom = networks
            case .protection:
                guard let word = cx.string(value, field) else { continue }
                if let protection = RadiusProtection(rawValue: word) {
                    settings.protection = protection
                } else {
                    cx.error(
                        .invalidValue,
                        "\(field) must be ipsec (the default: RADIUS between nodes and RADIUS servers inside IPsec) or none (in clear, for a path protected otherwise)",
                        at: value)
                }
            case .servers:
                sawServers = true
                settings.servers = decodeRadiusServers(value, cx)
            case .quotas:
                settings.dataQuotas = decodeQuotas(value, cx)
            case .cluster:
                settings.cluster = decodeCluster(value, cx)
            }
        }
        if !sawServers {
            cx.error(
                .missingKey,
                "'accounts': missing required key 'servers' (the RADIUS servers the nodes ask, most preferred first)",
                at: node)
        }
        return settings
    }

    /// `quotas: {TIER: SIZE | none}`: each tier's data per calendar month (UTC), in and out together;
    /// `none` or no entry: unlimited.
    private func decodeQuotas(_ node: YAMLNode, _ cx: DecodingContext) -> [Tier: Int] {
        let tiers = Tier.allCases.map(\.rawValue)
        guard let entries = cx.mapping(node, "'accounts.quotas'", allowed: tiers) else { return [:] }
        var quotas: [Tier: Int] = [:]
        for (name, _, value) in entries {
            let field = "'accounts.quotas.\(name)'"
            guard let tier = Tier(rawValue: name), let text = cx.string(value, field) else { continue }
            if text == "none" { continue }
            switch DataSize.parse(text) {
            case .success(let bytes): quotas[tier] = bytes
            case .failure(let problem):
                cx.error(
                    .invalidValue,
                    "\(field) must be a size (3000000, 500MB, 10GB, 1.5TiB) or none (unlimited), found "
                        + "'\(DecodingContext.printable(String(text.prefix(40))))': \(problem.reason)",
                    at: value)
            }
        }
        return quotas
    }

    private func decodeRadiusServers(_ node: YAMLNode, _ cx: DecodingContext) -> [RadiusServer] {
        guard let list = cx.mapping(node, "'accounts.servers'") else { return [] }
        if list.isEmpty {
            cx.error(.invalidValue, "'accounts.servers' names no server; name at least one", at: node)
        }
        return decodeAddressed(
            list, what: "RADIUS server", keys: RadiusServerKey.self, address: .address,
            why: " (where the nodes send requests)", cx,
            make: { RadiusServer(name: $0, address: "", location: $1) },
            set: { server, key, v, field in
                switch key {
                case .address: break
                case .authPort: server.authPort = cx.integer(v, field, minimum: 1, maximum: 65535) ?? server.authPort
                case .acctPort: server.acctPort = cx.integer(v, field, minimum: 1, maximum: 65535) ?? server.acctPort
                case .region: server.region = cx.string(v, field)
                }
            }, setAddress: { $0.address = $1 })
    }

    /// `accounts.cluster: {hosts: {NAME: {address, region, role: data|monitor}}, port, dbname, tls_dir}`.
    private func decodeCluster(_ node: YAMLNode, _ cx: DecodingContext) -> AccountsCluster? {
        guard let entries = cx.mapping(node, "'accounts.cluster'", keys: DatabaseClusterKey.self) else { return nil }
        var cluster = AccountsCluster(hosts: [], tlsDirectory: "", location: cx.location(node))
        var sawHosts = false
        var sawTLS = false
        for (key, _, value) in entries {
            let field = "'accounts.cluster.\(key.rawValue)'"
            cluster.fieldLocations[key] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .hosts:
                sawHosts = true
                cluster.hosts = decodeDatabaseHosts(value, cx)
            case .port:
                cluster.port = cx.integer(value, field, minimum: 1, maximum: 65535) ?? cluster.port
            case .dbname:
                guard let name = cx.string(value, field) else { continue }
                // A PostgreSQL identifier the keeper, the role and the connection strings take unquoted.
                if let first = name.utf8.first, name.utf8.count <= 63,
                    (first >= 0x61 && first <= 0x7A) || first == UInt8(ascii: "_"),
                    name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F })
                {
                    cluster.databaseName = name
                } else {
                    cx.error(
                        .invalidValue,
                        "\(field) must be a lower-case PostgreSQL name (a-z, 0-9, '_', not starting with a digit, at most 63 characters)",
                        at: value)
                }
            case .tlsDir:
                sawTLS = true
                guard let path = cx.string(value, field) else { continue }
                if !path.hasPrefix("/") || path.contains(where: { $0.isWhitespace || "'\"\\$`".contains($0) }) {
                    cx.error(
                        .invalidValue,
                        "\(field) must be an absolute path without spaces or quotes: the directory, on the machine that runs Ansible and 'vpnprov accounts', of the database's TLS files (ca.crt, <host>.crt and .key, radius.crt and .key, vpnprov.crt and .key)",
                        at: value)
                } else {
                    cluster.tlsDirectory = path
                }
            }
        }
        if !sawHosts {
            cx.error(
                .missingKey,
                "'accounts.cluster': missing required key 'hosts' (the data nodes and the monitor of the accounts database)",
                at: node)
        }
        if !sawTLS {
            cx.error(
                .missingKey,
                "'accounts.cluster': missing required key 'tls_dir' (the directory of the database's TLS certificates and keys: replication and every client authenticate with certificates)",
                at: node)
        }
        return cluster
    }

    private func decodeDatabaseHosts(_ node: YAMLNode, _ cx: DecodingContext) -> [DatabaseHost] {
        guard let list = cx.mapping(node, "'accounts.cluster.hosts'") else { return [] }
        return decodeAddressed(
            list, what: "database host", keys: DatabaseHostKey.self, address: .address, why: "", cx,
            make: { DatabaseHost(name: $0, address: "", location: $1) },
            set: { host, key, v, field in
                switch key {
                case .address: break
                case .region: host.region = cx.string(v, field)
                case .role: host.role = cx.choice(v, field, DatabaseHostRole.self) ?? host.role
                }
            }, setAddress: { $0.address = $1 })
    }

    /// The entries of a `NAME: {address, …}` mapping (the RADIUS servers, the database hosts): each a mapping of
    /// `keys`, decoded by `set`, its required `address` read here (an entry without one is reported and left out).
    private func decodeAddressed<Keys: RawRepresentable & CaseIterable & Equatable, Entry>(
        _ list: [(key: String, keyNode: YAMLNode, value: YAMLNode)], what kind: String, keys: Keys.Type,
        address addressKey: Keys, why: String, _ cx: DecodingContext,
        make: (String, SourceLocation) -> Entry, set: (inout Entry, Keys, YAMLNode, String) -> Void,
        setAddress: (inout Entry, String) -> Void
    ) -> [Entry] where Keys.RawValue == String {
        var entries: [Entry] = []
        for (name, keyNode, value) in list {
            let what = "\(kind) '\(DecodingContext.printable(name))'"
            guard let fields = cx.mapping(value, what, keys: Keys.self) else { continue }
            var entry = make(name, cx.location(keyNode))
            var address: String?
            for (key, _, v) in fields {
                if v.isNull { continue }
                let field = "\(what): '\(key.rawValue)'"
                if key == addressKey { address = cx.string(v, field) } else { set(&entry, key, v, field) }
            }
            guard let address else {
                if !fields.contains(where: { $0.key == addressKey }) {
                    cx.error(.missingKey, "\(what): missing required key 'address'\(why)", at: keyNode)
                }
                continue
            }
            setAddress(&entry, address)
            entries.append(entry)
        }
        return entries
    }
}
