import Foundation

/// One migration of the accounts database: `templates/accounts/migrations/NNNN-name.sql`.
package struct Migration: Sendable, Hashable {
    package var version: Int
    package var name: String
    package var sql: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// "0001-accounts.sql": the migration's file name.
    package var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "-" + name + ".sql"
    }

    /// A migration from its file name ("0001-accounts.sql") and text; nil when the name is not of that form.
    package init?(fileName: String, sql: String) {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        guard let dash = stem.firstIndex(of: "-"), let version = Int(stem[..<dash]), version > 0 else { return nil }
        let name = String(stem[stem.index(after: dash)...])
        guard !name.isEmpty else { return nil }
        self.init(version: version, name: name, sql: sql)
    }
}

/// What `migrate` did.
package struct MigrationReport: Sendable, Equatable {
    /// The database's version before the run (0: empty).
    package var from: Int
    /// Its version after the run.
    package var to: Int
    /// The migrations applied by this run, in order.
    package var applied: [String]
}

/// Applies the migrations a database lacks, each in one transaction that also records it in
/// `vpnprov_migrations` (every migration file inserts its own row as its last statement, so a DBA
/// who runs the files with psql leaves the same record).
package enum Migrator {
    /// Serializes concurrent runs against one database (a transaction-level advisory lock).
    static let lockKey = "7600201727"

    /// The version the database is at: the highest recorded migration, 0 for a database without
    /// vpnprov's tables. Throws for a database that has FreeRADIUS's tables but no record of
    /// vpnprov's migrations (vpnprov does not adopt a schema it did not create).
    package static func currentVersion(_ db: DatabaseConnection) throws -> Int {
        let rows = try db.query(
            "SELECT to_regclass('vpnprov_migrations') IS NOT NULL, to_regclass('radcheck') IS NOT NULL")
        let hasRecord = rows.first?[0] == "t"
        let hasRadius = rows.first?[1] == "t"
        guard hasRecord else {
            if hasRadius {
                throw DatabaseError(
                    .schema,
                    "the database has FreeRADIUS tables (radcheck) but no vpnprov_migrations table: vpnprov only "
                        + "migrates a database it created from empty (docs/accounts.md, \"Migrations\")")
            }
            return 0
        }
        return Int(try db.query("SELECT coalesce(max(version), 0) FROM vpnprov_migrations").first?[0] ?? "0") ?? 0
    }

    /// Refuses a database newer than the newest of `migrations`: this vpnprov would not know its tables.
    package static func requireKnown(_ version: Int, _ migrations: [Migration]) throws {
        let newest = migrations.map(\.version).max() ?? 0
        if version > newest {
            throw DatabaseError(
                .schema,
                "the accounts database is at migration \(version), but this vpnprov knows migrations up to \(newest): "
                    + "use a vpnprov at least as new as the one that migrated it")
        }
    }

    /// Applies every migration newer than the database, in version order.
    package static func migrate(_ db: DatabaseConnection, _ migrations: [Migration]) throws -> MigrationReport {
        let ordered = migrations.sorted { $0.version < $1.version }
        precondition(
            Set(ordered.map(\.version)).count == ordered.count, "two embedded migrations share a version number")
        let from = try currentVersion(db)
        try requireKnown(from, ordered)
        var applied: [String] = []
        var current = from
        for migration in ordered where migration.version > current {
            let done = try db.transaction { () throws -> Bool in
                try db.query("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
                // Another run may have applied it while this one waited for the lock.
                let now = try currentVersion(db)
                try requireKnown(now, ordered)
                if now >= migration.version { return false }
                try db.executeScript(migration.sql)
                let recorded = try db.query(
                    "SELECT name FROM vpnprov_migrations WHERE version = $1", [String(migration.version)])
                guard recorded.first?[0] == migration.name else {
                    throw DatabaseError(
                        .schema, "migration \(migration.fileName) did not record itself in vpnprov_migrations")
                }
                return true
            }
            if done { applied.append(migration.fileName) }
            current = max(current, migration.version)
        }
        return MigrationReport(from: from, to: try currentVersion(db), applied: applied)
    }
}
