import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Shared option descriptions and helpers of the inventory-reading commands.
enum CommonOptions {
    static let inventoryArgument = CommandConfiguration.Argument(
        "inventory",
        help: "The inventory file (default: inventory.yaml, else inventory.yml, in the current directory).",
        optional: true)
    static let format = CommandConfiguration.Option(
        "format", value: "text|json",
        help: "text (default), or json: one JSON document on stdout (docs/json-output.md).")
    static let formatWithSARIF = CommandConfiguration.Option(
        "format", value: "text|json|sarif",
        help: "text (default), json (docs/json-output.md) or sarif (SARIF 2.1.0), on stdout.")
    static let quiet = CommandConfiguration.Option("quiet", help: "Print errors only (stderr).")
    static let strict = CommandConfiguration.Option("strict", help: "Treat warnings as errors.")
    static let out = CommandConfiguration.Option(
        "out", value: "dir", help: "Output tree (default: out beside the inventory).")
    static let state = CommandConfiguration.Option(
        "state", value: "dir",
        help: "State directory: CA, keys, serials, generated secrets (default: state beside the inventory).")
    static let templates = CommandConfiguration.Option(
        "templates", value: "dir", help: "Directory of templates overriding the built-in ones.")

    /// Names tried, in order, when no inventory is given.
    static let defaultInventoryNames = ["inventory.yaml", "inventory.yml"]

    /// `--format`, checked against the formats the command's `--format` option lists ("text|json").
    static func format(_ arguments: ParsedArguments, for configuration: CommandConfiguration) throws(CLIError)
        -> DiagnosticPrinter.Format
    {
        let declared = configuration.options.first { $0.name == format.name }
        guard let declared, let text = arguments.value(of: declared) else { return .text }
        let allowed = (declared.valueName ?? "text").split(separator: "|").map(String.init)
        guard allowed.contains(text), let format = DiagnosticPrinter.Format(rawValue: text) else {
            let hint = Spelling.closest(to: text, among: allowed).map { "; did you mean '\($0)'?" } ?? ""
            let expected =
                allowed.count == 2
                ? allowed.joined(separator: " or ")
                : allowed.dropLast().joined(separator: ", ") + " or " + allowed.last!
            throw CLIError.usage(
                "invalid value '\(text)' for '--format <format>': expected \(expected)\(hint)",
                command: configuration.name)
        }
        return format
    }

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
        case format, strict, secrets, showAcknowledged, quiet

        var declaration: CommandConfiguration.Option {
            switch self {
            case .format: CommonOptions.formatWithSARIF
            case .strict: CommonOptions.strict
            case .secrets:
                .init("secrets", help: "Also resolve env: and file: secrets and check them (values are never printed).")
            case .showAcknowledged:
                .init(
                    "show-acknowledged",
                    help: "Also print the warnings the inventory acknowledges (acknowledge:), with their reasons.")
            case .quiet: CommonOptions.quiet
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: "validate",
        abstract: "Parse and check an inventory; print its diagnostics.",
        discussion: "Diagnostics are GCC-style (file:line:column: severity: message [code]). Exit status 1 when the "
            + "inventory has errors, or warnings with --strict. With --secrets, env: and file: secrets are resolved "
            + "(never printed) and unset variables, unreadable files and weak values are reported where they are referenced.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations)

    var inventory: String?
    var strict: Bool
    var secrets: Bool
    var showAcknowledged: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        inventory = arguments.positional(0)
        strict = arguments.flag(.strict)
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
            context.output.set(
                "inventory",
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
    struct ValidatedInventory: Encodable {
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
    enum Option: CommandOptions {
        case out, state, templates, format, strict, quiet

        var declaration: CommandConfiguration.Option {
            switch self {
            case .out: CommonOptions.out
            case .state: CommonOptions.state
            case .templates: CommonOptions.templates
            case .format: CommonOptions.format
            case .strict: CommonOptions.strict
            case .quiet: CommonOptions.quiet
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: "generate",
        abstract: "Write server configs, PKI and client profiles for the inventory.",
        discussion: "Keys, certificates and generated secrets are kept in the state directory and reused; "
            + "re-running on an unchanged inventory rewrites nothing.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations)

    var tree: TreeArguments
    var strict: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        tree = TreeArguments(
            inventory: arguments.positional(0), out: arguments.value(.out), state: arguments.value(.state),
            templates: arguments.value(.templates))
        strict = arguments.flag(.strict)
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
    enum Option: CommandOptions {
        case out, state, templates, format, strict, quiet

        var declaration: CommandConfiguration.Option {
            switch self {
            case .out: CommonOptions.out
            case .state: CommonOptions.state
            case .templates: CommonOptions.templates
            case .format: CommonOptions.formatWithSARIF
            case .strict: CommonOptions.strict
            case .quiet: CommonOptions.quiet
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: "check",
        abstract: "Check that the output tree is up to date with the inventory (CI drift gate).",
        discussion: "Exit status 1 when generating would change, add or remove any file under --out.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations)

    var tree: TreeArguments
    var strict: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        tree = TreeArguments(
            inventory: arguments.positional(0), out: arguments.value(.out), state: arguments.value(.state),
            templates: arguments.value(.templates))
        strict = arguments.flag(.strict)
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
    enum Option: CommandOptions {
        case state, out, templates, format, quiet

        var declaration: CommandConfiguration.Option {
            switch self {
            case .state: CommonOptions.state
            case .out: CommonOptions.out
            case .templates: CommonOptions.templates
            case .format: CommonOptions.format
            case .quiet: CommonOptions.quiet
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: "revoke",
        abstract: "Revoke a user's client certificate (CRL) and regenerate.",
        arguments: [
            .init("user", help: "The user whose certificate is revoked."),
            CommonOptions.inventoryArgument,
        ],
        options: Option.declarations)

    var user: String?
    var tree: TreeArguments

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        user = arguments.positional(0)
        tree = TreeArguments(
            inventory: arguments.positional(1), out: arguments.value(.out), state: arguments.value(.state),
            templates: arguments.value(.templates))
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
    enum Option: CommandOptions {
        case format, quiet

        var declaration: CommandConfiguration.Option {
            switch self {
            case .format: CommonOptions.format
            case .quiet: CommonOptions.quiet
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: "init",
        abstract: "Write a commented starter inventory.",
        discussion: "Creates DIR/inventory.yaml (DIR is created if needed). An existing file is never overwritten.",
        arguments: [
            .init("dir", help: "Directory for inventory.yaml (default: the current directory).", optional: true)
        ],
        options: Option.declarations)

    var directory: String?

    init(_ arguments: Arguments<Option>) throws(CLIError) {
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
        context.output.set("created", display)
        context.output.result("wrote \(display)\nnext: edit it, then run 'vpnprov validate \(display)'\n")
        return ExitCode.success
    }
}
