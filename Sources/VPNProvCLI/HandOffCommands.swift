import Foundation
import VPNProvEngine
import VPNProvModel
import VPNProvSupport

// The hand-off commands (docs/handoff.md): `handoff` publishes each user's folder behind a link of its own
// and prints the links and their QR codes, `handoff-revoke` ends a user's link, `handoff-list` says what is
// out and what was fetched. Publishing runs the generated deploy/handoff.yml with ansible-playbook.

/// The options the hand-off commands share.
enum HandOffCommonOptions {
    static let noPublish = CommandConfiguration.Option(
        "no-publish",
        help:
            "Only write OUT/handoff/ (a rollout of deploy/site.yml or deploy/handoff.yml publishes it); by default "
            + "ansible-playbook from PATH runs deploy/handoff.yml.")
}

// MARK: - handoff

struct HandOffCommand: Command {
    enum Option: CommandOptions {
        case users, all, expires, downloads, noPublish, noQR

        var declaration: CommandConfiguration.Option {
            switch self {
            case .users:
                .init(
                    "users", value: "list",
                    help:
                        "The users to hand off, comma-separated (default: those whose profiles changed since their last link)."
                )
            case .all: .init("all", help: "Every active user.")
            case .expires:
                .init(
                    "expires", value: "time",
                    help: "How long the links live: minutes, hours or days, 1h to 30d (default: handoff.expires, 72h).")
            case .downloads:
                .init(
                    "downloads", value: "n",
                    help: "Downloads per file, 0 for no limit until the link expires (default: handoff.downloads, 1).")
            case .noPublish: HandOffCommonOptions.noPublish
            case .noQR:
                .init("no-qr", help: "Do not draw the QR codes in the terminal (the PNG and SVG files are written).")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .handOff,
        abstract: "Publish each user's profiles behind a link that expires; print the links and their QR codes.",
        discussion:
            "Each user gets a link of their own to the hand-off site of the inventory (handoff:): a page that offers "
            + "that user's files, the one for the device that opened it first, each downloadable as often as "
            + "--downloads allows until the link expires. The files are sealed under a key only the link holds, and "
            + "are gone from the site once the link expired, was used up or was withdrawn. A user's earlier link "
            + "ends. The QR code of each link is printed and written to OUT/handoff/qr/USER.png and .svg. Run it "
            + "after 'generate' (it refuses profiles that are not what generate would write now); 'generate', "
            + "'revoke' and the lifecycle commands end the links of users whose profiles they change.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.state, .out, .templates])

    var tree: TreeArguments
    var users: [String]
    var all: Bool
    var lifetime: Int?
    var downloads: Int?
    var publish: Bool
    var terminalQR: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        tree = TreeArguments(inventory: arguments.positional(0), arguments.shared)
        users = HandOffCommand.names(arguments.value(.users))
        all = arguments.flag(.all)
        publish = !arguments.flag(.noPublish)
        terminalQR = !arguments.flag(.noQR)
        if let text = arguments.value(.expires) {
            let range = HandOffSettings.lifetimeRange
            guard let seconds = HandOffSettings.seconds(text), range.contains(seconds) else {
                throw CLIError.usage(
                    "invalid value '\(text.prefix(32))' for '--expires <time>': expected minutes, hours or days from "
                        + "\(HandOffSettings.text(seconds: range.lowerBound)) to \(HandOffSettings.text(seconds: range.upperBound)) "
                        + "('90m', '24h', '3d')", command: Self.configuration.name)
            }
            lifetime = seconds
        }
        if let text = arguments.value(.downloads) {
            let range = HandOffSettings.downloadsRange
            guard let n = Int(text), range.contains(n) else {
                throw CLIError.usage(
                    "invalid value '\(text.prefix(32))' for '--downloads <n>': expected a whole number from "
                        + "\(range.lowerBound) to \(range.upperBound)", command: Self.configuration.name)
            }
            downloads = n
        }
        if all && !users.isEmpty {
            throw CLIError.usage("give either '--users <list>' or '--all', not both", command: Self.configuration.name)
        }
        if arguments.value(.users) != nil && users.isEmpty {
            throw CLIError.usage("'--users' needs at least one user name", command: Self.configuration.name)
        }
    }

    /// A comma-separated list of names.
    static func names(_ list: String?) -> [String] {
        (list ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        try tree.checkTemplates(context, command: Self.configuration.name)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = HandOffOptions(
            tree: try tree.checkedGenerateOptions(strict: false, context, command: Self.configuration.name),
            users: users, all: all, lifetime: lifetime, downloads: downloads, publish: publish, terminalQR: terminalQR)
        let publisher = publish ? AnsiblePublisher(context: context) : nil
        return try engineCommand { () throws(EngineError) in
            try Pipeline.handOff(options, publisher: publisher, output: context.output)
        }
    }
}

// MARK: - handoff-revoke

struct HandOffRevokeCommand: Command {
    enum Option: CommandOptions {
        case noPublish

        var declaration: CommandConfiguration.Option {
            switch self {
            case .noPublish: HandOffCommonOptions.noPublish
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .handOffRevoke,
        abstract: "End a user's hand-off link now: the site deletes the files and says the link was withdrawn.",
        discussion:
            "For a link sent to the wrong person, or one the user no longer needs. 'vpnprov revoke USER' and a change of "
            + "the user's profiles end the link too, at the next publish or rollout.",
        arguments: [.init("user", help: "The user whose link ends."), CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.state, .out])

    var user: String?
    var tree: TreeArguments
    var publish: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        user = arguments.positional(0)
        tree = TreeArguments(inventory: arguments.positional(1), arguments.shared)
        publish = !arguments.flag(.noPublish)
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard let user, !user.isEmpty else {
            throw CLIError.usage("missing argument <user>", command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = HandOffListOptions(
            tree: try tree.checkedGenerateOptions(strict: false, context, command: Self.configuration.name),
            users: [user ?? ""], publish: publish)
        let publisher = publish ? AnsiblePublisher(context: context) : nil
        return try engineCommand { () throws(EngineError) in
            try Pipeline.handOffRevoke(options, publisher: publisher, output: context.output)
        }
    }
}

// MARK: - handoff-list

struct HandOffListCommand: Command {
    enum Option: CommandOptions {
        case offline

        var declaration: CommandConfiguration.Option {
            switch self {
            case .offline:
                .init(
                    "offline",
                    help: "List from the audit journal the last publish fetched, without running ansible-playbook.")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .handOffList,
        abstract: "List the hand-off links: what is out, whether it was used, and every fetch (when, from where).",
        discussion:
            "Newest first: each link's user, id, when it was made and ends, its state (live, used, expired, revoked, "
            + "replaced) and the site's audit journal for it (page views, downloads, refusals, with the address and "
            + "browser). The journal is fetched from the site first (deploy/handoff.yml, which also publishes) into "
            + "OUT/rollout/handoff/audit.jsonl; with --offline the copy of the last publish is read.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.state, .out])

    var tree: TreeArguments
    var publish: Bool

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        tree = TreeArguments(inventory: arguments.positional(0), arguments.shared)
        publish = !arguments.flag(.offline)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = HandOffListOptions(
            tree: try tree.checkedGenerateOptions(strict: false, context, command: Self.configuration.name),
            publish: publish)
        let publisher = publish ? AnsiblePublisher(context: context) : nil
        return try engineCommand { () throws(EngineError) in
            try Pipeline.handOffList(options, publisher: publisher, output: context.output)
        }
    }
}

// MARK: - publishing

/// Runs `ansible-playbook -i OUT/deploy/inventory.yml OUT/deploy/handoff.yml` (found on PATH) with the
/// command's environment, so the operator's Ansible settings (SSH keys, ansible.cfg) apply. Its output is
/// shown only when it fails: the playbook prints no secret (the uploads are sealed and under no_log).
struct AnsiblePublisher: HandOffPublisher {
    var environment: [String: String]
    var currentDirectory: String

    init(context: CommandContext) {
        environment = context.environment
        currentDirectory = context.currentDirectory
    }

    /// The lines of a failed run's output shown, and at most how much of its output is kept for them.
    static let shownLines = 40
    static let keptBytes = 1 << 20

    func publish(outDirectory: String) throws(HandOffPublishError) {
        let path = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        guard let program = path.map({ "\($0)/ansible-playbook" }).first(where: FileManager.default.isExecutableFile)
        else {
            throw HandOffPublishError(
                "ansible-playbook is not on PATH; install Ansible, or run with --no-publish and roll "
                    + "deploy/handoff.yml out yourself")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["-i", outDirectory + "/deploy/inventory.yml", outDirectory + "/deploy/handoff.yml"]
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory)
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do {
            try process.run()
        } catch {
            throw HandOffPublishError("cannot run \(program): \(error.localizedDescription)")
        }
        // Read to the end (the child must not block on a full pipe), keeping only the tail that a failure shows.
        var output = Data()
        let reader = pipe.fileHandleForReading
        while case let chunk = reader.availableData, !chunk.isEmpty {
            output += chunk
            if output.count > Self.keptBytes { output = output.suffix(Self.keptBytes / 2) }
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let lines = String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
                .suffix(Self.shownLines)
            throw HandOffPublishError(
                "ansible-playbook deploy/handoff.yml exited with status \(process.terminationStatus)"
                    + (lines.isEmpty ? "" : "; its last lines follow"), output: lines.map { "ansible-playbook: \($0)" })
        }
    }
}
