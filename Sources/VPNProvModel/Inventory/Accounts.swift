import Foundation

// Central accounts (`accounts:`, docs/accounts.md): the nodes that say `accounts: radius` hand their
// password services (EAP and XAuth) to FreeRADIUS servers, which read the accounts from PostgreSQL.

/// Where the password accounts of a node's EAP and XAuth services live.
package enum AccountSource: String, Sendable, Hashable, CaseIterable {
    /// The inventory's `users:` with a password (secrets in the node's secrets.conf).
    case inventory
    /// The RADIUS servers of `accounts:` (strongSwan's eap-radius plugin).
    case radius
}

/// One RADIUS server of `accounts.servers` (FreeRADIUS 3.2).
package struct RadiusServer: Sendable, Hashable {
    /// The name under `servers:`: the output directory `radius/<name>/` and the node's server section.
    package var name: String
    /// Where the nodes send their requests: IPv4, IPv6 or DNS name.
    package var address: String
    package var authPort: Int
    package var acctPort: Int
    /// The region the server is in (a node's `region` names the same): nodes of that region ask it first, and it
    /// asks the accounts database's hosts of that region first.
    package var region: String?
    package var location: SourceLocation

    package init(
        name: String, address: String, authPort: Int = 1812, acctPort: Int = 1813, region: String? = nil,
        location: SourceLocation
    ) {
        self.name = name
        self.address = address
        self.authPort = authPort
        self.acctPort = acctPort
        self.region = region
        self.location = location
    }
}

/// What a host of `accounts.cluster.hosts` is to pg_auto_failover.
package enum DatabaseHostRole: String, Sendable, Hashable, CaseIterable {
    /// A PostgreSQL server holding the accounts: the primary or a standby, as the monitor decides.
    case data
    /// pg_auto_failover's monitor: a small PostgreSQL of its own that watches the data nodes and decides the
    /// failover. Not in the data path.
    case monitor
}

/// One host of the accounts database cluster.
package struct DatabaseHost: Sendable, Hashable {
    /// The name under `hosts:`: an Ansible host of the group vpnprov_accounts_db and pg_auto_failover's node name.
    package var name: String
    /// IPv4, IPv6 or DNS name: where the others and every client connect, and the name its certificate holds.
    package var address: String
    package var region: String?
    package var role: DatabaseHostRole
    package var location: SourceLocation

    package init(
        name: String, address: String, region: String? = nil, role: DatabaseHostRole = .data,
        location: SourceLocation
    ) {
        self.name = name
        self.address = address
        self.region = region
        self.role = role
        self.location = location
    }
}

/// `accounts.cluster`: the accounts database as a pg_auto_failover cluster (docs/accounts.md, "A replicated
/// accounts database"): data nodes in streaming replication and a monitor that promotes a standby when the
/// primary fails. Without it the database is the one server `radius_database` and `database` name.
package struct AccountsCluster: Sendable, Hashable {
    package static let defaultPort = 5432
    package static let defaultDatabaseName = "accounts"

    /// In the order written: among the data nodes of one region, the first is asked first.
    package var hosts: [DatabaseHost]
    package var port: Int
    package var databaseName: String
    /// Absolute path, on the machine that runs Ansible and `vpnprov accounts`, of the directory with the
    /// database's TLS files (the operator's CA: `ca.crt`, `<host>.crt`/`.key`, `radius.crt`/`.key`,
    /// `vpnprov.crt`/`.key`). vpnprov reads none of them: the role copies them, libpq opens them.
    package var tlsDirectory: String
    package var location: SourceLocation
    package var fieldLocations: [InventoryDecoder.DatabaseClusterKey: SourceLocation]

    package init(
        hosts: [DatabaseHost], port: Int = AccountsCluster.defaultPort,
        databaseName: String = AccountsCluster.defaultDatabaseName, tlsDirectory: String, location: SourceLocation,
        fieldLocations: [InventoryDecoder.DatabaseClusterKey: SourceLocation] = [:]
    ) {
        self.hosts = hosts
        self.port = port
        self.databaseName = databaseName
        self.tlsDirectory = tlsDirectory
        self.location = location
        self.fieldLocations = fieldLocations
    }

    package func location(of key: InventoryDecoder.DatabaseClusterKey) -> SourceLocation {
        fieldLocations[key] ?? location
    }

    package var dataNodes: [DatabaseHost] { hosts.filter { $0.role == .data } }
    package var monitors: [DatabaseHost] { hosts.filter { $0.role == .monitor } }
}

/// How RADIUS travels between the nodes and the RADIUS servers (`accounts.protection`).
package enum RadiusProtection: String, Sendable, Hashable, CaseIterable {
    /// An IPsec connection (IKEv2, ESP) between each RADIUS node and each RADIUS server, generated on
    /// both sides; both sides' firewalls drop RADIUS that did not come through it.
    case ipsec
    /// RADIUS in clear (the account name, the client's address and the MSCHAPv2 exchange readable on
    /// the path): only for a path the operator protects otherwise.
    case none
}

/// The inventory's `accounts:` section.
package struct AccountsSettings: Sendable, Hashable {
    /// The port every node's Disconnect-Request (DAE, RFC 5176) listener uses.
    package static let daePort = 3799
    package static let defaultAccountingInterval = 300
    package static let defaultDeviceLimit = 3

    /// libpq connection string `vpnprov accounts` uses (env:/file:); nil: `vpnprov accounts` cannot run.
    package var database: SecretSource?
    /// libpq connection string the RADIUS servers use, written into their configuration (env:/file:).
    package var radiusDatabase: SecretSource?
    /// Seconds between accounting Interim-Updates.
    package var accountingInterval: Int
    /// Seconds without an accounting update after which an open session no longer counts as a device
    /// (its node stopped without sending Stops): two intervals, so one lost Interim-Update is not enough,
    /// and a minute for retransmissions and clocks.
    package static func staleAfter(accountingInterval: Int) -> Int { 2 * accountingInterval + 60 }
    package var staleAfter: Int { Self.staleAfter(accountingInterval: accountingInterval) }
    /// The device limit (Simultaneous-Use) of an account added without one.
    package var deviceLimit: Int
    /// Networks allowed to send Disconnect-Requests to the nodes; nil: the servers' addresses.
    package var disconnectFrom: [CIDR]?
    /// How the node↔RADIUS path is protected.
    package var protection: RadiusProtection
    /// Bytes (in and out together) an account of each tier may move per calendar month (UTC); a tier
    /// without an entry is unlimited (`accounts.quotas`, docs/accounts.md "Data quotas").
    package var dataQuotas: [Tier: Int] = [:]
    /// Where each `disconnectFrom` entry was written (same order).
    var disconnectFromLocations: [SourceLocation] = []
    /// In order of preference: the first is asked first.
    package var servers: [RadiusServer]
    /// The accounts database as a cluster; nil: one server (`radius_database`, `database`).
    package var cluster: AccountsCluster?
    package var location: SourceLocation
    /// Where each key's value was written.
    package var fieldLocations: [InventoryDecoder.AccountsKey: SourceLocation]

    package init(
        database: SecretSource? = nil, radiusDatabase: SecretSource? = nil,
        accountingInterval: Int = AccountsSettings.defaultAccountingInterval,
        deviceLimit: Int = AccountsSettings.defaultDeviceLimit, disconnectFrom: [CIDR]? = nil,
        protection: RadiusProtection = .ipsec, servers: [RadiusServer], location: SourceLocation,
        fieldLocations: [InventoryDecoder.AccountsKey: SourceLocation] = [:]
    ) {
        self.database = database
        self.radiusDatabase = radiusDatabase
        self.accountingInterval = accountingInterval
        self.deviceLimit = deviceLimit
        self.disconnectFrom = disconnectFrom
        self.protection = protection
        self.servers = servers
        self.location = location
        self.fieldLocations = fieldLocations
    }

    /// Best location for a key: its own, else the section's.
    package func location(of key: InventoryDecoder.AccountsKey) -> SourceLocation {
        fieldLocations[key] ?? location
    }

    /// Who may send Disconnect-Requests: as written, else every server written as an IP address.
    package var effectiveDisconnectFrom: [CIDR] {
        if let disconnectFrom { return disconnectFrom }
        return servers.compactMap { server in
            IPAddressText.parse(server.address).map { CIDR(address: $0, prefix: $0.count * 8) }
        }
    }
}

extension Inventory {
    /// The RADIUS servers' names (`radius/<name>/`, Ansible hosts of the group `vpnprov_radius`), in
    /// preference order; empty without `accounts:`.
    package var radiusServerNames: [String] { accounts?.servers.map(\.name) ?? [] }

    /// The accounts database cluster's hosts (Ansible hosts of the group vpnprov_accounts_db); empty without
    /// `accounts.cluster`.
    package var databaseHostNames: [String] { accounts?.cluster?.hosts.map(\.name) ?? [] }

    /// Every host a rollout reaches, as `state/rollout-pending` and the rollout's `--limit` name them:
    /// the RADIUS servers first (deploy/site.yml rolls them out first), then the nodes. The names are
    /// disjoint: a RADIUS server named like a node is a validation error.
    package var rolloutHosts: [String] { radiusServerNames + nodes.map(\.name) }
}

extension Node {
    /// The node's password services authenticate against RADIUS.
    package var usesRadius: Bool { accounts == .radius }
}

extension Node {
    /// The services the inventory's users get on this node: all of them, except on a RADIUS node the
    /// password services, whose accounts live in the accounts database. Sorted, like `services`.
    package var inventoryUserServices: [Service] { usesRadius ? services.filter { !$0.needsPassword } : services }
}

/// A libpq connection string as vpnprov writes it into the RADIUS servers' configuration.
package enum ConnectionString {
    /// Why `value` cannot be written into the RADIUS servers' configuration, or nil.
    ///
    /// FreeRADIUS logs the whole connection string when it connects ("Attempting to connect to
    /// database ..."), so a password in it would end up in the log: the password belongs in a libpq
    /// password file (`passfile=...` in the string, or ~freerad/.pgpass), or the server logs in with a
    /// client certificate (`sslcert=`/`sslkey=`). FreeRADIUS also expands `$` references and treats
    /// quotes and backslashes specially inside its strings.
    package static func problem(_ value: String) -> String? {
        if value.allSatisfy(\.isWhitespace) { return "is empty" }
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "contains a line break or another control character"
        }
        if holdsPassword(value) {
            return "holds a password, which FreeRADIUS would write into its log when it connects; put the password "
                + "in a password file (passfile=PATH, readable only by the freerad user) or use a client certificate "
                + "(sslcert=, sslkey=)"
        }
        if let bad = value.first(where: { "'\"\\$`".contains($0) }) {
            return
                "contains \(bad == "'" ? "\"'\"" : "'\(bad)'"), which a FreeRADIUS configuration string cannot carry "
                + "unchanged"
        }
        return nil
    }

    /// The libpq keywords whose value is a password: the login's, and the client key's passphrase.
    static let passwordKeywords: Set<String> = ["password", "sslpassword"]

    /// A `password=` or `sslpassword=` keyword, or a URI with a password: in its user information
    /// (`postgresql://user:secret@host`) or as a query parameter (`?password=`, `&sslpassword=`; libpq
    /// percent-decodes parameter names, so `%70assword=` counts too).
    static func holdsPassword(_ value: String) -> Bool {
        let lowered = value.lowercased()
        for scheme in ["postgresql://", "postgres://"] where lowered.hasPrefix(scheme) {
            let rest = lowered.dropFirst(scheme.count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") { return true }
            guard let query = rest.firstIndex(of: "?") else { return false }
            return rest[rest.index(after: query)...].split(separator: "&").contains { parameter in
                let name = parameter.prefix { $0 != "=" }
                return passwordKeywords.contains(percentDecoded(String(name)).trimmingCharacters(in: .whitespaces))
            }
        }
        // Keyword form: `keyword = value` pairs separated by white space.
        return lowered.range(of: #"(^|\s)(ssl)?password\s*="#, options: .regularExpression) != nil
    }

    /// `%XX` sequences decoded (invalid ones kept as written), lowercased.
    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%"), i + 2 < utf8.count,
                let byte = UInt8(String(decoding: utf8[(i + 1)...(i + 2)], as: UTF8.self), radix: 16)
            {
                bytes.append(byte)
                i += 3
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self).lowercased()
    }
}

/// An amount of data as the inventory and `vpnprov accounts set-quota` write it: bytes (`3000000`), or a
/// number with a unit, decimal (`kB`, `MB`, `GB`, `TB`: powers of 1000, as networks count) or binary (`KiB`,
/// `MiB`, `GiB`, `TiB`: powers of 1024).
package enum DataSize {
    /// The largest size accepted: 1 EB, far above any month's traffic, and exact in a JSON number.
    package static let maximum = 1_000_000_000_000_000_000
    static let units: [(String, Int)] = [
        ("B", 1), ("kB", 1000), ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000),
        ("TB", 1_000_000_000_000), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
    ]

    /// The bytes `text` says, or why it is not a size.
    package static func parse(_ text: String) -> Result<Int, SizeError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let number = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unitText = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces)
        guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1, !number.hasPrefix("."),
            !number.hasSuffix(".")
        else {
            return .failure(SizeError(text: text, reason: "expected bytes or a number with a unit"))
        }
        guard let unit = unitText.isEmpty ? 1 : units.first(where: { $0.0 == unitText })?.1 else {
            return .failure(
                SizeError(
                    text: text,
                    reason: "unknown unit '\(unitText.prefix(16))'; use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB"))
        }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts[0].count <= 18, let whole = Int(parts[0]) else {
            return .failure(SizeError(text: text, reason: "more than \(format(maximum))"))
        }
        var bytes = whole.multipliedReportingOverflow(by: unit)
        if parts.count == 2 {
            // a fraction of the unit, to the byte (rounded down); more digits than a byte's worth are refused
            let digits = parts[1]
            guard digits.count <= 12, let fraction = Int(digits) else {
                return .failure(SizeError(text: text, reason: "too many decimals"))
            }
            var scale = 1
            for _ in 0..<digits.count { scale *= 10 }
            let part = fraction.multipliedReportingOverflow(by: unit)
            if part.overflow { return .failure(SizeError(text: text, reason: "more than \(format(maximum))")) }
            let added = bytes.partialValue.addingReportingOverflow(part.partialValue / scale)
            bytes = (added.partialValue, bytes.overflow || added.overflow)
        }
        guard !bytes.overflow, bytes.partialValue <= maximum else {
            return .failure(SizeError(text: text, reason: "more than \(format(maximum))"))
        }
        guard bytes.partialValue > 0 else {
            return .failure(SizeError(text: text, reason: "a quota must be more than 0 bytes"))
        }
        return .success(bytes.partialValue)
    }

    /// Why a text is not a size.
    package struct SizeError: Error, Sendable, Equatable {
        package var text: String
        package var reason: String
    }

    /// `bytes` for people: "10 GB", "2.5 MB", "512 B" (decimal units, at most one decimal, rounded down).
    package static func format(_ bytes: Int) -> String {
        let steps: [(String, Int)] = [
            ("EB", 1_000_000_000_000_000_000), ("PB", 1_000_000_000_000_000), ("TB", 1_000_000_000_000),
            ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000),
        ]
        let sign = bytes < 0 ? "-" : ""
        let magnitude = bytes.magnitude
        for (name, size) in steps where magnitude >= UInt(size) {
            let tenths = magnitude / (UInt(size) / 10)
            return sign + (tenths % 10 == 0 ? "\(tenths / 10) \(name)" : "\(tenths / 10).\(tenths % 10) \(name)")
        }
        return "\(bytes) B"
    }
}

/// What the accounts database says about one RADIUS node now (`vpnprov accounts catalogue`): its open
/// sessions, live (updated within `AccountsSettings.staleAfter`) and stale.
package struct NodeActivity: Sendable, Hashable {
    package var liveSessions: Int
    package var staleSessions: Int

    package init(liveSessions: Int, staleSessions: Int) {
        self.liveSessions = liveSessions
        self.staleSessions = staleSessions
    }

    /// Whether the node is up as far as accounting can tell: false when it has open sessions and none was
    /// updated within the window (its accounting stopped: it crashed or lost its RADIUS servers). A node
    /// without open sessions sends no accounting and counts as up.
    package var alive: Bool { liveSessions > 0 || staleSessions == 0 }
}

/// A node the accounts database holds as draining (`vpnprov accounts drain`, table `vpn_node_state`): the RADIUS
/// servers refuse new logins there and its sessions do not count against device limits.
package struct NodeDrain: Sendable, Hashable, Encodable {
    package var node: String
    /// ISO 8601, UTC.
    package var since: String
    /// When its remaining sessions are ended (ISO 8601, UTC).
    package var graceUntil: String

    package init(node: String, since: String, graceUntil: String) {
        self.node = node
        self.since = since
        self.graceUntil = graceUntil
    }
}
