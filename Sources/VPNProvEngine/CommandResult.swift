import VPNProvAccounts
import VPNProvModel
import VPNProvPKI

/// The command-specific keys of the JSON document (docs/json-output.md, docs/json-output.schema.json), beside
/// `vpnprov`, `command`, `ok` and `diagnostics`. Only a result type names one (`CommandResult`), so no command
/// spells a key; `MachineOutputTests` holds the documentation's key table and the schema to these cases.
package enum DocumentKey: String, CaseIterable, CodingKey, Sendable {
    case inventory, summary, drift, revoked, created, status, lifecycle, handoff, handoffEnded, rolledOut
    case migrations, version, account, imported, catalogue, accounts, sessions, disconnect, tierQuotas, usage
    case drain, siblings, next, undrained
}

/// A command's own part of the JSON document: a typed value that writes its keys (`RunReporter.record`).
package protocol CommandResult: Sendable {
    /// Writes the result under its keys.
    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws
}

/// A result that is the whole value of one key.
package protocol KeyedResult: CommandResult, Encodable {
    static var key: DocumentKey { get }
}

extension KeyedResult {
    package func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(self, forKey: Self.key)
    }
}

/// `status`: the state's table (docs/lifecycle.md).
extension StatusReport: KeyedResult {
    package static var key: DocumentKey { .status }
}

/// `accounts add`: the account created.
extension AccountSummary: KeyedResult {
    package static var key: DocumentKey { .account }
}

/// `accounts migrate`: the migration files applied by this run and the database's migration version afterwards.
/// With an inventory, also the tiers' data quotas as the database has them afterwards.
struct MigrationResult: CommandResult {
    var applied: [String]
    var version: Int
    var tierQuotas: [TierQuota]?

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(applied, forKey: .migrations)
        try document.encode(version, forKey: .version)
        try document.encodeIfPresent(tierQuotas, forKey: .tierQuotas)
    }
}

/// `accounts import`: how many accounts the file created.
struct ImportResult: CommandResult {
    var imported: Int

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(imported, forKey: .imported)
    }
}

/// `accounts list`: one entry per account, by name.
struct AccountListResult: CommandResult {
    var accounts: [AccountSummary]

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(accounts, forKey: .accounts)
    }
}

/// `accounts sessions`: one entry per open session, oldest first.
struct SessionListResult: CommandResult {
    var sessions: [OpenSession]

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(sessions, forKey: .sessions)
    }
}

/// `accounts usage`: each account's data use in the current period, its quota and what is left.
struct UsageResult: CommandResult {
    var usage: [AccountUsage]

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(usage, forKey: .usage)
    }
}

/// `accounts drain`: the node's drain as the database holds it, the siblings its IKEv2 clients are redirected to,
/// and the playbook command that moves and ends its clients.
struct DrainResult: CommandResult {
    var drain: NodeDrain
    var siblings: [String]
    var next: String

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(drain, forKey: .drain)
        try document.encode(siblings, forKey: .siblings)
        try document.encode(next, forKey: .next)
    }
}

/// `accounts undrain`: whether the node was draining.
struct UndrainResult: CommandResult {
    var undrained: Bool

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(undrained, forKey: .undrained)
    }
}

/// What the Disconnect-Requests of `accounts disable`, `delete`, `disconnect`, ... did, one entry per node.
struct DisconnectReport: CommandResult {
    var results: [DisconnectResult]

    func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(results, forKey: .disconnect)
    }
}

/// `accounts catalogue`: the live catalogue (docs/formats.md).
package struct CatalogueResult<Document: Encodable & Sendable>: CommandResult {
    package var catalogue: Document

    package init(_ catalogue: Document) { self.catalogue = catalogue }

    package func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(catalogue, forKey: .catalogue)
    }
}

/// `init`: the inventory file written.
package struct CreatedInventory: CommandResult {
    package var file: String

    package init(file: String) { self.file = file }

    package func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
        try document.encode(file, forKey: .created)
    }
}
