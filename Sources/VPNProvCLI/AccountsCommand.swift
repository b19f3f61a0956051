import Foundation
import Glibc
import VPNProvAccounts
import VPNProvEngine
import VPNProvModel
import VPNProvSupport

/// `vpnprov accounts ACTION`: a group of subcommands, one type per action (`AccountsAction`), each
/// reading its own options and calling its work in `AccountsSession` (VPNProvEngine). The group reads
/// the options every action shares (`AccountsOption`), picks the action by name and refuses
/// arguments and options the action does not take. Its help, manual section and completions are one
/// table: the group's options, then every action's own, then `--format` and `--quiet`.
struct AccountsCommand: Command {
    typealias Option = AccountsOption

    /// The actions, in the order the help lists them (`AccountsActionName`).
    static var subcommands: [any AccountsAction.Type] { AccountsActionName.allCases.map(\.action) }

    /// The actions' names.
    static var actions: [String] { AccountsActionName.allCases.map(\.rawValue) }

    static let configuration = CommandConfiguration(
        name: .accounts,
        abstract: "Manage the central accounts (RADIUS) in the accounts database.",
        discussion: "ACTION is one of: 'migrate' applies the embedded database migrations the database lacks; "
            + "'add USER --tier TIER [--devices N] (--password-file FILE | --password-stdin)' creates an account "
            + "(only its NT hash is stored); 'import FILE [--devices N]' creates every account of a JSON Lines file "
            + "(username, tier, devices, and password or nt_hash per line) in one transaction, all or none; "
            + "'set-password USER (--password-file FILE | --password-stdin) "
            + "[--keep-sessions]' replaces its password and ends its sessions; 'set-tier USER TIER'; "
            + "'set-devices USER N' (1-100 devices at once); 'set-quota USER SIZE|none|tier' gives the account its own "
            + "monthly data quota (bytes or 500MB, 10GB, ...; none: unlimited; tier: its tier's again); "
            + "'disable USER' and 'enable USER'; 'delete USER'; 'list'; 'sessions [USER]' (open sessions); "
            + "'usage [USER]' (data used this month in UTC, quota, what is left, when it resets); 'disconnect USER'; "
            + "'catalogue' prints the app catalogue with each RADIUS node's sessions, capacity, load and state. "
            + "'drain NODE --grace SECONDS' takes a RADIUS node out of service (new logins refused there, its "
            + "sessions no longer count against device limits; deploy/drain.yml moves and ends its clients), "
            + "'undrain NODE' puts it back. "
            + "'disable', 'delete', 'disconnect', 'set-password' and 'set-tier' to a lower tier send a RADIUS "
            + "Disconnect-Request for the user "
            + "to every node with an open session. Passwords are never taken from the command line and never "
            + "printed (docs/accounts.md).",
        arguments: [
            .init(
                "action",
                help:
                    "migrate, add, import, set-password, set-tier, set-devices, set-quota, disable, enable, delete, list, "
                    + "sessions, usage, disconnect, catalogue, drain or undrain.",
                completion: .choices(AccountsActionName.allCases.map(\.rawValue))),
            .init(
                "user",
                help:
                    "The account name: 1 to 64 of A-Z a-z 0-9 . _ @ + - (import: the file; drain, undrain: the node).",
                optional: true),
            .init(
                "value", help: "set-tier: the tier; set-devices: the device limit; set-quota: the quota.",
                optional: true),
        ],
        options: AccountsOption.declarations + actionOptions)

    /// Every action's own options, each once, in the order the actions declare them.
    static var actionOptions: [CommandConfiguration.Option] {
        var seen = Set<String>()
        return subcommands.flatMap { $0.configuration.options }.filter { seen.insert($0.name).inserted }
    }

    /// Largest password file or standard input read.
    static let passwordInputLimit = 4096

    /// The embedded migrations (templates/accounts/migrations), in order.
    static var migrations: [Migration] { AccountsSession.migrations }

    /// The action chosen, built from the arguments after its name.
    var action: any AccountsAction

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        guard let name = arguments.positional(0) else {
            throw CLIError.usage("missing argument <action>", command: Self.configuration.name)
        }
        guard let type = AccountsActionName(rawValue: name)?.action else {
            let hint = Spelling.closest(to: name, among: Self.actions).map { "; did you mean '\($0)'?" } ?? ""
            throw CLIError.usage("unknown action '\(name)'\(hint)", command: Self.configuration.name)
        }
        let rest = arguments.droppingFirstPositional.parsed
        try Self.checkShape(of: type, rest)
        action = try type.init(rest)
    }

    /// The arguments and options `type` takes: its positionals, and no option of another action.
    static func checkShape(of type: any AccountsAction.Type, _ arguments: ParsedArguments) throws(CLIError) {
        let action = type.configuration
        let given = arguments.positionals.count
        let required = action.arguments.filter { !$0.isOptional }.count
        if given < required {
            throw CLIError.usage(
                "'\(action.name)' needs <\(action.arguments[given].name)>", command: configuration.name)
        }
        if given > action.arguments.count {
            if type.readsPassword && action.arguments.count == 1 {
                throw CLIError.usage(
                    "'\(action.name)' takes no password argument: use --password-file FILE or --password-stdin "
                        + "(a password on the command line is visible to every user of the machine)",
                    command: configuration.name)
            }
            let extra = arguments.positionals[action.arguments.count]
            throw CLIError.usage(
                "unexpected argument '\(extra.prefix(64))' for '\(action.name)'", command: configuration.name)
        }
        let group = AccountsOption.declarations + OutputOption.declarations(formats: configuration.formats)
        let accepted = Set((group + action.options).map(\.name))
        if let stray = arguments.givenOptionNames.subtracting(accepted).sorted().first {
            throw CLIError.usage("'--\(stray)' is not an option of '\(action.name)'", command: configuration.name)
        }
    }

    func validate(_ context: CommandContext) throws(CLIError) { try action.validate(context) }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 { try action.run(context) }

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
    static func usage(_ body: () throws -> Void) throws(CLIError) {
        do {
            try body()
        } catch let error as AccountError {
            throw CLIError.usage(error.message, command: configuration.name)
        } catch {
            throw CLIError.environment("\(error)")
        }
    }

    /// The exit status of an action's work (`AccountsSession`): refusals exit 2 without the usage text, unusable
    /// inputs are usage errors, the database's failures environment errors.
    static func exitStatus(_ body: () throws(AccountsFailure) -> Outcome) throws(CLIError) -> Int32 {
        do {
            return ExitCode.of(try body())
        } catch {
            throw CLIError(error)
        }
    }

    // MARK: - password input

    /// The password from `file` (--password-file), else standard input: the first line, bounded,
    /// checked; never echoed.
    static func readPassword(file: String?, _ context: CommandContext) throws(CLIError) -> String {
        var bytes: [UInt8]
        let from: String
        if let file {
            from = "password file \(file)"
            do {
                bytes = try BoundedFile.read(context.resolve(file), limit: passwordInputLimit)
            } catch {
                throw CLIError.usage("cannot read \(from): \(error.reason)", command: configuration.name)
            }
        } else {
            from = "standard input"
            bytes = try readStandardInput(limit: passwordInputLimit)
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        var line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard let password = String(validating: line, as: UTF8.self) else {
            throw CLIError.usage("the password in \(from) is not UTF-8 text", command: configuration.name)
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
}

extension CLIError {
    /// An accounts action's failure as the command line reports it: a refusal exits 2 with its reason alone (the
    /// command line was right), an unusable input is a usage error, the database's failures exit 3.
    init(_ failure: AccountsFailure) {
        switch failure {
        case .refused(let message): self = .refused(message)
        case .input(let message): self = .usage(message, command: nil)
        case .environment(let message): self = .environment(message)
        }
    }
}

/// The options every `accounts` action shares, read by the group's `AccountsTarget` (and the dispatcher's `--format`
/// and `--quiet`, which every command has).
enum AccountsOption: CommandOptions {
    case inventory, state, database

    var declaration: CommandConfiguration.Option {
        switch self {
        case .inventory:
            .init(
                "inventory", value: "file", completion: .file,
                help:
                    "The inventory whose accounts: section names the database and the RADIUS nodes (default: the directory's)."
            )
        case .state: SharedOption.state.declaration
        case .database:
            .init(
                "database", value: "source",
                help: "Another accounts database conninfo than accounts.database: env:VAR or file:PATH.")
        }
    }
}

/// The options some actions take, declared once: each action's `Option` lists the ones it takes.
enum AccountsActionOptions {
    static let tier = CommandConfiguration.Option("tier", value: "tier", help: "add: the account's tier (free, pro).")
    static let devices = CommandConfiguration.Option(
        "devices", value: "n",
        help:
            "add, import: how many devices may be connected at once (default: accounts.device_limit, else 3; "
            + "import: for lines without devices).")
    static let passwordFile = CommandConfiguration.Option(
        "password-file", value: "file", completion: .file,
        help: "add, set-password: read the password from this file (first line).")
    static let passwordStdin = CommandConfiguration.Option(
        "password-stdin", help: "add, set-password: read the password from standard input (first line).")
    static let keepSessions = CommandConfiguration.Option(
        "keep-sessions",
        help: "set-password: leave the account's live sessions up (by default they end, so that a reset after "
            + "a leak locks the old password's holder out).")

    static let grace = CommandConfiguration.Option(
        "grace", value: "seconds",
        help: "drain: seconds until the node's remaining sessions are ended (0 to 604800).")

    /// The account argument of the actions on one account.
    static let user = CommandConfiguration.Argument("user", help: "The account name.")
}

/// Which accounts database and deployment an action works on: `--inventory`, `--state` and `--database`
/// as given.
struct AccountsTarget: Sendable {
    var inventory: String?
    var state: String?
    var database: String?

    init(_ arguments: Arguments<AccountsOption>) {
        inventory = arguments.value(.inventory)
        state = arguments.value(.state)
        database = arguments.value(.database)
    }

    /// The deployment (docs/accounts.md, "`vpnprov accounts`"): the inventory's `accounts:` section
    /// (`--inventory`, else the directory's inventory) and the state's DAE secrets (`--state`, else `state`
    /// beside the inventory); `--database env:VAR|file:PATH` names another conninfo, and given without
    /// `--inventory` no inventory is read (no node can then be told to disconnect).
    func deployment(_ context: CommandContext) throws(CLIError) -> AccountsDeployment {
        var source: SecretSource?
        if let database {
            if database.hasPrefix("env:"), database.count > 4 {
                source = .env(String(database.dropFirst(4)))
            } else if database.hasPrefix("file:"), database.count > 5 {
                source = .file(String(database.dropFirst(5)))
            } else {
                throw CLIError.usage(
                    "invalid value for '--database <source>': expected env:VAR or file:PATH (the conninfo itself "
                        + "may hold a password and never goes on the command line)",
                    command: AccountsCommand.configuration.name)
            }
        }
        var file: (display: String, path: String)?
        var stateDirectory: String?
        if source == nil || inventory != nil {
            let found = try CommonOptions.inventory(inventory, context)
            file = found
            stateDirectory = CommonOptions.stateDirectory(state, inventoryPath: found.path, context)
        }
        do {
            return try AccountsDeployment.load(
                database: source, inventory: file, stateDirectory: stateDirectory, environment: context.environment,
                currentDirectory: context.currentDirectory, output: context.output)
        } catch {
            throw CLIError(error)
        }
    }

    /// The deployment's database, migrated as this vpnprov needs it unless `requireMigrated` is false (`migrate`).
    func session(_ deployment: AccountsDeployment, requireMigrated: Bool = true, _ context: CommandContext)
        throws(CLIError) -> AccountsSession
    {
        do {
            return try AccountsSession.open(
                deployment, requireMigrated: requireMigrated, output: context.output, now: context.now)
        } catch {
            throw CLIError(error)
        }
    }
}
