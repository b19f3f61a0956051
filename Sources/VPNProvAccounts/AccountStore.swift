import Foundation
import VPNProvCrypto
import VPNProvModel

/// A request the accounts database refuses, in words for the operator (exit 2 on the command line).
package struct AccountError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// One account as `accounts list` shows it.
package struct AccountSummary: Sendable, Equatable, Encodable {
    package var username: String
    /// nil when the account has no tier row (it cannot log in: `vpn_check` says so).
    package var tier: String?
    /// The Simultaneous-Use limit; nil when the row is missing (FreeRADIUS then sets no limit).
    package var devices: Int?
    package var disabled: Bool
    /// Open sessions as the device limit counts them: live ones (`AccountStore.staleAfter`).
    package var openSessions: Int

    package init(username: String, tier: String?, devices: Int?, disabled: Bool, openSessions: Int) {
        self.username = username
        self.tier = tier
        self.devices = devices
        self.disabled = disabled
        self.openSessions = openSessions
    }
}

/// One open session (a radacct row without a stop time).
package struct OpenSession: Sendable, Equatable, Encodable {
    package var username: String
    /// The node it runs on: the NAS-Identifier strongSwan sends, which is the node's name.
    package var node: String?
    package var nasAddress: String
    /// The virtual IP the node gave the client.
    package var framedAddress: String?
    /// ISO 8601, UTC.
    package var started: String?
    /// The last accounting update (Start or Interim-Update), ISO 8601, UTC.
    package var updated: String?
    package var sessionID: String
    /// The tier the session was accepted with (RADIUS Class).
    package var tier: String?
    /// Not updated for longer than `AccountStore.staleAfter`: its node stopped without sending a Stop
    /// (crashed, lost power or its path to the RADIUS servers). A stale session does not count as a device.
    package var stale: Bool = false
}

/// One account's data in the current quota period (`vpn_usage`, migration 5), as `accounts usage` shows it.
package struct AccountUsage: Sendable, Equatable, Encodable {
    package var username: String
    package var tier: String?
    /// The period: the calendar month in UTC, ISO 8601 (`periodEnd` is when the quota resets).
    package var periodStart: String
    package var periodEnd: String
    /// Bytes from the client (into the tunnel) and to it, as the nodes reported them.
    package var octetsIn: Int
    package var octetsOut: Int
    /// nil: unlimited.
    package var quota: Int?
    /// What is left; nil: unlimited, 0: used up.
    package var remaining: Int?
    /// The quota is used up: logins are refused and sessions end until `periodEnd`.
    package var over: Bool
    /// Where the quota comes from: "account" (its own, `set-quota`) or "tier".
    package var quotaSource: String
}

/// The account rows of the database contract (docs/accounts.md, "The database"): what
/// `vpnprov accounts` writes, exactly as the app backend may write them.
package struct AccountStore {
    package let db: DatabaseConnection
    /// Seconds without an accounting update after which an open session is stale (the RADIUS servers'
    /// window, `AccountsSettings.staleAfter`); nil: no session is ever stale.
    package let staleAfter: Int?

    package init(_ db: DatabaseConnection, staleAfter: Int? = nil) {
        self.db = db
        self.staleAfter = staleAfter
    }

    package static let devicesRange = 1...100
    static let minimumPasswordLength = 8
    /// Longest password accepted (MS-CHAPv2 allows 256 UTF-16 units; RADIUS PAP 128 bytes).
    static let maximumPasswordBytes = 128

    /// `[A-Za-z0-9._@+-]{1,64}`, the rule the database's CHECK constraints repeat.
    package static func checkUsername(_ name: String) throws {
        let allowed = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "@")
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "-")
        }
        guard (1...64).contains(name.utf8.count), allowed else {
            throw AccountError(
                "invalid account name '\(name.prefix(80))': 1 to 64 characters of A-Z a-z 0-9 . _ @ + -")
        }
    }

    static func checkDevices(_ devices: Int) throws {
        guard devicesRange.contains(devices) else {
            throw AccountError(
                "invalid device limit \(devices): expected \(devicesRange.lowerBound) to \(devicesRange.upperBound)")
        }
    }

    /// Length rules only; the message never shows the password.
    package static func checkPassword(_ password: String) throws {
        guard password.count >= minimumPasswordLength else {
            throw AccountError("the password is shorter than \(minimumPasswordLength) characters")
        }
        guard password.utf8.count <= maximumPasswordBytes else {
            throw AccountError("the password is longer than \(maximumPasswordBytes) bytes")
        }
        guard !password.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw AccountError("the password holds a control character (a line break?)")
        }
    }

    /// The tiers the database knows, lowest rank first.
    package func tiers() throws -> [(name: String, rank: Int)] {
        try db.query("SELECT name, rank FROM vpn_tier ORDER BY rank").map { ($0[0] ?? "", Int($0[1] ?? "") ?? 0) }
    }

    /// The rank of `tier`; an error listing the known tiers when there is none.
    package func rank(of tier: String) throws -> Int {
        let known = try tiers()
        guard let match = known.first(where: { $0.name == tier }) else {
            throw AccountError(
                "unknown tier '\(tier)': the database has \(known.map(\.name).joined(separator: ", "))")
        }
        return match.rank
    }

    package func exists(_ username: String) throws -> Bool {
        try !db.query(
            "SELECT 1 FROM radcheck WHERE username = $1 UNION ALL SELECT 1 FROM radusergroup WHERE username = $1 LIMIT 1",
            [username]
        ).isEmpty
    }

    /// The existing account whose name strongSwan takes for the same identity as `username` (equal
    /// without regard to ASCII case: identification.c compares FQDN and e-mail identities with
    /// strncasecmp), nil when there is none.
    func collidingAccount(_ username: String) throws -> String? {
        try db.query(
            "SELECT username FROM radcheck WHERE lower(username COLLATE \"C\") = lower($1 COLLATE \"C\") "
                + "UNION SELECT username FROM radusergroup WHERE lower(username COLLATE \"C\") = lower($1 COLLATE \"C\") "
                + "ORDER BY 1 LIMIT 1",
            [username]
        ).first?[0] ?? nil
    }

    /// The refusal of a name that collides with account `existing`.
    static func collision(_ username: String, _ existing: String) -> AccountError {
        existing == username
            ? AccountError("account '\(username)' already exists")
            : AccountError(
                "account name '\(username)' collides with account '\(existing)': strongSwan compares identities "
                    + "without regard to case, so the two would be one peer to a node")
    }

    private func requireAccount(_ username: String) throws {
        try Self.checkUsername(username)
        guard try exists(username) else { throw AccountError("no account '\(username)'") }
    }

    /// Creates the account: its NT hash, device limit and tier, in one transaction.
    package func add(username: String, password: String, tier: String, devices: Int) throws {
        try Self.checkUsername(username)
        try Self.checkDevices(devices)
        try Self.checkPassword(password)
        let hash = try NTHash.hex(password: password)
        try db.transaction {
            _ = try rank(of: tier)
            if let existing = try collidingAccount(username) { throw Self.collision(username, existing) }
            do {
                try db.execute(
                    "INSERT INTO radcheck (username, attribute, op, value) VALUES ($1, 'NT-Password', ':=', $2), "
                        + "($1, 'Simultaneous-Use', ':=', $3)", [username, hash, String(devices)])
                try db.execute(
                    "INSERT INTO radusergroup (username, groupname, priority) VALUES ($1, $2, 1)", [username, tier])
            } catch let error as DatabaseError where error.isUniqueViolation {
                // another writer created it (or a name equal but for case) since the check above
                throw AccountError("account '\(username)' already exists, or one whose name differs only in case")
            }
        }
    }

    /// Replaces the account's password (its NT hash); the message never shows the password.
    package func setPassword(_ username: String, _ password: String) throws {
        try Self.checkPassword(password)
        try requireAccount(username)
        try setCheckItem(username, "NT-Password", try NTHash.hex(password: password))
    }

    /// Moves the account to `tier`; returns its previous tier (nil when it had none).
    @discardableResult
    package func setTier(_ username: String, _ tier: String) throws -> String? {
        try requireAccount(username)
        return try db.transaction {
            _ = try rank(of: tier)
            let previous =
                try db.query(
                    "SELECT groupname FROM radusergroup WHERE username = $1 FOR UPDATE", [username]
                ).first?[0] ?? nil
            if previous == nil {
                try db.execute(
                    "INSERT INTO radusergroup (username, groupname, priority) VALUES ($1, $2, 1)", [username, tier])
            } else {
                try db.execute("UPDATE radusergroup SET groupname = $2 WHERE username = $1", [username, tier])
            }
            return previous
        }
    }

    /// Whether moving from `old` to `new` lowers the account's rank (then its sessions are ended).
    package func isDowngrade(from old: String?, to new: String) throws -> Bool {
        guard let old else { return false }
        return try rank(of: new) < rank(of: old)
    }

    package func setDevices(_ username: String, _ devices: Int) throws {
        try Self.checkDevices(devices)
        try requireAccount(username)
        try setCheckItem(username, "Simultaneous-Use", String(devices))
    }

    /// Marks the account disabled (`Auth-Type := Reject`); false when it already was.
    @discardableResult
    package func disable(_ username: String) throws -> Bool {
        try requireAccount(username)
        return try db.execute(
            "INSERT INTO radcheck (username, attribute, op, value) VALUES ($1, 'Auth-Type', ':=', 'Reject') "
                + "ON CONFLICT (username, attribute) DO UPDATE SET op = ':=', value = 'Reject' "
                + "WHERE radcheck.value IS DISTINCT FROM 'Reject'", [username]) == 1
    }

    /// Removes the disable mark; false when there was none.
    @discardableResult
    package func enable(_ username: String) throws -> Bool {
        try requireAccount(username)
        return try db.execute(
            "DELETE FROM radcheck WHERE username = $1 AND attribute = 'Auth-Type' AND value = 'Reject'", [username])
            > 0
    }

    /// Removes the account's rows (check items, reply items, tier, own quota). Its sessions, authentication
    /// history and usage stay in radacct, radpostauth and vpn_usage_day.
    package func delete(_ username: String) throws {
        try requireAccount(username)
        try db.transaction {
            for table in ["radcheck", "radreply", "radusergroup", "vpn_account_quota"] {
                try db.execute("DELETE FROM \(table) WHERE username = $1", [username])
            }
        }
    }

    /// Gives the account its own quota (`bytes`; nil: unlimited), or with `tier` takes its own away so its
    /// tier's applies again. Returns the quota the account has now (nil: unlimited).
    @discardableResult
    package func setQuota(_ username: String, bytes: Int?, tier: Bool) throws -> Int? {
        try requireAccount(username)
        if let bytes, !(1...DataSize.maximum).contains(bytes) {
            throw AccountError("invalid quota \(bytes): expected 1 to \(DataSize.maximum) bytes")
        }
        return try db.transaction {
            try db.execute(
                "DELETE FROM vpn_account_quota WHERE lower(username COLLATE \"C\") = lower($1 COLLATE \"C\")",
                [username])
            if !tier {
                try db.execute(
                    "INSERT INTO vpn_account_quota (username, data_quota) VALUES ($1, $2::bigint)",
                    [username, bytes.map(String.init)])
            }
            let row = try db.query("SELECT vpn_data_quota($1)", [username]).first
            return row?[0].flatMap { Int($0) }
        }
    }

    /// Writes each tier's quota (nil or absent: unlimited) as the inventory says; returns the tiers whose quota
    /// changed, by name.
    package func setTierQuotas(_ quotas: [String: Int]) throws -> [String] {
        try db.transaction {
            var changed: [String] = []
            for (name, _) in try tiers() {
                let bytes = quotas[name].map(String.init)
                if try db.execute(
                    "UPDATE vpn_tier SET data_quota = $2::bigint WHERE name = $1 AND data_quota IS DISTINCT FROM $2::bigint",
                    [name, bytes]) > 0
                {
                    changed.append(name)
                }
            }
            return changed
        }
    }

    /// Each tier's quota as the database has it (nil: unlimited), lowest rank first.
    package func tierQuotas() throws -> [(name: String, quota: Int?)] {
        try db.query("SELECT name, data_quota FROM vpn_tier ORDER BY rank").map {
            ($0[0] ?? "", $0[1].flatMap { Int($0) })
        }
    }

    /// The usage of one account (it must exist), or of every account by name.
    package func usage(of username: String? = nil) throws -> [AccountUsage] {
        if let username { try requireAccount(username) }
        let rows = try db.query(
            """
            SELECT a.username, (SELECT groupname FROM radusergroup g WHERE g.username = a.username),
                to_char(v.period_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                to_char(v.period_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                v.octets_in, v.octets_out, v.data_quota, v.remaining, v.over,
                EXISTS (SELECT 1 FROM vpn_account_quota q
                    WHERE lower(q.username COLLATE "C") = lower(a.username COLLATE "C"))
            FROM (SELECT username FROM radcheck UNION SELECT username FROM radusergroup) a,
                LATERAL vpn_usage(a.username) v
            WHERE $1::text IS NULL OR a.username = $1
            ORDER BY a.username COLLATE "C"
            """, [username])
        return rows.map { row in
            AccountUsage(
                username: row[0] ?? "", tier: row[1], periodStart: row[2] ?? "", periodEnd: row[3] ?? "",
                octetsIn: Int(row[4] ?? "0") ?? 0, octetsOut: Int(row[5] ?? "0") ?? 0,
                quota: row[6].flatMap { Int($0) },
                remaining: row[7].flatMap { Int($0) }, over: row[8] == "t",
                quotaSource: row[9] == "t" ? "account" : "tier")
        }
    }

    /// One check item per account and attribute (the unique index), replaced in place.
    private func setCheckItem(_ username: String, _ attribute: String, _ value: String) throws {
        try db.execute(
            "INSERT INTO radcheck (username, attribute, op, value) VALUES ($1, $2, ':=', $3) "
                + "ON CONFLICT (username, attribute) DO UPDATE SET op = ':=', value = EXCLUDED.value",
            [username, attribute, value])
    }

    /// The open-session condition of FreeRADIUS's Simultaneous-Use count: no stop time, and started
    /// after the node's last recorded restart.
    static let openSession =
        "a.acctstoptime IS NULL AND (a.acctstarttime > n.reloadtime OR n.reloadtime IS NULL)"

    /// Whether radacct row `a` is live (`vpn_session_live`, migration 4) for the window in query parameter
    /// `window` ("$1"): this store's `staleAfter`.
    static func liveSession(window: String) -> String {
        "vpn_session_live(a.acctupdatetime, a.acctstarttime, \(window)::integer)"
    }

    /// Every account (a name with a password or a tier row), by name.
    package func list() throws -> [AccountSummary] {
        let rows = try db.query(
            """
            SELECT u.username,
                (SELECT groupname FROM radusergroup g WHERE g.username = u.username),
                (SELECT value FROM radcheck c WHERE c.username = u.username AND c.attribute = 'Simultaneous-Use'),
                EXISTS (SELECT 1 FROM radcheck c WHERE c.username = u.username AND c.attribute = 'Auth-Type'
                    AND c.value = 'Reject'),
                (SELECT count(*) FROM radacct a LEFT JOIN nasreload n USING (nasipaddress)
                    WHERE a.username = u.username AND \(Self.openSession) AND \(Self.liveSession(window: "$1")))
            FROM (SELECT username FROM radcheck UNION SELECT username FROM radusergroup) u
            ORDER BY u.username COLLATE "C"
            """, [staleAfter.map(String.init)])
        return rows.map { row in
            AccountSummary(
                username: row[0] ?? "", tier: row[1], devices: row[2].flatMap { Int($0) }, disabled: row[3] == "t",
                openSessions: Int(row[4] ?? "0") ?? 0)
        }
    }

    /// Per node (its NAS-Identifier), its open sessions: live ones and stale ones (for this store's window).
    package func nodeActivity() throws -> [String: NodeActivity] {
        let rows = try db.query(
            """
            SELECT a.nasidentifier, count(*) FILTER (WHERE \(Self.liveSession(window: "$1"))),
                count(*) FILTER (WHERE NOT \(Self.liveSession(window: "$1")))
            FROM radacct a LEFT JOIN nasreload n USING (nasipaddress)
            WHERE \(Self.openSession) AND a.nasidentifier IS NOT NULL
            GROUP BY a.nasidentifier
            """, [staleAfter.map(String.init)])
        var activity: [String: NodeActivity] = [:]
        for row in rows {
            guard let node = row[0] else { continue }
            activity[node] = NodeActivity(
                liveSessions: Int(row[1] ?? "0") ?? 0, staleSessions: Int(row[2] ?? "0") ?? 0)
        }
        return activity
    }

    /// Longest grace period of a drain: a week.
    package static let drainGraceRange = 0...604_800

    /// Marks node `node` draining (`vpn_node_state`) with its remaining sessions ended `grace` seconds from now; a node
    /// already draining keeps its start and gets the new end.
    package func drain(node: String, grace: Int) throws -> NodeDrain {
        guard Self.drainGraceRange.contains(grace) else {
            throw AccountError(
                "invalid grace period \(grace): expected \(Self.drainGraceRange.lowerBound) to "
                    + "\(Self.drainGraceRange.upperBound) seconds")
        }
        let row = try db.query(
            """
            INSERT INTO vpn_node_state AS s (nasidentifier, grace_until)
            VALUES ($1, clock_timestamp() + make_interval(secs => $2::integer))
            ON CONFLICT (nasidentifier) DO UPDATE SET grace_until = greatest(EXCLUDED.grace_until, s.since)
            RETURNING \(Self.drainColumns)
            """, [node, String(grace)])
        guard let first = row.first else { throw AccountError("node '\(node)': the drain was not recorded") }
        return Self.nodeDrain(first)
    }

    /// Ends node `node`'s drain; false when it was not draining.
    @discardableResult
    package func undrain(node: String) throws -> Bool {
        try db.execute("DELETE FROM vpn_node_state WHERE nasidentifier = $1", [node]) > 0
    }

    /// The draining nodes, by name.
    package func drains() throws -> [String: NodeDrain] {
        var out: [String: NodeDrain] = [:]
        for row in try db.query("SELECT \(Self.drainColumns) FROM vpn_node_state ORDER BY nasidentifier") {
            let drain = Self.nodeDrain(row)
            out[drain.node] = drain
        }
        return out
    }

    static let drainColumns = """
        nasidentifier, to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        to_char(grace_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
        """

    static func nodeDrain(_ row: [String?]) -> NodeDrain {
        NodeDrain(node: row[0] ?? "", since: row[1] ?? "", graceUntil: row[2] ?? "")
    }

    /// Open sessions, of one account or of all, oldest first.
    package func sessions(of username: String? = nil) throws -> [OpenSession] {
        if let username { try Self.checkUsername(username) }
        let rows = try db.query(
            """
            SELECT a.username, a.nasidentifier, host(a.nasipaddress), host(a.framedipaddress),
                to_char(a.acctstarttime AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), a.acctsessionid, a.class,
                to_char(a.acctupdatetime AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                NOT \(Self.liveSession(window: "$2"))
            FROM radacct a LEFT JOIN nasreload n USING (nasipaddress)
            WHERE \(Self.openSession) AND ($1::text IS NULL OR a.username = $1)
            ORDER BY a.acctstarttime, a.radacctid
            """, [username, staleAfter.map(String.init)])
        return rows.map { row in
            OpenSession(
                username: row[0] ?? "", node: row[1], nasAddress: row[2] ?? "", framedAddress: row[3], started: row[4],
                updated: row[7], sessionID: row[5] ?? "", tier: row[6], stale: row[8] == "t")
        }
    }
}
