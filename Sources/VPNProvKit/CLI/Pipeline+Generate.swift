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

    // MARK: - stages

    struct Built {
        var prepared: PrepareResult
        var templates: TemplateSet
        /// Per active user: the fingerprint of everything their files are rendered from.
        var fingerprints: [String: String]
        /// Users whose files are on disk exactly as the previous run rendered them from the same
        /// inputs (render cache): neither checked nor rendered again.
        var fresh: [String: RenderCache.Entry]
        /// Findings so far (warnings only); the consistency check's come with the rendering.
        var diagnostics: [Diagnostic]
        /// The server side of the consistency check, prepared once for every rendering worker.
        var servers: Consistency.Servers
        /// The state lock, held from loading the state until it is committed and the output published.
        var lock: StateLock
    }

    /// What rendering produced: the number of files and the consistency check's findings.
    struct Rendered {
        var count: Int
        var diagnostics: [Diagnostic]
    }

    /// Fingerprints of every active user's inputs: the tool version, the templates, the deployment's
    /// settings, every node with its certificate and PSK, the CA, and the user with their materials.
    static func fingerprints(_ inventory: Inventory, _ materials: Materials, _ templates: TemplateSet) -> [String: String] {
        var shared: [Any] = [CommandLineTool.version, buildIdentity, inventory.name, inventory.pki, inventory.nodes]
        for name in templates.templates.keys.sorted() { shared += [name, templates.templates[name]!.sourceBytes] }
        shared += [materials.caCertificatePEM, materials.caCommonName, materials.caKeyType]
        for node in inventory.nodes {
            let m = materials.nodes[node.name]
            shared += [m?.certificatePEM ?? "", m?.psk ?? ""]
        }
        let common = Fingerprint.digest(shared)
        let users = inventory.users.filter { !$0.revoked }
        let userDigests = parallelMap(users.count) { i -> String in
            // Every field of the user's entry but its source locations (moving a line changes no
            // output), and the user's materials.
            let user = users[i]
            return Fingerprint.digest([common, Fingerprint.userInputs(user, materials.users[user.name])])
        }
        var digests = Dictionary(uniqueKeysWithValues: zip(users.map(\.name), userDigests))
        // The servers' files and the catalogue also hold the node keys, the CRL and every active
        // user's secrets: their fingerprint covers all of those.
        var servers: [Any] = [common, materials.crlPEM]
        for node in inventory.nodes { servers.append(materials.nodes[node.name]?.privateKeyPEM ?? "") }
        for name in digests.keys.sorted() { servers += [name, digests[name]!] }
        digests[serversCacheKey] = Fingerprint.digest(servers)
        return digests
    }

    /// The running program's own digest: a different build of vpnprov (a fixed renderer, the same
    /// version string) renders everything again instead of trusting files an older build wrote.
    /// Unreadable, it is unique to this run, so nothing is taken from the cache.
    static let buildIdentity: String = {
        if let bytes = FileManager.default.contents(atPath: "/proc/self/exe") { return hexString(Digest.sha256([UInt8](bytes))) }
        return UUID().uuidString
    }()

    /// The render-cache entry of `servers/` and `catalog/` (not a valid user name).
    static let serversCacheKey = "@servers"

    /// The users whose cached files are intact and rendered from the same inputs.
    static func freshUsers(in directory: String, fingerprints: [String: String]) throws -> [String: RenderCache.Entry] {
        let reader = try OutputTree.Session(directory: directory, mode: .compare)
        let candidates = reader.previousRenderCache().entries.filter { fingerprints[$0.key] == $0.value.fingerprint }.sorted { $0.key < $1.key }
        let intact = parallelMap(candidates.count) { reader.isIntact(candidates[$0].value) }
        var fresh: [String: RenderCache.Entry] = [:]
        for (i, candidate) in candidates.enumerated() where intact[i] { fresh[candidate.key] = candidate.value }
        return fresh
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
    static func write(_ built: Built, options: GenerateOptions, console: Console) throws -> WriteSummary? {
        let session = try OutputTree.Session(directory: options.outDirectory, mode: .write)
        do {
            let rendered = try render(
                built, into: session, progress: Progress(console: console, environment: options.environment, label: "writing profiles"))
            guard settle(built, rendered, options: options, console: console) else {
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
    static func settle(_ built: Built, _ rendered: Rendered, options: GenerateOptions, console: Console) -> Bool {
        let diagnostics = built.diagnostics + rendered.diagnostics
        let failed = diagnostics.hasErrors || (options.strict && diagnostics.contains { $0.severity == .warning })
        if !diagnostics.isEmpty { printDiagnostics(diagnostics, options: options, console: console) }
        if failed { return false }
        for warning in built.prepared.warnings { console.err("vpnprov: warning: \(warning)\n") }
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
                        let userFiles = try ClientRenderer.render(
                            user: user, connections: byUser[user.name] ?? [], inventory: inventory, materials: materials, templates: templates)
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
        session.renderCache = cache.bytes
        return Rendered(count: count, diagnostics: diagnostics)
    }

    /// Load + validate, PKI (not yet committed), check consistency. Prints the diagnostics; nil when
    /// the inventory has errors (exit 1). Throws for usage/environment problems.
    static func build(
        _ options: GenerateOptions, console: Console, persist: Bool, lock: StateLock? = nil, quietLoad: Bool = false
    ) throws -> Built? {
        let loaded = try loadInventory(
            display: options.inventory, path: options.inventoryPath, format: options.format, strict: options.strict,
            console: quietLoad ? Console { _, _ in } : console, printJSONWhenClean: false)
        if loaded.exitCode != nil { return nil }
        guard let inventory = loaded.inventory else { return nil }
        let templates: TemplateSet
        do {
            templates = try TemplateSet.load(directory: options.templatesDirectory)
        } catch {
            throw CLIError.usage("templates: \(error)", command: nil)
        }
        // The lock stays held (in Built) until the state is committed and the tree published: two
        // runs must not both prepare from the same state and then both commit.
        let heldLock = try lock ?? StateLock(stateDirectory: options.stateDirectory)
        var handedOver = false
        defer { if lock == nil && !handedOver { heldLock.release() } }
        let progress = Progress(console: console, environment: options.environment, label: "issuing certificates")
        let prepared: PrepareResult
        do {
            prepared = try PKIManager.prepare(
                inventory: inventory, stateDirectory: options.stateDirectory,
                inventoryDirectory: (options.inventoryPath as NSString).deletingLastPathComponent,
                environment: options.environment, persist: persist, lock: heldLock, progress: progress.callback)
        } catch let error as PKIError where error.isInventory {
            printDiagnostics([error.diagnostic], options: options, console: console)
            return nil
        }
        progress.finish()
        let fingerprints = fingerprints(prepared.inventory, prepared.materials, templates)
        let fresh = try freshUsers(in: options.outDirectory, fingerprints: fingerprints)
        var diagnostics = secretStrength(prepared.inventory, prepared.materials)
        // Only users rendered again are checked: a run where every user is fresh needs no server facts.
        let stale = prepared.inventory.users.contains { !$0.revoked && fresh[$0.name] == nil }
        let servers = stale
            ? checkedServers(prepared.inventory, prepared.materials) : Consistency.Servers([], materials: prepared.materials, inspect: nil)
        // The consistency check runs with the rendering (one client plan for both), unless this
        // already fails: then it runs now, so every finding is reported at once.
        if diagnostics.hasErrors || (options.strict && diagnostics.contains { $0.severity == .warning }) {
            // A fresh user's connections were checked by the run that rendered them from the same inputs.
            var toCheck = prepared.inventory
            toCheck.users = toCheck.users.filter { fresh[$0.name] == nil }
            diagnostics += consistency(toCheck, prepared.materials, servers)
            printDiagnostics(diagnostics, options: options, console: console)
            return nil
        }
        handedOver = true
        return Built(
            prepared: prepared, templates: templates, fingerprints: fingerprints, fresh: fresh, diagnostics: diagnostics, servers: servers,
            lock: heldLock)
    }

    /// Secrets that come from `env:`/`file:` are only known now: hold them to the same strength rules
    /// the validator applies to literals (generated ones are strong by construction).
    static func secretStrength(_ inventory: Inventory, _ materials: Materials) -> [Diagnostic] {
        var out: [Diagnostic] = []
        func external(_ source: SecretSource?) -> Bool {
            switch source {
            case .env?, .file?: return true
            default: return false
            }
        }
        for node in inventory.nodes where external(node.psk) {
            guard let psk = materials.nodes[node.name]?.psk else { continue }
            for problem in SecretPolicy.check(secret: psk, kind: .psk, names: [node.name, inventory.name]) {
                out.append(.error(
                    problem.category == .weak ? .weakPSK : .unrepresentableSecret,
                    "node '\(node.name)': the PSK from \(node.psk!.reference) \(problem.message)", at: node.location(of: "psk")))
            }
        }
        for user in inventory.users where !user.revoked && external(user.password) {
            guard let password = materials.users[user.name]?.password else { continue }
            for problem in SecretPolicy.check(secret: password, kind: .password, names: [user.name, inventory.name]) {
                out.append(.error(
                    problem.category == .weak ? .weakPassword : .unrepresentableSecret,
                    "user '\(user.name)': the password from \(user.password!.reference) \(problem.message)",
                    at: user.location(of: "password")))
            }
        }
        return out
    }

    /// Real certificate contents for the consistency check's SAN and issuer checks.
    static let inspectCertificate: Consistency.CertificateInspector = { pem in
        guard let cert = try? X509Certificate(pem: pem) else { return nil }
        var facts = CertificateFacts(issuerCommonName: cert.issuer.commonName, subject: cert.subject.description)
        for name in cert.subjectAlternativeNames {
            switch name {
            case .dnsName(let v): facts.dnsNames.append(v)
            case .ipAddress(let v): facts.ipAddresses.append(v)
            case .rfc822Name(let v): facts.emails.append(v)
            }
        }
        return facts
    }

    // MARK: - printing

    static func printDiagnostics(_ diagnostics: [Diagnostic], options: GenerateOptions, console: Console) {
        let source = (try? InventoryLoader.readFile(options.inventoryPath)) ?? []
        let printer = DiagnosticPrinter(format: options.format, sources: [options.inventory: source])
        let sorted = DiagnosticPrinter.sorted(diagnostics)
        if options.format == .json {
            console.out(printer.render(sorted))
        } else {
            console.err(printer.render(sorted))
        }
        if let summary = DiagnosticPrinter.summary(sorted) { console.err(summary + "\n") }
    }

    /// Renders and checks, then the state, then the output tree, then the summary. False when the
    /// consistency check failed (reported; nothing written).
    static func commitAndWrite(_ built: Built, options: GenerateOptions, console: Console) throws -> Bool {
        // Everything checked and rendered (changed files wait under temporary names): now the
        // state, then the output tree.
        guard let written = try write(built, options: options, console: console) else { return false }
        report(built, written, options: options, console: console)
        return true
    }

    static func report(_ built: Built, _ written: WriteSummary, options: GenerateOptions, console: Console) {
        for change in built.prepared.changes { console.err("vpnprov: \(change)\n") }
        let nodes = built.prepared.inventory.nodes.count
        let users = built.prepared.inventory.users.filter { !$0.revoked }.count
        console.err(
            "vpnprov: \(display(options.outDirectory)): \(nodes) nodes, \(users) users; \(written.written.count) files written, "
                + "\(written.unchanged.count) unchanged, \(written.removed.count) removed\n")
    }

    static func display(_ path: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        return path.hasPrefix(cwd + "/") ? String(path.dropFirst(cwd.count + 1)) : path
    }

    /// Runs a stage and maps every failure to its message and exit code in one place.
    static func run(_ console: Console, _ body: () throws -> Int32) -> Int32 {
        do {
            return try body()
        } catch let error as CLIError {
            return CommandLineTool.report(error, console)
        } catch let error as PKIError {
            console.err("vpnprov: error: \(error.message)\n")
            return error.isInventory ? ExitCode.failure : ExitCode.environment
        } catch let error as OutputError {
            console.err("vpnprov: error: \(error.message)\n")
            return ExitCode.environment
        } catch {
            // Renderer errors name what is missing, never a secret value.
            console.err("vpnprov: error: \(error)\n")
            return ExitCode.environment
        }
    }
}

/// Progress on stderr while certificates are issued: only when stderr is a terminal and not in CI.
final class Progress: @unchecked Sendable {
    private let console: Console
    private let enabled: Bool
    private let label: String
    private let lock = NSLock()
    private var lastShown = -1
    private var shownAny = false

    init(console: Console, environment: [String: String], label: String) {
        self.console = console
        self.label = label
        enabled = console.errorIsTerminal && environment["CI"] == nil
    }

    var callback: (@Sendable (Int, Int) -> Void)? {
        guard enabled else { return nil }
        return { [self] done, total in update(done, total) }
    }

    private func update(_ done: Int, _ total: Int) {
        guard total >= 20 else { return }
        let percent = done * 100 / total
        lock.lock()
        defer { lock.unlock() }
        guard percent != lastShown else { return }
        lastShown = percent
        shownAny = true
        console.err("\rvpnprov: \(label) \(done)/\(total) (\(percent)%)")
    }

    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if shownAny { console.err("\n") }
    }
}
