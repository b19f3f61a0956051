import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Static description of a command: what help prints and what the parser accepts
/// (the shape of swift-argument-parser's `CommandConfiguration`, without the dependency).
package struct CommandConfiguration: Sendable {
    package struct Argument: Sendable {
        package var name: String
        package var help: String
        package var isOptional: Bool
        package init(_ name: String, help: String, optional: Bool = false) {
            self.name = name
            self.help = help
            self.isOptional = optional
        }
    }

    package struct Option: Sendable {
        /// Long name without dashes ("out").
        package var name: String
        /// Value placeholder ("dir"); nil for a flag.
        package var valueName: String?
        package var help: String
        package init(_ name: String, value: String? = nil, help: String) {
            self.name = name
            self.valueName = value
            self.help = help
        }
    }

    package var name: String
    package var abstract: String
    package var discussion: String?
    package var arguments: [Argument]
    package var options: [Option]

    package init(
        name: String, abstract: String, discussion: String? = nil, arguments: [Argument] = [], options: [Option] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
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

/// Arguments after the command name, split by the command's configuration.
package struct ParsedArguments: Sendable {
    package var positionals: [String] = []
    package var values: [String: String] = [:]
    package var flags: Set<String> = []
    package var wantsHelp = false

    package func value(_ name: String) -> String? { values[name] }
    package func flag(_ name: String) -> Bool { flags.contains(name) }

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
        let maxPositionals = configuration.arguments.count
        if result.positionals.count > maxPositionals {
            throw CLIError.usage(
                "unexpected argument '\(result.positionals[maxPositionals])'", command: configuration.name)
        }
        let required = configuration.arguments.filter { !$0.isOptional }.count
        if result.positionals.count < required {
            let missing = configuration.arguments[result.positionals.count]
            throw CLIError.usage("missing argument <\(missing.name)>", command: configuration.name)
        }
        return result
    }
}
