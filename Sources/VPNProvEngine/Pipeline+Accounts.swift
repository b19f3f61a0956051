import Foundation
import VPNProvAccounts
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// Why a `vpnprov accounts` action stopped; the command line prints the text (a usage hint only for an input it
/// could not use).
package enum AccountsFailure: Error, Sendable, Hashable {
    /// The request is refused (an unknown account or tier, a name the inventory holds, an inventory
    /// without `accounts:`): exit 2, the reason alone.
    case refused(String)
    /// An input the command was given cannot be used (the inventory does not load): a usage error.
    case input(String)
    /// The accounts database, the state or a secret is unusable.
    case environment(String)

    init(_ error: EngineError) {
        switch error {
        case .usage(let message): self = .input(message)
        case .environment(let message): self = .environment(message)
        }
    }

    /// Runs accounts work: refusals (`AccountError`) are the request's, every other failure the environment's.
    static func mapping<T>(_ body: () throws -> T) throws(AccountsFailure) -> T {
        do {
            return try body()
        } catch let error as AccountError {
            throw .refused(error.message)
        } catch let error as AccountsFailure {
            throw error
        } catch {
            throw .environment("\(error)")
        }
    }
}

/// What `vpnprov accounts` needs from the deployment: the accounts database's conninfo, the
/// default device limit and where each node's DAE listener is. `load` is the one place that
/// reads them (docs/accounts.md, "`vpnprov accounts`").
package struct AccountsDeployment: Sendable {
    package var conninfo: String
    package var deviceLimit: Int
    /// Seconds without an accounting update after which a session is stale, as the RADIUS servers count:
    /// from the inventory's `accounts.accounting_interval`, else its default.
    package var staleAfter = AccountsSettings.staleAfter(
        accountingInterval: AccountsSettings.defaultAccountingInterval)
    package var targets: DisconnectTargets
    /// The inventory read (nil with `--database` alone).
    package var inventory: Inventory?
    /// The inventory's identities (folded as strongSwan compares them) and what holds each: `add` refuses
    /// them as account names (RadiusPlan.inventoryIdentities). Empty without an inventory.
    package var inventoryIdentities: [String: String] = [:]

    static let defaultDeviceLimit = 3

    /// The deployment of this run: from the inventory's `accounts:` section and the state's per-node DAE
    /// secrets when `inventory` is given (its display name and path; `stateDirectory` is the state beside
    /// it or `--state`), and `database` (`--database env:VAR|file:PATH`) instead of `accounts.database`
    /// when given. Without an inventory no node can be told to disconnect.
    package static func load(
        database: SecretSource?, inventory file: (display: String, path: String)?, stateDirectory: String?,
        environment: [String: String], currentDirectory: String, output: any RunReporter
    ) throws(AccountsFailure) -> AccountsDeployment {
        var deployment = AccountsDeployment(conninfo: "", deviceLimit: defaultDeviceLimit, targets: .none)
        var source = database
        var settings = SecretSettings()
        var inventoryDirectory = currentDirectory
        if let (display, path) = file {
            let loaded: Pipeline.Loaded
            do {
                loaded = try Pipeline.loadInventory(display: display, path: path, strict: false, output: output)
            } catch {
                throw AccountsFailure(error)
            }
            guard let inventory = loaded.inventory else {
                throw .refused("\(display) has errors; 'vpnprov validate \(display)' lists them")
            }
            guard let accounts = inventory.accounts else {
                throw .refused("\(display) has no 'accounts:' section (docs/accounts.md)")
            }
            inventoryDirectory = (path as NSString).deletingLastPathComponent
            settings = inventory.secrets
            deployment.deviceLimit = accounts.deviceLimit
            deployment.staleAfter = accounts.staleAfter
            deployment.inventory = inventory
            deployment.inventoryIdentities = Dictionary(
                RadiusPlan.inventoryIdentities(in: inventory).map { ($0.identity, $0.owner) },
                uniquingKeysWith: { first, _ in first })
            if source == nil, accounts.database == nil, let cluster = AccountsDatabasePlan.make(inventory) {
                // A cluster without accounts.database: every data node, the operator's certificate login.
                deployment.conninfo = cluster.operatorConninfo
            } else if source == nil {
                guard let database = accounts.database else {
                    throw .refused(
                        "\(display): accounts.database is not set; it names the accounts database's connection string "
                            + "(env:VAR or file:PATH)")
                }
                source = database
            }
            if let stateDirectory {
                deployment.targets = try disconnectTargets(inventory, stateDirectory: stateDirectory)
            }
        }
        guard let source else { return deployment }
        let conninfo: String?
        do {
            conninfo = try SecretResolver.resolve(
                source, what: "accounts database", at: nil, inventoryDirectory: inventoryDirectory,
                environment: environment, settings: settings)
        } catch {
            throw .environment("\(error)")
        }
        guard let conninfo, !conninfo.isEmpty else {
            throw .environment("accounts database: \(source.reference) is empty")
        }
        // A file ends with a newline; the conninfo does not.
        deployment.conninfo = conninfo.trimmingCharacters(in: .newlines)
        return deployment
    }

    /// Every RADIUS node's Disconnect-Request listener: its address on the path to the RADIUS servers
    /// (`radius_address`, else `address`), and its secret from the state.
    static func disconnectTargets(_ inventory: Inventory, stateDirectory: String) throws(AccountsFailure)
        -> DisconnectTargets
    {
        let path = StatePaths(root: stateDirectory).secrets
        let secrets: SecretsFile?
        do {
            secrets = try StateStore.readSecrets(stateDirectory: stateDirectory)
        } catch {
            throw .environment("cannot read the nodes' Disconnect-Request secrets: \(error)")
        }
        guard let secrets else {
            throw .environment(
                "cannot read the nodes' Disconnect-Request secrets: \(path) does not exist; run 'vpnprov generate' first"
            )
        }
        var targets: [String: DisconnectTarget] = [:]
        for node in inventory.nodes where node.usesRadius {
            guard let secret = secrets.daeSecrets?[node.name] else { continue }
            targets[node.name] = DisconnectTarget(
                node: node.name, host: RadiusPlan.pathAddress(of: node), port: AccountsSettings.daePort, secret: secret)
        }
        return DisconnectTargets(targets)
    }
}

/// A tier's data quota as `accounts migrate` reports it (`quota` absent: unlimited).
struct TierQuota: Encodable, Sendable {
    var tier: String
    var quota: Int?
}

/// One `vpnprov accounts` action's work on the accounts database: each method is an action, reports
/// through the run's reporter, and ends with an `Outcome` (`failure` when a node did not confirm a
/// Disconnect-Request) or throws `AccountsFailure`.
package struct AccountsSession {
    package let store: AccountStore
    package let deployment: AccountsDeployment
    let output: any RunReporter
    let now: Date

    /// The embedded migrations (templates/accounts/migrations), in order.
    package static var migrations: [Migration] {
        BuiltinMigrations.files.compactMap { Migration(fileName: $0.name, sql: $0.sql) }
    }

    /// How long an action waits for a cluster's new primary: a failover finishes within 30 s
    /// (docs/accounts.md, "A replicated accounts database").
    static let failoverWait = Duration.seconds(30)

    /// Largest import file read (about four million accounts).
    static let importLimit = 512 << 20

    /// Connects to the deployment's database. Every action but `migrate` needs the tables: with
    /// `requireMigrated` a database that is empty, behind or newer than this vpnprov is refused.
    package static func open(
        _ deployment: AccountsDeployment, requireMigrated: Bool, output: any RunReporter, now: Date
    ) throws(AccountsFailure) -> AccountsSession {
        let db: DatabaseConnection
        do {
            db = try DatabaseConnection.connect(conninfo: deployment.conninfo, wait: failoverWait) { why in
                output.info("accounts database: no primary yet (\(why)); trying again for up to 30 s")
            }
        } catch {
            throw .environment("\(error)")
        }
        let session = AccountsSession(
            store: AccountStore(db, staleAfter: deployment.staleAfter), deployment: deployment, output: output, now: now
        )
        if requireMigrated {
            try AccountsFailure.mapping {
                let version = try Migrator.currentVersion(db)
                try Migrator.requireKnown(version, migrations)
                let latest = migrations.map(\.version).max() ?? 0
                if version < latest {
                    throw AccountError(
                        "the accounts database is at migration \(version), this vpnprov needs "
                            + "\(latest): run 'vpnprov accounts migrate' first")
                }
            }
        }
        return session
    }

    /// `migrate`: applies the embedded migrations the database lacks.
    package func migrate() throws(AccountsFailure) -> Outcome {
        let report = try AccountsFailure.mapping { try Migrator.migrate(store.db, Self.migrations) }
        var text =
            report.applied.isEmpty
            ? "accounts database: up to date (migration \(report.to))\n"
            : "accounts database: applied \(report.applied.joined(separator: ", ")) (migration \(report.from) -> \(report.to))\n"
        var result = MigrationResult(applied: report.applied, version: report.to)
        // The tiers' data quotas come from the inventory (accounts.quotas); with --database alone they stay.
        if let accounts = deployment.inventory?.accounts {
            let quotas = Dictionary(uniqueKeysWithValues: accounts.dataQuotas.map { ($0.key.rawValue, $0.value) })
            let (changed, now) = try AccountsFailure.mapping {
                (try store.setTierQuotas(quotas), try store.tierQuotas())
            }
            result.tierQuotas = now.map { TierQuota(tier: $0.name, quota: $0.quota) }
            let listed = now.map { "\($0.name) \($0.quota.map(DataSize.format) ?? "unlimited")" }.joined(
                separator: ", ")
            text +=
                "data quotas per month: \(listed)"
                + (changed.isEmpty ? " (unchanged)\n" : " (changed: \(changed.joined(separator: ", ")))\n")
        }
        output.record(result)
        output.result(text)
        return .success
    }

    /// `set-quota USER BYTES|none|tier`: the account's own data quota (`none`: unlimited), or its tier's again.
    package func setQuota(_ user: String, _ value: String) throws(AccountsFailure) -> Outcome {
        var bytes: Int?
        switch value {
        case "none", "tier": break
        default:
            switch DataSize.parse(value) {
            case .success(let parsed): bytes = parsed
            case .failure(let problem):
                throw .input(
                    "invalid quota '\(value.prefix(40))': \(problem.reason); expected bytes or a size (500MB, 10GB, "
                        + "1.5TiB), none (unlimited) or tier (the tier's quota)")
            }
        }
        let now = try AccountsFailure.mapping { try store.setQuota(user, bytes: bytes, tier: value == "tier") }
        let shown = now.map { "\(DataSize.format($0)) (\($0) bytes)" } ?? "unlimited"
        output.result("account '\(user)': data quota \(shown) per month" + (value == "tier" ? ", its tier's\n" : "\n"))
        // Over the new quota: its sessions end at their next Interim-Update (the RADIUS servers' Disconnect-Request).
        return .success
    }

    /// `usage [USER]`: the data used in the current period (calendar month, UTC) and what is left.
    package func usage(of user: String?) throws(AccountsFailure) -> Outcome {
        let rows = try AccountsFailure.mapping { try store.usage(of: user) }
        output.record(UsageResult(usage: rows))
        output.result(Self.table(rows))
        return .success
    }

    /// `add USER`: refused when the name is one of the inventory's identities; `devices` nil for the deployment's limit.
    package func add(_ user: String, tier: String, devices: Int?, password: String) throws(AccountsFailure) -> Outcome {
        let devices = devices ?? deployment.deviceLimit
        if let owner = deployment.inventoryIdentities[RadiusPlan.foldedIdentity(user)] {
            throw .refused(
                "account name '\(user)' is \(owner) in the inventory: a node would take the account for that "
                    + "peer (strongSwan compares identities without regard to case); choose another name")
        }
        try AccountsFailure.mapping { try store.add(username: user, password: password, tier: tier, devices: devices) }
        output.record(AccountSummary(username: user, tier: tier, devices: devices, disabled: false, openSessions: 0))
        output.result("added account '\(user)' (tier \(tier), \(Plural.count(devices, "device")))\n")
        return .success
    }

    /// `import FILE`: every account of the file (`path`, shown as `file`), checked line by line (and
    /// against the inventory's identities), then created in one transaction.
    package func importAccounts(file: String, path: String, devices: Int?) throws(AccountsFailure) -> Outcome {
        var bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: Self.importLimit)
        } catch {
            throw .refused("cannot read import file \(file): \(error.reason)")
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        let accounts = try AccountsFailure.mapping { try AccountImport.parse(bytes) }
        for account in accounts {
            if let owner = deployment.inventoryIdentities[RadiusPlan.foldedIdentity(account.username)] {
                throw .refused(
                    "line \(account.line): account name '\(account.username)' is \(owner) in the inventory: a node "
                        + "would take the account for that peer; choose another name")
            }
        }
        let progress = output.progress
        try AccountsFailure.mapping {
            try store.importAccounts(accounts, defaultDevices: devices ?? deployment.deviceLimit) { done in
                progress?.advanced(.importingAccounts, done: done, total: accounts.count)
            }
        }
        progress.finished(.importingAccounts)
        var tiers: [String: Int] = [:]
        for account in accounts { tiers[account.tier, default: 0] += 1 }
        let byTier = tiers.keys.sorted().map { "\($0) \(tiers[$0]!)" }.joined(separator: ", ")
        output.record(ImportResult(imported: accounts.count))
        output.result(
            "imported \(Plural.count(accounts.count, "account"))" + (accounts.isEmpty ? "" : " (\(byTier))") + "\n")
        return .success
    }

    /// `set-password USER`: ends the account's sessions unless `keepSessions`.
    package func setPassword(_ user: String, _ password: String, keepSessions: Bool) throws(AccountsFailure)
        -> Outcome
    {
        try AccountsFailure.mapping { try store.setPassword(user, password) }
        output.result("account '\(user)': password changed\n")
        return keepSessions ? .success : try disconnect(user, reason: "password changed")
    }

    /// `set-tier USER TIER`: a lower tier ends the account's sessions.
    package func setTier(_ user: String, _ tier: String) throws(AccountsFailure) -> Outcome {
        let previous = try AccountsFailure.mapping { try store.setTier(user, tier) }
        output.result("account '\(user)': tier \(previous ?? "(none)") -> \(tier)\n")
        let downgrade = try AccountsFailure.mapping { try store.isDowngrade(from: previous, to: tier) }
        return downgrade ? try disconnect(user, reason: "lower tier") : .success
    }

    /// `set-devices USER N`.
    package func setDevices(_ user: String, _ devices: Int) throws(AccountsFailure) -> Outcome {
        try AccountsFailure.mapping { try store.setDevices(user, devices) }
        output.result("account '\(user)': \(Plural.count(devices, "device")) at once\n")
        return .success
    }

    /// `disable USER`: ends the account's sessions.
    package func disable(_ user: String) throws(AccountsFailure) -> Outcome {
        let changed = try AccountsFailure.mapping { try store.disable(user) }
        output.result("account '\(user)': \(changed ? "disabled" : "already disabled")\n")
        return try disconnect(user, reason: "disabled")
    }

    /// `enable USER`.
    package func enable(_ user: String) throws(AccountsFailure) -> Outcome {
        let changed = try AccountsFailure.mapping { try store.enable(user) }
        output.result("account '\(user)': \(changed ? "enabled" : "was not disabled")\n")
        return .success
    }

    /// `delete USER`: ends the account's sessions.
    package func delete(_ user: String) throws(AccountsFailure) -> Outcome {
        try AccountsFailure.mapping { try store.delete(user) }
        output.result("deleted account '\(user)'\n")
        return try disconnect(user, reason: "deleted")
    }

    /// `list`.
    package func list() throws(AccountsFailure) -> Outcome {
        let accounts = try AccountsFailure.mapping { try store.list() }
        output.record(AccountListResult(accounts: accounts))
        output.result(Self.table(accounts))
        return .success
    }

    /// `sessions [USER]`: the open sessions (of one account).
    package func sessions(of user: String?) throws(AccountsFailure) -> Outcome {
        let sessions = try AccountsFailure.mapping { try store.sessions(of: user) }
        output.record(SessionListResult(sessions: sessions))
        output.result(Self.table(sessions))
        return .success
    }

    /// `catalogue`: the live app catalogue (`Pipeline.liveCatalogue`) of the deployment's inventory.
    package func catalogue() throws(AccountsFailure) -> (document: some Encodable & Sendable, bytes: [UInt8]) {
        guard let inventory = deployment.inventory else {
            throw .refused("'catalogue' needs the inventory (its nodes): give --inventory FILE")
        }
        let activity = try AccountsFailure.mapping { try store.nodeActivity() }
        let drains = try AccountsFailure.mapping { try store.drains() }
        return Pipeline.liveCatalogue(inventory: inventory, activity: activity, drains: drains)
    }

    /// The RADIUS node `name` of the deployment's inventory, for `drain` and `undrain`.
    func radiusNode(_ name: String) throws(AccountsFailure) -> Node {
        guard let inventory = deployment.inventory else {
            throw .refused("'drain' and 'undrain' need the inventory (its nodes): give --inventory FILE")
        }
        guard let node = inventory.nodes.first(where: { $0.name == name }) else {
            let hint = Spelling.closest(to: name, among: inventory.nodes.map(\.name)).map { "; did you mean '\($0)'?" }
            throw .refused("no node '\(name)' in the inventory\(hint ?? "")")
        }
        guard node.usesRadius else {
            throw .refused(
                "node '\(name)' has no 'accounts: radius': its logins do not reach the RADIUS servers, so the database "
                    + "cannot drain it; set its 'state: draining' in the inventory instead (docs/operations.md)")
        }
        return node
    }

    /// `drain NODE --grace S` (docs/accounts.md, "Draining a node"): from now on the RADIUS servers refuse new logins
    /// on the node, its sessions stop counting against device limits and the live catalogue says `draining`; the
    /// node's clients are moved and ended by `deploy/drain.yml`, whose command this prints.
    package func drain(_ name: String, grace: Int) throws(AccountsFailure) -> Outcome {
        let node = try radiusNode(name)
        let drain = try AccountsFailure.mapping { try store.drain(node: node.name, grace: grace) }
        let siblings = deployment.inventory.map { DrainGroups.siblings(of: node, in: $0).map(\.name) } ?? []
        var text =
            "node '\(node.name)': draining since \(drain.since), grace until \(drain.graceUntil); the RADIUS servers "
            + "refuse new logins there\n"
        if node.state != .draining {
            text +=
                "  its siblings are not prepared: without 'state: draining' in the inventory (then generate and roll "
                + "the siblings out) no client can be redirected, and every session is ended at the grace end\n"
        } else if siblings.isEmpty {
            text += "  it has no sibling (same tier and region): every session is ended at the grace end\n"
        } else {
            text += "  IKEv2 clients are redirected to \(siblings.joined(separator: ", "))\n"
        }
        let playbook =
            "ansible-playbook -i deploy/inventory.yml deploy/drain.yml --limit \(node.name) -e vpnprov_drain_grace=\(grace)"
        output.record(DrainResult(drain: drain, siblings: siblings, next: playbook))
        output.result(text)
        output.info("vpnprov: next: move and end its clients with\n  \(playbook)")
        return .success
    }

    /// `undrain NODE`: the node takes new logins again and its sessions count again.
    package func undrain(_ name: String) throws(AccountsFailure) -> Outcome {
        let node = try radiusNode(name)
        let changed = try AccountsFailure.mapping { try store.undrain(node: node.name) }
        output.record(UndrainResult(undrained: changed))
        output.result("node '\(node.name)': \(changed ? "in service again" : "was not draining")\n")
        return .success
    }

    /// `disconnect USER`, and what `disable`, `delete`, `set-password` and a lower tier end with: the user's
    /// sessions on every node that has one; `failure` when a node did not confirm.
    package func disconnect(_ user: String, reason: String?) throws(AccountsFailure) -> Outcome {
        let sessions = try AccountsFailure.mapping { try store.sessions(of: user) }
        let results = Disconnector.disconnect(
            user: user, sessions: sessions, targets: deployment.targets, client: DisconnectClient(), now: now)
        output.record(DisconnectReport(results: results))
        if results.isEmpty {
            output.result("account '\(user)': no open session\n")
            return .success
        }
        var text = ""
        for result in results {
            text += "  \(result.node): \(result.outcome.rawValue)" + (result.detail.map { " (\($0))" } ?? "") + "\n"
        }
        let why = reason.map { " (\($0))" } ?? ""
        let failed = results.contains { !$0.outcome.leftNoSession }
        output.result(
            "account '\(user)': Disconnect-Request\(why) to \(Plural.count(results.count, "node")):\n"
                + text, failing: failed)
        return failed ? .failure : .success
    }

    // MARK: - tables

    static func table(_ accounts: [AccountSummary]) -> String {
        if accounts.isEmpty { return "no accounts\n" }
        let rows = accounts.map {
            [
                $0.username, $0.tier ?? "-", $0.devices.map(String.init) ?? "-", $0.disabled ? "disabled" : "active",
                String($0.openSessions),
            ]
        }
        return columns(["ACCOUNT", "TIER", "DEVICES", "STATUS", "SESSIONS"], rows)
    }

    static func table(_ usage: [AccountUsage]) -> String {
        if usage.isEmpty { return "no accounts\n" }
        let rows = usage.map {
            [
                $0.username, $0.tier ?? "-", DataSize.format($0.octetsIn), DataSize.format($0.octetsOut),
                $0.quota.map(DataSize.format) ?? "unlimited", $0.remaining.map(DataSize.format) ?? "-",
                $0.over ? "over" : "ok", $0.periodEnd,
            ]
        }
        return columns(["ACCOUNT", "TIER", "IN", "OUT", "QUOTA", "LEFT", "STATE", "RESETS"], rows)
    }

    static func table(_ sessions: [OpenSession]) -> String {
        if sessions.isEmpty { return "no open sessions\n" }
        let rows = sessions.map {
            [
                $0.username, $0.node ?? "(\($0.nasAddress))", $0.framedAddress ?? "-", $0.started ?? "-",
                $0.updated ?? "-", $0.stale ? "stale" : "live", $0.tier ?? "-", $0.sessionID,
            ]
        }
        return columns(["ACCOUNT", "NODE", "ADDRESS", "STARTED", "UPDATED", "STATE", "TIER", "SESSION"], rows)
    }

    static func columns(_ header: [String], _ rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { c in all.map { $0[c].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { c in
                c == row.count - 1 ? row[c] : row[c].padding(toLength: widths[c], withPad: " ", startingAt: 0)
            }
            .joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
