import Foundation
import VPNProvCrypto

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
    static let usersPerSlice = 8

    /// The inventory with only `users` (the client plan of a slice of users).
    static func slice(_ inventory: Inventory, _ users: ArraySlice<User>) -> Inventory {
        var sub = inventory
        sub.users = Array(users)
        return sub
    }

    /// Every node's server view, with its certificate read, for the consistency check.
    static func checkedServers(_ inventory: Inventory, _ materials: Materials) -> Consistency.Servers {
        let views = inventory.nodes.map {
            ServerView(ServerPlan.make(for: $0, in: inventory), caCertificatePEM: materials.caCertificatePEM)
        }
        return Consistency.Servers(views, materials: materials, inspect: inspectCertificate)
    }

    /// Findings in order, each once (a node's finding can come from every slice of users).
    static func merged(_ lists: [[Diagnostic]]) -> [Diagnostic] {
        var out: [Diagnostic] = []
        var seen = Set<Diagnostic>()
        for found in lists {
            for d in found where seen.insert(d).inserted { out.append(d) }
        }
        return out
    }

    /// The consistency check, slice by slice on all cores; findings in slice order, without
    /// duplicates (a node's finding can come from every slice).
    static func consistency(_ inventory: Inventory, _ materials: Materials, _ servers: Consistency.Servers) -> [Diagnostic] {
        let users = inventory.users
        let perSlice = 256
        let slices = max(1, (users.count + perSlice - 1) / perSlice)
        let results = parallelMap(slices) { k -> [Diagnostic] in
            let sub = slice(inventory, users[(k * perSlice)..<min(users.count, (k + 1) * perSlice)])
            let plan = ClientPlan.build(inventory: sub, materials: materials)
            return Consistency.check(plan: plan, against: servers, inventory: sub, materials: materials)
        }
        return merged(results)
    }

    /// Renders every file and stages it (write: changed files under temporary names), then commits
    /// the state and publishes the output tree. A failure before the state commit removes the
    /// temporary files: neither the state nor the visible output changed.
    /// nil when the consistency check failed (reported; nothing changed).
    static func write(_ built: Built, options: GenerateOptions, output: CommandOutput) throws -> WriteSummary? {
        let session = try OutputTree.Session(directory: options.outDirectory, mode: .write)
        do {
            let rendered = try render(
                built, into: session, progress: Progress(console: output.console, environment: options.environment, label: "writing profiles"))
            guard settle(built, rendered, options: options, output: output) else {
                session.abort()
                return nil
            }
            try built.prepared.commit()
        } catch {
            session.abort()
            throw error
        }
        return try session.publish()
    }

    /// Prints every finding (and the state's warnings) once the consistency check is complete;
    /// false when they forbid writing (errors, or warnings under --strict).
    static func settle(_ built: Built, _ rendered: Rendered, options: GenerateOptions, output: CommandOutput) -> Bool {
        let diagnostics = built.diagnostics + rendered.diagnostics
        let failed = diagnostics.hasErrors || (options.strict && diagnostics.contains { $0.severity == .warning })
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
    static func render(_ built: Built, into session: OutputTree.Session, progress: Progress) throws -> Rendered {
        let inventory = built.prepared.inventory
        let materials = built.prepared.materials
        let templates = built.templates
        let users = inventory.users.filter { !$0.revoked }
        let batchSize = usersPerSlice
        let batches = 1 + (users.count + batchSize - 1) / batchSize
        let done = ParallelSlots<Int>(1)
        let report = progress.callback
        typealias BatchResult = (batch: OutputTree.Session.Batch, entries: [String: RenderCache.Entry])
        let results = parallelMap(batches) { b -> (Result<BatchResult, Error>, [Diagnostic]) in
            var findings: [Diagnostic] = []
            let result = Result { () throws -> BatchResult in
                var files: [OutputFile] = []
                var entries: [String: RenderCache.Entry] = [:]
                var keptPaths: [String] = []
                if b == 0 {
                    if let entry = built.fresh[serversCacheKey] {
                        entries[serversCacheKey] = entry
                        keptPaths = entry.files.map(\.path)
                    } else {
                        files = try ServerRenderer.render(inventory: inventory, materials: materials, templates: templates)
                        files += CatalogRenderer.render(inventory: inventory)
                        files += try DeployRenderer.render(inventory: inventory, templates: templates)
                        entries[serversCacheKey] = RenderCache.entry(fingerprint: built.fingerprints[serversCacheKey]!, files: files)
                    }
                } else {
                    let batch = users[((b - 1) * batchSize)..<min(users.count, b * batchSize)]
                    let stale = batch.filter { built.fresh[$0.name] == nil }
                    var byUser: [String: [ClientConnection]] = [:]
                    if !stale.isEmpty {
                        // One plan for the check and the files. A fresh user's connections were
                        // checked by the run that rendered them from the same inputs.
                        let sub = slice(inventory, stale[...])
                        let plan = ClientPlan.build(inventory: sub, materials: materials)
                        findings = Consistency.check(plan: plan, against: built.servers, inventory: sub, materials: materials)
                        if findings.hasErrors { return (OutputTree.Session.Batch(), [:]) }
                        byUser = plan.connectionsByUser()
                    }
                    for user in batch {
                        if let entry = built.fresh[user.name] {
                            entries[user.name] = entry
                            keptPaths += entry.files.map(\.path)
                            continue
                        }
                        var userFiles = try ClientRenderer.render(
                            user: user, connections: byUser[user.name] ?? [], inventory: inventory, materials: materials, templates: templates)
                        if let signer = materials.profileSigner, signer.randomizedSignatures {
                            userFiles = userFiles.map { file in
                                AppleProfileRenderer.keepingPreviousSignature(file, signer: signer) {
                                    session.existingContents($0, limit: AppleProfileRenderer.previousProfileLimit)
                                }
                            }
                        }
                        entries[user.name] = RenderCache.entry(fingerprint: built.fingerprints[user.name]!, files: userFiles)
                        files += userFiles
                    }
                }
                var prepared = try session.prepare(files)
                prepared.paths += keptPaths
                prepared.unchanged += keptPaths
                return (prepared, entries)
            }
            done.lock.lock()
            done.values[0] = (done.values[0] ?? 0) + 1
            let count = done.values[0]!
            done.lock.unlock()
            report?(count, batches)
            return (result, findings)
        }
        progress.finish()
        let diagnostics = merged(results.map(\.1))
        if diagnostics.hasErrors {
            for case (.success(let done), _) in results { session.discard(done.batch) }
            return Rendered(count: 0, diagnostics: diagnostics)
        }
        var count = 0
        var failure: Error?
        var cache = RenderCache(entries: [:])
        for (result, _) in results {
            switch result {
            case .success(let (batch, entries)):
                if failure == nil {
                    do { try session.add(batch) } catch { failure = error }
                    count += batch.paths.count
                    cache.entries.merge(entries) { first, _ in first }
                } else {
                    session.discard(batch)
                }
            case .failure(let error):
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
        // Every entry of the previous cache is fresh and nothing new was rendered: the file on disk is
        // already these bytes (a fleet's cache is tens of MB to serialize and compare).
        session.refreshStats = built.refreshStats
        if cache.entries.count == built.fresh.count && built.fresh.count == built.previousCacheEntries {
            session.keepRenderCache = true
        } else {
            session.renderCache = cache.bytes
        }
        return Rendered(count: count, diagnostics: diagnostics)
    }
}
