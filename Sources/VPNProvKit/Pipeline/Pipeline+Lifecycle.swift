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
    /// reports the nodes to roll out and the users who need new profiles.
    public static func lifecycle(_ options: LifecycleOptions, console: Console) -> Int32 {
        let generate = options.regenerate
        guard generate.format == .json else { return lifecycleRun(options, console: console).code }
        // JSON: one document on stdout, the diagnostics inside it.
        let (capturing, captured) = Console.capturing()
        let forward = Console(errorIsTerminal: console.errorIsTerminal) { stream, text in
            stream == .error ? console.err(text) : capturing.out(text)
        }
        let (code, summary) = lifecycleRun(options, console: forward)
        var diagnostics: Any = [Any]()
        if let data = captured.stdout.data(using: .utf8), !data.isEmpty,
            let parsed = try? JSONSerialization.jsonObject(with: data) as? [Any]
        {
            diagnostics = parsed
        }
        var document: [String: Any] = ["vpnprov": 1, "command": options.command, "ok": code == ExitCode.success, "diagnostics": diagnostics]
        if let summary, let data = try? JSONEncoder().encode(summary), let object = try? JSONSerialization.jsonObject(with: data) {
            document["summary"] = object
        }
        if let data = try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) {
            console.out(String(decoding: data, as: UTF8.self) + "\n")
        }
        return code
    }

    private static func lifecycleRun(_ options: LifecycleOptions, console: Console) -> (code: Int32, summary: LifecycleSummary?) {
        let generate = options.regenerate
        var summary: LifecycleSummary?
        let code = run(console) { () throws -> Int32 in
            let loaded = try loadInventory(
                display: generate.inventory, path: generate.inventoryPath, format: generate.format, strict: false, console: console,
                printJSONWhenClean: false)
            if let code = loaded.exitCode { return code }
            guard let inventory = loaded.inventory else { return ExitCode.failure }
            if let problem = precondition(options.action, inventory: inventory, file: generate.inventory) {
                console.err("vpnprov: error: \(problem)\n")
                return ExitCode.failure
            }
            let lock = try StateLock(stateDirectory: generate.stateDirectory)
            defer { lock.release() }
            guard let built = try build(generate, console: console, persist: false, lock: lock, quietLoad: true, action: options.action)
            else { return ExitCode.failure }
            guard let written = try write(built, options: generate, console: console) else { return ExitCode.failure }
            report(built, written, options: generate, console: console)
            let result = rollout(written, inventory: built.prepared.inventory, changes: built.prepared.changes,
                                 rotating: built.prepared.materials.rotation != nil)
            summary = result
            if generate.format == .text {
                var text = "nodes to roll out: \(result.nodesToRollOut.isEmpty ? "none" : result.nodesToRollOut.joined(separator: ", "))\n"
                text += "users who need new profiles: "
                    + "\(result.usersNeedingNewProfiles.isEmpty ? "none" : result.usersNeedingNewProfiles.joined(separator: ", "))\n"
                if case .startCARotation = options.action {
                    text += "CA rotation started: roll out every node now; old profiles keep working until 'vpnprov rotate-ca --finish', "
                        + "which you run once every device has its new profile\n"
                } else if case .finishCARotation = options.action {
                    text += "CA rotation finished: once rolled out, profiles from before the rotation no longer connect\n"
                }
                console.out(text)
            }
            return ExitCode.success
        }
        return (code, summary)
    }

    /// What the inventory must say for the action to make sense; nil when it does.
    static func precondition(_ action: PKIManager.StateAction, inventory: Inventory, file: String) -> String? {
        func unknown(_ what: String, _ name: String, _ names: [String]) -> String {
            let hint = Spelling.closest(to: name, among: names).map { "; did you mean '\($0)'?" } ?? ""
            return "\(what) '\(name)' is not in \(file)\(hint)"
        }
        switch action {
        case .rotatePSK(let name):
            guard let node = inventory.node(named: name) else { return unknown("node", name, inventory.nodes.map(\.name)) }
            guard node.services.contains(where: \.needsPSK) else { return "node '\(name)' offers no PSK service; it has no PSK to rotate" }
            guard node.psk == .generate else {
                return "the PSK of node '\(name)' comes from \(node.psk.map(\.reference) ?? "nowhere"), which is yours to change; "
                    + "vpnprov rotates only PSKs it generates ('psk: gen')"
            }
        case .rotatePassword(let name):
            guard let user = inventory.user(named: name) else { return unknown("user", name, inventory.users.map(\.name)) }
            guard !user.revoked else { return "user '\(name)' is revoked in \(file); they have no password to rotate" }
            guard user.password == .generate else {
                return user.password == nil
                    ? "user '\(name)' has no password"
                    : "the password of user '\(name)' comes from \(user.password!.reference), which is yours to change; "
                        + "vpnprov rotates only passwords it generates ('password: gen')"
            }
        case .unrevoke(let name):
            guard let user = inventory.user(named: name) else { return unknown("user", name, inventory.users.map(\.name)) }
            if user.revoked { return "user '\(name)' is revoked in \(file) ('revoked: true'); set it to false instead" }
        case .startCARotation, .finishCARotation:
            break
        }
        return nil
    }

    /// Nodes and users whose files this run wrote or removed.
    static func rollout(_ written: WriteSummary, inventory: Inventory, changes: [PKIChange], rotating: Bool) -> LifecycleSummary {
        var nodes = Set<String>(), users = Set<String>()
        for path in written.written + written.removed {
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
