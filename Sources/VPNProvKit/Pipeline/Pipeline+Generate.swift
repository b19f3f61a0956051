import Foundation
import VPNProvCrypto

/// `generate`, `check` and `revoke`: inventory -> validation -> PKI/state -> renderers -> consistency
/// -> output tree. Nothing is written (state or output) unless every stage before succeeded.
extension Pipeline {
    public static func generate(_ options: GenerateOptions, console: Console) -> Int32 {
        run(console) { () throws -> Int32 in
            guard let built = try build(options, console: console, persist: false) else { return ExitCode.failure }
            defer { built.lock.release() }
            return try commitAndWrite(built, options: options, console: console) ? ExitCode.success : ExitCode.failure
        }
    }

    public static func check(_ options: CheckOptions, console: Console) -> Int32 {
        run(console) { () throws -> Int32 in
            guard let built = try build(options, console: console, persist: false) else { return ExitCode.failure }
            defer { built.lock.release() }
            let session = try OutputTree.Session(directory: options.outDirectory, mode: .compare)
            let rendered = try render(
                built, into: session, progress: Progress(console: console, environment: options.environment, label: "comparing profiles"))
            guard settle(built, rendered, options: options, console: console) else { return ExitCode.failure }
            let count = rendered.count
            let drift = try session.drift()
            let stateChanges = built.prepared.changes
            if drift.isClean && stateChanges.isEmpty {
                console.err("\(display(options.outDirectory)) is up to date (\(count) files)\n")
                return ExitCode.success
            }
            var lines: [String] = []
            lines += drift.missing.map { "missing: \($0)" }
            lines += drift.stale.map { "stale: \($0)" }
            lines += drift.unexpected.map { "unexpected: \($0)" }
            lines += stateChanges.map { "state: would \($0)" }
            console.out(lines.joined(separator: "\n") + "\n")
            console.err(
                "\(display(options.outDirectory)) is not what 'vpnprov generate' would write now: \(drift.missing.count) missing, "
                    + "\(drift.stale.count) stale, \(drift.unexpected.count) unexpected, \(stateChanges.count) state changes\n")
            return ExitCode.failure
        }
    }

    public static func revoke(_ options: RevokeOptions, console: Console) -> Int32 {
        let generate = options.regenerate
        return run(console) { () throws -> Int32 in
            let loaded = try loadInventory(
                display: generate.inventory, path: generate.inventoryPath, format: generate.format, strict: false, console: console,
                printJSONWhenClean: false)
            if let code = loaded.exitCode { return code }
            guard let inventory = loaded.inventory else { return ExitCode.failure }
            guard let user = inventory.user(named: options.user) else {
                let hint = Spelling.closest(to: options.user, among: inventory.users.map(\.name)).map { "; did you mean '\($0)'?" } ?? ""
                console.err("vpnprov: error: user '\(options.user)' is not in \(generate.inventory)\(hint)\n")
                return ExitCode.failure
            }
            let lock = try StateLock(stateDirectory: generate.stateDirectory)
            defer { lock.release() }
            let result = try PKIManager.revoke(
                user: user.name, stateDirectory: generate.stateDirectory, environment: generate.environment, lock: lock,
                knownUser: true, holdUser: !user.revoked)
            for change in result.changes { console.err("vpnprov: \(change)\n") }
            if result.serial == nil { console.err("vpnprov: user '\(user.name)' had no certificate; their access is withdrawn\n") }
            let pskNodes = user.nodes.filter { inventory.node(named: $0)?.services.contains(.ikev2PSK) == true }
            if !pskNodes.isEmpty {
                console.err(
                    "vpnprov: warning: '\(user.name)' could use ikev2-psk on \(pskNodes.joined(separator: ", ")); that service has no "
                        + "per-user credential, so whoever knows a node's PSK can still connect until it changes\n")
            }
            if !user.revoked {
                console.err(
                    "vpnprov: note: '\(user.name)' stays revoked; set 'revoked: true' for them in \(generate.inventory) to record it there\n")
            }
            guard let built = try build(generate, console: console, persist: false, lock: lock, quietLoad: true) else {
                return ExitCode.failure
            }
            return try commitAndWrite(built, options: generate, console: console) ? ExitCode.success : ExitCode.failure
        }
    }
}
