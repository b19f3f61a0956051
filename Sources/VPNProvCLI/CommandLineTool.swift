import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Why a command stopped. Mapped to text and an exit code in one place (`CommandLineTool.report`).
package enum CLIError: Error, Sendable, Hashable {
    /// Bad command line or missing input file: exit 2, with a pointer to the command's help.
    case usage(String, command: String?)
    /// A well-formed request refused by what it asks of (the accounts database: no such account, a name that
    /// exists, an unknown tier): exit 2 like a usage error, but the command line was right, so no usage text.
    case refused(String)
    /// The environment or state is unusable (unwritable directory, lock held, disk full): exit 3.
    case environment(String)
    /// The command already printed why it failed; exit with this code.
    case failure(Int32)
}

/// Exit codes (README, "Command reference").
package enum ExitCode {
    package static let success: Int32 = 0
    /// The inventory has errors (or warnings with --strict), or `check` found drift.
    package static let failure: Int32 = 1
    /// Usage error: unknown flag, bad argument, missing file.
    package static let usage: Int32 = 2
    /// Environment/state error.
    package static let environment: Int32 = 3

    /// What each code means, as the top-level help and the manual page say it.
    static let meanings: [(code: Int32, meaning: String)] = [
        (success, "success"), (failure, "inventory errors (or check found drift, or a disconnect was not confirmed)"),
        (usage, "usage error"),
        (environment, "environment error"),
    ]
}

extension ExitCode {
    /// The exit status of an engine outcome.
    static func of(_ outcome: Outcome) -> Int32 {
        switch outcome {
        case .success: return success
        case .failure: return failure
        case .usage: return usage
        case .environment: return environment
        }
    }
}

extension CLIError {
    /// An engine error as the command line reports it: the same text, exit 2 or 3.
    init(_ error: EngineError) {
        switch error {
        case .usage(let message): self = .usage(message, command: nil)
        case .environment(let message): self = .environment(message)
        }
    }
}

/// Calls into the engine from a command: its errors become the command line's.
func engine<T>(_ body: () throws(EngineError) -> T) throws(CLIError) -> T {
    do {
        return try body()
    } catch {
        throw CLIError(error)
    }
}

/// Runs an engine command: its outcome as the exit status, its errors as the command line's.
func engineCommand(_ body: () throws(EngineError) -> Outcome) throws(CLIError) -> Int32 {
    ExitCode.of(try engine(body))
}

/// What a running command may use: streams, environment variables and the directory relative paths start from.
package struct CommandContext: Sendable {
    package var console: Console
    package var environment: [String: String]
    package var currentDirectory: String
    /// Where the running command reports (diagnostics, messages, the JSON/SARIF document).
    package var output: CommandOutput
    /// The run's clock, read once when the process starts the command.
    package var now: Date

    package init(
        console: Console, environment: [String: String], currentDirectory: String, now: Date,
        output: CommandOutput? = nil
    ) {
        self.console = console
        self.now = now
        self.environment = environment
        self.currentDirectory = currentDirectory
        self.output = output ?? CommandOutput(command: "vpnprov", console: console)
    }

    /// `path` made absolute against the current directory.
    package func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        let base = currentDirectory.hasSuffix("/") ? String(currentDirectory.dropLast()) : currentDirectory
        return path == "." ? base : base + "/" + path
    }
}

/// A subcommand (or a group's subcommand, as `accounts add`): static configuration, construction
/// from its typed arguments, validation, then run.
protocol Command {
    /// The options it declares; its configuration's options are theirs (a group's also its subcommands').
    associatedtype Option: CommandOptions
    static var configuration: CommandConfiguration { get }
    /// Takes the values out of the arguments (no file system access).
    init(_ arguments: Arguments<Option>) throws(CLIError)
    /// Checks arguments against each other and the environment before anything is done.
    func validate(_ context: CommandContext) throws(CLIError)
    /// Does the work; returns the exit code.
    func run(_ context: CommandContext) throws(CLIError) -> Int32
}

extension Command {
    func validate(_ context: CommandContext) throws(CLIError) {}

    /// From what the parser read by the command's configuration.
    init(_ parsed: ParsedArguments) throws(CLIError) { try self.init(Arguments<Option>(parsed)) }
}

/// Entry point of the `vpnprov` command.
package enum CommandLineTool {
    package static let version = ProductVersion.current
    /// The date of this version: the manual page's date.
    static let releaseDate = "2026-12-01"

    /// What vpnprov is, the first section of the top-level help and the manual page.
    static let overview = """
        Turn a YAML inventory of VPN nodes and users into strongSwan swanctl configuration,
        PKI and client profiles that always agree with each other.
        """

    /// The options before a command besides -h/--help. Not listed: `--generate-manual` and
    /// `--generate-completion-script <shell>`, which print the manual page and the completion
    /// scripts that `scripts/install` installs (HelpDocuments).
    static let topLevelOptions = [CommandConfiguration.Option("version", help: "Show the version.")]

    /// The commands, in the order the help lists them (`CommandName`).
    static var commands: [any Command.Type] { CommandName.allCases.map(\.command) }

    static var commandNames: [String] { CommandName.allCases.map(\.rawValue) }

    /// Runs with the process's real streams, environment and working directory.
    /// Runs `vpnprov <arguments>` on the process's streams, environment and directory, as of `now`
    /// (the real clock in `vpnprov`).
    package static func main(arguments: [String], now: Date) -> Int32 {
        Interruption.makeInterruptible()
        return run(
            arguments: arguments, console: .standard, environment: ProcessInfo.processInfo.environment,
            currentDirectory: FileManager.default.currentDirectoryPath, now: now)
    }

    /// Runs `vpnprov <arguments>` in-process (arguments exclude the program name), as of `now`.
    package static func run(
        arguments: [String], console: Console, environment: [String: String], currentDirectory: String, now: Date
    ) -> Int32 {
        let context = CommandContext(
            console: console, environment: environment, currentDirectory: currentDirectory, now: now)
        do {
            return try dispatch(arguments, context)
        } catch {
            return report(error, console)
        }
    }

    static func dispatch(_ arguments: [String], _ context: CommandContext) throws(CLIError) -> Int32 {
        guard let first = arguments.first else {
            context.console.err(help)
            return ExitCode.usage
        }
        switch first {
        case "-h", "--help":
            context.console.out(help)
            return ExitCode.success
        case "--version":
            context.console.out("vpnprov \(version)\n")
            return ExitCode.success
        case "--generate-manual":
            context.console.out(HelpDocuments.manual)
            return ExitCode.success
        case "--generate-completion-script":
            guard arguments.count == 2, let script = HelpDocuments.completionScript(arguments[1]) else {
                throw CLIError.usage(
                    "'--generate-completion-script' takes one of \(HelpDocuments.shells.joined(separator: ", "))",
                    command: nil)
            }
            context.console.out(script)
            return ExitCode.success
        case "help":
            guard arguments.count > 1 else {
                context.console.out(help)
                return ExitCode.success
            }
            let type = try command(named: arguments[1])
            context.console.out(type.configuration.help)
            return ExitCode.success
        default:
            let type = try command(named: first)
            let parsed = try ParsedArguments.parse(Array(arguments.dropFirst()), for: type.configuration)
            if parsed.wantsHelp {
                context.console.out(type.configuration.help)
                return ExitCode.success
            }
            // From here on the format is known: however the command ends, a json or sarif run
            // prints its one document.
            let format = try OutputOption.format(parsed, for: type.configuration)
            var context = context
            context.output = CommandOutput(
                command: type.configuration.name, format: format, console: context.console,
                quiet: parsed.flag(of: OutputOption.quiet),
                progress: Progress(console: context.console, environment: context.environment))
            let code: Int32
            do {
                let command = try type.init(parsed)
                try command.validate(context)
                code = try command.run(context)
            } catch {
                code = report(error, context.console)
                context.output.collect(error)
            }
            context.output.finish(exitCode: code)
            return code
        }
    }

    static func command(named name: String) throws(CLIError) -> any Command.Type {
        if let name = CommandName(rawValue: name) { return name.command }
        if name.hasPrefix("-") {
            let hint =
                Spelling.closest(to: String(name.drop { $0 == "-" }), among: ["help", "version"]).map {
                    "; did you mean '--\($0)'?"
                } ?? ""
            throw CLIError.usage("unknown option '\(name)'\(hint)", command: nil)
        }
        let hint = Spelling.closest(to: name, among: commandNames).map { "; did you mean '\($0)'?" } ?? ""
        throw CLIError.usage("unknown command '\(name)'\(hint)", command: nil)
    }

    /// The one place errors become text and exit codes.
    static func report(_ error: CLIError, _ console: Console) -> Int32 {
        switch error {
        case .usage(let message, let command):
            var text = "vpnprov: error: \(message)\n"
            if let command, let type = CommandName(rawValue: command)?.command {
                text += "Usage: \(type.configuration.usage)\n  See 'vpnprov \(command) --help'.\n"
            } else {
                text += "  See 'vpnprov --help'.\n"
            }
            console.err(text)
            return ExitCode.usage
        case .refused(let message):
            console.err("vpnprov: error: \(message)\n")
            return ExitCode.usage
        case .environment(let message):
            console.err("vpnprov: error: \(message)\n")
            return ExitCode.environment
        case .failure(let code):
            return code
        }
    }

    /// Top-level help: OVERVIEW, USAGE, OPTIONS, SUBCOMMANDS.
    static var help: String {
        var out = "OVERVIEW: \(overview)\n\nUSAGE: vpnprov <subcommand> [<arguments>] [<options>]\n\nOPTIONS:\n"
        for option in topLevelOptions { out += HelpFormatter.row("--\(option.name)", option.help) }
        out += HelpFormatter.row("-h, --help", HelpDocuments.helpOption.help)
        out += "\nSUBCOMMANDS:\n"
        for c in commands { out += HelpFormatter.row(c.configuration.name, c.configuration.abstract) }
        out += "\n  See 'vpnprov help <subcommand>' for detailed help.\n"
        out += "\nEXIT STATUS: " + ExitCode.meanings.map { "\($0.code) \($0.meaning)" }.joined(separator: ", ") + ".\n"
        return out
    }
}

/// How Ctrl-C (SIGINT) and `kill`/a service manager (SIGTERM) end a run: at their default action,
/// exactly where they arrive, like a kill (docs/state.md, "Interrupted runs"). Nothing is cleaned up
/// in a handler (a handler could not know which renames have happened); the next run removes the
/// temporaries and revokes what the interrupted run signed but did not record.
enum Interruption {
    /// Unblocks SIGINT and SIGTERM on the main thread before any other thread exists (threads inherit
    /// its mask). A program started from a thread that blocks them (a test runner's or a dispatch
    /// worker's `posix_spawn`) inherits that mask and could otherwise not be interrupted at all. An
    /// ignored signal stays ignored: that is the caller's choice (`nohup`, a background job).
    static func makeInterruptible() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
