import Foundation
import VPNProvCrypto

/// One account of an import file (`vpnprov accounts import`, docs/accounts.md): JSON Lines, one object per
/// line, `{"username": …, "tier": …, "devices": N, "password": …}` or with `"nt_hash"` (32 hex digits,
/// MD4 of the UTF-16LE password, as another RADIUS server or Samba holds it) instead of the password.
package struct ImportedAccount: Sendable, Equatable {
    package var line: Int
    package var username: String
    package var tier: String
    /// nil: the default device limit.
    package var devices: Int?
    /// Upper-case hex, as `NTHash.hex` writes it.
    package var ntHash: String
}

/// Reads an import file. Every refusal names its line and never shows a password.
package enum AccountImport {
    package static let keys: Set<String> = ["username", "tier", "devices", "password", "nt_hash"]

    /// The accounts of `bytes` (blank lines and lines starting with `#` skipped), checked one by one:
    /// the name, the device limit, the password's rules or the hash's form, and no two names that
    /// strongSwan would take for one identity (equal without regard to ASCII case).
    package static func parse(_ bytes: [UInt8]) throws -> [ImportedAccount] {
        var accounts: [ImportedAccount] = []
        var seen: [String: Int] = [:]
        var refusedHashes: RefusedNTHashes?
        var number = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            number += 1
            let line = bytes[start..<end]
            start = end < bytes.endIndex ? end + 1 : end
            let content = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if content.isEmpty || content.first == UInt8(ascii: "#") || content == [UInt8(ascii: "\r")] { continue }
            let account = try parseLine(Array(line), number: number, refusedHashes: &refusedHashes)
            let folded = account.username.lowercased()  // ASCII names: strongSwan's case folding
            if let first = seen[folded] {
                throw AccountError(
                    "line \(number): account '\(account.username)' is already on line \(first) (names are compared "
                        + "without regard to case, as strongSwan compares identities)")
            }
            seen[folded] = number
            accounts.append(account)
        }
        return accounts
    }

    /// A line's object as written: every key it holds, with its value if it has the expected type.
    struct Line: Decodable {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        var keys: [String]
        var strings: [String: String] = [:]
        var devices: Int?
        var devicesMistyped = false

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            keys = container.allKeys.map(\.stringValue)
            for key in container.allKeys {
                if key.stringValue == "devices" {
                    devices = try? container.decode(Int.self, forKey: key)
                    devicesMistyped = devices == nil
                } else if let text = try? container.decode(String.self, forKey: key) {
                    strings[key.stringValue] = text
                }
            }
        }
    }

    /// One line's account. `refusedHashes` is made when the first `nt_hash` needs it, then kept for the next lines.
    static func parseLine(_ line: [UInt8], number: Int, refusedHashes: inout RefusedNTHashes?) throws
        -> ImportedAccount
    {
        func refuse(_ why: String) -> AccountError { AccountError("line \(number): \(why)") }
        let fields: Line
        do {
            fields = try JSONDecoder().decode(Line.self, from: Data(line))
        } catch {
            throw refuse("not a JSON object (one account per line)")
        }
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw refuse("unknown key '\(unknown.prefix(40))': expected \(keys.sorted().joined(separator: ", "))")
        }
        guard let username = fields.strings["username"] else { throw refuse("'username' (a string) is missing") }
        do {
            try AccountStore.checkUsername(username)
        } catch let error as AccountError {
            throw refuse(error.message)
        }
        guard let tier = fields.strings["tier"], !tier.isEmpty else {
            throw refuse("account '\(username)': 'tier' (a string) is missing")
        }
        if fields.devicesMistyped || fields.devices.map({ !AccountStore.devicesRange.contains($0) }) == true {
            throw refuse(
                "account '\(username)': 'devices' must be a whole number from "
                    + "\(AccountStore.devicesRange.lowerBound) to \(AccountStore.devicesRange.upperBound)")
        }
        let hasPassword = fields.keys.contains("password")
        let hasHash = fields.keys.contains("nt_hash")
        let hash: String
        if hasPassword && hasHash {
            throw refuse("account '\(username)': give 'password' or 'nt_hash', not both")
        } else if hasPassword {
            guard let password = fields.strings["password"] else {
                throw refuse("account '\(username)': 'password' must be a string")
            }
            do {
                try AccountStore.checkPassword(password)
            } catch let error as AccountError {
                throw refuse("account '\(username)': \(error.message)")
            }
            hash = try NTHash.hex(password: password)
        } else if hasHash {
            guard let given = fields.strings["nt_hash"], given.utf8.count == 32,
                given.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || (0x61...0x66).contains($0 | 0x20) })
            else { throw refuse("account '\(username)': 'nt_hash' must be 32 hex digits") }
            hash = given.uppercased()
            let refused = try refusedHashes ?? RefusedNTHashes()
            refusedHashes = refused
            if let length = refused.passwordLength(hex: hash) {
                throw refuse(
                    "account '\(username)': 'nt_hash' is the NT hash of "
                        + (length == 0
                            ? "the empty password" : "a password of \(length) character\(length == 1 ? "" : "s")")
                        + ", which 'add' refuses (\(AccountStore.minimumPasswordLength) characters at least)")
            }
        } else {
            throw refuse("account '\(username)': needs 'password' or 'nt_hash'")
        }
        return ImportedAccount(line: number, username: username, tier: tier, devices: fields.devices, ntHash: hash)
    }
}

/// The NT hashes of the passwords `add` refuses that can be listed: the empty password and every password of one to
/// `longest` printable ASCII characters (`add` wants 8 at least). An NT hash is a one-way digest (MD4 over the UTF-16LE
/// password): nothing else about its password can be read from it, neither a length of 4 to 7 characters, a
/// control character, more than 128 bytes nor a common word (docs/accounts.md, "What an nt_hash cannot say").
struct RefusedNTHashes {
    /// 9,121 passwords of two characters and fewer, computed once per import that holds an `nt_hash` (milliseconds).
    /// Three would be 857,375 more MD4 digests per import, seconds, and still leave four to seven unchecked.
    static let longest = 2
    private var lengths: [Digest128: UInt8] = [:]

    struct Digest128: Hashable {
        var high: UInt64
        var low: UInt64

        init?(_ bytes: [UInt8]) {
            guard bytes.count == 16 else { return nil }
            high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    init() throws {
        let printable = (0x20...0x7E).map { String(Unicode.Scalar(UInt8($0))) }
        lengths.reserveCapacity((0...Self.longest).reduce(0) { $0 + Int(pow(Double(printable.count), Double($1))) })
        try add("", length: 0)
        var prefixes = [""]
        for length in 1...Self.longest {
            var longer: [String] = []
            for prefix in prefixes {
                for character in printable {
                    let password = prefix + character
                    try add(password, length: length)
                    if length < Self.longest { longer.append(password) }
                }
            }
            prefixes = longer
        }
    }

    private mutating func add(_ password: String, length: Int) throws {
        guard let digest = Digest128(try NTHash.digest(password: password)) else { return }
        lengths[digest] = UInt8(length)
    }

    /// The length of the listed password whose NT hash is `hex` (32 hex digits), or nil.
    func passwordLength(hex: String) -> Int? {
        var bytes: [UInt8] = []
        var utf8 = hex.utf8.makeIterator()
        while let high = utf8.next(), let low = utf8.next() {
            guard let byte = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return Digest128(bytes).flatMap { lengths[$0] }.map(Int.init)
    }
}

extension AccountStore {
    /// Rows per INSERT of an import.
    static let importBatch = 2000

    /// Creates every account of `accounts` in one transaction: all or none. Refuses (naming the file's line) an
    /// unknown tier and a name that exists already or collides with one without regard to case. `progress` is
    /// called after each batch with the accounts written so far.
    package func importAccounts(
        _ accounts: [ImportedAccount], defaultDevices: Int, progress: (Int) -> Void = { _ in }
    ) throws {
        try Self.checkDevices(defaultDevices)
        try db.transaction {
            let known = Set(try tiers().map(\.name))
            if let unknown = accounts.first(where: { !known.contains($0.tier) }) {
                throw AccountError(
                    "line \(unknown.line): unknown tier '\(unknown.tier)': the database has "
                        + known.sorted().joined(separator: ", "))
            }
            var done = 0
            while done < accounts.count {
                let batch = accounts[done..<min(done + Self.importBatch, accounts.count)]
                // Each table through its case-folded unique index (migration 2): a scan per batch would make a
                // large import quadratic.
                let existing = try db.query(
                    "SELECT username FROM radcheck WHERE lower(username COLLATE \"C\") = ANY ($1::text[]) "
                        + "UNION SELECT username FROM radusergroup WHERE lower(username COLLATE \"C\") = ANY ($1::text[]) "
                        + "ORDER BY 1 LIMIT 1", [Self.arrayLiteral(batch.map { $0.username.lowercased() })])
                if let clash = existing.first?[0] ?? nil {
                    let folded = clash.lowercased()
                    let account = batch.first { $0.username.lowercased() == folded }
                    throw AccountError(
                        "line \(account?.line ?? 0): "
                            + Self.collision(account?.username ?? clash, clash).message)
                }
                try insert(batch, defaultDevices: defaultDevices)
                done += batch.count
                progress(done)
            }
        }
    }

    /// Writes the rows of `batch`. A statement the database refuses (a constraint a DBA added, a row another writer
    /// made meanwhile) is tried again row by row, so that the refusal names the file's line; the transaction is
    /// rolled back either way.
    private func insert(_ batch: ArraySlice<ImportedAccount>, defaultDevices: Int) throws {
        try db.execute("SAVEPOINT vpnprov_import")
        do {
            try insertRows(batch, defaultDevices: defaultDevices)
            try db.execute("RELEASE SAVEPOINT vpnprov_import")
            return
        } catch let error as DatabaseError where error.kind == .statement {
            try db.execute("ROLLBACK TO SAVEPOINT vpnprov_import")
            for index in batch.indices {
                let account = batch[index]
                do {
                    try insertRows(batch[index...index], defaultDevices: defaultDevices)
                } catch let refusal as DatabaseError where refusal.kind == .statement {
                    throw AccountError("line \(account.line): account '\(account.username)': \(refusal.message)")
                }
            }
            throw AccountError(
                "lines \(batch.first?.line ?? 0) to \(batch.last?.line ?? 0): \(error.message)")
        }
    }

    /// The rows of `batch` (radcheck: the NT hash and the device limit; radusergroup: the tier), two statements.
    private func insertRows(_ batch: ArraySlice<ImportedAccount>, defaultDevices: Int) throws {
        let names = Self.arrayLiteral(batch.map(\.username))
        try db.execute(
            "INSERT INTO radcheck (username, attribute, op, value) "
                + "SELECT u, 'NT-Password', ':=', h FROM unnest($1::text[], $2::text[]) AS t(u, h) "
                + "UNION ALL SELECT u, 'Simultaneous-Use', ':=', d FROM unnest($1::text[], $3::text[]) AS t(u, d)",
            [
                names, Self.arrayLiteral(batch.map(\.ntHash)),
                Self.arrayLiteral(batch.map { String($0.devices ?? defaultDevices) }),
            ])
        try db.execute(
            "INSERT INTO radusergroup (username, groupname, priority) "
                + "SELECT u, g, 1 FROM unnest($1::text[], $2::text[]) AS t(u, g)",
            [names, Self.arrayLiteral(batch.map(\.tier))])
    }

    /// A PostgreSQL array literal (the text of a `text[]` parameter) holding `values` as they are: every element
    /// double-quoted, `\\` and `"` escaped. Unquoted, an element spelled `NULL` in any case is the SQL NULL (an
    /// account named `null` would be lost), and white space, commas and braces would split or end it
    /// (PostgreSQL's documentation, "Arrays", array value input).
    static func arrayLiteral(_ values: [String]) -> String {
        var out = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            out += "\""
            for character in value {
                if character == "\\" || character == "\"" { out += "\\" }
                out.append(character)
            }
            out += "\""
        }
        return out + "}"
    }
}
