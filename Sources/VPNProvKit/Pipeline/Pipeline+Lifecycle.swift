import Foundation

/// Parsed options of a state-changing lifecycle command (`rotate-ca`, `rotate-psk`, `rotate-password`,
/// `unrevoke`): what to change, and the `generate` that follows.
public struct LifecycleOptions: Sendable, Hashable {
    /// The command's name, for the JSON document.
    public var command: String
    public var action: PKIManager.StateAction
    public var regenerate: GenerateOptions

    public init(command: String, action: PKIManager.StateAction, regenerate: GenerateOptions) {
        self.command = command
        self.action = action
        self.regenerate = regenerate
    }
}

/// What a lifecycle command changed and who has to act on it.
public struct LifecycleSummary: Sendable, Hashable, Encodable {
    /// State changes, as the generate summary prints them.
    public var changes: [String]
    /// Nodes whose server files changed: deploy them (`servers/<node>` or `deploy/`).
    public var nodesToRollOut: [String]
    /// Active users whose profiles changed: hand them the new files.
    public var usersNeedingNewProfiles: [String]
    /// The CA rotation phase after the command: "none" or "overlap".
    public var caRotation: String
}

extension Pipeline {
    /// Checks the command against the inventory, changes the state, regenerates like `generate`, and
    /// reports the nodes to roll out and the users who need new profiles (JSON: "summary").
    public static func lifecycle(_ options: LifecycleOptions, output: CommandOutput) -> Int32 {
        let generate = options.regenerate
        return run(output) { () throws -> Int32 in
            let (loadedInventory, code) = try inventoryForStateCommand(generate, output: output)
            guard let inventory = loadedInventory else { return code }
            switch precondition(options.action, inventory: inventory, file: generate.inventory) {
            case .message(let text)?:
                output.error(.noSuchUser, text)
                return ExitCode.failure
            case .diagnostic(let diagnostic)?:
                printDiagnostics([diagnostic], output: output)
                return ExitCode.failure
            case nil:
                break
            }
            let lock = try StateLock(stateDirectory: generate.stateDirectory)
            defer { lock.release() }
            guard let built = try build(generate, output: output, persist: false, lock: lock, quietLoad: true, action: options.action)
            else { return ExitCode.failure }
            guard let written = try write(built, options: generate, output: output) else { return ExitCode.failure }
            report(built, written, options: generate, output: output)
            let result = rollout(written, inventory: built.prepared.inventory, changes: built.prepared.changes,
                                 rotating: built.prepared.materials.rotation != nil)
            output.set("lifecycle", result)
            var text = "nodes to roll out: \(result.nodesToRollOut.isEmpty ? "none" : result.nodesToRollOut.joined(separator: ", "))\n"
            text += "users who need new profiles: "
                + "\(result.usersNeedingNewProfiles.isEmpty ? "none" : result.usersNeedingNewProfiles.joined(separator: ", "))\n"
            if case .startCARotation = options.action {
                text += "CA rotation started: roll out every node now; old profiles keep working until 'vpnprov rotate-ca --finish', "
                    + "which you run once every device has its new profile\n"
            } else if case .finishCARotation = options.action {
                text += "CA rotation finished: once rolled out, profiles from before the rotation no longer connect\n"
            }
            output.result(text)
            return ExitCode.success
        }
    }

    /// Why the inventory does not allow the action: a plain message for an unknown name, else a
    /// diagnostic at the inventory line that decides it. nil: go ahead.
    enum Refusal {
        case message(String)
        case diagnostic(Diagnostic)
    }

    static func precondition(_ action: PKIManager.StateAction, inventory: Inventory, file: String) -> Refusal? {
        func unknown(_ what: String, _ name: String, _ names: [String]) -> Refusal {
            let hint = Spelling.closest(to: name, among: names).map { "; did you mean '\($0)'?" } ?? ""
            return .message("\(what) '\(name)' is not in \(file)\(hint)")
        }
        func refuse(_ code: PKIError.Code, _ message: String, _ location: SourceLocation) -> Refusal {
            .diagnostic(.error(RuleCode(code.rawValue), message, at: location))
        }
        switch action {
        case .rotatePSK(let name):
            guard let node = inventory.node(named: name) else { return unknown("node", name, inventory.nodes.map(\.name)) }
            guard node.services.contains(where: \.needsPSK) else {
                return refuse(.secretNotGenerated, "node '\(name)' offers no PSK service; it has no PSK to rotate", node.location(of: "services"))
            }
            guard node.psk == .generate else {
                return refuse(
                    .secretNotGenerated,
                    "the PSK of node '\(name)' comes from \(node.psk.map(\.reference) ?? "nowhere"), which is yours to change; "
                        + "vpnprov rotates only PSKs it generates ('psk: gen')", node.location(of: "psk"))
            }
        case .rotatePassword(let name):
            guard let user = inventory.user(named: name) else { return unknown("user", name, inventory.users.map(\.name)) }
            guard !user.revoked else {
                return refuse(.secretNotGenerated, "user '\(name)' is revoked; they have no password to rotate", user.location(of: "revoked"))
            }
            guard let password = user.password else {
                return refuse(.secretNotGenerated, "user '\(name)' has no password", user.location)
            }
            guard password == .generate else {
                return refuse(
                    .secretNotGenerated,
                    "the password of user '\(name)' comes from \(password.reference), which is yours to change; "
                        + "vpnprov rotates only passwords it generates ('password: gen')", user.location(of: "password"))
            }
        case .unrevoke(let name):
            guard let user = inventory.user(named: name) else { return unknown("user", name, inventory.users.map(\.name)) }
            if user.revoked {
                return refuse(
                    .nothingToUnrevoke, "user '\(name)' is revoked in the inventory ('revoked: true'); set it to false instead",
                    user.location(of: "revoked"))
            }
        case .startCARotation, .finishCARotation, .revoke:
            break
        }
        return nil
    }

    /// Nodes and users whose files this run wrote or removed.
    static func rollout(_ written: WriteSummary, inventory: Inventory, changes: [PKIChange], rotating: Bool) -> LifecycleSummary {
        var nodes = Set<String>(), users = Set<String>()
        for path in Array(written.written) + written.removed {
            let parts = path.split(separator: "/", maxSplits: 2)
            guard parts.count >= 2 else { continue }
            if parts[0] == "servers" { nodes.insert(String(parts[1])) }
            if parts[0] == "clients" { users.insert(String(parts[1])) }
        }
        let active = inventory.users.filter { !$0.revoked }.map(\.name).filter(users.contains)
        return LifecycleSummary(
            changes: changes.map(\.description), nodesToRollOut: inventory.nodes.map(\.name).filter(nodes.contains),
            usersNeedingNewProfiles: active, caRotation: rotating ? "overlap" : "none")
    }
}
