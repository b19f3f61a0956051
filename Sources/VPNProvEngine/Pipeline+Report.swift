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

/// What a run reports: diagnostics, the end-of-run summary, and every failure mapped to its outcome.
extension Pipeline {
    static func printDiagnostics(_ diagnostics: [Diagnostic], output: any RunReporter) {
        let sorted = diagnostics.cappingRepeats().inReportOrder()
        output.diagnostics(sorted)
        output.countSummary(sorted)
    }

    /// Renders and checks, then the state, then the output tree, then the summary. False when the
    /// consistency check failed (reported; nothing written).
    static func commitAndWrite(
        _ built: Built, options: GenerateOptions, output: any RunReporter
    ) throws -> Bool {
        // Everything checked and rendered (changed files wait under temporary names): now the
        // state, then the output tree.
        guard let written = try write(built, options: options, output: output) else { return false }
        OutputLocation.record(options, in: built.lock.stateDirectory)
        report(built, written.files, pending: written.pending, options: options, output: output)
        return true
    }

    /// The end-of-run summary: what changed in the state, which nodes and users changed, and what to
    /// do next (the rollout command for the changed nodes, the users to hand new profiles to); and the
    /// hand-off links of the users whose profiles changed or were removed end.
    @discardableResult
    static func report(
        _ built: Built, _ written: WriteSummary, pending: [String], options: GenerateOptions, output: any RunReporter
    ) -> RunSummary {
        let summary = RunSummary(
            built.prepared, written, out: display(options.outDirectory, options), changes: built.prepared.changes,
            pending: Set(pending), rolledOut: rolledOutCommand(options), handOff: handOffCommand(options))
        output.record(summary)
        for change in built.prepared.changes { output.info("vpnprov: \(change)") }
        if built.prepared.changes.contains(where: { $0.kind == .caCreated }) {
            // Said once: only the run that creates the CA gets here.
            output.info(
                "vpnprov: note: \(display(options.stateDirectory, options)) now holds the CA key: back the whole directory up now and "
                    + "after every run that changes it (copy it while no vpnprov runs, e.g. 'tar -C \(display(options.stateDirectory, options)) "
                    + "-czf vpnprov-state.tgz .', and keep the copy encrypted and offline). Without it no certificate can be issued, "
                    + "renewed or revoked for the installed profiles; see docs/lifecycle.md")
            for other in OutputLocation.otherStates(
                besides: options.stateDirectory, inventoryPath: options.inventoryPath,
                currentDirectory: options.currentDirectory)
            {
                output.warning(
                    .stateNotice,
                    "this run created a new CA in \(display(options.stateDirectory, options)), but \(display(other, options)) already holds "
                        + "a CA; if that is this deployment's state, run with --state \(display(other, options)) (a relative --state is taken "
                        + "from the current directory) and remove \(display(options.stateDirectory, options)) and the tree this run wrote"
                )
            }
        }
        output.info(
            "vpnprov: \(summary.out): \(Plural.count(summary.nodes.count, "node")), \(Plural.count(summary.users.count, "user")); "
                + "\(Plural.count(written.written.count, "file")) written, \(written.unchangedCount) unchanged, "
                + "\(written.removed.count) removed")
        if !summary.nodes.changed.isEmpty {
            output.info("vpnprov: changed nodes: \(listed(summary.nodes.changed))")
        }
        let earlier = (summary.nodes.pending ?? []).filter { !summary.nodes.changed.contains($0) }
        if !earlier.isEmpty {
            output.info("vpnprov: nodes still waiting for a rollout from an earlier run: \(listed(earlier))")
        }
        if let radius = summary.radius {
            if !radius.changed.isEmpty {
                output.info("vpnprov: changed RADIUS servers: \(listed(radius.changed))")
            }
            let earlierServers = (radius.pending ?? []).filter { !radius.changed.contains($0) }
            if !earlierServers.isEmpty {
                output.info(
                    "vpnprov: RADIUS servers still waiting for a rollout from an earlier run: \(listed(earlierServers))"
                )
            }
        }
        if !summary.nodes.removed.isEmpty {
            output.info(
                "vpnprov: removed nodes: \(listed(summary.nodes.removed)) (take them out of service with "
                    + "\(summary.out)/deploy/retire.yml)")
        }
        if let rollout = summary.next.rollout {
            let what = [
                (summary.radius?.pending ?? []).isEmpty ? nil : "the RADIUS servers",
                (summary.nodes.pending ?? []).isEmpty ? nil : "the nodes",
                RunSummary.handOffSiteChanged(built.prepared.inventory, written) == nil ? nil : "the hand-off site",
            ].compactMap { $0 }.joined(separator: ", then ")
            // `rolled-out` records nodes and RADIUS servers only: a site alone has nothing to record.
            let record = summary.next.rolledOut.map { "\nand once it succeeded, record it with\n  \($0)" } ?? ""
            output.info("vpnprov: next: roll \(what) out with\n  \(rollout)\(record)")
        }
        if let handOff = summary.next.handOff {
            output.info(
                "vpnprov: next: hand new profiles to \(listed(summary.users.changed)) with one expiring link each:\n  \(handOff)"
            )
        } else if !summary.users.changed.isEmpty {
            output.info(
                "vpnprov: next: hand new profiles to \(listed(summary.users.changed)) "
                    + "(\(summary.out)/clients/<user>/; with a handoff: site in the inventory, 'vpnprov handoff' "
                    + "publishes them behind expiring links)")
        }
        if let catalog = summary.next.publishCatalog {
            output.info("vpnprov: next: the app catalogue changed: publish \(catalog) to the app's backend")
        }
        if let publish = summary.next.publishCRL {
            output.info(
                "vpnprov: next: publish \(publish.file) at \(publish.url) (devices that check revocation fetch it there)"
            )
        }
        if !summary.users.removed.isEmpty {
            output.info("vpnprov: profiles removed: \(listed(summary.users.removed))")
        }
        // Every run that wrote the tree ends here (generate, revoke, the lifecycle commands): a hand-off link
        // must not hand out profiles that are no longer the user's (docs/handoff.md).
        endHandOffLinks(
            changed: summary.users.changed, removed: summary.users.removed, inventory: built.prepared.inventory,
            lock: built.lock, options: options, output: output)
        return summary
    }

    /// The `rolled-out` command for this deployment, its node list left for the caller: the inventory as
    /// given, `--state` only when it is not the default beside the inventory.
    static func rolledOutCommand(_ options: GenerateOptions) -> String {
        let defaultState = OutputLocation.defaultStateDirectory(
            inventoryPath: options.inventoryPath, currentDirectory: options.currentDirectory)
        var words = ["vpnprov", "rolled-out", ShellWord.quote(options.inventory)]
        if OutputLocation.standardized(defaultState) != OutputLocation.standardized(options.stateDirectory) {
            words += ["--state", ShellWord.quote(display(options.stateDirectory, options))]
        }
        return words.joined(separator: " ")
    }

    /// The `handoff` command for this deployment (its default users are the ones whose profiles changed), as
    /// `rolledOutCommand` writes the inventory and `--state`.
    static func handOffCommand(_ options: GenerateOptions) -> String {
        var words = rolledOutCommand(options).replacingOccurrences(of: "vpnprov rolled-out ", with: "vpnprov handoff ")
        let inventoryDirectory = (options.inventoryPath as NSString).deletingLastPathComponent
        let defaultOut = (inventoryDirectory.isEmpty ? options.currentDirectory : inventoryDirectory) + "/out"
        if OutputLocation.standardized(defaultOut) != OutputLocation.standardized(options.outDirectory) {
            words += " --out " + ShellWord.quote(display(options.outDirectory, options))
        }
        return words
    }

    /// Names for a summary line: a fleet's first run changes every user, so long lists are cut
    /// (`--format json` has them all).
    static func listed(_ names: [String], limit: Int = 20) -> String {
        guard names.count > limit else { return names.joined(separator: ", ") }
        return names.prefix(limit).joined(separator: ", ") + " and \(names.count - limit) more (all in --format json)"
    }

    /// `path` relative to the working directory when it is below it.
    static func display(_ path: String, _ options: GenerateOptions) -> String {
        let cwd =
            options.currentDirectory.hasSuffix("/")
            ? String(options.currentDirectory.dropLast()) : options.currentDirectory
        if path == cwd { return "." }
        return path.hasPrefix(cwd + "/") ? String(path.dropFirst(cwd.count + 1)) : path
    }

    /// Runs a stage and maps every failure to its rule, message and outcome in one place, reported
    /// as a run-level error. An `EngineError` goes to the caller, which prints it with its usage hint.
    static func run(_ output: any RunReporter, _ body: () throws -> Outcome) throws(EngineError) -> Outcome {
        do {
            return try body()
        } catch let error as EngineError {
            throw error
        } catch {
            let failure = failure(error)
            output.error(failure.code, failure.message)
            return failure.outcome
        }
    }

    /// The rule, message and outcome of an error that ended a stage.
    static func failure(_ error: any Error) -> (code: RuleCode, message: String, outcome: Outcome) {
        switch error {
        case let error as PKIError:
            return (error.code, error.message, error.isInventory ? .failure : .environment)
        case let error as StateError:
            return (error.code, error.message, .environment)
        case let error as OutputError:
            return (.outputIO, error.message, .environment)
        default:
            // Renderer errors name what is missing, never a secret value.
            return (.renderFailure, "\(error)", .environment)
        }
    }
}

/// The `"summary"` of `generate` and `revoke` in `--format json` (never a secret: names, paths,
/// counts, serial numbers).
struct RunSummary: KeyedResult {
    static var key: DocumentKey { .summary }

    struct Names: Encodable {
        var count: Int
        /// Nodes whose server files changed / users whose profiles changed (they need the new ones).
        var changed: [String]
        /// Nodes or users whose files were removed (no longer in the inventory, or revoked).
        var removed: [String]
        /// Nodes only: every node waiting for a rollout, this run's changed nodes and those an earlier
        /// run changed that are not yet recorded as rolled out (`vpnprov rolled-out`).
        var pending: [String]? = nil
    }

    struct Files: Encodable {
        var written: Int
        var unchanged: Int
        var removed: Int
        /// Sorted.
        var writtenPaths: PathList
        var removedPaths: [String]
    }

    /// Who a change of the state is about.
    enum Holder: String, Encodable {
        case ca, node, user
    }

    struct StateChange: Encodable {
        var action: PKIChange.Kind.Action
        var holder: Holder
        var name: String?
        var serial: String?
        package var reason: String?
        var text: String
    }

    struct Certificate: Encodable {
        var holder: Holder
        var name: String?
        var serial: String?
    }

    struct Certificates: Encodable {
        var issued: [Certificate] = []
        var renewed: [Certificate] = []
        var revoked: [Certificate] = []
    }

    struct Next: Encodable {
        /// The command that rolls the pending nodes out (absent when no node waits for a rollout).
        var rollout: String?
        /// The command that records that rollout once it succeeded (absent with `rollout`).
        var rolledOut: String?
        /// Users to hand their new profiles to.
        var profiles: [String]
        /// The CRL file to publish and where (`pki.crl_url`), when this run changed it.
        var publishCRL: PublishCRL?
        /// The app catalogue, when this run changed it: the app's backend serves it.
        var publishCatalog: String?
        /// The command that hands the changed users' profiles off, with a hand-off site (`handoff:`).
        var handOff: String?
    }

    struct PublishCRL: Encodable {
        var file: String
        var url: String
    }

    var out: String
    var nodes: Names
    /// The RADIUS servers (`radius/<server>/`), with `accounts:` only: changed, removed, waiting for a
    /// rollout, like the nodes.
    var radius: Names?
    var users: Names
    var files: Files
    var state: [StateChange]
    var certificates: Certificates
    var next: Next

    init(
        _ prepared: PrepareResult, _ written: WriteSummary, out: String, changes: [PKIChange], pending: Set<String>,
        rolledOut: String, handOff: String
    ) {
        self.out = out
        let inventory = prepared.inventory
        let activeUsers = inventory.users.filter { !$0.revoked }.map(\.name)
        let nodeNames = inventory.nodes.map(\.name)
        let removed = PathList(written.removed.sorted())
        let nodesWritten = written.written.owners(under: "servers")
        let nodesRemoved = removed.owners(under: "servers")
        let usersWritten = written.written.owners(under: "clients")
        let usersRemoved = removed.owners(under: "clients")
        let changedNodes = nodeNames.filter { nodesWritten.contains($0) || nodesRemoved.contains($0) }
        // Recorded before the renames, so this run's changed nodes are among them.
        let pendingNodes = nodeNames.filter(pending.contains)
        nodes = Names(
            count: nodeNames.count, changed: changedNodes,
            removed: nodesRemoved.subtracting(nodeNames).sorted(), pending: pendingNodes)
        // The RADIUS servers the same way; `radius/migrations/` is the database's, not a server's.
        let serverNames = inventory.radiusServerNames
        let radiusWritten = written.written.owners(under: "radius")
        let radiusRemoved = removed.owners(under: "radius")
        let pendingServers = serverNames.filter(pending.contains)
        if inventory.accounts != nil {
            radius = Names(
                count: serverNames.count,
                changed: serverNames.filter { radiusWritten.contains($0) || radiusRemoved.contains($0) },
                removed: radiusRemoved.subtracting(serverNames).subtracting([RadiusRenderer.migrationsDirectory])
                    .sorted(),
                pending: pendingServers)
        }
        // RADIUS servers first: deploy/site.yml rolls them out before the nodes.
        let pendingHosts = pendingServers + pendingNodes
        let changedUsers = activeUsers.filter { usersWritten.contains($0) }
        users = Names(
            count: activeUsers.count, changed: changedUsers, removed: usersRemoved.subtracting(activeUsers).sorted())
        files = Files(
            written: written.written.count, unchanged: written.unchangedCount, removed: written.removed.count,
            writtenPaths: written.written, removedPaths: written.removed.sorted())
        var certificates = Certificates()
        state = changes.map { change in
            let (holder, name): (Holder, String?) = {
                switch change.holder {
                case .ca: return (.ca, nil)
                case .node(let n): return (.node, n)
                case .user(let n): return (.user, n)
                }
            }()
            let certificate = Certificate(holder: holder, name: name, serial: change.serial)
            switch change.kind {
            // A rotation's new CA is issued as a created one is.
            case .issued, .caCreated, .caRotationStarted: certificates.issued.append(certificate)
            case .reissued: certificates.renewed.append(certificate)
            case .revoked: certificates.revoked.append(certificate)
            // No certificate of these lists: an adopted CA was issued elsewhere, an unrevoked user's new
            // certificate is a change of its own (`issued`), a retired CA is not revoked, the rest are no certificates.
            case .caAdopted, .unrevoked, .caRotationFinished, .crlUpdated, .secretGenerated, .secretRotated: break
            }
            return StateChange(
                action: change.kind.action, holder: holder, name: name, serial: change.serial, reason: change.reason,
                text: change.description)
        }
        self.certificates = certificates
        // The hand-off site last: deploy/site.yml sets it up after the nodes.
        let rolloutHosts = pendingHosts + (Self.handOffSiteChanged(inventory, written).map { [$0] } ?? [])
        next = Next(
            rollout: rolloutHosts.isEmpty ? nil : Self.rolloutCommand(out: out, nodes: rolloutHosts),
            rolledOut: pendingHosts.isEmpty
                ? nil : rolledOut + " --nodes " + ShellWord.quote(pendingHosts.joined(separator: ",")),
            profiles: changedUsers,
            publishCRL: inventory.pki.crlURL.flatMap { url in
                written.written.contains(ServerRenderer.publishedCRLPath)
                    ? PublishCRL(file: "\(out)/\(ServerRenderer.publishedCRLPath)", url: url) : nil
            },
            publishCatalog: written.written.contains(CatalogRenderer.path)
                || written.removed.contains(CatalogRenderer.path)
                ? "\(out)/\(CatalogRenderer.path)" : nil,
            handOff: inventory.handOff != nil && !changedUsers.isEmpty ? handOff : nil)
    }

    /// The hand-off site's Ansible host when this run changed its part of `deploy/` (its host_vars or its role,
    /// the first run with `handoff:` included): it needs a rollout of deploy/site.yml, since deploy/handoff.yml
    /// only publishes to a site that is set up. Nil otherwise.
    static func handOffSiteChanged(_ inventory: Inventory, _ written: WriteSummary) -> String? {
        guard let site = inventory.handOff else { return nil }
        let hostVars = "deploy/host_vars/\(site.address).yml"
        let role = "deploy/roles/" + HandOffPlan.role + "/"
        let changed =
            written.written.contains(hostVars)
            || written.written.owners(under: "deploy/roles").contains(HandOffPlan.role)
            || written.removed.contains { $0 == hostVars || $0.hasPrefix(role) }
        return changed ? site.address : nil
    }

    /// `ansible-playbook` over the `deploy/` tree of `out`, limited to `nodes` (nodes, RADIUS servers and the
    /// hand-off site: Ansible hosts).
    static func rolloutCommand(out: String, nodes: [String]) -> String {
        let dir = ShellWord.quote(out)
        return
            "ansible-playbook -i \(dir)/deploy/inventory.yml \(dir)/deploy/site.yml --limit \(ShellWord.quote(nodes.joined(separator: ",")))"
    }
}

/// Quoting for command lines printed for an operator to paste into a POSIX shell.
enum ShellWord {
    static func quote(_ word: String) -> String {
        let safe = word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./,:=@%+".contains($0)) }
        if safe && !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension PKIChange.Kind {
    /// Stable machine names of the changes (`--format json`).
    enum Action: String, Encodable {
        case caCreated = "ca-created"
        case caAdopted = "ca-adopted"
        case issued
        case renewed
        case revoked
        case crlUpdated = "crl-updated"
        case secretGenerated = "secret-generated"
        case secretRotated = "secret-rotated"
        case caRotationStarted = "ca-rotation-started"
        case caRotationFinished = "ca-rotation-finished"
        case unrevoked
    }

    /// The change's machine name.
    var action: Action {
        switch self {
        case .caCreated: .caCreated
        case .caAdopted: .caAdopted
        case .issued: .issued
        case .reissued: .renewed
        case .revoked: .revoked
        case .crlUpdated: .crlUpdated
        case .secretGenerated: .secretGenerated
        case .secretRotated: .secretRotated
        case .caRotationStarted: .caRotationStarted
        case .caRotationFinished: .caRotationFinished
        case .unrevoked: .unrevoked
        }
    }
}
