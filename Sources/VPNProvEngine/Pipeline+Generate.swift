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

/// `generate`, `check` and `revoke`: inventory -> validation -> PKI/state -> renderers -> consistency
/// -> output tree. Nothing is written (state or output) unless every stage before succeeded.
extension Pipeline {
    package static func generate(_ options: GenerateOptions, output: any RunReporter) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            if let code = checkOutputLocation(options, output: output) { return code }
            guard let built = try build(options, output: output, persist: false) else { return .failure }
            defer { built.lock.release() }
            return try commitAndWrite(built, options: options, output: output) ? .success : .failure
        }
    }

    /// Refuses (`.usage`) an output directory other than the deployment's recorded tree; warns about a
    /// tree left at the former default. Nil to carry on.
    static func checkOutputLocation(_ options: GenerateOptions, output: any RunReporter) -> Outcome? {
        if let message = OutputLocation.conflict(options) {
            output.error(.outputLocation, message)
            return .usage
        }
        if let message = OutputLocation.formerDefault(options) { output.warning(.outputLocation, message) }
        return nil
    }

    /// "node", "nodes", "RADIUS server(s)" or "nodes and RADIUS servers", for the hosts `names`.
    static func hostsWord(_ names: [String], servers: [String]) -> String {
        let serverCount = names.filter(servers.contains).count
        let one = names.count == 1
        if serverCount == 0 { return one ? "node" : "nodes" }
        if serverCount == names.count { return one ? "RADIUS server" : "RADIUS servers" }
        return "RADIUS servers and nodes"
    }

    /// `"drift"` of `check --format json`.
    struct Drift: KeyedResult {
        static var key: DocumentKey { .drift }

        var out: String
        var files: Int
        var missing: [String]
        var stale: [String]
        var unexpected: [String]
        var untracked: [String]
        var state: [String]
        /// Nodes and RADIUS servers whose files changed since they were last recorded as rolled out
        /// (`vpnprov rolled-out`), RADIUS servers first.
        var rolloutPending: [String]
    }

    package static func check(_ options: CheckOptions, output: any RunReporter) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            if let code = checkOutputLocation(options, output: output) { return code }
            guard let built = try build(options, output: output, persist: false) else { return .failure }
            defer { built.lock.release() }
            let session = try OutputTree.Session(directory: options.outDirectory, mode: .compare)
            let rendered = try render(
                built, into: session, stage: .comparingProfiles, progress: output.progress)
            guard settle(built, rendered, options: options, output: output) else { return .failure }
            let count = rendered.count
            let drift = try session.drift()
            // A mode wider than vpnprov's own is a change generate would make (it narrows them).
            let stateChanges =
                built.prepared.changes.map(\.pendingDescription)
                + built.lock.stateDirectory.wideModes.map(\.pendingDescription)
            let out = display(options.outDirectory, options)
            let fleet = built.prepared.inventory.rolloutHosts
            let pending = Set(try RolloutLedger.read(built.lock.stateDirectory))
            let waiting = fleet.filter(pending.contains)
            output.record(
                Drift(
                    out: out, files: count, missing: drift.missing, stale: drift.stale, unexpected: drift.unexpected,
                    untracked: drift.untracked, state: stateChanges, rolloutPending: waiting))
            if !waiting.isEmpty {
                // The tree can be up to date while the servers are not: a rollout failed or was never run.
                output.warning(
                    .rolloutPending,
                    "\(Self.hostsWord(waiting, servers: built.prepared.inventory.radiusServerNames)) \(listed(waiting)) \(waiting.count == 1 ? "has" : "have") changed files "
                        + "not yet recorded as rolled out: roll \(waiting.count == 1 ? "it" : "them") out, then run "
                        + "'\(rolledOutCommand(options)) --nodes \(waiting.joined(separator: ","))'")
            }
            if drift.isClean && stateChanges.isEmpty {
                output.info("\(out) is up to date (\(Plural.count(count, "file")))")
                return options.strict && !waiting.isEmpty ? .failure : .success
            }
            reportDrift(drift, stateChanges: stateChanges, out: out, output: output)
            return .failure
        }
    }

    /// What `check` found changed: one line per file and state change, a SARIF result at each, a summary.
    private static func reportDrift(
        _ drift: DriftReport, stateChanges: [String], out: String, output: any RunReporter
    ) {
        var lines: [String] = []
        lines += drift.missing.map { "missing: \($0)" }
        lines += drift.stale.map { "stale: \($0)" }
        lines += drift.unexpected.map { "unexpected: \($0)" }
        lines += drift.untracked.map { "untracked: \($0)" }
        lines += stateChanges.map { "state: would \($0)" }
        output.result(lines.joined(separator: "\n") + "\n", failing: true)
        // In SARIF, each drifted file is a result at that file.
        var findings: [Diagnostic] = []
        func finding(_ path: String, _ what: String) {
            findings.append(
                .error(
                    .drift, "\(out)/\(path): \(what)",
                    at: SourceLocation(file: "\(out)/\(path)", line: 0, column: 0)))
        }
        for path in drift.missing { finding(path, "missing; 'vpnprov generate' would write it") }
        for path in drift.stale { finding(path, "differs from what 'vpnprov generate' would write now") }
        for path in drift.unexpected { finding(path, "no longer generated; 'vpnprov generate' would remove it") }
        for path in drift.untracked {
            finding(path, "not written by vpnprov; remove it or keep it outside the output tree")
        }
        for change in stateChanges { findings.append(.error(.drift, "the state would change: \(change)", at: nil)) }
        output.sarifOnly(findings)
        if !drift.untracked.isEmpty {
            output.info(
                "vpnprov: note: 'untracked' files were not written by vpnprov, so 'generate' leaves them alone; the tree "
                    + "is deployed and handed out as it is, so check fails until they are removed or kept outside \(out)"
            )
        }
        output.info(
            "\(out) is not what 'vpnprov generate' would write now: \(drift.missing.count) missing, "
                + "\(drift.stale.count) stale, \(drift.unexpected.count) unexpected, \(drift.untracked.count) untracked, "
                + "\(stateChanges.count) state changes")
    }

    /// The inventory a state-changing command (revoke, the lifecycle commands) works on, or nil and the
    /// outcome that ends the command (an output tree elsewhere, inventory errors).
    static func inventoryForStateCommand(_ generate: GenerateOptions, output: any RunReporter) throws -> (
        Inventory?, Outcome
    ) {
        if let code = checkOutputLocation(generate, output: output) { return (nil, code) }
        let loaded = try loadInventory(
            display: generate.inventory, path: generate.inventoryPath, strict: false, output: output)
        if let code = loaded.outcome { return (nil, code) }
        guard let inventory = loaded.inventory else { return (nil, .failure) }
        return (inventory, .success)
    }

    /// `"revoked"` of `revoke --format json`.
    struct Revoked: KeyedResult {
        static var key: DocumentKey { .revoked }

        var user: String
        /// The revoked certificate's serial; absent when the user had none (their access is withdrawn).
        var serial: String?
    }

    package static func revoke(_ options: RevokeOptions, output: any RunReporter) throws(EngineError) -> Outcome {
        let generate = options.regenerate
        return try run(output) { () throws -> Outcome in
            let (loadedInventory, code) = try inventoryForStateCommand(generate, output: output)
            guard let inventory = loadedInventory else { return code }
            guard let user = inventory.user(named: options.user) else {
                let hint =
                    Spelling.closest(to: options.user, among: inventory.users.map(\.name)).map {
                        "; did you mean '\($0)'?"
                    } ?? ""
                output.error(.noSuchUser, "user '\(options.user)' is not in \(generate.inventory)\(hint)")
                return .failure
            }
            let lock = try StateLock(stateDirectory: generate.stateDirectory)
            defer { lock.release() }
            // The revocation is one more change of the regeneration's state, committed with it: every
            // secret is resolved and every file rendered first, so a failure (an unset env: secret of
            // another user) leaves the state and the output tree as they were.
            let notRevoked =
                "vpnprov: user '\(user.name)' is not revoked: the run stopped before changing anything "
                + "(the state and \(display(generate.outDirectory, generate)) are as they were)"
            do {
                // While the inventory still lists the user as active, every run (this one included) warns
                // once that they are held revoked, and how to record or undo it.
                guard
                    let built = try build(
                        generate, output: output, persist: false, lock: lock, quietLoad: true,
                        action: .revoke(user: user.name, hold: !user.revoked))
                else {
                    output.info(notRevoked)
                    return .failure
                }
                let serial = built.prepared.changes.first {
                    $0.kind == .revoked && $0.holder == .user(user.name)
                        && $0.reason == PKIManager.revokedByCommandReason
                }?.serial
                guard try commitAndWrite(built, options: generate, output: output) else {
                    output.info(notRevoked)
                    return .failure
                }
                output.record(Revoked(user: user.name, serial: serial))
                if serial == nil {
                    output.info("vpnprov: user '\(user.name)' had no certificate; their access is withdrawn")
                }
            } catch {
                output.info(notRevoked)
                throw error
            }
            let pskNodes = user.nodes.filter { inventory.node(named: $0)?.services.contains(.ikev2PSK) == true }
            if !pskNodes.isEmpty {
                output.warning(
                    .revokedUser,
                    "'\(user.name)' could use ikev2-psk on \(pskNodes.joined(separator: ", ")); that service has no "
                        + "per-user credential, so whoever knows a node's PSK can still connect until it changes")
            }
            return .success
        }
    }
}

extension StatePermissions.Wide {
    /// "give state/ca/ca.key mode 0600 (it is 0644: other users can read it)", for `check`.
    var pendingDescription: String {
        "give \(path) mode \(StatePermissions.octal(wanted)) (it is \(StatePermissions.octal(mode)): other users can read it)"
    }
}

extension PKIChange {
    /// The change as something that would happen ("generate secret for user 'ivan': password"), for
    /// `check`, which changes nothing.
    var pendingDescription: String {
        let verb: String
        switch kind {
        case .caCreated: verb = "create CA"
        case .caAdopted: verb = "adopt CA"
        case .issued: verb = "issue"
        case .reissued: verb = "re-issue"
        case .revoked: verb = "revoke"
        case .crlUpdated: verb = "update CRL"
        case .secretGenerated: verb = "generate secret for"
        case .secretRotated: verb = "rotate secret of"
        case .caRotationStarted: verb = "start CA rotation"
        case .caRotationFinished: verb = "finish CA rotation"
        case .unrevoked: verb = "unrevoke"
        }
        var text = verb.contains("CA") && holder == .ca ? verb : "\(verb) \(holder)"
        if let serial { text += " (\(serial))" }
        if let reason { text += ": \(reason)" }
        return text
    }
}
