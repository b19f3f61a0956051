import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Owns the CA, every key and certificate, generated secrets and the CRL in the state directory.
package enum PKIManager {
    /// Certificates are renewed when they expire within this window.
    package static let renewalWindow: TimeInterval = 30 * 86400
    /// CRL lifetime (renewed within `renewalWindow` of nextUpdate).
    static let crlDays = 365
    /// Certificates are valid from one hour before issuance (device clock skew).
    static let backdate: TimeInterval = 3600
    package static let caPassphraseVariable = "VPNPROV_CA_PASSPHRASE"

    /// The state of a locked directory, loaded and checked on another thread while the caller reads and
    /// validates the inventory (a no-op run's longest serial stretch after the stat checks;
    /// docs/benchmarks.md, "Why the code is shaped this way"). `prepare` takes it where it would have
    /// loaded the state, and throws its failure there, so what is reported first does not change.
    package final class StatePreload: Sendable {
        /// @unchecked Sendable: the store is made by the loading thread and handed over once, when it
        /// has finished (`Background.value`); only `prepare` uses it after that.
        private struct Loaded: @unchecked Sendable { let store: StateStore }

        private let lock: StateLock
        private let passphrase: String?
        private let loading: Background<Result<Loaded, any Error>>

        package init(_ lock: StateLock, environment: [String: String]) {
            self.lock = lock
            let passphrase = PKIManager.passphrase(environment)
            self.passphrase = passphrase
            let directory = lock.stateDirectory
            loading = Background { Result { Loaded(store: try StateStore.load(directory, caPassphrase: passphrase)) } }
        }

        /// Waits for the load to finish (a run that stops before `prepare` does not leave it reading).
        package func finish() { _ = loading.value }

        /// The loaded store when it was loaded under `lock` with `passphrase`, else nil.
        fileprivate func store(lock: StateLock, passphrase: String?) throws -> StateStore? {
            guard lock === self.lock, passphrase == self.passphrase else { return nil }
            return try loading.value.get().store
        }
    }

    /// The CA key's passphrase from the environment (unset or empty: none).
    static func passphrase(_ environment: [String: String]) -> String? {
        environment[caPassphraseVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Brings the state in line with `inventory` (issuing, re-issuing, revoking only what changed)
    /// and returns every secret and certificate the renderers need.
    ///
    /// - Parameters:
    ///   - stateDirectory: created (0700) when missing.
    ///   - inventoryDirectory: base of relative `file:` references.
    ///   - environment: for `env:` references and VPNPROV_CA_PASSPHRASE.
    ///   - persist: false computes without writing (for `check`).
    ///   - lock: a lock the caller already holds on `stateDirectory` (else one is taken and released).
    ///   - now: the run's clock (the caller reads it once).
    ///   - certificates: the plan's certificate profiles of `inventory` (else made here).
    ///   - preloaded: the state, loading already under `lock` (else loaded here).
    ///   - progress: (done, total) of the issuing work, called from worker threads.
    package static func prepare(
        inventory: Inventory, stateDirectory: String, inventoryDirectory: String, environment: [String: String],
        now: Date, persist: Bool = true, lock: StateLock? = nil, action: StateAction? = nil,
        secrets: ResolvedSecrets? = nil, certificates: CertificatePlan? = nil, preloaded: StatePreload? = nil,
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) throws -> PrepareResult {
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        // Inventory-side secrets first: a missing variable or file touches nothing.
        let resolved =
            try secrets ?? resolveSecrets(inventory, inventoryDirectory: inventoryDirectory, environment: environment)
        let signer = try inventory.pki.profileSigning.map {
            try ProfileSigningLoader.load(
                $0, inventory: inventory, inventoryDirectory: inventoryDirectory, environment: environment)
        }
        let certificates = try certificates ?? certificatePlan(inventory)

        let heldLock = try lock ?? StateLock(stateDirectory: stateDirectory)
        defer { if lock == nil { heldLock.release() } }
        let passphrase = passphrase(environment)
        let store =
            try preloaded?.store(lock: heldLock, passphrase: passphrase)
            ?? StateStore.load(heldLock.stateDirectory, caPassphrase: passphrase)
        try ServerIdentityRules.checkIssued(store.index, nodes: inventory.nodes, now: now)
        let adopted = adoptInterruptedIssues(store, now: now)
        let commanded = try applyCommand(action, store: store, now: now, passphrase: passphrase)
        let (inventory, holdWarnings) = applyRevocationHolds(inventory, store: store)
        let session = PKISession(store: store, inventory: inventory, now: now, passphrase: passphrase)
        session.warnings += holdWarnings
        session.changes += adopted + commanded
        try runSteps(session, action: action, certificates: certificates, progress: progress)
        var materials = try session.materials(psks: resolved.psks, passwords: resolved.passwords)
        materials.profileSigner = signer
        materials.radiusDatabase = resolved.radiusDatabase
        if !materials.nodeScoping && inventory.nodes.contains(where: { $0.services.contains(.ikev2Cert) }) {
            session.warnings.append(
                "the nodes' CA was created before vpnprov scoped certificate users to their nodes (its certificate carries "
                    + "no anyPolicy, which strongSwan 5.9 needs): until it is replaced, every certificate of the CA opens every "
                    + "node offering ikev2-cert; run 'vpnprov rotate-ca', and 'vpnprov rotate-ca --finish' once devices have "
                    + "their new profiles (docs/security.md, section 13)")
        }
        if persist { try store.commit() }
        var result = PrepareResult(
            materials: materials, changes: session.changes, warnings: session.warnings, inventory: inventory,
            certificates: certificates, pendingStore: persist ? nil : store)
        for held in [store.nodes.values, store.users.values].joined() {
            if let parsed = held.parsedCertificate { result.parsedCertificates[held.certificatePEM] = parsed }
        }
        return result
    }

    /// The plan's certificate profiles of `inventory`; an identity no certificate can carry is the
    /// inventory's error (`certificate-identity`).
    package static func certificatePlan(_ inventory: Inventory) throws(PKIError) -> CertificatePlan {
        do {
            return try CertificatePlan.make(inventory)
        } catch {
            throw PKIError(.badIdentity, error.message, at: error.location)
        }
    }

    /// What a command changes in the state before the PKI's usual steps (`unrevoke`, `revoke`): in memory,
    /// committed with the rest of the run or not at all. The other actions are steps of the run itself.
    static func applyCommand(_ action: StateAction?, store: StateStore, now: Date, passphrase: String?) throws
        -> [PKIChange]
    {
        switch action {
        case .unrevoke(let user)?:
            guard store.index.revokedByCommand?[user] != nil else {
                throw PKIError(
                    .nothingToUnrevoke, "user '\(user)' was not revoked with 'vpnprov revoke'; nothing to undo")
            }
            store.index.revokedByCommand?[user] = nil
            if store.index.revokedByCommand?.isEmpty == true { store.index.revokedByCommand = nil }
            return [PKIChange(.unrevoked, .user(user), reason: "a fresh certificate and secrets follow")]
        case .revoke(let user, let hold)?:
            return revokeByCommand(user, hold: hold, store: store, now: now, passphrase: passphrase).0.changes
        case .rotatePSK?, .rotateRadiusSecret?, .rotatePassword?, .rotatePPK?, .startCARotation?, .finishCARotation?,
            nil:
            return []
        }
    }

    /// The PKI's steps in order: the CA (and a rotation's step), retired holders, generated secrets (and a
    /// rotated one), certificates, the CRL. Every action is placed by one exhaustive switch, so a new one
    /// does not compile until it has its place.
    static func runSteps(
        _ session: PKISession, action: StateAction?, certificates: CertificatePlan,
        progress: (@Sendable (Int, Int) -> Void)?
    ) throws {
        var caStep: ((PKISession) throws -> Void)?
        var secretStep: ((PKISession) throws -> Void)?
        switch action {
        case .startCARotation?: caStep = { try $0.startCARotation() }
        case .finishCARotation?: caStep = { try $0.finishCARotation() }
        case .rotatePSK(let node)?: secretStep = { try $0.rotatePSK(node: node) }
        case .rotateRadiusSecret(let node)?: secretStep = { try $0.rotateRadiusSecret(node: node) }
        case .rotatePassword(let user)?: secretStep = { try $0.rotatePassword(user: user) }
        case .rotatePPK(let user)?: secretStep = { try $0.rotatePPK(user: user) }
        case .unrevoke?, .revoke?, nil: break  // applyCommand's, before the session
        }
        try session.ensureCA()
        try caStep?(session)
        try session.retireAbsentHolders()
        try session.generateSecrets()
        try secretStep?(session)
        try session.issue(profiles: (certificates.nodes, certificates.users), progress: progress)
        try session.updateCRL()
    }

    /// A one-off change a lifecycle command makes before the usual work of `prepare`.
    package enum StateAction: Sendable, Hashable {
        /// A new generated PSK for the node (its `psk` must be `gen`).
        case rotatePSK(node: String)
        /// New generated RADIUS and Disconnect-Request secrets for a node with `accounts: radius`.
        case rotateRadiusSecret(node: String)
        /// A new generated password for the user (their `password` must be `gen`).
        case rotatePassword(user: String)
        /// A new post-quantum preshared key for the user (who reaches a node with `quantum_safe.ppk`).
        case rotatePPK(user: String)
        /// Lifts a `vpnprov revoke` hold: the user gets a fresh certificate (new serial) and secrets.
        case unrevoke(user: String)
        /// Creates a new CA (cross-certified by the current one) and re-issues every certificate under it.
        case startCARotation
        /// Ends the overlap: the previous CA is retired.
        case finishCARotation
        /// `vpnprov revoke USER`: the user's certificates are revoked and their generated secrets
        /// dropped; with `hold`, the user stays revoked while the inventory lists them as active.
        case revoke(user: String, hold: Bool)
    }

    /// The values of the inventory's `env:`, `file:` and literal secrets (by node and user name).
    package struct ResolvedSecrets: Sendable {
        var psks: [String: String] = [:]
        var passwords: [String: String] = [:]
        /// `accounts.radius_database`, when a node uses the RADIUS servers.
        var radiusDatabase: String?
    }

    /// Reads every `env:`/`file:` secret the run needs, before anything is created: a missing,
    /// oversized or malformed one stops the run with the state and output untouched.
    package static func resolveSecrets(
        _ inventory: Inventory, inventoryDirectory: String, environment: [String: String]
    ) throws
        -> ResolvedSecrets
    {
        var resolved = ResolvedSecrets()
        for node in inventory.nodes {
            if let source = node.psk, node.services.contains(where: \.needsPSK),
                let value = try SecretResolver.resolve(
                    source, what: "node '\(node.name)' psk", at: node.location(of: .psk),
                    inventoryDirectory: inventoryDirectory,
                    environment: environment, settings: inventory.secrets)
            {
                resolved.psks[node.name] = value
            }
        }
        for user in inventory.users where !user.revoked {
            if let source = user.password,
                let value = try SecretResolver.resolve(
                    source, what: "user '\(user.name)' password", at: user.location(of: .password),
                    inventoryDirectory: inventoryDirectory, environment: environment, settings: inventory.secrets)
            {
                resolved.passwords[user.name] = value
            }
        }
        if let accounts = inventory.accounts, let source = accounts.radiusDatabase,
            inventory.nodes.contains(where: \.usesRadius)
        {
            let location = accounts.location(of: .radiusDatabase)
            let value = try SecretResolver.resolve(
                source, what: "accounts radius_database", at: location, inventoryDirectory: inventoryDirectory,
                environment: environment, settings: inventory.secrets)
            if let value, let problem = ConnectionString.problem(value) {
                throw PKIError(
                    .unrepresentableSecret, "accounts radius_database (\(source.reference)) \(problem)", at: location)
            }
            resolved.radiusDatabase = value
        }
        return resolved
    }

    /// Certificates a killed run signed (its issuing journal) that index.json does not record: recorded
    /// now, as revoked, so the CRL lists them and `status` shows them. Each may have reached the state
    /// directory or a temporary file of the output tree before the kill, and nothing vouches that it
    /// did not leave the machine.
    static func adoptInterruptedIssues(_ store: StateStore, now: Date) -> [PKIChange] {
        guard let journal = store.foundJournal else { return [] }
        var changes: [PKIChange] = []
        for serial in journal.certificates.keys.sorted() where store.index.certificates[serial] == nil {
            var record = journal.certificates[serial]!
            record.status = .revoked
            record.revokedAt = now
            record.revocationReason = "signed by an interrupted run"
            store.index.certificates[serial] = record
            let holder: PKIChange.Holder =
                switch record.kind {
                case .server: .node(record.holder)
                case .client: .user(record.holder)
                case .ca, .cross: .ca
                }
            changes.append(
                PKIChange(
                    .revoked, holder, serial: serial, reason: "signed by an interrupted run that never recorded it"))
        }
        return changes
    }

    /// Users revoked by command stay revoked while the inventory lists them as active; the hold is
    /// cleared once the inventory says `revoked: true` or no longer has the user, so re-adding the name
    /// later (`revoked: false`, or a new entry) issues a fresh certificate.
    static func applyRevocationHolds(_ inventory: Inventory, store: StateStore) -> (Inventory, [String]) {
        guard var holds = store.index.revokedByCommand, !holds.isEmpty else { return (inventory, []) }
        var effective = inventory
        var warnings: [String] = []
        for name in holds.keys.sorted() {
            guard let i = effective.users.firstIndex(where: { $0.name == name }), !effective.users[i].revoked else {
                holds[name] = nil
                continue
            }
            effective.users[i].revoked = true
            warnings.append(
                "user '\(name)' was revoked with 'vpnprov revoke' and gets no profiles; record it with 'revoked: true' for them "
                    + "in the inventory, or restore them with 'vpnprov unrevoke \(name)'")
        }
        store.index.revokedByCommand = holds.isEmpty ? nil : holds
        return (effective, warnings)
    }

    /// Revokes `user`'s current certificate: it is listed in a new CRL, its key is retired and its
    /// generated password and p12 password are discarded. If the inventory still lists the user as
    /// active, the next `prepare` issues a fresh certificate (new serial, new key); set `revoked: true`
    /// to keep the user out.
    ///   - knownUser: the inventory lists `user`, so revoking works even without a certificate (an
    ///     EAP-only user loses their generated password and is held out).
    ///   - holdUser: keep the user revoked while the inventory still lists them as active.
    package static func revoke(
        user: String, stateDirectory: String, environment: [String: String], now: Date, lock: StateLock? = nil,
        knownUser: Bool = false, holdUser: Bool = false
    ) throws -> RevokeResult {
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let heldLock = try lock ?? StateLock(stateDirectory: stateDirectory)
        defer { if lock == nil { heldLock.release() } }
        let passphrase = passphrase(environment)
        let store = try StateStore.load(heldLock.stateDirectory, caPassphrase: passphrase)
        let adopted = adoptInterruptedIssues(store, now: now)
        let holder = store.index.users[user]
        guard holder != nil || knownUser else {
            throw PKIError(.nothingToRevoke, "user '\(user)' has no current certificate in \(stateDirectory)")
        }
        let (session, serial) = revokeByCommand(user, hold: holdUser, store: store, now: now, passphrase: passphrase)
        session.changes = adopted + session.changes
        try session.updateCRL()
        try store.commit()
        return RevokeResult(serial: serial, changes: session.changes)
    }

    /// The reason `vpnprov revoke` records.
    package static let revokedByCommandReason = "revoked by command"

    /// `user`'s certificates revoked and generated secrets dropped in `store` (not committed), and
    /// the hold placed with `hold`. Returns the session that made the changes and the revoked serial.
    static func revokeByCommand(_ user: String, hold: Bool, store: StateStore, now: Date, passphrase: String?) -> (
        PKISession, String?
    ) {
        let holder = store.index.users[user]
        let inventory = Inventory(
            file: "", name: "", pki: PKISettings(ca: CASettings(name: "", key: .ecdsaP256, days: 1)), nodes: [],
            users: [])
        let session = PKISession(store: store, inventory: inventory, now: now, passphrase: passphrase)
        session.revokeUser(user, reason: revokedByCommandReason, dropPassword: true)
        if hold {
            var holds = store.index.revokedByCommand ?? [:]
            holds[user] = holder?.serial ?? ""
            store.index.revokedByCommand = holds
        }
        return (session, holder?.serial)
    }
}
