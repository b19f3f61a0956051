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

/// The second half: plan, check and render every file into an output session, then commit the
/// state and publish the tree.
extension Pipeline {
    /// What rendering produced: the number of files and the consistency check's findings.
    struct Rendered {
        var count: Int
        var diagnostics: [Diagnostic]
    }

    /// Users per slice of the client plan. The plan of a whole fleet (a connection per user, node
    /// and service) is never held at once: each slice is planned, checked or rendered, and dropped.
    /// Sixteen rather than eight: 3 % less CPU per fleet (fewer plans, checks and directory walks per
    /// user) for 8 MiB more memory in flight (docs/benchmarks.md).
    static let usersPerSlice = 16

    /// Findings in order, each once (a node's finding can come from every slice of users).
    static func merged(_ lists: [[Diagnostic]]) -> [Diagnostic] {
        var out: [Diagnostic] = []
        var seen = Set<Diagnostic>()
        for found in lists {
            for d in found where seen.insert(d).inserted { out.append(d) }
        }
        return out
    }

    /// The consistency check of `users`' client plans against the nodes' plans, slice by slice on all cores;
    /// findings in slice order, without duplicates (a node's finding can come from every slice).
    static func consistency(_ plan: DeploymentPlan, users: [User], _ servers: Consistency.Servers) -> [Diagnostic] {
        let perSlice = 256
        let slices = max(1, (users.count + perSlice - 1) / perSlice)
        let results = parallelMap(slices) { k -> [Diagnostic] in
            let slice = users[(k * perSlice)..<min(users.count, (k + 1) * perSlice)]
            return plan.check(plan.clientPlan(for: slice), of: slice, against: servers)
        }
        return merged(results)
    }

    /// Renders every file and stages it (write: changed files under temporary names), then commits
    /// the state and publishes the output tree. A failure before the state commit removes the
    /// temporary files: neither the state nor the visible output changed.
    /// nil when the consistency check failed (reported; nothing changed). `pending`: the nodes and RADIUS
    /// servers waiting for a rollout afterwards (this run's changed ones and those recorded earlier).
    static func write(
        _ built: Built, options: GenerateOptions, output: any RunReporter
    ) throws -> (files: WriteSummary, pending: [String])? {
        let session = try OutputTree.Session(directory: options.outDirectory, mode: .write)
        do {
            // Every certificate this run signed is named in the state before the first of them is
            // staged in the output tree: a run killed from here on leaves none the next run cannot revoke.
            try built.prepared.recordIssuing()
            let rendered = try render(
                built, into: session, stage: .writingProfiles, progress: output.progress)
            guard settle(built, rendered, options: options, output: output) else {
                session.abort()
                built.prepared.abandonIssuing()
                return nil
            }
            try built.prepared.commit()
        } catch {
            session.abort()
            built.prepared.abandonIssuing()
            throw error
        }
        for entry in built.prepared.narrowedModes {
            output.warning(
                .statePermissions,
                "\(entry.path) had mode \(StatePermissions.octal(entry.mode)), so other users could read it; it is "
                    + "\(StatePermissions.octal(entry.wanted)) now. Whoever read it may hold what it holds (docs/security.md, "
                    + "section 9)")
        }
        // The nodes and RADIUS servers whose files change are recorded as waiting for a rollout before
        // the first file is renamed (docs/ci.md: a retried deploy job must find them again). A RADIUS
        // server changes when a node's RADIUS secret does (rotate-radius-secret, a node added or removed):
        // until it is rolled out, the old secret stays valid there.
        let fleet = built.prepared.inventory.rolloutHosts
        var pending: [String] = []
        let files = try session.publish(announcingOwnersUnder: ["servers", "radius"]) { (nodes) throws(OutputError) in
            do {
                pending = try RolloutLedger.add(nodes, fleet: fleet, in: built.lock.stateDirectory)
            } catch {
                throw OutputError(
                    "cannot record the nodes waiting for a rollout: \((error as? StateError)?.message ?? "\(error)")")
            }
        }
        return (files, pending)
    }

    /// Prints every finding (and the state's warnings) once the consistency check is complete;
    /// false when they forbid writing (errors, or warnings under --strict).
    static func settle(_ built: Built, _ rendered: Rendered, options: GenerateOptions, output: any RunReporter) -> Bool
    {
        let diagnostics = built.diagnostics + rendered.diagnostics
        let failed = diagnostics.hasErrors || (options.strict && diagnostics.hasOpenWarnings)
        if !diagnostics.isEmpty { printDiagnostics(diagnostics, output: output) }
        if failed { return false }
        for warning in built.prepared.warnings { output.warning(.stateNotice, warning) }
        return true
    }

    /// Renders the servers, the catalogue and every user's files into `session`, users in parallel
    /// batches (each batch planned, checked for consistency, rendered, compared and staged by one
    /// worker, so only the batches in flight are in memory). Batches are added in inventory order
    /// and the first failure in that order is the one reported, so the outcome does not depend on
    /// scheduling. Consistency errors win over rendering failures (a batch with errors renders
    /// nothing): the caller reports them and aborts the session.
    static func render(
        _ built: Built, into session: OutputTree.Session, stage: ProgressStage, progress: (any ProgressObserver)?
    ) throws -> Rendered {
        let work = RenderWork(built, session: session)
        let batches = 1 + (work.users.count + usersPerSlice - 1) / usersPerSlice
        let report = progress.callback(stage)
        // Each finished batch goes into the session as soon as every batch before it has: a fleet's
        // batches together list hundreds of thousands of paths, which then never wait in memory beside
        // the session's own lists. The first failure in batch order stops the adding; later batches are
        // discarded.
        let adding = InOrderAdding(session: session, users: work.users.count)
        _ = parallelMap(batches) { b in
            var findings: [Diagnostic] = []
            let result = Result { () throws -> InOrderAdding.BatchResult in
                b == 0 ? try stageServers(work) : try stageUsers(work, batch: b - 1, findings: &findings)
            }
            let count = adding.finished(b, result, findings)
            report?(count, batches)
        }
        progress.finished(stage)
        let diagnostics = merged(adding.findings)
        // The caller reports the findings and aborts the session, which removes every staged file.
        if diagnostics.hasErrors { return Rendered(count: 0, diagnostics: diagnostics) }
        if let failure = adding.failure { throw failure }
        let cache = adding.cache
        // Every entry of the previous cache is fresh and nothing new was rendered: the file on disk is
        // already these bytes (a fleet's cache is tens of MB to serialize and compare).
        session.refreshStats = built.refreshStats
        if cache.entries.count == built.fresh.count && built.fresh.count == built.previousCacheEntries {
            session.keepRenderCache = true
        } else {
            session.renderCache = cache
        }
        return Rendered(count: adding.count, diagnostics: diagnostics)
    }

    /// What the rendering workers read of `built` (which also holds the uncommitted state, not for them).
    struct RenderWork: Sendable {
        var plan: DeploymentPlan?
        var shared: RenderShared
        var fresh: [String: RenderCache.Entry]
        var fingerprints: [String: String]
        var servers: Consistency.Servers
        /// The users rendered (the active ones), in inventory order.
        var users: [User]
        var session: OutputTree.Session

        init(_ built: Built, session: OutputTree.Session) {
            plan = built.plan
            shared = RenderShared(materials: built.prepared.materials, templates: built.templates)
            fresh = built.fresh
            fingerprints = built.fingerprints
            servers = built.servers
            users = built.prepared.inventory.users.filter { !$0.revoked }
            self.session = session
        }

        /// The plan, which `build` makes whenever something is to be rendered.
        func deploymentPlan() throws -> DeploymentPlan {
            guard let plan else { throw EngineError.environment("internal error: nothing was planned to render") }
            return plan
        }
    }

    /// The first batch: every file outside `clients/` (each of `TreeRenderers.all` on its part of the plan),
    /// staged a piece at a time (a node's files hold every user's secrets); kept whole when fresh.
    static func stageServers(_ work: RenderWork) throws -> InOrderAdding.BatchResult {
        if let entry = work.fresh[serversCacheKey] {
            var kept = OutputTree.Session.Batch()
            kept.keep(entry.files)
            return (kept, [serversCacheKey: entry])
        }
        let plan = try work.deploymentPlan()
        let session = work.session
        var staged = OutputTree.Session.Batch()
        var cached = RenderCache.FileList()
        do {
            for renderer in TreeRenderers.all {
                try renderer.render(plan, work.shared) { part in
                    staged.append(try session.prepare(part))
                    cached.append(contentsOf: RenderCache.files(part))
                }
            }
        } catch {
            session.discard(staged)
            throw error
        }
        return (
            staged,
            [serversCacheKey: RenderCache.Entry(fingerprint: work.fingerprints[serversCacheKey]!, files: cached)]
        )
    }

    /// Batch `index` of users: the stale ones planned and checked for consistency (one plan for the check and
    /// the files; nothing rendered when it finds errors), rendered and staged, each user's folder whole; the
    /// fresh ones kept. A fresh user's connections were checked by the run that rendered them from the same
    /// inputs.
    static func stageUsers(_ work: RenderWork, batch index: Int, findings: inout [Diagnostic]) throws
        -> InOrderAdding.BatchResult
    {
        let batch = work.users[(index * usersPerSlice)..<min(work.users.count, (index + 1) * usersPerSlice)]
        let stale = batch.filter { work.fresh[$0.name] == nil }
        var byUser: [String: [ClientConnection]] = [:]
        var entries: [String: RenderCache.Entry] = [:]
        var kept = OutputTree.Session.Batch()
        var files: [OutputFile] = []
        var folders: [String] = []
        if !stale.isEmpty {
            let plan = try work.deploymentPlan()
            let clients = plan.clientPlan(for: stale[...])
            findings = plan.check(clients, of: stale[...], against: work.servers)
            if findings.hasErrors { return (OutputTree.Session.Batch(), [:]) }
            byUser = clients.connectionsByUser()
        }
        for user in batch {
            if let entry = work.fresh[user.name] {
                entries[user.name] = entry
                kept.keep(entry.files)
                continue
            }
            let userFiles = try renderUser(user.name, connections: byUser[user.name] ?? [], work)
            entries[user.name] = RenderCache.entry(fingerprint: work.fingerprints[user.name]!, files: userFiles)
            files += userFiles
            folders.append(ClientRenderer.folder(user: user.name))
        }
        // Each user's folder holds that user's files alone: a new one is staged whole.
        var prepared = try work.session.prepare(files, folders: folders)
        prepared.append(kept)
        return (prepared, entries)
    }

    /// One user's files; with randomized profile signatures, an unchanged profile already in the tree keeps
    /// its signature.
    static func renderUser(_ user: String, connections: [ClientConnection], _ work: RenderWork) throws -> [OutputFile] {
        let plan = try work.deploymentPlan()
        let materials = work.shared.materials
        let files = try ClientRenderer.render(
            user: user, connections: connections, deployment: plan.deployment, materials: materials,
            templates: work.shared.templates)
        guard let signer = materials.profileSigner, signer.randomizedSignatures else { return files }
        return files.map { file in
            AppleProfileRenderer.keepingPreviousSignature(file, signer: signer) {
                work.session.existingContents($0, limit: AppleProfileRenderer.previousProfileLimit)
            }
        }
    }
}

/// The batches of `Pipeline.render`, added to the session in batch order as they finish (on
/// whichever worker completes the next one in order), with their render-cache entries and findings. The
/// owner reads the results after parallelMap has joined.
final class InOrderAdding: Sendable {
    typealias BatchResult = (batch: OutputTree.Session.Batch, entries: [String: RenderCache.Entry])

    private struct State {
        var waiting: [Int: Result<BatchResult, Error>] = [:]
        var next = 0
        var done = 0
        var findings: [[Diagnostic]] = []
        var failure: Error?
        var count = 0
        var cache = RenderCache(entries: [:])
    }

    private let session: OutputTree.Session
    private let state: Locked<State>

    init(session: OutputTree.Session, users: Int) {
        self.session = session
        var state = State()
        state.cache.entries.reserveCapacity(users + 1)
        self.state = Locked(state)
    }

    var findings: [[Diagnostic]] { state.withLock { $0.findings } }
    var failure: Error? { state.withLock { $0.failure } }
    var count: Int { state.withLock { $0.count } }
    var cache: RenderCache { state.withLock { $0.cache } }

    /// Takes batch `b`'s outcome and adds every batch that is now next in order; returns how many
    /// batches have finished (for progress).
    func finished(_ b: Int, _ result: Result<BatchResult, Error>, _ batchFindings: [Diagnostic]) -> Int {
        state.withLock { state in
            if state.findings.count <= b {
                state.findings += Array(repeating: [], count: b + 1 - state.findings.count)
            }
            state.findings[b] = batchFindings
            state.waiting[b] = result
            while let result = state.waiting.removeValue(forKey: state.next) {
                state.next += 1
                switch result {
                case .success(let (batch, entries)):
                    guard state.failure == nil else {
                        session.discard(batch)
                        continue
                    }
                    session.add(batch)
                    state.count += batch.files.count
                    state.cache.entries.merge(entries) { first, _ in first }
                case .failure(let error):
                    if state.failure == nil { state.failure = error }
                }
            }
            state.done += 1
            return state.done
        }
    }
}
