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
        var number = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            number += 1
            let line = bytes[start..<end]
            start = end < bytes.endIndex ? end + 1 : end
            let content = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if content.isEmpty || content.first == UInt8(ascii: "#") || content == [UInt8(ascii: "\r")] { continue }
            let account = try parseLine(Array(line), number: number)
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

    static func parseLine(_ line: [UInt8], number: Int) throws -> ImportedAccount {
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
        } else {
            throw refuse("account '\(username)': needs 'password' or 'nt_hash'")
        }
        return ImportedAccount(line: number, username: username, tier: tier, devices: fields.devices, ntHash: hash)
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
                // Array literals of characters that need no quoting: names are [A-Za-z0-9._@+-], tiers
                // [a-z0-9_], hashes hex, devices digits.
                func array(_ values: [String]) -> String { "{" + values.joined(separator: ",") + "}" }
                let names = array(batch.map(\.username))
                // Each table through its case-folded unique index (migration 2): a scan per batch would make a
                // large import quadratic.
                let folded = array(batch.map { $0.username.lowercased() })
                let existing = try db.query(
                    "SELECT username FROM radcheck WHERE lower(username COLLATE \"C\") = ANY ($1::text[]) "
                        + "UNION SELECT username FROM radusergroup WHERE lower(username COLLATE \"C\") = ANY ($1::text[]) "
                        + "ORDER BY 1 LIMIT 1", [folded])
                if let clash = existing.first?[0] ?? nil {
                    let folded = clash.lowercased()
                    let account = batch.first { $0.username.lowercased() == folded }
                    throw AccountError(
                        "line \(account?.line ?? 0): "
                            + Self.collision(account?.username ?? clash, clash).message)
                }
                let devices = array(batch.map { String($0.devices ?? defaultDevices) })
                try db.execute(
                    "INSERT INTO radcheck (username, attribute, op, value) "
                        + "SELECT u, 'NT-Password', ':=', h FROM unnest($1::text[], $2::text[]) AS t(u, h) "
                        + "UNION ALL SELECT u, 'Simultaneous-Use', ':=', d FROM unnest($1::text[], $3::text[]) AS t(u, d)",
                    [names, array(batch.map(\.ntHash)), devices])
                try db.execute(
                    "INSERT INTO radusergroup (username, groupname, priority) "
                        + "SELECT u, g, 1 FROM unnest($1::text[], $2::text[]) AS t(u, g)",
                    [names, array(batch.map(\.tier))])
                done += batch.count
                progress(done)
            }
        }
    }
}
