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

/// The first half of `generate`, `check` and `revoke`: load and validate the inventory, prepare the
/// PKI and state (not yet committed), fingerprint every user's inputs for the render cache.
extension Pipeline {
    struct Built {
        var prepared: PrepareResult
        var templates: TemplateSet
        /// Per active user: the fingerprint of everything their files are rendered from.
        var fingerprints: [String: String]
        /// Users whose files are on disk exactly as the previous run rendered them from the same
        /// inputs (render cache): neither checked nor rendered again.
        var fresh: [String: RenderCache.Entry]
        /// Entries of the previous render cache: when every one of them is fresh and nothing is
        /// rendered, the cache file is left as it is instead of being serialized again.
        var previousCacheEntries = 0
        /// Files were hashed because their stat records did not vouch for them: record them anew.
        var refreshStats = false
        /// Findings so far (warnings only); the consistency check's come with the rendering.
        var diagnostics: [Diagnostic]
        /// The plan of the whole deployment, made once when anything is to be rendered (nil when every file
        /// is fresh: a run that changes nothing plans nothing).
        var plan: DeploymentPlan?
        /// The server side of the consistency check, prepared once for every rendering worker.
        var servers: Consistency.Servers
        /// The state lock, held from loading the state until it is committed and the output published.
        var lock: StateLock
    }

    /// Fingerprints of every active user's inputs: the tool version, the templates, every part of the
    /// inventory that reaches every unit (`Fingerprint.inventoryReach`), every node's certificate and PSK, the
    /// CA, and the user with their materials. The servers' unit also covers the parts of the inventory that
    /// reach only it, the node keys and secrets, the CRL and every user's digest.
    static func fingerprints(_ inventory: Inventory, _ materials: Materials, _ templates: TemplateSet) -> [String:
        String]
    {
        var shared: [Any] = [ProductVersion.current, buildIdentity]
        shared += Fingerprint.inventoryInputs(inventory, reaching: .everyUnit)
        shared.append(materials.acmeCABundlePEM ?? "")
        for name in templates.templates.keys.sorted() { shared += [name, templates.templates[name]!.sourceBytes] }
        shared += [materials.caCertificatePEM, materials.caCommonName, materials.caKeyType]
        if let signer = materials.profileSigner { shared += [signer.certificatePEM, signer.keyPEM, signer.chainPEM] }
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
        var servers: [Any] = [common, materials.crlPEM, materials.nodeScoping]
        servers += Fingerprint.inventoryInputs(inventory, reaching: .serversUnit)
        if let rotation = materials.rotation {
            servers += [rotation.previousCACertificatePEM, rotation.crossCertificatePEM, rotation.previousCRLPEM]
        }
        for node in inventory.nodes {
            let m = materials.nodes[node.name]
            servers += [
                m?.privateKeyPEM ?? "", m?.radiusSecret ?? "", m?.daeSecret ?? "", m?.radiusIPsecSecret ?? "",
                m?.radiusRelaySecret ?? "",
            ]
        }
        // The RADIUS servers' files (radius/) hold their database's connection string.
        servers.append(materials.radiusDatabase ?? "")
        for name in digests.keys.sorted() { servers += [name, digests[name]!] }
        digests[serversCacheKey] = Fingerprint.digest(servers)
        return digests
    }

    /// The running program's identity, its linker build ID or else its digest: a different build of
    /// vpnprov (a fixed renderer, the same version string) renders everything again instead of trusting
    /// files an older build wrote. Unreadable, it is unique to this run, so nothing is taken from the cache.
    static let buildIdentity: String = {
        // The linker's build ID when the program has one (reading it is a few small reads; hashing the
        // whole program took 13 ms of every run: docs/benchmarks.md, "Why the code is shaped this way").
        if let id = ProgramIdentity.gnuBuildID() { return "gnu-build-id " + hexString(id) }
        if let bytes = try? BoundedFile.read("/proc/self/exe", limit: BoundedFile.outputFileLimit) {
            return hexString(Digest.sha256(bytes))
        }
        return UUID().uuidString
    }()

    /// The render-cache entry of `servers/` and `catalog/` (not a valid user name).
    static let serversCacheKey = "@servers"

    /// What the previous run left for the render cache: the output tree opened for reading, its render
    /// cache and stat records.
    struct PreviousRun: Sendable {
        var reader: OutputTree.Session
        var cache: RenderCache
        var stats: StatCache?
        /// The entries of `cache` each of whose files on disk its stat record vouches for (checked before
        /// the fingerprints are known; the others are checked again, hashing, if their fingerprint matches).
        var vouched: Set<String> = []
    }

    /// Reads the previous run's caches on another thread, with the program's own digest (`buildIdentity`),
    /// and checks every cached file against its stat record: none of it depends on the inventory or the
    /// state, so it overlaps loading them (docs/benchmarks.md, "Why the code is shaped this way"). Call
    /// with the state lock held: no other run changes the tree until this one has published.
    static func readPreviousRun(_ directory: String) -> Background<Result<PreviousRun, OutputError>> {
        Background {
            _ = buildIdentity
            return Result { () throws(OutputError) -> PreviousRun in
                let reader = try OutputTree.Session(directory: directory, mode: .compare)
                let (cache, stats) = reader.previousCaches()
                var previous = PreviousRun(reader: reader, cache: cache, stats: stats)
                guard let stats else { return previous }
                let entries = Array(cache.entries)
                let vouched = reader.vouched(entries.map(\.value), stats: stats)
                previous.vouched = Set(entries.indices.lazy.filter { vouched[$0] }.map { entries[$0].key })
                return previous
            }
        }
    }

    /// The lock of a state directory an earlier run made, taken before the inventory is read so the
    /// previous run's caches are read and checked meanwhile; nil when there is none yet or it cannot be
    /// taken now (the run then takes it after validation as before, and reports what stops it there).
    static func lockIfPresent(_ stateDirectory: String) -> StateLock? {
        StateLock.isPresent(in: stateDirectory) ? try? StateLock(stateDirectory: stateDirectory) : nil
    }

    /// The users whose cached files are intact and rendered from the same inputs.
    static func freshUsers(
        _ previousRun: PreviousRun, fingerprints: [String: String]
    ) -> (fresh: [String: RenderCache.Entry], previousEntries: Int, refreshStats: Bool) {
        let reader = previousRun.reader
        let stats = previousRun.stats
        let previous = previousRun.cache.entries
        let candidates = previous.filter { fingerprints[$0.key] == $0.value.fingerprint }.sorted { $0.key < $1.key }
        let vouched = previousRun.vouched
        let checked = parallelMap(candidates.count) { i -> (intact: Bool, hashed: Bool) in
            var hashed = false
            if vouched.contains(candidates[i].key) { return (true, false) }
            let intact = reader.isIntact(candidates[i].value, stats: stats, hashed: &hashed)
            return (intact, hashed)
        }
        var fresh: [String: RenderCache.Entry] = [:]
        for (i, candidate) in candidates.enumerated() where checked[i].intact { fresh[candidate.key] = candidate.value }
        return (fresh, previous.count, checked.contains { $0.hashed })
    }

    /// Load + validate, PKI (not yet committed), check consistency. Prints the diagnostics; nil when
    /// the inventory has errors (exit 1). Throws for usage/environment problems.
    static func build(
        _ options: GenerateOptions, output: any RunReporter, persist: Bool, lock: StateLock? = nil,
        quietLoad: Bool = false,
        action: PKIManager.StateAction? = nil, beforeLock: (Inventory) -> Bool = { _ in true }
    ) throws -> Built? {
        // An existing state directory is locked first; the previous run's caches are read and checked and
        // the state is loaded on other threads while the inventory is loaded and validated (a no-op run's
        // longest stretches; docs/benchmarks.md).
        let early = lock ?? lockIfPresent(options.stateDirectory)
        let earlyRun = early.map { _ in readPreviousRun(options.outDirectory) }
        let preloaded = early.map { PKIManager.StatePreload($0, environment: options.environment) }
        var handedOver = false
        defer {
            if !handedOver {
                _ = earlyRun?.value
                preloaded?.finish()
                if lock == nil { early?.release() }
            }
        }
        let loaded = try loadInventory(
            display: options.inventory, path: options.inventoryPath, strict: options.strict, output: output,
            report: !quietLoad)
        if loaded.outcome != nil { return nil }
        guard let inventory = loaded.inventory else { return nil }
        let templates: TemplateSet
        do {
            templates = try TemplateSet.load(directory: options.templatesDirectory)
        } catch {
            throw EngineError.usage("templates: \(error)")
        }
        let inventoryDirectory = (options.inventoryPath as NSString).deletingLastPathComponent
        // Secrets before the lock: a bad secret reference leaves no state directory behind.
        let secrets: PKIManager.ResolvedSecrets
        do {
            secrets = try PKIManager.resolveSecrets(
                inventory, inventoryDirectory: inventoryDirectory, environment: options.environment)
        } catch let error as PKIError where error.isInventory {
            printDiagnostics([error.diagnostic], output: output)
            return nil
        }
        let acmeBundle: String?
        switch ACMEBundle.read(inventory, inventoryDirectory: inventoryDirectory) {
        case .success(let pem): acmeBundle = pem
        case .failure(let failure):
            printDiagnostics([failure.diagnostic], output: output)
            return nil
        }
        // A command's own refusal (reported by it), before the lock creates the state directory.
        guard beforeLock(inventory) else { return nil }
        // The lock stays held (in Built) until the state is committed and the tree published: two
        // runs must not both prepare from the same state and then both commit.
        let heldLock = try early ?? StateLock(stateDirectory: options.stateDirectory)
        // Under the lock, so no other run is replacing the caches while they are read.
        let previousRun = earlyRun ?? readPreviousRun(options.outDirectory)
        defer { if lock == nil && !handedOver { heldLock.release() } }
        var prepared: PrepareResult
        do {
            prepared = try PKIManager.prepare(
                inventory: inventory, stateDirectory: options.stateDirectory,
                inventoryDirectory: inventoryDirectory, environment: options.environment, now: options.now,
                persist: persist, lock: heldLock, action: action, secrets: secrets, preloaded: preloaded,
                progress: output.progress.callback(.issuingCertificates))
        } catch let error as PKIError where error.isInventory {
            printDiagnostics([error.diagnostic], output: output)
            return nil
        }
        output.progress.finished(.issuingCertificates)
        prepared.materials.acmeCABundlePEM = acmeBundle
        let fingerprints = fingerprints(prepared.inventory, prepared.materials, templates)
        let (fresh, previousCacheEntries, refreshStats) = freshUsers(
            try previousRun.value.get(), fingerprints: fingerprints)
        var diagnostics = secretStrength(prepared.inventory, prepared.materials)
        let (plan, servers) = planned(prepared, fresh: fresh)
        // The consistency check runs with the rendering (one client plan for both), unless this
        // already fails: then it runs now, so every finding is reported at once.
        if diagnostics.hasErrors || (options.strict && diagnostics.hasOpenWarnings) {
            // A fresh user's connections were checked by the run that rendered them from the same inputs.
            if let plan {
                let stale = prepared.inventory.users.filter { !$0.revoked && fresh[$0.name] == nil }
                diagnostics += consistency(plan, users: stale, servers)
            }
            printDiagnostics(diagnostics, output: output)
            return nil
        }
        handedOver = true
        return Built(
            prepared: prepared, templates: templates, fingerprints: fingerprints, fresh: fresh,
            previousCacheEntries: previousCacheEntries, refreshStats: refreshStats,
            diagnostics: diagnostics, plan: plan, servers: servers, lock: heldLock)
    }

    /// The deployment's plan when anything is to be rendered (every user fresh and the servers' files too:
    /// none), and the server side of the consistency check when a user is to be rendered again (a run where
    /// every user is fresh needs no server facts).
    static func planned(_ prepared: PrepareResult, fresh: [String: RenderCache.Entry]) -> (
        DeploymentPlan?, Consistency.Servers
    ) {
        let staleUsers = prepared.inventory.users.contains { !$0.revoked && fresh[$0.name] == nil }
        let none = Consistency.Servers([], materials: prepared.materials, inspect: nil)
        guard staleUsers || fresh[serversCacheKey] == nil else { return (nil, none) }
        let plan = DeploymentPlan.make(
            prepared.inventory, certificates: prepared.certificates, materials: prepared.materials)
        guard staleUsers else { return (plan, none) }
        return (plan, Consistency.Servers(plan: plan, inspect: inspector(parsed: prepared.parsedCertificates)))
    }

    /// Secrets that come from `env:`/`file:` are only known now: hold them to the same strength rules
    /// the validator applies to literals (generated ones are strong by construction).
    static func secretStrength(_ inventory: Inventory, _ materials: Materials) -> [Diagnostic] {
        secretStrength(
            inventory, psks: materials.nodes.compactMapValues(\.psk),
            passwords: materials.users.compactMapValues(\.password))
    }

    /// `validate --secrets`: resolves every env:/file: secret a run would read (never printing one)
    /// and reports, at the line that references it, an unset or empty variable, an unreadable file
    /// and a value that fails the strength rules.
    static func checkSecrets(_ inventory: Inventory, inventoryDirectory: String, environment: [String: String])
        -> [Diagnostic]
    {
        var out: [Diagnostic] = []
        var psks: [String: String] = [:]
        var passwords: [String: String] = [:]
        func resolve(_ source: SecretSource, _ what: String, _ location: SourceLocation?) -> String? {
            do {
                return try SecretResolver.resolve(
                    source, what: what, at: location, inventoryDirectory: inventoryDirectory, environment: environment,
                    settings: inventory.secrets)
            } catch let error as PKIError {
                out.append(error.diagnostic)
            } catch {
                out.append(
                    .error(
                        .secretUnavailable,
                        "\(what): \(source.reference) cannot be read", at: location))
            }
            return nil
        }
        for secret in externalSecrets(inventory) {
            let value = resolve(secret.source, secret.what, secret.location)
            switch secret.owner {
            case .node(let name): psks[name] = value
            case .user(let name): passwords[name] = value
            case .accounts:
                if let value, let problem = ConnectionString.problem(value) {
                    out.append(
                        .error(
                            .unrepresentableSecret, "\(secret.what) (\(secret.source.reference)) \(problem)",
                            at: secret.location))
                }
            }
        }
        return out + secretStrength(inventory, psks: psks, passwords: passwords)
    }

    /// An env:/file: secret a run reads: its owner, how messages name it, where it is written.
    package struct ExternalSecret {
        enum Owner {
            case node(String)
            case user(String)
            /// A connection string of `accounts:` (its key).
            case accounts(String)
        }
        var owner: Owner
        var source: SecretSource
        var what: String
        var location: SourceLocation?
    }

    /// The env:/file: secrets a run resolves: PSKs of nodes with a PSK service, active users' passwords.
    package static func externalSecrets(_ inventory: Inventory) -> [ExternalSecret] {
        var out: [ExternalSecret] = []
        for node in inventory.nodes where node.services.contains(where: \.needsPSK) {
            guard let source = node.psk, source.isExternal else { continue }
            out.append(
                ExternalSecret(
                    owner: .node(node.name), source: source, what: "node '\(node.name)' psk",
                    location: node.location(of: .psk)))
        }
        for user in inventory.users where !user.revoked {
            guard let source = user.password, source.isExternal else { continue }
            out.append(
                ExternalSecret(
                    owner: .user(user.name), source: source, what: "user '\(user.name)' password",
                    location: user.location(of: .password)))
        }
        if let accounts = inventory.accounts {
            for (key, source) in [
                (InventoryDecoder.AccountsKey.database, accounts.database), (.radiusDatabase, accounts.radiusDatabase),
            ] {
                guard let source else { continue }
                out.append(
                    ExternalSecret(
                        owner: .accounts(key.rawValue), source: source, what: "accounts \(key.rawValue)",
                        location: accounts.location(of: key)))
            }
        }
        return out
    }

    /// The strength rules for secrets resolved from env:/file: (`psks` by node, `passwords` by user), and
    /// `radius-psk-reused` by value: two references the validator tells apart (`file:a` and `file:./a`, an `env:`
    /// variable and a file, a literal) may still hold one PSK.
    static func secretStrength(_ inventory: Inventory, psks: [String: String], passwords: [String: String])
        -> [Diagnostic]
    {
        var out = AccountsRules.resolvedPSKReuse(inventory, values: psks)
        func external(_ source: SecretSource?) -> Bool { source?.isExternal ?? false }
        for node in inventory.nodes where external(node.psk) {
            guard let psk = psks[node.name] else { continue }
            for problem in SecretPolicy.check(secret: psk, kind: .psk, names: [node.name, inventory.name]) {
                out.append(
                    .error(
                        problem.category == .weak ? .weakPSK : .unrepresentableSecret,
                        "node '\(node.name)': the PSK from \(node.psk!.reference) \(problem.message)",
                        at: node.location(of: .psk)))
            }
        }
        for user in inventory.users where !user.revoked && external(user.password) {
            guard let password = passwords[user.name] else { continue }
            for problem in SecretPolicy.check(secret: password, kind: .password, names: [user.name, inventory.name]) {
                out.append(
                    .error(
                        problem.category == .weak ? .weakPassword : .unrepresentableSecret,
                        "user '\(user.name)': the password from \(user.password!.reference) \(problem.message)",
                        at: user.location(of: .password)))
            }
        }
        return out
    }

    /// Real certificate contents for the consistency check's SAN and issuer checks.
    package static let inspectCertificate: Consistency.CertificateInspector = { pem in
        (try? X509Certificate(pem: pem)).map(facts)
    }

    /// `inspectCertificate`, reading the certificates the PKI holds parsed already (`parsed`, by PEM text)
    /// where it does: a fleet's run from scratch parsed each certificate it had just issued, and OpenSSL 3
    /// decodes the public key of each (2 % of the run; docs/benchmarks.md, "Why the code is shaped this way").
    static func inspector(parsed: [String: X509Certificate]) -> Consistency.CertificateInspector {
        { pem in (parsed[pem] ?? (try? X509Certificate(pem: pem))).map(facts) }
    }

    /// What the consistency check reads of a certificate.
    static func facts(_ cert: X509Certificate) -> CertificateFacts {
        var facts = CertificateFacts(issuerCommonName: cert.issuer.commonName, subject: cert.subject.description)
        facts.extendedKeyUsages = cert.extendedKeyUsageOIDs
        facts.policies = cert.certificatePolicyOIDs
        for name in cert.subjectAlternativeNames {
            switch name {
            case .dnsName(let v): facts.dnsNames.append(v)
            case .ipAddress(let v): facts.ipAddresses.append(v)
            case .rfc822Name(let v): facts.emails.append(v)
            }
        }
        return facts
    }
}

extension SecretSource {
    /// Read at run time from the environment or a file (`env:` / `file:`).
    var isExternal: Bool {
        switch self {
        case .env, .file: return true
        case .generate, .literal: return false
        }
    }
}
