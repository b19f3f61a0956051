import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// The lifecycle commands: `status` (read-only) and the state-changing `rotate-ca`, `rotate-psk`,
/// `rotate-password` and `unrevoke`, which regenerate the output like `generate` afterwards.
enum LifecycleCommandSupport {
    /// The shared options of the commands that regenerate after a change of the state.
    static let regenerate: [SharedOption] = [.state, .out, .templates]

    /// The regenerate options of a state-changing command.
    static func options(
        _ tree: TreeArguments, command: String, action: PKIManager.StateAction, _ context: CommandContext
    ) throws(CLIError) -> LifecycleOptions {
        LifecycleOptions(command: command, action: action, regenerate: try tree.generateOptions(strict: false, context))
    }

    static let rolloutNote =
        "Afterwards the output is regenerated like 'generate', and the command says which nodes need a rollout "
        + "and which users need new profiles."
}

// MARK: - status

struct StatusCommand: Command {
    enum Option: CommandOptions {
        case expiring

        var declaration: CommandConfiguration.Option {
            switch self {
            case .expiring:
                .init(
                    "expiring", value: "days",
                    help: "Exit 1 when something expires within this many days (listing what and when).")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .status,
        abstract: "Show what the state holds for the inventory, and when it expires.",
        discussion:
            "The CA (both during a rotation), every node and user certificate (identity, serial, not-after, days left, "
            + "active / superseded / revoked / held), the CRLs, which generated secrets exist (never their values), users without "
            + "certificates, and what the state holds for names the inventory no longer has; for an ACME node, the certificate "
            + "its last rollout reported (OUT/rollout/acme/NODE.pem). Read-only: takes no lock, changes "
            + "nothing. With --expiring DAYS the exit status is 1 when the CA, an active certificate (an ACME node's as reported) "
            + "or a CRL expires within DAYS (or has expired), for a daily CI job.",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.state, .out])

    var inventory: String?
    var state: String?
    var out: String?
    var expiring: Int?

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        inventory = arguments.positional(0)
        state = arguments.shared.value(.state)
        out = arguments.shared.value(.out)
        if let text = arguments.value(.expiring) {
            guard let days = Int(text), days >= 0, days <= 36500 else {
                throw CLIError.usage(
                    "invalid value '\(text)' for '--expiring <days>': expected a whole number of days (0-36500)",
                    command: Self.configuration.name)
            }
            expiring = days
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let (display, path) = try CommonOptions.inventory(inventory, context)
        let now = context.now
        let state = CommonOptions.stateDirectory(state, inventoryPath: path, context)
        let output = context.output
        let loaded = try engine { () throws(EngineError) in
            try Pipeline.loadInventory(display: display, path: path, strict: false, output: output)
        }
        if let outcome = loaded.outcome { return ExitCode.of(outcome) }
        guard let inventory = loaded.inventory else { return ExitCode.failure }
        let report: StatusReport
        do {
            report = try StatusReport.make(
                inventory: inventory, stateDirectory: state, now: now, expiringWithin: expiring,
                outDirectory: CommonOptions.outDirectory(out, inventoryPath: path, context))
        } catch let error as StateError {
            output.error(error.code, error.message)
            return ExitCode.environment
        } catch {
            output.error(.stateUnreadable, "\(error)")
            return ExitCode.environment
        }
        output.record(report)
        let expired = report.expiring?.isEmpty == false
        output.result(report.text, failing: expired)
        return expired ? ExitCode.failure : ExitCode.success
    }
}

// MARK: - rotate-ca

struct RotateCACommand: Command {
    enum Option: CommandOptions {
        case finish

        var declaration: CommandConfiguration.Option {
            switch self {
            case .finish: .init("finish", help: "End the overlap: remove the previous CA from every server.")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .rotateCA,
        abstract: "Start a CA rotation (new CA, every certificate re-issued), or end it with --finish.",
        discussion:
            "During the overlap the servers keep trusting the previous CA and present the new one cross-certified by it, "
            + "so profiles installed before the rotation keep connecting while users receive new ones. --finish retires the "
            + "previous CA: after the rollout, certificates and profiles from before the rotation are refused. "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: LifecycleCommandSupport.regenerate)

    var finish: Bool
    var tree: TreeArguments

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        finish = arguments.flag(.finish)
        tree = TreeArguments(inventory: arguments.positional(0), arguments.shared)
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let action: PKIManager.StateAction = finish ? .finishCARotation : .startCARotation
        let options = try LifecycleCommandSupport.options(
            tree, command: Self.configuration.name, action: action, context)
        return try engineCommand { () throws(EngineError) in try Pipeline.lifecycle(options, output: context.output) }
    }
}

// MARK: - rotate-psk / rotate-radius-secret / rotate-password / unrevoke

/// A lifecycle command on one node or user (`rotate-psk NODE`, `unrevoke USER`, ...), which regenerates
/// like `generate` with its state action.
protocol NamedLifecycleCommand: Command where Option == NoOptions {
    /// `node` or `user`: what the first argument names.
    static var nameKind: String { get }
    static func action(_ name: String) -> PKIManager.StateAction
    /// The node or user named.
    var name: String? { get }
    var tree: TreeArguments { get }
    init(name: String?, tree: TreeArguments)
}

extension NamedLifecycleCommand {
    init(_ arguments: Arguments<NoOptions>) throws(CLIError) {
        self.init(
            name: arguments.positional(0), tree: TreeArguments(inventory: arguments.positional(1), arguments.shared))
    }

    func validate(_ context: CommandContext) throws(CLIError) {
        guard let name, !name.isEmpty else {
            throw CLIError.usage("missing argument <\(Self.nameKind)>", command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let options = try LifecycleCommandSupport.options(
            tree, command: Self.configuration.name, action: Self.action(name ?? ""), context)
        return try engineCommand { () throws(EngineError) in try Pipeline.lifecycle(options, output: context.output) }
    }
}

struct RotatePSKCommand: NamedLifecycleCommand {
    static let configuration = CommandConfiguration(
        name: .rotatePSK,
        abstract: "Replace a node's generated PSK (psk: gen).",
        discussion: "A PSK from env:, file: or the inventory itself is the operator's to change: that is an error. "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [.init("node", help: "The node whose PSK is replaced."), CommonOptions.inventoryArgument],
        shared: LifecycleCommandSupport.regenerate)

    static let nameKind = "node"
    static func action(_ name: String) -> PKIManager.StateAction { .rotatePSK(node: name) }

    var name: String?
    var tree: TreeArguments
}

struct RotateRadiusSecretCommand: NamedLifecycleCommand {
    static let configuration = CommandConfiguration(
        name: .rotateRadiusSecret,
        abstract: "Replace a RADIUS node's generated RADIUS, Disconnect-Request and IPsec secrets.",
        discussion: "The secret is on the node and on every RADIUS server: roll the RADIUS servers out first "
            + "(ansible-playbook ... --limit vpnprov_radius), then the node; logins on the node fail in between. "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [
            .init("node", help: "The node whose RADIUS secrets are replaced."), CommonOptions.inventoryArgument,
        ],
        shared: LifecycleCommandSupport.regenerate)

    static let nameKind = "node"
    static func action(_ name: String) -> PKIManager.StateAction { .rotateRadiusSecret(node: name) }

    var name: String?
    var tree: TreeArguments
}

struct RotatePasswordCommand: NamedLifecycleCommand {
    static let configuration = CommandConfiguration(
        name: .rotatePassword,
        abstract: "Replace a user's generated password (password: gen).",
        discussion: "A password from env: or file: is the operator's to change: that is an error. "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [.init("user", help: "The user whose password is replaced."), CommonOptions.inventoryArgument],
        shared: LifecycleCommandSupport.regenerate)

    static let nameKind = "user"
    static func action(_ name: String) -> PKIManager.StateAction { .rotatePassword(user: name) }

    var name: String?
    var tree: TreeArguments
}

struct RotatePPKCommand: NamedLifecycleCommand {
    static let configuration = CommandConfiguration(
        name: .rotatePPK,
        abstract: "Replace a user's post-quantum preshared key (nodes with quantum_safe.ppk).",
        discussion: "The user's nodes and the user's clients both need the new key: roll the nodes out and hand "
            + "out the new profiles together (a client with the old key is refused where the PPK is required). "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [.init("user", help: "The user whose PPK is replaced."), CommonOptions.inventoryArgument],
        shared: LifecycleCommandSupport.regenerate)

    static let nameKind = "user"
    static func action(_ name: String) -> PKIManager.StateAction { .rotatePPK(user: name) }

    var name: String?
    var tree: TreeArguments
}

struct UnrevokeCommand: NamedLifecycleCommand {
    static let configuration = CommandConfiguration(
        name: .unrevoke,
        abstract: "Undo 'vpnprov revoke USER': a fresh certificate (new serial) and secrets.",
        discussion:
            "The revoked serial stays on the CRL. A user revoked in the inventory ('revoked: true') is unrevoked there. "
            + LifecycleCommandSupport.rolloutNote,
        arguments: [.init("user", help: "The user to reinstate."), CommonOptions.inventoryArgument],
        shared: LifecycleCommandSupport.regenerate)

    static let nameKind = "user"
    static func action(_ name: String) -> PKIManager.StateAction { .unrevoke(user: name) }

    var name: String?
    var tree: TreeArguments
}

// MARK: - rolled-out

struct RolledOutCommand: Command {
    enum Option: CommandOptions {
        case nodes, all

        var declaration: CommandConfiguration.Option {
            switch self {
            case .nodes:
                .init(
                    "nodes", value: "list",
                    help:
                        "The nodes (and RADIUS servers) rolled out, comma-separated (as given to ansible-playbook --limit)."
                )
            case .all: .init("all", help: "Every node waiting for a rollout.")
            }
        }
    }

    static let configuration = CommandConfiguration(
        name: .rolledOut,
        abstract: "Record that nodes were rolled out: they no longer wait for a rollout.",
        discussion:
            "Every run that changes a node's server files records the node as waiting for a rollout (in the state); "
            + "the summary of generate, revoke and the lifecycle commands lists them all, with the rollout command, until this "
            + "command says they were rolled out. So a deploy job whose rollout failed rolls the same nodes out when it is "
            + "retried, although generate then changes nothing (docs/ci.md).",
        arguments: [CommonOptions.inventoryArgument],
        options: Option.declarations, shared: [.state])

    var inventory: String?
    var state: String?
    var nodes: [String]?

    init(_ arguments: Arguments<Option>) throws(CLIError) {
        inventory = arguments.positional(0)
        state = arguments.shared.value(.state)
        switch (arguments.value(.nodes), arguments.flag(.all)) {
        case (let list?, false):
            let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            guard !names.isEmpty else {
                throw CLIError.usage("'--nodes' needs at least one node name", command: Self.configuration.name)
            }
            nodes = names
        case (nil, true):
            nodes = nil
        case (_?, true):
            throw CLIError.usage("give either '--nodes <list>' or '--all', not both", command: Self.configuration.name)
        case (nil, false):
            throw CLIError.usage(
                "say which nodes were rolled out: '--nodes <list>' or '--all'", command: Self.configuration.name)
        }
    }

    func run(_ context: CommandContext) throws(CLIError) -> Int32 {
        let (display, path) = try CommonOptions.inventory(inventory, context)
        let state = CommonOptions.stateDirectory(state, inventoryPath: path, context)
        return try engineCommand { () throws(EngineError) in
            try Pipeline.rolledOut(
                nodes: nodes, inventory: display, inventoryPath: path, stateDirectory: state, output: context.output)
        }
    }
}
