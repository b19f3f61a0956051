import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// What a shell offers for an option's value or a positional argument (the completion scripts,
/// `HelpDocuments`).
package enum Completion: Sendable, Hashable {
    /// One of these words (`--format text|json|sarif`).
    case choices([String])
    case directory
    case file
    /// Free text the shell cannot guess (a user or node name, a number of days).
    case none
}

/// Static description of a command: what help prints and what the parser accepts
/// (the shape of swift-argument-parser's `CommandConfiguration`, without the dependency).
package struct CommandConfiguration: Sendable {
    package struct Argument: Sendable {
        package var name: String
        package var help: String
        package var isOptional: Bool
        package var completion: Completion
        package init(_ name: String, help: String, optional: Bool = false, completion: Completion = .none) {
            self.name = name
            self.help = help
            self.isOptional = optional
            self.completion = completion
        }
    }

    package struct Option: Sendable {
        /// Long name without dashes ("out").
        package var name: String
        /// Value placeholder ("dir"); nil for a flag.
        package var valueName: String?
        /// What a shell offers for the value.
        package var completion: Completion
        package var help: String

        /// A flag.
        package init(_ name: String, help: String) {
            self.name = name
            self.valueName = nil
            self.completion = .none
            self.help = help
        }

        /// An option that takes a value shown as `<value>`.
        package init(_ name: String, value: String, completion: Completion = .none, help: String) {
            self.name = name
            self.valueName = value
            self.completion = completion
            self.help = help
        }

        /// An option whose value is one of `words`, shown as `<a|b>`.
        package init(_ name: String, choices words: [String], help: String) {
            self.init(name, value: words.joined(separator: "|"), completion: .choices(words), help: help)
        }
    }

    package var name: String
    package var abstract: String
    package var discussion: String?
    package var arguments: [Argument]
    /// Its own options, then the shared ones it takes (`SharedOption`), then `--format` and `--quiet`.
    package var options: [Option]
    /// The formats its `--format` takes; empty for an `accounts` action (the group's `--format` applies).
    package var formats: [DiagnosticPrinter.Format]

    /// A command of `vpnprov`: its own options, the shared ones it takes, and `--format` with `formats` and
    /// `--quiet`, which every command has (the dispatcher reads them).
    init(
        name: CommandName, abstract: String, discussion: String? = nil, arguments: [Argument] = [],
        options: [Option] = [], shared: [SharedOption] = [], formats: [DiagnosticPrinter.Format] = [.text, .json]
    ) {
        self.name = name.rawValue
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options + shared.map(\.declaration) + OutputOption.declarations(formats: formats)
        self.formats = formats
    }

    /// An action of `accounts`: its own options only.
    init(action: AccountsActionName, abstract: String, arguments: [Argument] = [], options: [Option] = []) {
        self.name = action.rawValue
        self.abstract = abstract
        self.discussion = nil
        self.arguments = arguments
        self.options = options
        self.formats = []
    }

    /// "vpnprov validate [<inventory>] [--format <format>] [--strict]"
    package var usage: String {
        var parts = ["vpnprov", name]
        for a in arguments { parts.append(a.isOptional ? "[<\(a.name)>]" : "<\(a.name)>") }
        for o in options { parts.append(o.valueName.map { "[--\(o.name) <\($0)>]" } ?? "[--\(o.name)]") }
        return parts.joined(separator: " ")
    }

    /// Help text with the fixed sections OVERVIEW, USAGE, ARGUMENTS, OPTIONS.
    package var help: String {
        var out = "OVERVIEW: \(abstract)\n"
        if let discussion { out += "\n\(discussion)\n" }
        out += "\nUSAGE: \(usage)\n"
        if !arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in arguments { out += HelpFormatter.row("<\(a.name)>", a.help) }
        }
        out += "\nOPTIONS:\n"
        for o in options { out += HelpFormatter.row("--\(o.name)" + (o.valueName.map { " <\($0)>" } ?? ""), o.help) }
        out += HelpFormatter.row("-h, --help", HelpDocuments.helpOption.help)
        return out
    }
}

enum HelpFormatter {
    static let labelWidth = 24

    static func row(_ label: String, _ help: String) -> String {
        let head = "  " + label
        if head.count < labelWidth {
            return head + String(repeating: " ", count: labelWidth - head.count) + help + "\n"
        }
        return head + "\n" + String(repeating: " ", count: labelWidth) + help + "\n"
    }
}

/// The options one command declares, one case each, in the order its help lists them: the command's
/// table is made from them (`declarations`), and its parsed arguments are read by case
/// (`Arguments.value(_:)`, `Arguments.flag(_:)`), so reading an option the command does not declare
/// does not compile.
protocol CommandOptions: CaseIterable, Hashable, Sendable {
    /// The option's entry in the command's table: its name, value placeholder (nil for a flag) and help.
    var declaration: CommandConfiguration.Option { get }
}

extension CommandOptions {
    /// The command's options as its table lists them.
    static var declarations: [CommandConfiguration.Option] { allCases.map(\.declaration) }
}

/// A command without options of its own (an `accounts` action that takes only the group's).
enum NoOptions: CommandOptions {
    var declaration: CommandConfiguration.Option { switch self {} }
}

/// A command's parsed arguments, read through the options it declares.
struct Arguments<Option: CommandOptions>: Sendable {
    /// What the parser read (the group's options included, for a subcommand).
    let parsed: ParsedArguments

    init(_ parsed: ParsedArguments) { self.parsed = parsed }

    var positionals: [String] { parsed.positionals }

    /// The positional at `index`, if given.
    func positional(_ index: Int) -> String? { index < parsed.positionals.count ? parsed.positionals[index] : nil }

    /// The value of an option that takes one; nil when it was not given.
    func value(_ option: Option) -> String? {
        let declaration = option.declaration
        precondition(declaration.valueName != nil, "--\(declaration.name) is a flag")
        return parsed.values[declaration.name]
    }

    /// Whether a flag was given.
    func flag(_ option: Option) -> Bool {
        let declaration = option.declaration
        precondition(declaration.valueName == nil, "--\(declaration.name) takes a value")
        return parsed.flags.contains(declaration.name)
    }

    /// The same arguments read through the options several commands share (`--state`, `--out`, `--templates`,
    /// `--strict`): a command's configuration says which of them it takes.
    var shared: Arguments<SharedOption> { Arguments<SharedOption>(parsed) }

    /// The same arguments read through the options of the group this subcommand belongs to (`accounts`'s
    /// `--inventory`, `--state`, `--database`).
    func group<Group: CommandOptions>(_: Group.Type) -> Arguments<Group> { Arguments<Group>(parsed) }

    /// The arguments after the first positional (a group's subcommand name), for the subcommand.
    var droppingFirstPositional: Arguments {
        var rest = parsed
        rest.positionals.removeFirst()
        return Arguments(rest)
    }
}

/// Arguments after the command name, split by the command's configuration. Commands read them through
/// their declared options (`Arguments`); the names are the parser's.
package struct ParsedArguments: Sendable {
    var positionals: [String] = []
    fileprivate(set) var values: [String: String] = [:]
    fileprivate(set) var flags: Set<String> = []
    var wantsHelp = false

    /// The names of the options given (values and flags), for a group that checks its subcommand's.
    var givenOptionNames: Set<String> { flags.union(values.keys) }

    /// The value of an option of the table this was parsed by (`--format`, which every command has).
    func value(of option: CommandConfiguration.Option) -> String? { values[option.name] }

    /// Whether a flag of the table this was parsed by was given (`--quiet`, which every command has).
    func flag(of option: CommandConfiguration.Option) -> Bool { flags.contains(option.name) }

    /// Splits `arguments` by `configuration`. Usage errors name the command so help can be suggested.
    package static func parse(_ arguments: [String], for configuration: CommandConfiguration) throws(CLIError)
        -> ParsedArguments
    {
        var result = ParsedArguments()
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                result.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "-h" || arg == "--help" {
                result.wantsHelp = true
                continue
            }
            guard arg.hasPrefix("--") else {
                throw CLIError.usage("unknown option '\(arg)'", command: configuration.name)
            }
            let (option, inline) = try declaredOption(arg, of: configuration)
            let name = option.name
            guard let valueName = option.valueName else {
                if inline != nil {
                    throw CLIError.usage("option '--\(name)' takes no value", command: configuration.name)
                }
                result.flags.insert(name)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < arguments.count, !arguments[i].hasPrefix("--") else {
                    throw CLIError.usage("missing value for '--\(name) <\(valueName)>'", command: configuration.name)
                }
                value = arguments[i]
                i += 1
            }
            guard !value.isEmpty else {
                throw CLIError.usage("empty value for '--\(name) <\(valueName)>'", command: configuration.name)
            }
            guard result.values[name] == nil else {
                throw CLIError.usage("option '--\(name)' given more than once", command: configuration.name)
            }
            result.values[name] = value
        }
        if result.wantsHelp { return result }
        try result.checkPositionalCount(for: configuration)
        return result
    }

    /// The declared option an argument `--name` or `--name=value` names, with the value written after `=`.
    private static func declaredOption(_ arg: String, of configuration: CommandConfiguration) throws(CLIError)
        -> (CommandConfiguration.Option, inline: String?)
    {
        let body = arg.dropFirst(2)
        let name: String
        var inline: String?
        if let eq = body.firstIndex(of: "=") {
            name = String(body[..<eq])
            inline = String(body[body.index(after: eq)...])
        } else {
            name = String(body)
        }
        guard let option = configuration.options.first(where: { $0.name == name }) else {
            let names = configuration.options.map(\.name) + ["help"]
            let hint = Spelling.closest(to: name, among: names).map { "; did you mean '--\($0)'?" } ?? ""
            throw CLIError.usage("unknown option '--\(name)'\(hint)", command: configuration.name)
        }
        return (option, inline)
    }

    /// No more positional arguments than the command declares, and none of its required ones missing.
    private func checkPositionalCount(for configuration: CommandConfiguration) throws(CLIError) {
        let maxPositionals = configuration.arguments.count
        if positionals.count > maxPositionals {
            throw CLIError.usage("unexpected argument '\(positionals[maxPositionals])'", command: configuration.name)
        }
        let required = configuration.arguments.filter { !$0.isOptional }.count
        if positionals.count < required {
            let missing = configuration.arguments[positionals.count]
            throw CLIError.usage("missing argument <\(missing.name)>", command: configuration.name)
        }
    }
}
