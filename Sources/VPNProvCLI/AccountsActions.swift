import VPNProvAccounts
import VPNProvEngine

/// One `accounts` action: a command of the `accounts` group, its positionals after the action's name,
/// its own options in `Option` (the group's are read through `AccountsTarget`).
protocol AccountsAction: Command {
    /// Whether it reads a password (`--password-file` or `--password-stdin`), never from the command line.
    static var readsPassword: Bool { get }
}

extension AccountsAction {
    static var readsPassword: Bool { false }

    static func target(_ arguments: Arguments<Option>) -> AccountsTarget {
        AccountsTarget(arguments.group(AccountsOption.self))
    }
}

/// An action on one account (`disable USER`, ...): the name is checked before anything is done.
protocol AccountsUserAction: AccountsAction where Option == NoOptions {
    var target: AccountsTarget { get }
    var user: String { get }
    init(target: AccountsTarget, user: String)
    func perform(_ session: AccountsSession) throws(AccountsFailure) -> Outcome
}

extension AccountsUserAction {
    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        self.init(target: Self.target(arguments), user: arguments.positional(0) ?? "")
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try AccountsCommand.usage { try AccountStore.checkUsername(user) }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try perform(session) }
    }
}

/// An action that sets one value of one account (`set-tier USER VALUE`, ...): the name, and the value as far as
/// `parse` can tell without the database, are checked before anything is done.
protocol AccountsValueAction: AccountsAction where Option == NoOptions {
    /// What the value is once read: the text itself unless the action says otherwise.
    associatedtype Value = String
    var target: AccountsTarget { get }
    var user: String { get }
    /// The value as given on the command line.
    var value: String { get }
    init(target: AccountsTarget, user: String, value: String)
    /// Reads the value; a usage error when it cannot be one.
    static func parse(_ value: String) throws(CLIError) -> Value
    func perform(_ session: AccountsSession, _ value: Value) throws(AccountsFailure) -> Outcome
}

extension AccountsValueAction where Value == String {
    static func parse(_ value: String) throws(CLIError) -> String { value }
}

extension AccountsValueAction {
    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        self.init(
            target: Self.target(arguments), user: arguments.positional(0) ?? "", value: arguments.positional(1) ?? "")
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try AccountsCommand.usage { try AccountStore.checkUsername(user) }
        _ = try Self.parse(value)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        let value = try Self.parse(value)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try perform(session, value) }
    }
}

// MARK: - the actions

struct AccountsMigrate: AccountsAction {
    static let configuration = CommandConfiguration(
        action: .migrate, abstract: "Apply the embedded database migrations the database lacks.")

    var target: AccountsTarget

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) { target = Self.target(arguments) }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), requireMigrated: false, context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.migrate() }
    }
}

struct AccountsAdd: AccountsAction {
    enum Option: CommandOptions {
        case tier, devices, passwordFile, passwordStdin

        var declaration: CommandConfiguration.Option {
            switch self {
            case .tier: AccountsActionOptions.tier
            case .devices: AccountsActionOptions.devices
            case .passwordFile: AccountsActionOptions.passwordFile
            case .passwordStdin: AccountsActionOptions.passwordStdin
            }
        }
    }

    static let configuration = CommandConfiguration(
        action: .add, abstract: "Create an account (only its NT hash is stored).",
        arguments: [AccountsActionOptions.user], options: Option.declarations)
    static let readsPassword = true

    var target: AccountsTarget
    var user: String
    var tier: String?
    var devices: String?
    var passwordFile: String?
    var passwordStdin: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        target = Self.target(arguments)
        user = arguments.positional(0) ?? ""
        tier = arguments.value(.tier)
        devices = arguments.value(.devices)
        passwordFile = arguments.value(.passwordFile)
        passwordStdin = arguments.flag(.passwordStdin)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try AccountsCommand.usage { try AccountStore.checkUsername(user) }
        guard tier != nil else {
            throw CLIError.usage("'add' needs --tier <tier>", command: AccountsCommand.configuration.name)
        }
        if let devices { _ = try AccountsCommand.deviceCount(devices) }
        try AccountsSetPassword.requireOnePasswordSource(file: passwordFile, stdin: passwordStdin, action: "add")
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let deployment = try target.deployment(context)
        // The password is read (and checked) before the database is touched.
        let password = try AccountsCommand.readPassword(file: passwordFile, context)
        let session = try target.session(deployment, context)
        let devices = try devices.map { text throws(CLIError) in try AccountsCommand.deviceCount(text) }
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in
            try session.add(user, tier: tier ?? "", devices: devices, password: password)
        }
    }
}

struct AccountsImport: AccountsAction {
    enum Option: CommandOptions {
        case devices

        var declaration: CommandConfiguration.Option {
            switch self {
            case .devices: AccountsActionOptions.devices
            }
        }
    }

    static let configuration = CommandConfiguration(
        action: .`import`, abstract: "Create every account of a JSON Lines file in one transaction, all or none.",
        // Named as the group's help names the positional (`<user>`, "import: the file").
        arguments: [.init("user", help: "The JSON Lines file.")], options: Option.declarations)

    var target: AccountsTarget
    var file: String
    var devices: String?

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        target = Self.target(arguments)
        file = arguments.positional(0) ?? ""
        devices = arguments.value(.devices)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        if let devices { _ = try AccountsCommand.deviceCount(devices) }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        let devices = try devices.map { text throws(CLIError) in try AccountsCommand.deviceCount(text) }
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in
            try session.importAccounts(file: file, path: context.resolve(file), devices: devices)
        }
    }
}

struct AccountsSetPassword: AccountsAction {
    enum Option: CommandOptions {
        case passwordFile, passwordStdin, keepSessions

        var declaration: CommandConfiguration.Option {
            switch self {
            case .passwordFile: AccountsActionOptions.passwordFile
            case .passwordStdin: AccountsActionOptions.passwordStdin
            case .keepSessions: AccountsActionOptions.keepSessions
            }
        }
    }

    static let configuration = CommandConfiguration(
        action: .setPassword, abstract: "Replace an account's password and end its sessions.",
        arguments: [AccountsActionOptions.user], options: Option.declarations)
    static let readsPassword = true

    var target: AccountsTarget
    var user: String
    var passwordFile: String?
    var passwordStdin: Bool
    var keepSessions: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        target = Self.target(arguments)
        user = arguments.positional(0) ?? ""
        passwordFile = arguments.value(.passwordFile)
        passwordStdin = arguments.flag(.passwordStdin)
        keepSessions = arguments.flag(.keepSessions)
    }

    /// Exactly one of `--password-file` and `--password-stdin`.
    static func requireOnePasswordSource(file: String?, stdin: Bool, action: String) throws(CLIError) {
        guard (file != nil) != stdin else {
            throw CLIError.usage(
                "'\(action)' needs exactly one of --password-file FILE and --password-stdin",
                command: AccountsCommand.configuration.name)
        }
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try AccountsCommand.usage { try AccountStore.checkUsername(user) }
        try Self.requireOnePasswordSource(file: passwordFile, stdin: passwordStdin, action: Self.configuration.name)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let deployment = try target.deployment(context)
        let password = try AccountsCommand.readPassword(file: passwordFile, context)
        let session = try target.session(deployment, context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in
            try session.setPassword(user, password, keepSessions: keepSessions)
        }
    }
}

struct AccountsSetTier: AccountsValueAction {
    static let configuration = CommandConfiguration(
        action: .setTier, abstract: "Change an account's tier; a lower tier ends its sessions.",
        arguments: [AccountsActionOptions.user, .init("value", help: "The tier.")])

    var target: AccountsTarget
    var user: String
    var value: String

    func perform(_ session: AccountsSession, _ tier: String) throws(AccountsFailure) -> Outcome {
        try session.setTier(user, tier)
    }
}

struct AccountsSetDevices: AccountsValueAction {
    static let configuration = CommandConfiguration(
        action: .setDevices, abstract: "Change how many devices may be connected at once (1-100).",
        arguments: [AccountsActionOptions.user, .init("value", help: "The device limit.")])

    var target: AccountsTarget
    var user: String
    var value: String

    static func parse(_ value: String) throws(CLIError) -> Int { try AccountsCommand.deviceCount(value) }

    func perform(_ session: AccountsSession, _ devices: Int) throws(AccountsFailure) -> Outcome {
        try session.setDevices(user, devices)
    }
}

struct AccountsSetQuota: AccountsValueAction {
    static let configuration = CommandConfiguration(
        action: .setQuota, abstract: "Give an account its own monthly data quota, or its tier's again.",
        arguments: [
            AccountsActionOptions.user, .init("value", help: "Bytes or a size (500MB, 10GB), none, or tier."),
        ])

    var target: AccountsTarget
    var user: String
    var value: String

    func perform(_ session: AccountsSession, _ quota: String) throws(AccountsFailure) -> Outcome {
        try session.setQuota(user, quota)
    }
}

struct AccountsUsage: AccountsAction {
    static let configuration = CommandConfiguration(
        action: .usage, abstract: "Show the data used this month (UTC), the quota and what is left (of one account).",
        arguments: [.init("user", help: "The account name.", optional: true)])

    var target: AccountsTarget
    var user: String?

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        target = Self.target(arguments)
        user = arguments.positional(0)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        if let user { try AccountsCommand.usage { try AccountStore.checkUsername(user) } }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.usage(of: user) }
    }
}

struct AccountsDisable: AccountsUserAction {
    static let configuration = CommandConfiguration(
        action: .disable, abstract: "Disable an account and end its sessions.", arguments: [AccountsActionOptions.user])

    var target: AccountsTarget
    var user: String

    func perform(_ session: AccountsSession) throws(AccountsFailure) -> Outcome { try session.disable(user) }
}

struct AccountsEnable: AccountsUserAction {
    static let configuration = CommandConfiguration(
        action: .enable, abstract: "Enable a disabled account.", arguments: [AccountsActionOptions.user])

    var target: AccountsTarget
    var user: String

    func perform(_ session: AccountsSession) throws(AccountsFailure) -> Outcome { try session.enable(user) }
}

struct AccountsDelete: AccountsUserAction {
    static let configuration = CommandConfiguration(
        action: .delete, abstract: "Delete an account and end its sessions.", arguments: [AccountsActionOptions.user])

    var target: AccountsTarget
    var user: String

    func perform(_ session: AccountsSession) throws(AccountsFailure) -> Outcome { try session.delete(user) }
}

struct AccountsDisconnect: AccountsUserAction {
    static let configuration = CommandConfiguration(
        action: .disconnect, abstract: "End an account's sessions (RADIUS Disconnect-Requests).",
        arguments: [AccountsActionOptions.user])

    var target: AccountsTarget
    var user: String

    func perform(_ session: AccountsSession) throws(AccountsFailure) -> Outcome {
        try session.disconnect(user, reason: nil)
    }
}

struct AccountsList: AccountsAction {
    static let configuration = CommandConfiguration(action: .list, abstract: "List the accounts.")

    var target: AccountsTarget

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) { target = Self.target(arguments) }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.list() }
    }
}

struct AccountsSessions: AccountsAction {
    static let configuration = CommandConfiguration(
        action: .sessions, abstract: "List the open sessions (of one account).",
        arguments: [.init("user", help: "The account name.", optional: true)])

    var target: AccountsTarget
    var user: String?

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        target = Self.target(arguments)
        user = arguments.positional(0)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        if let user { try AccountsCommand.usage { try AccountStore.checkUsername(user) } }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.sessions(of: user) }
    }
}

struct AccountsCatalogue: AccountsAction {
    static let configuration = CommandConfiguration(
        action: .catalogue,
        abstract: "Print the app catalogue with each RADIUS node's sessions, capacity, load and state.")

    var target: AccountsTarget

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) { target = Self.target(arguments) }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        let output = context.output
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in
            let live = try session.catalogue()
            if output.isMachineReadable {
                output.record(CatalogueResult(live.document))
            } else {
                output.result(String(decoding: live.bytes, as: UTF8.self))
            }
            return .success
        }
    }
}

/// The node argument of `drain` and `undrain`.
extension AccountsActionOptions {
    static let node = CommandConfiguration.Argument("node", help: "The node's name in the inventory.")
}

struct AccountsDrain: AccountsAction {
    enum Option: CommandOptions {
        case grace

        var declaration: CommandConfiguration.Option {
            switch self {
            case .grace: AccountsActionOptions.grace
            }
        }
    }

    static let configuration = CommandConfiguration(
        action: .drain,
        abstract: "Take a RADIUS node out of service: refuse new logins there, its sessions end after --grace seconds.",
        arguments: [AccountsActionOptions.node], options: Option.declarations)

    var target: AccountsTarget
    var node: String
    var grace: String?

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        target = Self.target(arguments)
        node = arguments.positional(0) ?? ""
        grace = arguments.value(.grace)
    }

    /// The grace period in seconds (AccountStore.drainGraceRange).
    static func seconds(_ text: String?) throws(CLIError) -> Int {
        guard let text, let value = Int(text), AccountStore.drainGraceRange.contains(value) else {
            throw CLIError.usage(
                "'drain' needs --grace <seconds>, 0 to \(AccountStore.drainGraceRange.upperBound)",
                command: AccountsCommand.configuration.name)
        }
        return value
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard !node.isEmpty else {
            throw CLIError.usage("'drain' needs the node's name", command: AccountsCommand.configuration.name)
        }
        _ = try Self.seconds(grace)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        let seconds = try Self.seconds(grace)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.drain(node, grace: seconds) }
    }
}

struct AccountsUndrain: AccountsAction {
    static let configuration = CommandConfiguration(
        action: .undrain, abstract: "Put a drained RADIUS node back into service.",
        arguments: [AccountsActionOptions.node])

    var target: AccountsTarget
    var node: String

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        target = Self.target(arguments)
        node = arguments.positional(0) ?? ""
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard !node.isEmpty else {
            throw CLIError.usage("'undrain' needs the node's name", command: AccountsCommand.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let session = try target.session(try target.deployment(context), context)
        return try AccountsCommand.exitStatus { () throws(AccountsFailure) in try session.undrain(node) }
    }
}
