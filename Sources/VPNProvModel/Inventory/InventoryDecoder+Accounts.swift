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
        var servers: [RadiusServer] = []
        for (name, keyNode, value) in list {
            let what = "RADIUS server '\(DecodingContext.printable(name))'"
            guard let fields = cx.mapping(value, what, keys: RadiusServerKey.self) else { continue }
            var server = RadiusServer(name: name, address: "", location: cx.location(keyNode))
            var address: String?
            for (key, _, v) in fields {
                if v.isNull { continue }
                let field = "\(what): '\(key.rawValue)'"
                switch key {
                case .address: address = cx.string(v, field)
                case .authPort: server.authPort = cx.integer(v, field, minimum: 1, maximum: 65535) ?? server.authPort
                case .acctPort: server.acctPort = cx.integer(v, field, minimum: 1, maximum: 65535) ?? server.acctPort
                }
            }
            guard let address else {
                if !fields.contains(where: { $0.key == .address }) {
                    cx.error(
                        .missingKey, "\(what): missing required key 'address' (where the nodes send requests)",
                        at: keyNode)
                }
                continue
            }
            server.address = address
            servers.append(server)
        }
        return servers
    }
}
