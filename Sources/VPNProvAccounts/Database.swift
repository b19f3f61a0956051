internal import CPQ
import Foundation

/// Why a database operation failed. The message never holds the conninfo or a password: libpq's
/// own messages may name the host, port, user and database, and every message is scrubbed of the
/// password and the conninfo text before it is kept (`DatabaseConnection.scrub`).
package struct DatabaseError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The server could not be reached or refused the login.
        case connection
        /// A statement failed (`sqlState` says how).
        case statement
        /// A statement ran longer than the statement timeout.
        case timeout
        /// The database is not what this vpnprov expects (migrations).
        case schema
    }

    package var kind: Kind
    package var message: String
    /// The SQLSTATE code of a failed statement ("23505"), when the server sent one.
    var sqlState: String?

    package init(_ kind: Kind, _ message: String, sqlState: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
    }

    package var description: String { message }

    /// A unique or primary-key constraint was violated.
    var isUniqueViolation: Bool { sqlState == "23505" }
}

/// One connection to PostgreSQL through libpq. Statements with values are parameterized
/// (`PQexecParams`): no value is ever spliced into SQL text. Results are text. Not thread-safe:
/// one connection per command run.
package final class DatabaseConnection {
    private let connection: OpaquePointer
    /// Texts that must never appear in an error message: the conninfo and its password.
    private let secrets: [String]

    /// Default limit of one statement: long enough for a migration under load, short enough that a
    /// locked table does not hang a command.
    static let defaultStatementTimeoutMilliseconds = 30_000
    /// Seconds libpq waits for a server before giving up (or trying the next host), unless the conninfo says.
    static let connectTimeoutSeconds = 10

    /// Connects with `conninfo` (a libpq connection string or `postgresql://` URI).
    package init(conninfo: String, statementTimeoutMilliseconds: Int = defaultStatementTimeoutMilliseconds) throws {
        var secrets = [conninfo]
        secrets += Self.passwords(in: conninfo)
        self.secrets = secrets.filter { !$0.isEmpty }
        // expand_dbname: the first "dbname" value is the whole conninfo; a keyword before it is a default the
        // conninfo may override, one after it overrides the conninfo. target_session_attrs: every action writes
        // (or must read what was just written), so with several hosts the primary is the one to keep. The connect
        // timeout is a default too: a cluster's string says 2 s, which is what a host that does not answer may
        // cost before the next is tried (overridden, the 10 s gave way only to the string's tcp_user_timeout, 5 s).
        let keywords = ["target_session_attrs", "connect_timeout", "dbname", "fallback_application_name"]
        let values = ["read-write", String(Self.connectTimeoutSeconds), conninfo, "vpnprov"]
        let made = Self.withCStrings(keywords) { k in
            Self.withCStrings(values) { v in
                PQconnectdbParams(k, v, 1)
            }
        }
        guard let made else {
            throw DatabaseError(.connection, "cannot connect to the accounts database: out of memory")
        }
        connection = made
        guard PQstatus(connection) == CONNECTION_OK else {
            // deinit finishes the connection (the object is complete here).
            let message = Self.scrub(String(cString: PQerrorMessage(connection)), secrets: self.secrets)
            throw DatabaseError(.connection, "cannot connect to the accounts database: \(message)")
        }
        _ = try query(
            "SELECT set_config('statement_timeout', $1, false)", [String(max(1, statementTimeoutMilliseconds))])
    }

    deinit { PQfinish(connection) }

    /// The value libpq uses for connection option `keyword` (PQconninfo), nil when it has none.
    package func option(_ keyword: String) -> String? {
        guard let options = PQconninfo(connection) else { return nil }
        defer { PQconninfoFree(options) }
        return Self.list(options).first { $0.keyword == keyword }?.value
    }

    /// The keywords and values of a libpq option array (PQconninfo, PQconninfoParse); the caller frees it.
    private static func list(_ options: UnsafeMutablePointer<PQconninfoOption>) -> [(keyword: String, value: String?)] {
        var found: [(keyword: String, value: String?)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            found.append((String(cString: keyword), option.pointee.val.map { String(cString: $0) }))
            option += 1
        }
        return found
    }

    /// Connects like `init`, and while a failover may be under way tries again every second until `wait` has
    /// passed: only for a conninfo that names several hosts (a cluster's data nodes), and only for the failures a
    /// failover causes (every host refused, unreachable or read-only, or starting up). `waiting` is told the first
    /// such failure. A single server that is down fails at once, as before.
    package static func connect(
        conninfo: String, wait: Duration, waiting: (String) -> Void
    ) throws -> DatabaseConnection {
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        let several = hostCount(conninfo) > 1
        var told = false
        while true {
            do {
                return try DatabaseConnection(conninfo: conninfo)
            } catch let error as DatabaseError
                where several && error.kind == .connection && isFailover(error.message) && clock.now < deadline
            {
                if !told {
                    waiting(error.message)
                    told = true
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    /// libpq's messages for the failures a failover causes, per host (libpq 15's fe-connect.c): a host down
    /// ("Connection refused", no route, "timeout expired"), a standby under `target_session_attrs=read-write`
    /// ("session is read-only"), a server starting or stopping (57P03: "the database system is starting up",
    /// "shutting down"), a connection cut while it was made: in TLS ("SSL connection has been closed
    /// unexpectedly", fe-secure-openssl.c) or by the server's process ending ("server closed the connection
    /// unexpectedly", fe-misc.c; seen when the old primary's keeper had restarted it and it was demoted at once).
    static func isFailover(_ message: String) -> Bool {
        [
            "session is read-only", "Connection refused", "timeout expired", "No route to host",
            "is starting up", "is shutting down", "Connection timed out", "closed unexpectedly",
            "closed the connection unexpectedly", "in recovery mode", "not yet accepting connections",
        ].contains { message.contains($0) }
    }

    /// How many hosts `conninfo` names (libpq's parse of its `host` and `hostaddr`); 0 when it does not parse.
    static func hostCount(_ conninfo: String) -> Int {
        var errorMessage: UnsafeMutablePointer<CChar>? = nil
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return 0
        }
        defer { PQconninfoFree(options) }
        var count = 1
        for (keyword, value) in list(options) where keyword == "host" || keyword == "hostaddr" {
            if let value { count = max(count, value.split(separator: ",", omittingEmptySubsequences: false).count) }
        }
        return count
    }

    /// Runs one statement with `$1`, `$2`... bound to `parameters` (nil is SQL NULL) and returns its
    /// rows as text (nil for NULL).
    @discardableResult
    package func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        let result = Self.withOptionalCStrings(parameters) { values in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        return try rows(of: result)
    }

    /// Runs one statement and returns how many rows it changed.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = []) throws -> Int {
        let result = Self.withOptionalCStrings(parameters) { values in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        try check(result)
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs a script of several statements without parameters: the embedded migrations only, whose
    /// text is part of vpnprov (never anything a user typed).
    func executeScript(_ sql: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    private func rows(of result: OpaquePointer?) throws -> [[String?]] {
        defer { PQclear(result) }
        try check(result)
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(rowCount))
        for r in 0..<rowCount {
            var row: [String?] = []
            for c in 0..<columnCount {
                row.append(PQgetisnull(result, r, c) == 1 ? nil : String(cString: PQgetvalue(result, r, c)))
            }
            rows.append(row)
        }
        return rows
    }

    private func check(_ result: OpaquePointer?) throws {
        guard let result else {
            throw DatabaseError(.statement, Self.scrub(String(cString: PQerrorMessage(connection)), secrets: secrets))
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
        let text = primary ?? String(cString: PQresultErrorMessage(result))
        let message = Self.scrub(text, secrets: secrets)
        throw DatabaseError(state == "57014" ? .timeout : .statement, message, sqlState: state)
    }

    /// `text` without any of `secrets`, trimmed, on one line.
    static func scrub(_ text: String, secrets: [String]) -> String {
        var out = text
        for secret in secrets.sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            out = out.replacingOccurrences(of: secret, with: "[hidden]")
        }
        return out.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }

    /// The password values a conninfo holds (keyword `password` or a URI's user:password), as libpq
    /// parses them.
    static func passwords(in conninfo: String) -> [String] {
        var errorMessage: UnsafeMutablePointer<CChar>? = nil
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return []
        }
        defer { PQconninfoFree(options) }
        var found: [String] = []
        for (keyword, value) in list(options) where keyword == "password" {
            guard let text = value else { continue }
            found.append(text)
            // A URI carries it percent-encoded: hide that spelling too.
            if let encoded = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                found.append(encoded)
            }
        }
        return found
    }

    private static func withCStrings<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R
    ) -> R {
        let copies = strings.map { strdup($0) }
        defer { for c in copies { free(c) } }
        var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        pointers.append(nil)
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    private static func withOptionalCStrings<R>(
        _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { for c in copies { free(c) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body(pointers.isEmpty ? nil : $0.baseAddress) }
    }
}
