import Foundation

/// Shared option descriptions and helpers of the inventory-reading commands.
enum CommonOptions {
    static let inventoryArgument = CommandConfiguration.Argument(
        "inventory", help: "The inventory file (default: inventory.yaml, else inventory.yml, in the current directory).",
        optional: true)
    static let format = CommandConfiguration.Option("format", value: "format", help: "Diagnostics as text (default, stderr) or json (stdout).")
    static let strict = CommandConfiguration.Option("strict", help: "Treat warnings as errors.")
    static let out = CommandConfiguration.Option("out", value: "dir", help: "Output tree (default: out).")
    static let state = CommandConfiguration.Option("state", value: "dir", help: "State directory: CA, keys, serials, generated secrets (default: state beside the inventory).")
    static let templates = CommandConfiguration.Option("templates", value: "dir", help: "Directory of templates overriding the built-in ones.")

    /// Names tried, in order, when no inventory is given.
    static let defaultInventoryNames = ["inventory.yaml", "inventory.yml"]

    static func format(_ arguments: ParsedArguments, command: String) throws(CLIError) -> DiagnosticPrinter.Format {
        guard let text = arguments.value("format") else { return .text }
        guard let format = DiagnosticPrinter.Format(rawValue: text) else {
            let hint = Spelling.closest(to: text, among: DiagnosticPrinter.Format.allCases.map(\.rawValue)).map { "; did you mean '\($0)'?" } ?? ""
            throw CLIError.usage("invalid value '\(text)' for '--format <format>': expected text or json\(hint)", command: command)
        }
        return format
    }

    /// The inventory to read: as given, or the first default that exists. Returns (display, absolute path).
    static func inventory(_ given: String?, _ context: CommandContext) throws(CLIError) -> (display: String, path: String) {
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
        let dir = (inventoryPath as NSString).deletingLastPathComponent
        return (dir.isEmpty ? context.currentDirectory : dir) + "/state"
    }
}

// MARK: - validate

struct ValidateCommand: Command {
    static let configuration = CommandConfiguration(
        name: "validate",
        abstract: "Parse and check an inventory; print its diagnostics.",
        discussion: "Diagnostics are GCC-style (file:line:column: severity: message [code]). Exit status 1 when the "
            + "inventory has errors, or warnings with --strict.",
        arguments: [CommonOptions.inventoryArgument],
        options: [CommonOptions.format, CommonOptions.strict])

    var inventory: String?
    var format: DiagnosticPrinter.Format
    var strict: Bool

    init(_ arguments: ParsedArguments) throws(CLIError) {
        inventory = arguments.positionals.first
        format = try CommonOptions.format(arguments, command: Self.configuration.name)
        strict = arguments.flag("strict")
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let (display, path) = try CommonOptions.inventory(inventory, context)
        let loaded = try Pipeline.loadInventory(display: display, path: path, format: format, strict: strict, console: context.console)
        if let code = loaded.exitCode { return code }
        if format == .text, let inventory = loaded.inventory {
            let n = inventory.nodes.count, u = inventory.users.count
            context.console.out("\(display): ok (\(n) node\(n == 1 ? "" : "s"), \(u) user\(u == 1 ? "" : "s"))\n")
        }
        return ExitCode.success
    }
}

// MARK: - generate / check

struct GenerateCommand: Command {
    static let configuration = CommandConfiguration(
        name: "generate",
        abstract: "Write server configs, PKI and client profiles for the inventory.",
        discussion: "Keys, certificates and generated secrets are kept in the state directory and reused; "
            + "re-running on an unchanged inventory rewrites nothing.",
        arguments: [CommonOptions.inventoryArgument],
        options: [CommonOptions.out, CommonOptions.state, CommonOptions.templates, CommonOptions.format, CommonOptions.strict])

    var arguments: ParsedArguments
    var format: DiagnosticPrinter.Format

    init(_ arguments: ParsedArguments) throws(CLIError) {
        self.arguments = arguments
        format = try CommonOptions.format(arguments, command: Self.configuration.name)
    }

    func options(_ context: CommandContext) throws(CLIError) -> GenerateOptions {
        let (display, path) = try CommonOptions.inventory(arguments.positionals.first, context)
        return GenerateOptions(
            inventory: display, inventoryPath: path,
            outDirectory: context.resolve(arguments.value("out") ?? "out"),
            stateDirectory: CommonOptions.stateDirectory(arguments.value("state"), inventoryPath: path, context),
            templatesDirectory: arguments.value("templates").map(context.resolve),
            format: format, strict: arguments.flag("strict"), environment: context.environment)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        if let templates = arguments.value("templates") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: context.resolve(templates), isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError.usage("templates directory '\(templates)' not found", command: Self.configuration.name)
            }
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        Pipeline.generate(try options(context), console: context.console)
    }
}

struct CheckCommand: Command {
    static let configuration = CommandConfiguration(
        name: "check",
        abstract: "Check that the output tree is up to date with the inventory (CI drift gate).",
        discussion: "Exit status 1 when generating would change, add or remove any file under --out.",
        arguments: [CommonOptions.inventoryArgument],
        options: [CommonOptions.out, CommonOptions.state, CommonOptions.templates, CommonOptions.format, CommonOptions.strict])

    var generate: GenerateCommand

    init(_ arguments: ParsedArguments) throws(CLIError) {
        do {
            generate = try GenerateCommand(arguments)
        } catch .usage(let message, _) {
            throw CLIError.usage(message, command: Self.configuration.name)
        }
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        do {
            try generate.validate(context)
        } catch .usage(let message, _) {
            throw CLIError.usage(message, command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        Pipeline.check(try generate.options(context), console: context.console)
    }
}

// MARK: - revoke

struct RevokeCommand: Command {
    static let configuration = CommandConfiguration(
        name: "revoke",
        abstract: "Revoke a user's client certificate (CRL) and regenerate.",
        arguments: [
            .init("user", help: "The user whose certificate is revoked."),
            CommonOptions.inventoryArgument,
        ],
        options: [CommonOptions.state, CommonOptions.out, CommonOptions.templates, CommonOptions.format])

    var arguments: ParsedArguments
    var format: DiagnosticPrinter.Format

    init(_ arguments: ParsedArguments) throws(CLIError) {
        self.arguments = arguments
        format = try CommonOptions.format(arguments, command: Self.configuration.name)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard let user = arguments.positionals.first, !user.isEmpty else {
            throw CLIError.usage("missing argument <user>", command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let (display, path) = try CommonOptions.inventory(arguments.positionals.dropFirst().first, context)
        let options = RevokeOptions(
            user: arguments.positionals[0],
            regenerate: GenerateOptions(
                inventory: display, inventoryPath: path, outDirectory: context.resolve(arguments.value("out") ?? "out"),
                stateDirectory: CommonOptions.stateDirectory(arguments.value("state"), inventoryPath: path, context),
                templatesDirectory: arguments.value("templates").map(context.resolve), format: format, strict: false,
                environment: context.environment))
        return Pipeline.revoke(options, console: context.console)
    }
}

// MARK: - init

struct InitCommand: Command {
    static let configuration = CommandConfiguration(
        name: "init",
        abstract: "Write a commented starter inventory.",
        discussion: "Creates DIR/inventory.yaml (DIR is created if needed). An existing file is never overwritten.",
        arguments: [.init("dir", help: "Directory for inventory.yaml (default: the current directory).", optional: true)])

    var directory: String?

    init(_ arguments: ParsedArguments) throws(CLIError) {
        directory = arguments.positionals.first
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let dir = context.resolve(directory ?? ".")
        let display = directory.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/inventory.yaml" } ?? "inventory.yaml"
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
        context.console.out("wrote \(display)\nnext: edit it, then run 'vpnprov validate \(display)'\n")
        return ExitCode.success
    }
}
