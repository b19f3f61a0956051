import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates
import VPNProvYAML

/// Parsed options of a state-changing lifecycle command (`rotate-ca`, `rotate-psk`, `rotate-password`,
/// `unrevoke`): what to change, and the `generate` that follows.
package struct LifecycleOptions: Sendable, Hashable {
    /// The command's name, for the JSON document.
    package var command: String
    package var action: PKIManager.StateAction
    package var regenerate: GenerateOptions

    package init(command: String, action: PKIManager.StateAction, regenerate: GenerateOptions) {
        self.command = command
        self.action = action
        self.regenerate = regenerate
    }
}

/// What a lifecycle command changed and who has to act on it.
struct LifecycleSummary: Sendable, Hashable, KeyedResult {
    static var key: DocumentKey { .lifecycle }

    /// State changes, as the generate summary prints them.
    package var changes: [String]
    /// Nodes waiting for a rollout (this run's changes and earlier ones not yet recorded with
    /// `vpnprov rolled-out`): deploy them (`servers/<node>` or `deploy/`).
    package var nodesToRollOut: [String]
    /// With `accounts:`: the RADIUS servers waiting for a rollout (`summary.radius.pending`); roll them out
    /// before the nodes (a rotated RADIUS secret is on both sides).
    package var radiusServersToRollOut: [String]? = nil
    /// Active users whose profiles changed: hand them the new files.
    package var usersNeedingNewProfiles: [String]
    /// The CA rotation phase after the command: "none" or "overlap".
    package var caRotation: String
}

extension Pipeline {
    /// Checks the command against the inventory, changes the state, regenerates like `generate`, and
    /// reports the nodes to roll out and the users who need new profiles (JSON: "summary").
    package static func lifecycle(_ options: LifecycleOptions, output: any RunReporter) throws(EngineError) -> Outcome {
        let generate = options.regenerate
        return try run(output) { () throws -> Outcome in
            let (loadedInventory, code) = try inventoryForStateCommand(generate, output: output)
            guard let inventory = loadedInventory else { return code }
            switch precondition(options.action, inventory: inventory, file: generate.inventory) {
            case .message(let code, let text)?:
                output.error(code, text)
                return .failure
            case .diagnostic(let diagnostic)?:
                printDiagnostics([diagnostic], output: output)
                return .failure
            case nil:
                break
            }
            let lock = try StateLock(stateDirectory: generate.stateDirectory)
            defer { lock.release() }
            guard
                let built = try build(
                    generate, output: output, persist: false, lock: lock, quietLoad: true, action: options.action)
            else { return .failure }
            guard let written = try write(built, options: generate, output: output) else { return .failure }
            // The summary says which nodes to roll out and who needs new profiles, with the commands;
            // said once (the JSON document has it twice: "summary" and "lifecycle").
            let summary = report(built, written.files, pending: written.pending, options: generate, output: output)
            let result = LifecycleSummary(
                changes: built.prepared.changes.map(\.description), nodesToRollOut: summary.nodes.pending ?? [],
                radiusServersToRollOut: summary.radius?.pending,
                usersNeedingNewProfiles: summary.users.changed,
                caRotation: built.prepared.materials.rotation != nil ? "overlap" : "none")
            output.record(result)
            if case .startCARotation = options.action {
                output.result(
                    "CA rotation started: roll out every node now; old profiles keep working until 'vpnprov rotate-ca --finish', "
                        + "which you run once every device has its new profile\n")
            } else if case .finishCARotation = options.action {
                output.result(
                    "CA rotation finished: once rolled out, profiles from before the rotation no longer connect\n")
            }
            return .success
        }
    }

    /// Why the inventory does not allow the action: a plain message for an unknown name, else a
    /// diagnostic at the inventory line that decides it. nil: go ahead.
    enum Refusal {
        case message(RuleCode, String)
        case diagnostic(Diagnostic)

        /// A refusal at the inventory line that decides it.
        static func error(_ code: RuleCode, _ message: String, _ location: SourceLocation) -> Refusal {
            .diagnostic(.error(code, message, at: location))
        }
    }

    static func precondition(_ action: PKIManager.StateAction, inventory: Inventory, file: String) -> Refusal? {
        func unknown(_ what: String, _ name: String, _ names: [String]) -> Refusal {
            let hint = Spelling.closest(to: name, among: names).map { "; did you mean '\($0)'?" } ?? ""
            return .message(what == "node" ? .noSuchNode : .noSuchUser, "\(what) '\(name)' is not in \(file)\(hint)")
        }
        switch action {
        case .rotatePSK(let name):
            guard let node = inventory.node(named: name) else {
                return unknown("node", name, inventory.nodes.map(\.name))
            }
            return pskRefusal(node)
        case .rotateRadiusSecret(let name):
            guard let node = inventory.node(named: name) else {
                return unknown("node", name, inventory.nodes.map(\.name))
            }
            return radiusSecretRefusal(node)
        case .rotatePassword(let name):
            guard let user = inventory.user(named: name) else {
                return unknown("user", name, inventory.users.map(\.name))
            }
            return revokedRefusal(user, secret: "password") ?? passwordRefusal(user)
        case .rotatePPK(let name):
            guard let user = inventory.user(named: name) else {
                return unknown("user", name, inventory.users.map(\.name))
            }
            return revokedRefusal(user, secret: "PPK") ?? ppkRefusal(user, inventory: inventory)
        case .unrevoke(let name):
            guard let user = inventory.user(named: name) else {
                return unknown("user", name, inventory.users.map(\.name))
            }
            return unrevokeRefusal(user)
        case .startCARotation, .finishCARotation, .revoke:
            return nil
        }
    }

    /// A PSK is rotated only on a node with a PSK service whose PSK vpnprov generates.
    private static func pskRefusal(_ node: Node) -> Refusal? {
        let name = node.name
        guard node.services.contains(where: \.needsPSK) else {
            return .error(
                .secretNotGenerated, "node '\(name)' offers no PSK service; it has no PSK to rotate",
                node.location(of: .services))
        }
        guard node.psk == .generate else {
            return .error(
                .secretNotGenerated,
                "the PSK of node '\(name)' comes from \(node.psk.map(\.reference) ?? "nowhere"), which is yours to change; "
                    + "vpnprov rotates only PSKs it generates ('psk: gen')", node.location(of: .psk))
        }
        return nil
    }

    /// A RADIUS secret is rotated only on a node with `accounts: radius`.
    private static func radiusSecretRefusal(_ node: Node) -> Refusal? {
        guard node.usesRadius else {
            return .error(
                .secretNotGenerated,
                "node '\(node.name)' does not use RADIUS ('accounts: radius'); it has no RADIUS secret",
                node.location)
        }
        return nil
    }

    /// A revoked user has no secret to rotate.
    private static func revokedRefusal(_ user: User, secret: String) -> Refusal? {
        guard !user.revoked else {
            return .error(
                .secretNotGenerated, "user '\(user.name)' is revoked; they have no \(secret) to rotate",
                user.location(of: .revoked))
        }
        return nil
    }

    /// A password is rotated only when the user has one and vpnprov generates it.
    private static func passwordRefusal(_ user: User) -> Refusal? {
        let name = user.name
        guard let password = user.password else {
            return .error(.secretNotGenerated, "user '\(name)' has no password", user.location)
        }
        guard password == .generate else {
            return .error(
                .secretNotGenerated,
                "the password of user '\(name)' comes from \(password.reference), which is yours to change; "
                    + "vpnprov rotates only passwords it generates ('password: gen')", user.location(of: .password)
            )
        }
        return nil
    }

    /// A PPK is rotated only for a user who reaches a node with `quantum_safe.ppk`.
    private static func ppkRefusal(_ user: User, inventory: Inventory) -> Refusal? {
        guard inventory.nodes.contains(where: { $0.quantumSafe?.ppk != nil && user.nodes.contains($0.name) }) else {
            return .error(
                .secretNotGenerated,
                "user '\(user.name)' reaches no node with 'quantum_safe.ppk'; they have no PPK",
                user.location(of: .nodes))
        }
        return nil
    }

    /// A user revoked in the inventory is unrevoked there, not by `unrevoke`.
    private static func unrevokeRefusal(_ user: User) -> Refusal? {
        if user.revoked {
            return .error(
                .nothingToUnrevoke,
                "user '\(user.name)' is revoked in the inventory ('revoked: true'); set it to false instead",
                user.location(of: .revoked))
        }
        return nil
    }
}

extension Pipeline {
    /// `"rolledOut"` of `rolled-out --format json`.
    struct RolledOut: KeyedResult {
        static var key: DocumentKey { .rolledOut }

        /// The nodes this command took off the list.
        var recorded: [String]
        /// Named nodes that were not waiting (already recorded, or never changed).
        var notPending: [String]
        /// The nodes still waiting for a rollout afterwards.
        var pending: [String]
    }

    /// Takes `nodes` (nil: all) off the list of nodes and RADIUS servers waiting for a rollout. A name
    /// the inventory does not have is an error before anything changes.
    package static func rolledOut(
        nodes: [String]?, inventory display: String, inventoryPath: String, stateDirectory: String,
        output: any RunReporter
    ) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            let loaded = try loadInventory(
                display: display, path: inventoryPath, strict: false, output: output, report: false)
            guard let inventory = loaded.inventory else {
                // Its findings are printed only when it cannot be read: the names are what matter here.
                printDiagnostics(loaded.diagnostics, output: output)
                return loaded.outcome ?? .failure
            }
            let fleet = inventory.rolloutHosts
            for name in nodes ?? [] where !fleet.contains(name) {
                let hint = Spelling.closest(to: name, among: fleet).map { "; did you mean '\($0)'?" } ?? ""
                let what = inventory.accounts == nil ? "node" : "node or RADIUS server"
                output.error(.noSuchNode, "\(what) '\(name)' is not in \(display)\(hint)")
                return .failure
            }
            let lock = try StateLock(stateDirectory: stateDirectory)
            defer { lock.release() }
            let before = Set(try RolloutLedger.read(lock.stateDirectory)).intersection(fleet)
            let named = Set(nodes ?? Array(before))
            let after = before.subtracting(named)
            if after != before { try RolloutLedger.write(after, in: lock.stateDirectory) }
            let result = RolledOut(
                recorded: fleet.filter { before.contains($0) && named.contains($0) },
                notPending: fleet.filter { named.contains($0) && !before.contains($0) },
                pending: fleet.filter(after.contains))
            output.record(result)
            var text =
                "recorded as rolled out: \(result.recorded.isEmpty ? "none" : result.recorded.joined(separator: ", "))\n"
            if !result.notPending.isEmpty {
                text += "not waiting for a rollout: \(result.notPending.joined(separator: ", "))\n"
            }
            text +=
                "still waiting for a rollout: \(result.pending.isEmpty ? "none" : result.pending.joined(separator: ", "))\n"
            output.result(text)
            return .success
        }
    }
}
