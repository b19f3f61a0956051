import Foundation
import Glibc
import VPNProvAccounts
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// What `vpnprov accounts` needs from the deployment: the accounts database's conninfo, the
/// default device limit and where each node's DAE listener is. `load` is the one place that
/// reads them (docs/accounts.md, "`vpnprov accounts`").
struct AccountsDeployment {
    var conninfo: String
    var deviceLimit: Int
    /// Seconds without an accounting update after which a session is stale, as the RADIUS servers count:
    /// from the inventory's `accounts.accounting_interval`, else its default.
    var staleAfter = AccountsSettings.staleAfter(accountingInterval: AccountsSettings.defaultAccountingInterval)
    var targets: DisconnectTargets
    /// The inventory read (nil with `--database` alone).
    var inventory: Inventory?
    /// The inventory's identities (folded as strongSwan compares them) and what holds each: `add` refuses
    /// them as account names (RadiusPlan.inventoryIdentities). Empty without an inventory.
    var inventoryIdentities: [String: String] = [:]

    static let defaultDeviceLimit = 3

    /// The deployment of this run, from the inventory's `accounts:` section (`--inventory`, else the
    /// default inventory of the directory) and the state's per-node DAE secrets (`--state`, else
    /// `state` beside the inventory). `--database env:VAR|file:PATH` names another conninfo; given
    /// without `--inventory`, no inventory is read (no node can then be told to disconnect).
    static func load(_ arguments: ParsedArguments, _ context: CommandContext) throws(CLIError) -> AccountsDeployment {
        var deployment = AccountsDeployment(conninfo: "", deviceLimit: defaultDeviceLimit, targets: .none)
        var source: SecretSource?
        var settings = SecretSettings()
        var inventoryDirectory = context.currentDirectory
        if let given = arguments.value("database") {
            if given.hasPrefix("env:"), given.count > 4 {
                source = .env(String(given.dropFirst(4)))
            } else if given.hasPrefix("file:"), given.count > 5 {
                source = .file(String(given.dropFirst(5)))
            } else {
                throw CLIError.usage(
                    "invalid value for '--database <source>': expected env:VAR or file:PATH (the conninfo itself "
                        + "may hold a password and never goes on the command line)",
                    command: AccountsCommand.configuration.name)
            }
        }
        if source == nil || arguments.value("inventory") != nil {
            let (display, path) = try CommonOptions.inventory(arguments.value("inventory"), context)
            let loaded = try engine { () throws(EngineError) in
                try Pipeline.loadInventory(display: display, path: path, strict: false, output: context.output)
            }
            guard let inventory = loaded.inventory else {
                throw CLIError.usage(
                    "\(display) has errors; 'vpnprov validate \(display)' lists them",
                    command: AccountsCommand.configuration.name)
            }
            guard let accounts = inventory.accounts else {
                throw CLIError.usage(
                    "\(display) has no 'accounts:' section (docs/accounts.md)",
                    command: AccountsCommand.configuration.name)
            }
            inventoryDirectory = (path as NSString).deletingLastPathComponent
            settings = inventory.secrets
            deployment.deviceLimit = accounts.deviceLimit
            deployment.staleAfter = accounts.staleAfter
            deployment.inventory = inventory
            deployment.inventoryIdentities = Dictionary(
                RadiusPlan.inventoryIdentities(in: inventory).map { ($0.identity, $0.owner) },
                uniquingKeysWith: { first, _ in first })
            if source == nil {
                guard let database = accounts.database else {
                    throw CLIError.usage(
                        "\(display): accounts.database is not set; it names the accounts database's connection string "
                            + "(env:VAR or file:PATH)", command: AccountsCommand.configuration.name)
                }
                source = database
            }
            let state = CommonOptions.stateDirectory(arguments.value("state"), inventoryPath: path, context)
            deployment.targets = try disconnectTargets(inventory, stateDirectory: state)
        }
        guard let source else { return deployment }
        let conninfo: String?
        do {
            conninfo = try SecretResolver.resolve(
                source, what: "accounts database", at: nil, inventoryDirectory: inventoryDirectory,
                environment: context.environment, settings: settings)
        } catch {
            throw CLIError.environment("\(error)")
        }
        guard let conninfo, !conninfo.isEmpty else {
            throw CLIError.environment("accounts database: \(source.reference) is empty")
        }
        // A file ends with a newline; the conninfo does not.
        deployment.conninfo = conninfo.trimmingCharacters(in: .newlines)
        return deployment
    }

    /// Every RADIUS node's Disconnect-Request listener: its address on the path to the RADIUS servers
    /// (`radius_address`, else `address`), and its secret from the state.
    static func disconnectTargets(_ inventory: Inventory, stateDirectory: String) throws(CLIError) -> DisconnectTargets
    {
        let path = StatePaths(root: stateDirectory).secrets
        let secrets: SecretsFile?
        do {
            secrets = try StateStore.readSecrets(stateDirectory: stateDirectory)
        } catch {
            throw CLIError.environment("cannot read the nodes' Disconnect-Request secrets: \(error)")
        }
        guard let secrets else {
            throw CLIError.environment(
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

// MARK: - accounts

struct AccountsCommand: Command {
    static let actions = [
        "migrate", "add", "import", "set-password", "set-tier", "set-devices", "disable", "enable", "delete", "list",
        "sessions", "disconnect", "catalogue",
    ]

    static let configuration = CommandConfiguration(
        name: "accounts",
        abstract: "Manage the central accounts (RADIUS) in the accounts database.",
        discussion: "ACTION is one of: 'migrate' applies the embedded database migrations the database lacks; "
            + "'add USER --tier TIER [--devices N] (--password-file FILE | --password-stdin)' creates an account "
            + "(only its NT hash is stored); 'import FILE [--devices N]' creates every account of a JSON Lines file "
            + "(username, tier, devices, and password or nt_hash per line) in one transaction, all or none; "
            + "'set-password USER (--password-file FILE | --password-stdin) "
            + "[--keep-sessions]' replaces its password and ends its sessions; 'set-tier USER TIER'; "
            + "'set-devices USER N' (1-100 devices at once); "
            + "'disable USER' and 'enable USER'; 'delete USER'; 'list'; 'sessions [USER]' (open sessions); 'disconnect USER'; "
            + "'catalogue' prints the app catalogue with each RADIUS node's sessions, capacity, load and state. "
            + "'disable', 'delete', 'disconnect', 'set-password' and 'set-tier' to a lower tier send a RADIUS "
            + "Disconnect-Request for the user "
            + "to every node with an open session. Passwords are never taken from the command line and never "
            + "printed (docs/accounts.md).",
        arguments: [
            .init(
                "action",
                help:
                    "migrate, add, import, set-password, set-tier, set-devices, disable, enable, delete, list, sessions, "
                    + "disconnect or catalogue."
            ),
            .init(
                "user", help: "The account name: 1 to 64 of A-Z a-z 0-9 . _ @ + - (import: the file).", optional: true),
            .init("value", help: "set-tier: the tier; set-devices: the device limit.", optional: true),
        ],
        options: [
            .init(
                "inventory", value: "file",
                help:
                    "The inventory whose accounts: section names the database and the RADIUS nodes (default: the directory's)."
            ),
            CommonOptions.state,
            .init(
                "database", value: "source",
                help: "Another accounts database conninfo than accounts.database: env:VAR or file:PATH."),
            .init("tier", value: "tier", help: "add: the account's tier (free, pro)."),
            .init(
                "devices", value: "n",
                help:
                    "add, import: how many devices may be connected at once (default: accounts.device_limit, else 3; "
                    + "import: for lines without devices)."),
            .init(
                "password-file", value: "file",
                help: "add, set-password: read the password from this file (first line)."),
            .init("password-stdin", help: "add, set-password: read the password from standard input (first line)."),
            .init(
                "keep-sessions",
                help: "set-password: leave the account's live sessions up (by default they end, so that a reset after "
                    + "a leak locks the old password's holder out)."),
            CommonOptions.format, CommonOptions.quiet,
        ])

    /// Largest password file or standard input read.
    static let passwordInputLimit = 4096

    var action: String
    var user: String?
    var value: String?
    var arguments: ParsedArguments

    init(_ arguments: ParsedArguments) throws(CLIError) {
        self.arguments = arguments
        guard let action = arguments.positionals.first else {
            throw CLIError.usage("missing argument <action>", command: Self.configuration.name)
        }
        guard Self.actions.contains(action) else {
            let hint = Spelling.closest(to: action, among: Self.actions).map { "; did you mean '\($0)'?" } ?? ""
            throw CLIError.usage("unknown action '\(action)'\(hint)", command: Self.configuration.name)
        }
        self.action = action
        user = arguments.positionals.count > 1 ? arguments.positionals[1] : nil
        value = arguments.positionals.count > 2 ? arguments.positionals[2] : nil
    }

    /// How many positionals after the action each action takes (user, value), and its own options.
    static let shapes: [String: (positionals: ClosedRange<Int>, options: Set<String>)] = [
        "migrate": (0...0, []),
        "add": (1...1, ["tier", "devices", "password-file", "password-stdin"]),
        "import": (1...1, ["devices"]),
        "set-password": (1...1, ["password-file", "password-stdin", "keep-sessions"]),
        "set-tier": (2...2, []),
        "set-devices": (2...2, []),
        "disable": (1...1, []),
        "enable": (1...1, []),
        "delete": (1...1, []),
        "list": (0...0, []),
        "sessions": (0...1, []),
        "disconnect": (1...1, []),
        "catalogue": (0...0, []),
    ]

    func validate(_ context: CommandContext) throws(CLIError) {
        let shape = Self.shapes[action]!
        let given = arguments.positionals.count - 1
        if given < shape.positionals.lowerBound {
            let missing = given == 0 ? "<user>" : "<value>"
            throw CLIError.usage("'\(action)' needs \(missing)", command: Self.configuration.name)
        }
        if given > shape.positionals.upperBound {
            let extra = arguments.positionals[shape.positionals.upperBound + 1]
            if Self.readsPassword(action) && shape.positionals.upperBound + 1 == 2 {
                throw CLIError.usage(
                    "'\(action)' takes no password argument: use --password-file FILE or --password-stdin "
                        + "(a password on the command line is visible to every user of the machine)",
                    command: Self.configuration.name)
            }
            throw CLIError.usage(
                "unexpected argument '\(extra.prefix(64))' for '\(action)'", command: Self.configuration.name)
        }
        let actionOptions = Set(arguments.values.keys).union(arguments.flags).subtracting([
            "database", "inventory", "state", "format", "quiet",
        ])
        if let stray = actionOptions.subtracting(shape.options).sorted().first {
            throw CLIError.usage("'--\(stray)' is not an option of '\(action)'", command: Self.configuration.name)
        }
        if let user, action != "import" { try usage { try AccountStore.checkUsername(user) } }
        if action == "add" {
            guard arguments.value("tier") != nil else {
                throw CLIError.usage("'add' needs --tier <tier>", command: Self.configuration.name)
            }
        }
        if let devices = arguments.value("devices") { _ = try Self.deviceCount(devices) }
        if Self.readsPassword(action) {
            let file = arguments.value("password-file") != nil
            let stdin = arguments.flag("password-stdin")
            guard file != stdin else {
                throw CLIError.usage(
                    "'\(action)' needs exactly one of --password-file FILE and --password-stdin",
                    command: Self.configuration.name)
            }
        }
        if action == "set-devices", let value { _ = try Self.deviceCount(value) }
    }

    /// The actions that read a password (never from the command line).
    static func readsPassword(_ action: String) -> Bool { action == "add" || action == "set-password" }

    static func deviceCount(_ text: String) throws(CLIError) -> Int {
        guard let n = Int(text), AccountStore.devicesRange.contains(n) else {
            throw CLIError.usage(
                "invalid device limit '\(text.prefix(32))': expected a whole number from "
                    + "\(AccountStore.devicesRange.lowerBound) to \(AccountStore.devicesRange.upperBound)",
                command: configuration.name)
        }
        return n
    }

    /// An account rule broken by the arguments: a usage error of this command.
    func usage(_ body: () throws -> Void) throws(CLIError) {
        do {
            try body()
        } catch let error as AccountError {
            throw CLIError.usage(error.message, command: Self.configuration.name)
        } catch {
            throw CLIError.environment("\(error)")
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let deployment = try AccountsDeployment.load(arguments, context)
        // The password is read (and checked) before the database is touched.
        let password = Self.readsPassword(action) ? try readPassword(context) : nil
        let db: DatabaseConnection
        do {
            db = try DatabaseConnection(conninfo: deployment.conninfo)
        } catch {
            throw CLIError.environment("\(error)")
        }
        let store = AccountStore(db, staleAfter: deployment.staleAfter)
        return try accountsCall {
            if action != "migrate" {
                // Every other action needs the tables: refuse a database that is empty or newer.
                let version = try Migrator.currentVersion(db)
                try Migrator.requireKnown(version, Self.migrations)
                if version < (Self.migrations.map(\.version).max() ?? 0) {
                    throw AccountError(
                        "the accounts database is at migration \(version), this vpnprov needs "
                            + "\(Self.migrations.map(\.version).max() ?? 0): run 'vpnprov accounts migrate' first")
                }
            }
            return try perform(store, deployment, password: password, context)
        }
    }

    /// The embedded migrations (templates/accounts/migrations), in order.
    static var migrations: [Migration] {
        BuiltinMigrations.files.compactMap { Migration(fileName: $0.name, sql: $0.sql) }
    }

    private func perform(
        _ store: AccountStore, _ deployment: AccountsDeployment, password: String?, _ context: CommandContext
    ) throws -> Int32 {
        let output = context.output
        switch action {
        case "migrate":
            let report = try Migrator.migrate(store.db, Self.migrations)
            output.set("migrations", report.applied)
            output.set("version", report.to)
            if report.applied.isEmpty {
                output.result("accounts database: up to date (migration \(report.to))\n")
            } else {
                output.result(
                    "accounts database: applied \(report.applied.joined(separator: ", ")) (migration \(report.from) -> \(report.to))\n"
                )
            }
        case "add":
            let user = self.user!
            let tier = arguments.value("tier")!
            let devices =
                try arguments.value("devices").map { text throws(CLIError) in try Self.deviceCount(text) }
                ?? deployment.deviceLimit
            if let owner = deployment.inventoryIdentities[RadiusPlan.foldedIdentity(user)] {
                throw AccountError(
                    "account name '\(user)' is \(owner) in the inventory: a node would take the account for that "
                        + "peer (strongSwan compares identities without regard to case); choose another name")
            }
            try store.add(username: user, password: password!, tier: tier, devices: devices)
            output.set(
                "account",
                AccountSummary(username: user, tier: tier, devices: devices, disabled: false, openSessions: 0))
            output.result("added account '\(user)' (tier \(tier), \(Plural.count(devices, "device")))\n")
        case "import":
            return try importAccounts(from: self.user!, store, deployment, context)
        case "set-password":
            let user = self.user!
            try store.setPassword(user, password!)
            output.result("account '\(user)': password changed\n")
            if !arguments.flag("keep-sessions") {
                return try disconnect(user, store, deployment, context, reason: "password changed")
            }
        case "set-tier":
            let user = self.user!
            let tier = value!
            let previous = try store.setTier(user, tier)
            output.result("account '\(user)': tier \(previous ?? "(none)") -> \(tier)\n")
            if try store.isDowngrade(from: previous, to: tier) {
                return try disconnect(user, store, deployment, context, reason: "lower tier")
            }
        case "set-devices":
            let user = self.user!
            let devices = try Self.deviceCount(value!)
            try store.setDevices(user, devices)
            output.result("account '\(user)': \(Plural.count(devices, "device")) at once\n")
        case "disable":
            let user = self.user!
            let changed = try store.disable(user)
            output.result("account '\(user)': \(changed ? "disabled" : "already disabled")\n")
            return try disconnect(user, store, deployment, context, reason: "disabled")
        case "enable":
            let user = self.user!
            let changed = try store.enable(user)
            output.result("account '\(user)': \(changed ? "enabled" : "was not disabled")\n")
        case "delete":
            let user = self.user!
            try store.delete(user)
            output.result("deleted account '\(user)'\n")
            return try disconnect(user, store, deployment, context, reason: "deleted")
        case "list":
            let accounts = try store.list()
            output.set("accounts", accounts)
            output.result(Self.table(accounts))
        case "sessions":
            let sessions = try store.sessions(of: user)
            output.set("sessions", sessions)
            output.result(Self.table(sessions))
        case "disconnect":
            return try disconnect(self.user!, store, deployment, context, reason: nil)
        case "catalogue":
            guard let inventory = deployment.inventory else {
                throw AccountError("'catalogue' needs the inventory (its nodes): give --inventory FILE")
            }
            let live = Pipeline.liveCatalogue(inventory: inventory, activity: try store.nodeActivity())
            if output.isMachineReadable {
                output.set("catalogue", live.document)
            } else {
                output.result(String(decoding: live.bytes, as: UTF8.self))
            }
        default:
            preconditionFailure("action checked in init")
        }
        return ExitCode.success
    }

    /// Largest import file read (about four million accounts).
    static let importLimit = 512 << 20

    /// `import FILE`: every account of the file, checked line by line (and against the inventory's identities),
    /// then created in one transaction.
    private func importAccounts(
        from file: String, _ store: AccountStore, _ deployment: AccountsDeployment, _ context: CommandContext
    ) throws -> Int32 {
        var bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(context.resolve(file), limit: Self.importLimit)
        } catch {
            throw AccountError("cannot read import file \(file): \(error.reason)")
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        let accounts = try AccountImport.parse(bytes)
        for account in accounts {
            if let owner = deployment.inventoryIdentities[RadiusPlan.foldedIdentity(account.username)] {
                throw AccountError(
                    "line \(account.line): account name '\(account.username)' is \(owner) in the inventory: a node "
                        + "would take the account for that peer; choose another name")
            }
        }
        let devices =
            try arguments.value("devices").map { text throws(CLIError) in try Self.deviceCount(text) }
            ?? deployment.deviceLimit
        let progress = Progress(console: context.console, environment: context.environment)
        try store.importAccounts(accounts, defaultDevices: devices) { done in
            progress?.advanced(.importingAccounts, done: done, total: accounts.count)
        }
        progress?.finished(.importingAccounts)
        var tiers: [String: Int] = [:]
        for account in accounts { tiers[account.tier, default: 0] += 1 }
        let byTier = tiers.keys.sorted().map { "\($0) \(tiers[$0]!)" }.joined(separator: ", ")
        context.output.set("imported", accounts.count)
        context.output.result(
            "imported \(Plural.count(accounts.count, "account"))" + (accounts.isEmpty ? "" : " (\(byTier))") + "\n")
        return ExitCode.success
    }

    /// Ends the user's sessions on every node that has one; exit 1 when a node did not confirm.
    private func disconnect(
        _ user: String, _ store: AccountStore, _ deployment: AccountsDeployment, _ context: CommandContext,
        reason: String?
    ) throws -> Int32 {
        let sessions = try store.sessions(of: user)
        let results = Disconnector.disconnect(
            user: user, sessions: sessions, targets: deployment.targets, client: DisconnectClient(), now: context.now)
        context.output.set("disconnect", results)
        if results.isEmpty {
            context.output.result("account '\(user)': no open session\n")
            return ExitCode.success
        }
        var text = ""
        for result in results {
            text += "  \(result.node): \(result.outcome)" + (result.detail.map { " (\($0))" } ?? "") + "\n"
        }
        let why = reason.map { " (\($0))" } ?? ""
        let failed = results.contains { !["disconnected", "no-session"].contains($0.outcome) }
        context.output.result(
            "account '\(user)': Disconnect-Request\(why) to \(Plural.count(results.count, "node")):\n"
                + text, failing: failed)
        return failed ? ExitCode.failure : ExitCode.success
    }

    /// Runs the store's work: refusals are usage errors, the database's failures environment errors.
    private func accountsCall(_ body: () throws -> Int32) throws(CLIError) -> Int32 {
        do {
            return try body()
        } catch let error as AccountError {
            throw CLIError.usage(error.message, command: Self.configuration.name)
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.environment("\(error)")
        }
    }

    // MARK: - password input

    /// The password from --password-file or standard input: the first line, bounded, checked; never echoed.
    private func readPassword(_ context: CommandContext) throws(CLIError) -> String {
        var bytes: [UInt8]
        let from: String
        if let file = arguments.value("password-file") {
            from = "password file \(file)"
            do {
                bytes = try BoundedFile.read(context.resolve(file), limit: Self.passwordInputLimit)
            } catch {
                throw CLIError.usage("cannot read \(from): \(error.reason)", command: Self.configuration.name)
            }
        } else {
            from = "standard input"
            bytes = try Self.readStandardInput(limit: Self.passwordInputLimit)
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        var line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard let password = String(validating: line, as: UTF8.self) else {
            throw CLIError.usage("the password in \(from) is not UTF-8 text", command: Self.configuration.name)
        }
        try usage { try AccountStore.checkPassword(password) }
        return password
    }

    /// Standard input up to `limit` bytes (a pipe or a terminal; more is refused).
    static func readStandardInput(limit: Int) throws(CLIError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError.usage(
                    "cannot read the password from standard input: \(String(cString: strerror(errno)))",
                    command: configuration.name)
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.contains(UInt8(ascii: "\n")) { break }
            if bytes.count > limit {
                throw CLIError.usage(
                    "standard input holds more than \(limit) bytes before the end of the password line",
                    command: configuration.name)
            }
        }
        for i in chunk.indices { chunk[i] = 0 }
        return bytes
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
