import Testing
import VPNProvModel
import VPNProvTestFixtures

/// The key enums of InventoryKeys.swift: every key of every section, written once on a line of its own with
/// a value that is not its default, is decoded into its own field and its location recorded under its own
/// typed field. A decoder case that read another key's value, or recorded it under another field, fails here;
/// a key without a case does not compile.
@Suite struct InventoryKeyTests {
    typealias Keys = InventoryDecoder

    /// An inventory's text, line by line.
    struct Text {
        var lines: [String] = []
        /// Adds a line; its number (1-based).
        mutating func add(_ line: String) -> Int {
            lines.append(line)
            return lines.count
        }
        var string: String { lines.joined(separator: "\n") + "\n" }
    }

    /// The inventory, and the line each field's value starts on (a block mapping starts at its first key).
    struct Written {
        var text = Text()
        var top: [InventoryField: Int] = [:]
        var node: [NodeField: Int] = [:]
        var user: [UserField: Int] = [:]
        var accounts: [Keys.AccountsKey: Int] = [:]
        var acme: [Keys.ACMEKey: Int] = [:]
        var monitoring: [Keys.MonitoringKey: Int] = [:]
        var handOff: [Keys.HandOffKey: Int] = [:]
    }

    static func appleValue(_ key: Keys.AppleKey) -> String {
        switch key {
        case .onDemand, .excludeLocalNetworks, .pfs: "true"
        case .includeAllNetworks, .crlCheck: "false"
        case .trustedSSIDs: "[home]"
        case .dpd: "high"
        case .disconnectOnIdle: "600"
        }
    }

    /// How a node's key is written in these tests, with a value that is not its default: a value on the key's
    /// line, or a mapping whose keys a node inherits from `defaults:` one by one (`each`) or together (`whole`),
    /// each key with its field.
    enum Sample {
        case value(String)
        case each([(NodeField, String)])
        case whole([(NodeField, String)])
    }

    static func sample(_ key: Keys.NodeKey) -> Sample {
        switch key {
        case .address: .value("n1.vpn.example.com")
        case .id: .value("vpn.example.com")
        case .region: .value("eu-central")
        case .country: .value("NO")
        case .tier: .value("pro")
        case .pool: .value("10.9.0.0/24")
        case .pool6: .value("fd00:9::/112")
        case .services: .value("[ikev2-psk, ikev2-eap]")
        case .psk: .value("env:N1_PSK")
        case .group: .value("acme")
        case .proposals:
            .each(
                Keys.ProposalKey.allCases.map { k in
                    switch k {
                    case .ike: (.proposals(k), "[aes256gcm16-prfsha384-ecp384]")
                    case .esp: (.proposals(k), "[aes128gcm16]")
                    }
                })
        case .dns: .value("[192.0.2.53]")
        case .apple: .each(Keys.AppleKey.allCases.map { (.apple($0), appleValue($0)) })
        case .deploy:
            .each(
                Keys.DeployKey.allCases.map { k in
                    switch k {
                    case .host: (.deploy(k), "n1.admin.example.com")
                    case .port: (.deploy(k), "2222")
                    case .user: (.deploy(k), "ops")
                    case .become: (.deploy(k), "true")
                    }
                })
        case .network:
            .each(
                Keys.NetworkKey.allCases.map { k in
                    switch k {
                    case .uplink: (.network(k), "ens3")
                    case .mss: (.network(k), "1300")
                    case .isolateClients: (.network(k), "false")
                    case .ipsec: (.network(k), "libipsec")
                    case .ipv6: (.network(k), "routed")
                    case .allowPrivate: (.network(k), "[10.20.0.0/16]")
                    }
                })
        case .accounts: .value("radius")
        case .radiusAddress: .value("203.0.113.9")
        case .certificate: .value("acme")
        case .quantumSafe:
            .whole(
                Keys.QuantumSafeKey.allCases.map { k in
                    switch k {
                    case .mlKEM: (.quantumSafe(k), "[mlkem768]")
                    case .classicalFallback: (.quantumSafe(k), "true")
                    case .ppk: (.quantumSafe(k), "optional")
                    }
                })
        case .state: .value("draining")
        }
    }

    static func written() -> Written {
        var w = Written()
        _ = w.text.add("vpnprov: 1")
        w.top[.name] = w.text.add("name: acme")
        _ = w.text.add("pki:")
        w.top[.pkiSection] = w.text.lines.count + 1
        for key in Keys.PKIKey.allCases {
            let line: Int
            switch key {
            case .ca:
                _ = w.text.add("  ca:")
                var first: Int?
                for caKey in Keys.CAKey.allCases {
                    let value =
                        switch caKey {
                        case .name: "Acme Root"
                        case .key: "ecdsa-p384"
                        case .days: "4000"
                        }
                    let at = w.text.add("    \(caKey.rawValue): \(value)")
                    w.top[.ca(caKey)] = at
                    first = first ?? at
                }
                line = first!
            case .serverDays: line = w.text.add("  server_days: 700")
            case .clientDays: line = w.text.add("  client_days: 300")
            case .serverKey: line = w.text.add("  server_key: rsa-3072")
            case .clientKey: line = w.text.add("  client_key: ecdsa-p384")
            case .profileSigning:
                _ = w.text.add("  profile_signing:")
                var first: Int?
                for signingKey in Keys.ProfileSigningKey.allCases {
                    let at = w.text.add("    \(signingKey.rawValue): env:SIGNING_\(signingKey.rawValue.uppercased())")
                    first = first ?? at
                }
                line = first!
            case .crlURL: line = w.text.add("  crl_url: http://crl.example.com/acme.crl")
            }
            w.top[.pki(key)] = line
        }
        _ = w.text.add("secrets:")
        for key in Keys.SecretsKey.allCases {
            let value =
                switch key {
                case .envPrefix: "VPN_"
                case .fileDirectory: "secrets"
                }
            let line = w.text.add("  \(key.rawValue): \(value)")
            w.top[.secrets(key)] = line
            w.top[.secretsSection] = w.top[.secretsSection] ?? line
        }
        _ = w.text.add("accounts:")
        for key in Keys.AccountsKey.allCases {
            let value =
                switch key {
                case .database: "env:VPN_ACCOUNTS_DB"
                case .radiusDatabase: "env:VPN_RADIUS_DB"
                case .secret: "gen"
                case .accountingInterval: "600"
                case .deviceLimit: "5"
                case .disconnectFrom: "[192.0.2.0/24]"
                case .protection: "none"
                case .servers: "{rad-1: {address: 192.0.2.11, auth_port: 11812, acct_port: 11813, region: eu}}"
                case .cluster:
                    "{hosts: {db-1: {address: 192.0.2.31, region: eu}, db-2: {address: 192.0.2.32, region: us, role: data}, db-mon: {address: 192.0.2.30, region: ap, role: monitor}}, port: 6432, dbname: vpnaccounts, tls_dir: /etc/vpnprov-ops/db-tls}"
                case .quotas: "{free: 10GB, pro: none}"
                }
            w.accounts[key] = w.text.add("  \(key.rawValue): \(value)")
        }
        _ = w.text.add("acme:")
        for key in Keys.ACMEKey.allCases {
            let value =
                switch key {
                case .directory: "https://acme.example.com/directory"
                case .email: "ops@example.com"
                case .challenge: "http-01"
                case .key: "ec384"
                case .caBundle: "acme-ca.pem"
                case .renewDays: "20"
                case .roots: "[/etc/ssl/certs/Acme_Root.pem]"
                }
            w.acme[key] = w.text.add("  \(key.rawValue): \(value)")
        }
        _ = w.text.add("monitoring:")
        for key in Keys.MonitoringKey.allCases {
            let value =
                switch key {
                case .from: "[192.0.2.250]"
                case .port: "9200"
                case .userLabels: "true"
                }
            w.monitoring[key] = w.text.add("  \(key.rawValue): \(value)")
        }
        _ = w.text.add("handoff:")
        for key in Keys.HandOffKey.allCases {
            let value =
                switch key {
                case .address: "get.vpn.example.com"
                case .deploy: "{host: 192.0.2.80, port: 2222, user: admin, become: true}"
                case .expires: "36h"
                case .downloads: "2"
                }
            w.handOff[key] = w.text.add("  \(key.rawValue): \(value)")
        }
        _ = w.text.add("nodes:")
        _ = w.text.add("  n1:")
        for key in Keys.NodeKey.allCases {
            let line: Int
            switch Self.sample(key) {
            case .value(let value): line = w.text.add("    \(key.rawValue): \(value)")
            case .each(let entries), .whole(let entries):
                _ = w.text.add("    \(key.rawValue):")
                var first: Int?
                for (field, value) in entries {
                    let at = w.text.add("      \(field.path.split(separator: ".").last!): \(value)")
                    w.node[field] = at
                    first = first ?? at
                }
                line = first!
            }
            if key == .network { w.node[.allowPrivate(0)] = w.node[.network(.allowPrivate)] }
            w.node[.key(key)] = line
        }
        _ = w.text.add("users:")
        _ = w.text.add("  u1:")
        for key in Keys.UserKey.allCases {
            let line: Int
            switch key {
            case .password: line = w.text.add("    password: env:U1_PASSWORD")
            case .cert: line = w.text.add("    cert: true")
            case .id: line = w.text.add("    id: u1@example.com")
            case .nodes: line = w.text.add("    nodes: [n1]")
            case .devices: line = w.text.add("    devices: [linux]")
            case .revoked: line = w.text.add("    revoked: true")
            case .apple:
                _ = w.text.add("    apple:")
                var first: Int?
                for appleKey in Keys.UserAppleKey.allCases.map(\.appleKey) {
                    let at = w.text.add("      \(appleKey.rawValue): \(appleValue(appleKey))")
                    w.user[.apple(appleKey)] = at
                    first = first ?? at
                }
                line = first!
            }
            w.user[.key(key)] = line
        }
        return w
    }

    @Test func everyKeyIsRecordedUnderItsOwnField() throws {
        let w = Self.written()
        let result = decode(w.text.string, file: "keys.yaml")
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
        let inventory = try #require(result.inventory)
        let node = try #require(inventory.nodes.first)
        let user = try #require(inventory.users.first)
        let accounts = try #require(inventory.accounts)
        let acme = try #require(inventory.acme)
        let monitoring = try #require(inventory.monitoring)
        let handOff = try #require(inventory.handOff)

        #expect(Set(w.node.keys) == Set(NodeField.named + [.allowPrivate(0)]))
        #expect(Set(w.user.keys) == Set(UserField.named))
        #expect(Set(w.top.keys) == Set(InventoryField.named))
        #expect(Set(w.accounts.keys) == Set(Keys.AccountsKey.allCases))
        #expect(Set(w.acme.keys) == Set(Keys.ACMEKey.allCases))
        #expect(Set(w.monitoring.keys) == Set(Keys.MonitoringKey.allCases))
        #expect(Set(w.handOff.keys) == Set(Keys.HandOffKey.allCases))

        #expect(node.fieldLocations.mapValues(\.line) == w.node)
        #expect(user.fieldLocations.mapValues(\.line) == w.user)
        #expect(inventory.fieldLocations.mapValues(\.line) == w.top)
        #expect(accounts.fieldLocations.mapValues(\.line) == w.accounts)
        #expect(acme.fieldLocations.mapValues(\.line) == w.acme)
        #expect(monitoring.fieldLocations.mapValues(\.line) == w.monitoring)
        #expect(handOff.fieldLocations.mapValues(\.line) == w.handOff)
        for (field, line) in w.node { #expect(node.location(of: field).line == line, "\(field.path)") }
        for (field, line) in w.user { #expect(user.location(of: field).line == line, "\(field.path)") }
        for (field, line) in w.top { #expect(inventory.location(of: field).line == line, "\(field.path)") }
    }

    @Test func everyKeyIsDecodedIntoItsOwnField() throws {
        let result = decode(Self.written().text.string, file: "keys.yaml")
        let inventory = try #require(result.inventory)
        let node = try #require(inventory.nodes.first)
        let user = try #require(inventory.users.first)

        #expect(inventory.name == "acme")
        let pki = inventory.pki
        #expect(pki.ca == CASettings(name: "Acme Root", key: .ecdsaP384, days: 4000))
        #expect(pki.serverDays == 700 && pki.clientDays == 300)
        #expect(pki.serverKey == .rsa3072 && pki.clientKey == .ecdsaP384)
        #expect(pki.profileSigning?.certificate == .env("SIGNING_CERT"))
        #expect(pki.profileSigning?.key == .env("SIGNING_KEY"))
        #expect(pki.profileSigning?.chain == .env("SIGNING_CHAIN"))
        #expect(pki.crlURL == "http://crl.example.com/acme.crl")
        #expect(inventory.secrets.envPrefixes == ["VPN_"] && inventory.secrets.fileDirectory == "secrets")

        let accounts = try #require(inventory.accounts)
        #expect(accounts.database == .env("VPN_ACCOUNTS_DB") && accounts.radiusDatabase == .env("VPN_RADIUS_DB"))
        #expect(accounts.accountingInterval == 600 && accounts.deviceLimit == 5)
        #expect(accounts.disconnectFrom?.map(\.description) == ["192.0.2.0/24"])
        #expect(accounts.protection == RadiusProtection.none)
        #expect(accounts.dataQuotas == [.free: 10_000_000_000])
        #expect(accounts.servers.map(\.name) == ["rad-1"])
        #expect(accounts.servers.first?.address == "192.0.2.11")
        #expect(accounts.servers.first?.authPort == 11812 && accounts.servers.first?.acctPort == 11813)
        #expect(accounts.servers.first?.region == "eu")
        let cluster = try #require(accounts.cluster)
        #expect(cluster.hosts.map(\.name) == ["db-1", "db-2", "db-mon"])
        #expect(cluster.dataNodes.map(\.address) == ["192.0.2.31", "192.0.2.32"])
        #expect(cluster.monitors.map(\.region) == ["ap"])
        #expect(cluster.port == 6432 && cluster.databaseName == "vpnaccounts")
        #expect(cluster.tlsDirectory == "/etc/vpnprov-ops/db-tls")

        let acme = try #require(inventory.acme)
        #expect(acme.directory == "https://acme.example.com/directory" && acme.email == "ops@example.com")
        #expect(acme.challenge == .http01 && acme.key == .ec384 && acme.caBundle == "acme-ca.pem")
        #expect(acme.renewDays == 20 && acme.roots == ["/etc/ssl/certs/Acme_Root.pem"])

        let monitoring = try #require(inventory.monitoring)
        #expect(monitoring.from.map(\.description) == ["192.0.2.250/32"])
        #expect(monitoring.port == 9200 && monitoring.userLabels)

        let handOff = try #require(inventory.handOff)
        #expect(handOff.address == "get.vpn.example.com" && handOff.lifetime == 36 * 3600 && handOff.downloads == 2)
        #expect(handOff.deploy == DeployTarget(host: "192.0.2.80", port: 2222, user: "admin", become: true))

        #expect(node.address == "n1.vpn.example.com" && node.id == .fqdn("vpn.example.com"))
        #expect(node.region == "eu-central" && node.country == "NO" && node.tier == .pro)
        #expect(node.pool?.description == "10.9.0.0/24" && node.pool6?.description == "fd00:9::/112")
        #expect(node.services == [.ikev2EAP, .ikev2PSK] && node.psk == .env("N1_PSK") && node.group == "acme")
        #expect(node.proposals == Proposals(ike: ["aes256gcm16-prfsha384-ecp384"], esp: ["aes128gcm16"]))
        #expect(node.dns == ["192.0.2.53"])
        var apple = AppleOptions()
        apple.onDemand = true
        apple.trustedSSIDs = ["home"]
        apple.includeAllNetworks = false
        apple.excludeLocalNetworks = true
        apple.pfs = true
        apple.crlCheck = false
        apple.dpd = .high
        apple.disconnectOnIdle = 600
        #expect(node.apple == apple)
        #expect(node.deploy == DeployTarget(host: "n1.admin.example.com", port: 2222, user: "ops", become: true))
        #expect(node.network.uplink == "ens3" && node.network.mss == .fixed(1300))
        #expect(node.network.isolateClients == false && node.network.ipsec == .libipsec)
        #expect(node.network.ipv6 == .routed && node.network.allowPrivate.map(\.description) == ["10.20.0.0/16"])
        #expect(node.accounts == .radius && node.certificate == .acme)

        #expect(user.password == .env("U1_PASSWORD") && user.cert && user.id == .userFQDN("u1@example.com"))
        #expect(user.nodes == ["n1"] && user.devices == [.linux] && user.revoked)
        var userApple = AppleOptions()
        userApple.onDemand = true
        userApple.trustedSSIDs = ["home"]
        userApple.includeAllNetworks = false
        userApple.excludeLocalNetworks = true
        userApple.disconnectOnIdle = 600
        #expect(user.apple == userApple)
    }

    /// Every key of a node written only under `defaults:` reaches the node as if the node wrote it: a value, each key
    /// of a mapping the node inherits key by key (beside the node's own keys of that mapping), and `quantum_safe` as
    /// a whole (the node's own mapping replaces the defaults'). Each sample differs from the key's default, so a key
    /// whose inheritance is missing (the default winning silently) fails here.
    @Test func everyNodeKeyUnderDefaultsReachesEveryNode() throws {
        /// The node `n1` decoded from `defaults:` and its own lines (each at a key's indentation).
        func node(defaults: [String], own: [String]) throws -> Node {
            var lines = ["vpnprov: 1", "name: acme"]
            if !defaults.isEmpty { lines += ["defaults:"] + defaults.map { "  " + $0 } }
            lines += ["nodes:", own.isEmpty ? "  n1: {}" : "  n1:"] + own.map { "    " + $0 }
            let result = decode(lines.joined(separator: "\n") + "\n", file: "defaults.yaml")
            #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
            var node = try #require(result.inventory?.nodes.first)
            node.location = SourceLocation(file: "", line: 0, column: 0)
            node.fieldLocations = [:]
            return node
        }
        func mapping(_ key: Keys.NodeKey, _ entries: [(NodeField, String)]) -> [String] {
            entries.isEmpty
                ? [] : ["\(key.rawValue):"] + entries.map { "  \($0.0.path.split(separator: ".").last!): \($0.1)" }
        }
        for key in Keys.NodeKey.allCases {
            let own = key == .address ? [] : ["address: 192.0.2.1"]
            switch Self.sample(key) {
            case .value(let value):
                let line = "\(key.rawValue): \(value)"
                let written = try node(defaults: [], own: own + [line])
                #expect(try node(defaults: [line], own: own) == written, "\(key.rawValue) under defaults:")
                if key != .address {
                    #expect(try node(defaults: [], own: own) != written, "\(key.rawValue): the sample is the default")
                }
            case .each(let entries):
                let written = try node(defaults: [], own: own + mapping(key, entries))
                for (i, entry) in entries.enumerated() {
                    var others = entries
                    others.remove(at: i)
                    let field = entry.0.path
                    #expect(
                        try node(defaults: mapping(key, [entry]), own: own + mapping(key, others)) == written,
                        "\(field) under defaults:")
                    #expect(
                        try node(defaults: [], own: own + mapping(key, others)) != written,
                        "\(field): the sample is the default")
                }
            case .whole(let entries):
                let written = try node(defaults: [], own: own + mapping(key, entries))
                #expect(
                    try node(defaults: mapping(key, entries), own: own) == written, "\(key.rawValue) under defaults:")
                let first = Array(entries.prefix(1))
                #expect(
                    try node(defaults: mapping(key, entries), own: own + mapping(key, first))
                        == node(defaults: [], own: own + mapping(key, first)),
                    "\(key.rawValue): the node's own mapping replaces the defaults' whole")
            }
        }
    }

    /// The allowed keys of each section, in the order its messages list them and its hints are chosen.
    @Test func theSectionsListTheirKeysInTheirOrder() {
        func names<K: RawRepresentable & CaseIterable>(_: K.Type) -> [String] where K.RawValue == String {
            K.allCases.map(\.rawValue)
        }
        #expect(
            names(Keys.TopLevelKey.self) == [
                "vpnprov", "name", "pki", "secrets", "accounts", "acme", "monitoring", "handoff", "defaults", "nodes",
                "users", "acknowledge",
            ])
        #expect(names(Keys.MonitoringKey.self) == ["from", "port", "user_labels"])
        #expect(names(Keys.HandOffKey.self) == ["address", "deploy", "expires", "downloads"])
        #expect(names(Keys.AcknowledgementKey.self) == ["rule", "node", "user", "service", "reason"])
        #expect(names(Keys.SecretsKey.self) == ["env_prefix", "file_dir"])
        #expect(
            names(Keys.PKIKey.self) == [
                "ca", "server_days", "client_days", "server_key", "client_key", "profile_signing", "crl_url",
            ])
        #expect(names(Keys.ProfileSigningKey.self) == ["cert", "key", "chain"])
        #expect(names(Keys.CAKey.self) == ["name", "key", "days"])
        #expect(
            names(Keys.NodeKey.self) == [
                "address", "id", "region", "country", "tier", "pool", "pool6", "services", "psk", "group", "proposals",
                "dns", "apple", "deploy", "network", "accounts", "radius_address", "certificate", "quantum_safe",
                "state",
            ])
        #expect(names(Keys.NetworkKey.self) == ["uplink", "mss", "isolate_clients", "ipsec", "ipv6", "allow_private"])
        #expect(
            names(Keys.AppleKey.self) == [
                "on_demand", "trusted_ssids", "include_all_networks", "exclude_local_networks", "pfs", "crl_check",
                "dpd", "disconnect_on_idle",
            ])
        #expect(
            names(Keys.UserAppleKey.self) == [
                "on_demand", "trusted_ssids", "include_all_networks", "exclude_local_networks", "disconnect_on_idle",
            ])
        #expect(Keys.UserAppleKey.allCases.map(\.appleKey.rawValue) == names(Keys.UserAppleKey.self))
        #expect(names(Keys.ProposalKey.self) == ["ike", "esp"])
        #expect(names(Keys.DeployKey.self) == ["host", "port", "user", "become"])
        #expect(names(Keys.UserKey.self) == ["password", "cert", "id", "nodes", "devices", "revoked", "apple"])
        #expect(
            names(Keys.AccountsKey.self) == [
                "database", "radius_database", "secret", "accounting_interval", "device_limit", "disconnect_from",
                "protection", "servers", "quotas", "cluster",
            ])
        #expect(names(Keys.RadiusServerKey.self) == ["address", "auth_port", "acct_port", "region"])
        #expect(names(Keys.DatabaseClusterKey.self) == ["hosts", "port", "dbname", "tls_dir"])
        #expect(names(Keys.DatabaseHostKey.self) == ["address", "region", "role"])
        #expect(
            names(Keys.ACMEKey.self) == [
                "directory", "email", "challenge", "key", "ca_bundle", "renew_days", "roots",
            ])
    }

    /// Each field's dotted name is its own: the tests' spellings (FieldNames.swift) and the docs' find one field.
    @Test func fieldPathsAreDistinct() {
        #expect(Set(NodeField.named.map(\.path)).count == NodeField.named.count)
        #expect(Set(UserField.named.map(\.path)).count == UserField.named.count)
        #expect(Set(InventoryField.named.map(\.path)).count == InventoryField.named.count)
        #expect(NodeField("network.allow_private.2") == .allowPrivate(2))
        #expect(InventoryField("pki.ca.days").parent == .pki(.ca))
    }
}
