import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Options several commands take, each declared once here and read in one place (`TreeArguments` reads the first
/// three): a command's configuration lists the ones it takes (`CommandConfiguration(shared:)`), and its help shows
/// them after its own options, in this order.
enum SharedOption: CommandOptions {
    case state, out, templates, strict

    var declaration: CommandConfiguration.Option {
        switch self {
        case .state:
            .init(
                "state", value: "dir", completion: .directory,
                help: "State directory: CA, keys, serials, generated secrets (default: state beside the inventory).")
        case .out:
            .init("out", value: "dir", completion: .directory, help: "Output tree (default: out beside the inventory).")
        case .templates:
            .init(
                "templates", value: "dir", completion: .directory,
                help: "Directory of templates overriding the built-in ones.")
        case .strict: .init("strict", help: "Treat warnings as errors.")
        }
    }
}

/// `--format` and `--quiet`, which every command has and the dispatcher reads (`CommandLineTool.dispatch`): the last
/// options of every command's help. `--format` takes the formats the command's configuration lists.
enum OutputOption {
    static let quiet = CommandConfiguration.Option("quiet", help: "Print errors only (stderr).")

    /// `--format` with `formats` (text first).
    static func format(_ formats: [DiagnosticPrinter.Format]) -> CommandConfiguration.Option {
        .init(
            "format", choices: formats.map(\.rawValue),
            help: formats.contains(.sarif)
                ? "text (default), json (docs/json-output.md) or sarif (SARIF 2.1.0), on stdout."
                : "text (default), or json: one JSON document on stdout (docs/json-output.md).")
    }

    /// The two options of a command whose `--format` takes `formats`; none without formats (an `accounts` action,
    /// which the group's options cover).
    static func declarations(formats: [DiagnosticPrinter.Format]) -> [CommandConfiguration.Option] {
        formats.isEmpty ? [] : [format(formats), quiet]
    }

    /// `--format` as given, checked against the formats of the command's configuration; text when not given.
    static func format(_ arguments: ParsedArguments, for configuration: CommandConfiguration) throws(CLIError)
        -> DiagnosticPrinter.Format
    {
        let allowed = configuration.formats
        guard let text = arguments.value(of: format(allowed)) else { return .text }
        guard let format = DiagnosticPrinter.Format(rawValue: text), allowed.contains(format) else {
            let names = allowed.map(\.rawValue)
            let hint = Spelling.closest(to: text, among: names).map { "; did you mean '\($0)'?" } ?? ""
            let expected =
                names.count == 2
                ? names.joined(separator: " or ")
                : names.dropLast().joined(separator: ", ") + " or " + names.last!
            throw CLIError.usage(
                "invalid value '\(text)' for '--format <format>': expected \(expected)\(hint)",
                command: configuration.name)
        }
        return format
    }
}

/// The positional inventory and where it is looked for when none is given.
enum CommonOptions {
    static let inventoryArgument = CommandConfiguration.Argument(
        "inventory",
        help: "The inventory file (default: inventory.yaml, else inventory.yml, in the current directory).",
        optional: true, completion: .file)

    /// Names tried, in order, when no inventory is given.
    static let defaultInventoryNames = ["inventory.yaml", "inventory.yml"]

    /// The inventory to read: as given, or the first default that exists. Returns (display, absolute path).
    static func inventory(_ given: String?, _ context: CommandContext) throws(CLIError) -> (
        display: String, path: String
    ) {
        if let given {
            let path = context.resolve(given)
            guard FileManager.default.fileExists(atPath: path) else {
                throw CLIError.usage("inventory '\(given)' not found", command: nil)
            }
            return (given, path)
        }
        for name in defaultInventoryNames {
            let path = context.resolve(name)
            if FileManager.default.fileExists(atPath: path) { return (name, path) }
        }
        throw CLIError.usage(
            "no inventory given and none found in \(context.currentDirectory) (tried \(defaultInventoryNames.joined(separator: ", "))); "
                + "pass a path or run 'vpnprov init'", command: nil)
    }

    /// `--state`, else `state` beside the inventory.
    static func stateDirectory(_ given: String?, inventoryPath: String, _ context: CommandContext) -> String {
        if let given { return context.resolve(given) }
        return OutputLocation.defaultStateDirectory(
            inventoryPath: inventoryPath, currentDirectory: context.currentDirectory)
    }

    /// `--out`, else `out` beside the inventory (like the state: where the command is run from
    /// does not matter, so one deployment never gets a second tree of secrets).
    static func outDirectory(_ given: String?, inventoryPath: String, _ context: CommandContext) -> String {
        if let given { return context.resolve(given) }
        let dir = (inventoryPath as NSString).deletingLastPathComponent
        return (dir.isEmpty ? context.currentDirectory : dir) + "/out"
    }
}

/// What a command that regenerates the output is pointed at, as given on its command line: the
/// inventory, `--out`, `--state` and `--templates` (generate, check, revoke and the lifecycle commands).
struct TreeArguments: Sendable {
    var inventory: String?
    var out: String?
    var state: String?
    var templates: String?

    /// The tree a command's shared options name (those it does not take are never given), with `inventory`.
    init(inventory: String?, _ shared: Arguments<SharedOption>) {
        self.inventory = inventory
        out = shared.value(.out)
        state = shared.value(.state)
        templates = shared.value(.templates)
    }

    /// `--templates` must name a directory.
    func checkTemplates(_ context: CommandContext, command: String) throws(CLIError) {
        guard let templates else { return }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: context.resolve(templates), isDirectory: &isDirectory),
            isDirectory.boolValue
        else {
            throw CLIError.usage("templates directory '\(templates)' not found", command: command)
        }
    }

    /// The engine's options: the inventory found, the directories resolved (defaults beside the inventory).
    func generateOptions(strict: Bool, _ context: CommandContext) throws(CLIError) -> GenerateOptions {
        let (display, path) = try CommonOptions.inventory(inventory, context)
        return GenerateOptions(
            inventory: display, inventoryPath: path,
            outDirectory: CommonOptions.outDirectory(out, inventoryPath: path, context),
            stateDirectory: CommonOptions.stateDirectory(state, inventoryPath: path, context),
            templatesDirectory: templates.map(context.resolve), strict: strict, environment: context.environment,
            outGiven: out != nil, currentDirectory: context.currentDirectory, now: context.now)
    }

    /// `generateOptions`, refused (for `command`) when the directories overlap or are system directories.
    func checkedGenerateOptions(strict: Bool, _ context: CommandContext, command: String) throws(CLIError)
        -> GenerateOptions
    {
        let options = try generateOptions(strict: strict, context)
        try DirectoryChecks.check(
            out: options.outDirectory, state: options.stateDirectory, environment: context.environment,
            command: command)
        return options
    }
}

// MARK: - validate

struct ValidateCommand: Command {
    enum Option: CommandOptions {
        case secrets, showAcknowledged

        var declaration: CommandConfiguration.Option {
            switch self {
            case .secrets:
                .init("secrets", help: "Also resolve env: and file: secrets and check them (values are never printed).")
            case .showAcknowledged:
                .init(
                    "show-acknowledged",
                    help: "Also print the warnings the inventory acknowledges (acknowledge:), with their reasons.")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .validate,
        abstract: "Parse and check an inventory; print its diagnostics.",
        discussion: "Diagnostics are GCC-style (file:line:column: severity: message [code]). Exit status 1 when the "
            + "inventory has errors, or warnings with --strict. With --secrets, env: and file: secrets are resolved "
            + "(never printed) and unset variables, unreadable files and weak values are reported where they are referenced.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.strict], formats: [.text, .json, .sarif])

    var inventory: String?
    var strict: Bool
    var secrets: Bool
    var showAcknowledged: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        inventory = arguments.positional(0)
        strict = arguments.shared.flag(.strict)
        secrets = arguments.flag(.secrets)
        showAcknowledged = arguments.flag(.showAcknowledged)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        context.output.showAcknowledged = showAcknowledged
        let (display, path) = try CommonOptions.inventory(inventory, context)
        let loaded = try engine { () throws(EngineError) in
            try Pipeline.loadInventory(
                display: display, path: path, strict: strict, output: context.output,
                secretsEnvironment: secrets ? context.environment : nil)
        }
        if let outcome = loaded.outcome { return ExitCode.of(outcome) }
        if let inventory = loaded.inventory {
            // Users counted as generate counts them: the active ones; revoked users get no profiles.
            let n = inventory.nodes.count
            let u = inventory.users.filter { !$0.revoked }.count
            let revoked = inventory.users.count - u
            context.output.record(
                ValidatedInventory(file: display, nodes: n, users: u, revokedUsers: revoked, secretsChecked: secrets))
            // Without --secrets, say that env:/file: secrets were not looked at: "ok" must not read as
            // "generate will find them".
            let external = Pipeline.externalSecrets(inventory).count
            let unresolved =
                secrets || external == 0
                ? "" : "; \(Plural.count(external, "env:/file: secret")) not resolved (--secrets)"
            let revokedText = revoked == 0 ? "" : " and \(revoked) revoked"
            // "ok" only for an inventory without findings (acknowledged warnings are the inventory's own
            // choice); with warnings the line comes after them and counts them, so "ok" never stands above
            // a list of warnings.
            let warnings = context.output.diagnostics.filter { $0.severity == .warning && $0.acknowledged == nil }.count
            let verdict = warnings == 0 ? "ok" : "no errors, \(Plural.count(warnings, "warning"))"
            context.output.result(
                "\(display): \(verdict) (\(Plural.count(n, "node")), \(Plural.count(u, "user"))\(revokedText)\(unresolved))\n"
            )
        }
        return ExitCode.success
    }

    /// `"inventory"` of `validate --format json`.
    struct ValidatedInventory: KeyedResult {
        static var key: DocumentKey { .inventory }

        var file: String
        var nodes: Int
        /// Active users (as `generate` counts them).
        var users: Int
        /// Users revoked in the inventory.
        var revokedUsers: Int
        var secretsChecked: Bool
    }
}

// MARK: - generate / check

struct GenerateCommand: Command {
    static let configuration = CommandConfiguration(
        name: .generate,
        abstract: "Write server configs, PKI and client profiles for the inventory.",
        discussion: "Keys, certificates and generated secrets are kept in the state directory and reused; "
            + "re-running on an unchanged inventory rewrites nothing.",
        arguments: [CommonOptions.inventoryArgument], shared: [.state, .out, .templates, .strict])

    var tree: TreeArguments
    var strict: Bool

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        tree = TreeArguments(inventory: arguments.positional(0), arguments.shared)
        strict = arguments.shared.flag(.strict)
    }

    func options(_ context: CommandContext) throws(CLIError) -> GenerateOptions {
        try tree.checkedGenerateOptions(strict: strict, context, command: Self.configuration.name)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try tree.checkTemplates(context, command: Self.configuration.name)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = try options(context)
        return try engineCommand { () throws(EngineError) in try Pipeline.generate(options, output: context.output) }
    }
}

struct CheckCommand: Command {
    static let configuration = CommandConfiguration(
        name: .check,
        abstract: "Check that the output tree is up to date with the inventory (CI drift gate).",
        discussion: "Exit status 1 when generating would change, add or remove any file under --out.",
        arguments: [CommonOptions.inventoryArgument], shared: [.state, .out, .templates, .strict],
        formats: [.text, .json, .sarif])

    var tree: TreeArguments
    var strict: Bool

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        tree = TreeArguments(inventory: arguments.positional(0), arguments.shared)
        strict = arguments.shared.flag(.strict)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try tree.checkTemplates(context, command: Self.configuration.name)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = try tree.checkedGenerateOptions(strict: strict, context, command: Self.configuration.name)
        return try engineCommand { () throws(EngineError) in try Pipeline.check(options, output: context.output) }
    }
}

// MARK: - revoke

struct RevokeCommand: Command {
    static let configuration = CommandConfiguration(
        name: .revoke,
        abstract: "Revoke a user's client certificate (CRL) and regenerate.",
        arguments: [
            .init("user", help: "The user whose certificate is revoked."),
            CommonOptions.inventoryArgument,
        ],
        shared: [.state, .out, .templates])

    var user: String?
    var tree: TreeArguments

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        user = arguments.positional(0)
        tree = TreeArguments(inventory: arguments.positional(1), arguments.shared)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard let user, !user.isEmpty else {
            throw CLIError.usage("missing argument <user>", command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = RevokeOptions(
            user: user ?? "",
            regenerate: try tree.checkedGenerateOptions(strict: false, context, command: Self.configuration.name))
        return try engineCommand { () throws(EngineError) in try Pipeline.revoke(options, output: context.output) }
    }
}

// MARK: - init

struct InitCommand: Command {
    static let configuration = CommandConfiguration(
        name: .`init`,
        abstract: "Write a commented starter inventory.",
        discussion: "Creates DIR/inventory.yaml (DIR is created if needed). An existing file is never overwritten.",
        arguments: [
            .init(
                "dir", help: "Directory for inventory.yaml (default: the current directory).", optional: true,
                completion: .directory)
        ])

    var directory: String?

    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        directory = arguments.positional(0)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let dir = context.resolve(directory ?? ".")
        let display =
            directory.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/inventory.yaml" } ?? "inventory.yaml"
        let path = dir + "/inventory.yaml"
        if FileManager.default.fileExists(atPath: path) {
            throw CLIError.usage("'\(display)' already exists; not overwriting it", command: Self.configuration.name)
        }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(StarterInventory.text.utf8).write(to: URL(fileURLWithPath: path), options: .withoutOverwriting)
        } catch {
            throw CLIError.environment("cannot write '\(display)': \(error.localizedDescription)")
        }
        context.output.record(CreatedInventory(file: display))
        context.output.result("wrote \(display)\nnext: edit it, then run 'vpnprov validate \(display)'\n")
        return ExitCode.success
    }
}
