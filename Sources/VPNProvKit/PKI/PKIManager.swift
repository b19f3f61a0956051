import Foundation
import VPNProvCrypto

/// One thing a PKI run did, for the summary line.
public struct PKIChange: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case caCreated = "created CA"
        case caAdopted = "adopted CA"
        case issued
        case reissued = "re-issued"
        case revoked
        case crlUpdated = "updated CRL"
        case secretGenerated = "generated secret"
    }

    public enum Holder: Sendable, Hashable, CustomStringConvertible {
        case ca
        case node(String)
        case user(String)
        public var description: String {
            switch self {
            case .ca: return "CA"
            case .node(let n): return "node '\(n)'"
            case .user(let n): return "user '\(n)'"
            }
        }
    }

    public var kind: Kind
    public var holder: Holder
    /// Certificate serial (hex) or CRL number.
    public var serial: String?
    /// Why (e.g. "identity changed", "expires in 12 days", "removed from the inventory").
    public var reason: String?

    public init(_ kind: Kind, _ holder: Holder, serial: String? = nil, reason: String? = nil) {
        self.kind = kind
        self.holder = holder
        self.serial = serial
        self.reason = reason
    }

    public var description: String {
        // "created CA", not "created CA CA".
        var text = kind.rawValue.hasSuffix(" CA") && holder == .ca ? kind.rawValue : "\(kind.rawValue) \(holder)"
        if let serial { text += " (\(serial))" }
        if let reason { text += ": \(reason)" }
        return text
    }
}

public struct PrepareResult: Sendable {
    public var materials: Materials
    public var changes: [PKIChange]
    /// Non-fatal remarks (e.g. pki.ca settings that differ from the existing CA, which is kept).
    public var warnings: [String]
    /// The inventory as the state sees it: users revoked with `vpnprov revoke` are marked revoked.
    /// Render from this, not from the inventory as written.
    public var inventory: Inventory
    /// With `persist: false`, the loaded and updated state, written only by `commit()`.
    let pendingStore: StateStore?

    /// Writes what `prepare(persist: false)` computed (no-op after `persist: true`). Lets a caller check
    /// everything it derives from the materials before the state changes.
    public func commit() throws {
        try pendingStore?.commit()
    }
}

public struct RevokeResult: Sendable {
    /// The revoked serial, nil when the user had no certificate (the user is still held out).
    public var serial: String?
    public var changes: [PKIChange]
}

/// Owns the CA, every key and certificate, generated secrets and the CRL in the state directory.
public enum PKIManager {
    /// Certificates are renewed when they expire within this window.
    public static let renewalWindow: TimeInterval = 30 * 86400
    /// CRL lifetime (renewed within `renewalWindow` of nextUpdate).
    public static let crlDays = 365
    /// Certificates are valid from one hour before issuance (device clock skew).
    static let backdate: TimeInterval = 3600
    public static let caPassphraseVariable = "VPNPROV_CA_PASSPHRASE"

    /// Brings the state in line with `inventory` (issuing, re-issuing, revoking only what changed)
    /// and returns every secret and certificate the renderers need.
    ///
    /// - Parameters:
    ///   - stateDirectory: created (0700) when missing.
    ///   - inventoryDirectory: base of relative `file:` references.
    ///   - environment: for `env:` references and VPNPROV_CA_PASSPHRASE.
    ///   - persist: false computes without writing (for `check`).
    ///   - lock: a lock the caller already holds on `stateDirectory` (else one is taken and released).
    ///   - progress: (done, total) of the issuing work, called from worker threads.
    public static func prepare(
        inventory: Inventory, stateDirectory: String, inventoryDirectory: String, environment: [String: String],
        now: Date = Date(), persist: Bool = true, lock: StateLock? = nil,
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) throws -> PrepareResult {
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        // Inventory-side secrets first: a missing variable or file touches nothing.
        var resolvedPSKs: [String: String] = [:]
        var resolvedPasswords: [String: String] = [:]
        for node in inventory.nodes {
            if let source = node.psk, node.services.contains(where: \.needsPSK),
                let value = try SecretResolver.resolve(
                    source, what: "node '\(node.name)' psk", at: node.location(of: "psk"), inventoryDirectory: inventoryDirectory,
                    environment: environment)
            {
                resolvedPSKs[node.name] = value
            }
        }
        for user in inventory.users where !user.revoked {
            if let source = user.password,
                let value = try SecretResolver.resolve(
                    source, what: "user '\(user.name)' password", at: user.location(of: "password"),
                    inventoryDirectory: inventoryDirectory, environment: environment)
            {
                resolvedPasswords[user.name] = value
            }
        }
        let profiles = try (
            nodes: inventory.nodes.map { try CertificateProfile.server($0, inventory: inventory) },
            users: inventory.users.map { try CertificateProfile.client($0, inventory: inventory) })

        let heldLock = try lock ?? StateLock(stateDirectory: stateDirectory)
        defer { if lock == nil { heldLock.release() } }
        let passphrase = environment[caPassphraseVariable].flatMap { $0.isEmpty ? nil : $0 }
        let store = try StateStore.load(directory: stateDirectory, caPassphrase: passphrase)
        let (inventory, holdWarnings) = applyRevocationHolds(inventory, store: store)
        var session = Session(store: store, inventory: inventory, now: now, passphrase: passphrase)
        session.warnings += holdWarnings

        try session.ensureCA()
        try session.retireAbsentHolders()
        try session.generateSecrets()
        try session.issue(profiles: profiles, progress: progress)
        try session.updateCRL()
        let materials = try session.materials(psks: resolvedPSKs, passwords: resolvedPasswords)
        if persist { try store.commit() }
        return PrepareResult(
            materials: materials, changes: session.changes, warnings: session.warnings, inventory: inventory,
            pendingStore: persist ? nil : store)
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
                "user '\(name)' was revoked with 'vpnprov revoke' and gets no profiles; set 'revoked: true' for them in the inventory")
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
    public static func revoke(
        user: String, stateDirectory: String, environment: [String: String], now: Date = Date(), lock: StateLock? = nil,
        knownUser: Bool = false, holdUser: Bool = false
    ) throws -> RevokeResult {
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let heldLock = try lock ?? StateLock(stateDirectory: stateDirectory)
        defer { if lock == nil { heldLock.release() } }
        let passphrase = environment[caPassphraseVariable].flatMap { $0.isEmpty ? nil : $0 }
        let store = try StateStore.load(directory: stateDirectory, caPassphrase: passphrase)
        let holder = store.index.users[user]
        guard holder != nil || knownUser else {
            throw PKIError(.nothingToRevoke, "user '\(user)' has no current certificate in \(stateDirectory)")
        }
        let inventory = Inventory(file: "", name: "", pki: PKISettings(ca: CASettings(name: "", key: .ecdsaP256, days: 1)), nodes: [], users: [])
        var session = Session(store: store, inventory: inventory, now: now, passphrase: passphrase)
        session.revokeUser(user, reason: "revoked by command", dropPassword: true)
        if holdUser {
            var holds = store.index.revokedByCommand ?? [:]
            holds[user] = holder?.serial ?? ""
            store.index.revokedByCommand = holds
        }
        try session.updateCRL()
        try store.commit()
        return RevokeResult(serial: holder?.serial, changes: session.changes)
    }
}

/// One run's work on a loaded state.
private struct Session {
    let store: StateStore
    let inventory: Inventory
    let now: Date
    let passphrase: String?
    var changes: [PKIChange] = []
    var warnings: [String] = []

    init(store: StateStore, inventory: Inventory, now: Date, passphrase: String?) {
        self.store = store
        self.inventory = inventory
        self.now = now
        self.passphrase = passphrase
    }

    /// The store's index, mutated in place: with a plain get/set pair, `index.users[name] = x`
    /// copied the whole dictionary for every certificate (quadratic for thousands of users).
    var index: StateIndex {
        get { store.index }
        nonmutating _modify { yield &store.index }
        nonmutating set { store.index = newValue }
    }

    func cryptoFailure(_ what: String, _ error: Error) -> PKIError {
        if let error = error as? PKIError { return error }
        return PKIError(.crypto, "\(what): \(error)")
    }

    func newSerial() throws -> String {
        while true {
            var bytes = try RandomBytes.generate(count: 16)
            bytes[0] = bytes[0] & 0x7F | 0x01
            let hex = hexString(bytes)
            if index.certificates[hex] == nil { return hex }
        }
    }

    // MARK: CA

    mutating func ensureCA() throws {
        let settings = inventory.pki.ca
        if let record = index.ca {
            if record.keyType != settings.key || record.commonName != settings.name {
                warnings.append(
                    "pki.ca (\(settings.name), \(settings.key.rawValue)) differs from the CA in the state (\(record.commonName), \(record.keyType.rawValue)); the existing CA is kept")
            }
            return
        }
        if let ca = store.caCertificate {
            // CA files placed in (or left in) the state without an index: adopt them.
            let key = try store.caKey(passphrase: passphrase)
            guard key.matches(ca) else {
                throw PKIError(.stateInconsistent, "state directory \(store.paths.root) is inconsistent: the CA key does not match the CA certificate")
            }
            guard let keyType = ca.publicKeyAlgorithm.flatMap(KeyType.init(algorithm:)) else {
                throw PKIError(.stateInconsistent, "the CA in \(store.paths.caCertificate) uses a key type vpnprov does not support")
            }
            index.ca = CARecord(
                serial: ca.serialHex, commonName: ca.subject.commonName ?? "", keyType: keyType,
                fingerprint: hexString(ca.fingerprintSHA256), notAfter: ca.notAfter)
            changes.append(PKIChange(.caAdopted, .ca, serial: ca.serialHex))
            return
        }
        // A key without certificate is the CA key of a first run killed mid-commit: certify that key.
        let orphanKey = store.caKeyPEM == nil ? nil : try store.caKey(passphrase: passphrase)
        do {
            let key = try orphanKey ?? PrivateKey.generate(settings.key.algorithm)
            let serial = try newSerial()
            let template = CertificateTemplate(
                serial: bytesFromHex(serial)!,
                subject: DistinguishedName([NameAttribute("O", inventory.name), NameAttribute("CN", settings.name)]),
                notBefore: now - PKIManager.backdate, notAfter: now + TimeInterval(settings.days) * 86400,
                keyUsage: [.keyCertSign, .cRLSign], isCA: true)
            let cert = try CertificateIssuer.selfSigned(template, key: key)
            let keyPEM = try store.caKeyPEM ?? passphrase.map { try key.encryptedPKCS8PEM(passphrase: $0) } ?? key.pkcs8PEM()
            store.setCA(certificate: cert, key: key, keyPEM: keyPEM)
            if orphanKey == nil { store.stage(store.paths.caKey, Array(keyPEM.utf8), overwrite: false) }
            let keyType = orphanKey == nil ? settings.key : cert.publicKeyAlgorithm.flatMap(KeyType.init(algorithm:)) ?? settings.key
            store.stage(store.paths.caCertificate, Array(cert.pem.utf8), overwrite: false)
            index.ca = CARecord(
                serial: serial, commonName: settings.name, keyType: keyType, fingerprint: hexString(cert.fingerprintSHA256),
                notAfter: cert.notAfter)
            index.certificates[serial] = CertificateRecord(
                serial: serial, kind: .ca, holder: "", subject: template.subject.description, subjectAltNames: [],
                keyType: keyType, days: settings.days, notBefore: cert.notBefore, notAfter: cert.notAfter, status: .valid)
            changes.append(PKIChange(.caCreated, .ca, serial: serial))
        } catch {
            throw cryptoFailure("cannot create the CA", error)
        }
    }

    // MARK: Revocation

    /// Revokes certificates of nodes and users no longer entitled to one.
    mutating func retireAbsentHolders() throws {
        let nodeNames = Set(inventory.nodes.map(\.name))
        for name in index.nodes.keys.sorted() where !nodeNames.contains(name) {
            revokeHolder(node: true, name, reason: "removed from the inventory")
        }
        for name in index.users.keys.sorted() {
            if let user = inventory.user(named: name) {
                if user.revoked {
                    revokeUser(name, reason: "revoked in the inventory", dropPassword: true)
                } else if !user.cert {
                    revokeUser(name, reason: "cert: false in the inventory", dropPassword: false)
                }
            } else {
                revokeUser(name, reason: "removed from the inventory", dropPassword: true)
            }
        }
    }

    mutating func revokeUser(_ name: String, reason: String, dropPassword: Bool) {
        revokeHolder(node: false, name, reason: reason)
        store.secrets.p12Passwords[name] = nil
        if dropPassword { store.secrets.passwords[name] = nil }
    }

    private mutating func revokeHolder(node: Bool, _ name: String, reason: String) {
        let holder = node ? index.nodes[name] : index.users[name]
        guard let holder else { return }
        if var record = index.certificates[holder.serial] {
            record.status = .revoked
            record.revokedAt = now
            record.revocationReason = reason
            index.certificates[holder.serial] = record
        }
        if node {
            index.nodes[name] = nil
            store.nodes[name] = nil
        } else {
            index.users[name] = nil
            store.users[name] = nil
        }
        changes.append(PKIChange(.revoked, node ? .node(name) : .user(name), serial: holder.serial, reason: reason))
    }

    // MARK: Secrets

    mutating func generateSecrets() throws {
        var keepPSK = Set<String>()
        for node in inventory.nodes where node.psk == .generate && node.services.contains(where: \.needsPSK) {
            keepPSK.insert(node.name)
            if store.secrets.psks[node.name] == nil {
                store.secrets.psks[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
                changes.append(PKIChange(.secretGenerated, .node(node.name), reason: "psk"))
            }
        }
        var keepPassword = Set<String>()
        var keepP12 = Set<String>()
        for user in inventory.users where !user.revoked {
            if user.password == .generate {
                keepPassword.insert(user.name)
                if store.secrets.passwords[user.name] == nil {
                    store.secrets.passwords[user.name] = try SecretResolver.generate(length: SecretResolver.passwordLength)
                    changes.append(PKIChange(.secretGenerated, .user(user.name), reason: "password"))
                }
            }
            if user.cert {
                keepP12.insert(user.name)
                if store.secrets.p12Passwords[user.name] == nil {
                    store.secrets.p12Passwords[user.name] = try SecretResolver.generate(length: SecretResolver.passwordLength)
                }
            }
        }
        // Generated secrets nobody uses any more are discarded, so a returning name gets fresh ones.
        store.secrets.psks = store.secrets.psks.filter { keepPSK.contains($0.key) }
        store.secrets.passwords = store.secrets.passwords.filter { keepPassword.contains($0.key) }
        store.secrets.p12Passwords = store.secrets.p12Passwords.filter { keepP12.contains($0.key) }
    }

    // MARK: Issuing

    struct Job {
        var isNode: Bool
        var name: String
        var profile: CertificateProfile
        var serial: String
        var reuse: HeldCertificate?
        var reason: String?
        var p12Password: String?
        /// Only the p12 needs building (certificate and key unchanged).
        var p12Only: Bool
    }

    struct JobOutput: @unchecked Sendable {
        var held: HeldCertificate
        var keyID: String
        var newKey: Bool
        var p12: [UInt8]?
    }

    /// Why the current certificate must be replaced, or nil to keep it.
    func renewalReason(_ profile: CertificateProfile, holder: HolderRecord?, notAfter: Date) -> (String, reuseKey: Bool)? {
        guard let holder, let record = index.certificates[holder.serial] else { return nil }
        let keyOK = record.keyType == profile.keyType
        if record.kind != profile.kind || record.subject != profile.subject.description
            || record.subjectAltNames != profile.subjectAltNames.map(\.description)
        {
            return ("identity changed", keyOK)
        }
        if !keyOK { return ("key type changed", false) }
        if record.days != profile.days { return ("lifetime changed", true) }
        if record.notAfter.timeIntervalSince(now) < PKIManager.renewalWindow && notAfter > record.notAfter {
            let days = Int(max(0, record.notAfter.timeIntervalSince(now)) / 86400)
            return ("expires in \(days) days", true)
        }
        return nil
    }

    mutating func issue(
        profiles: (nodes: [CertificateProfile], users: [CertificateProfile]), progress: (@Sendable (Int, Int) -> Void)?
    ) throws {
        guard let ca = store.caCertificate else { throw PKIError(.stateInconsistent, "the state has no CA") }
        var jobs: [Job] = []
        var plannedSerials = Set<String>()
        func serial() throws -> String {
            var s = try newSerial()
            while plannedSerials.contains(s) { s = try newSerial() }
            plannedSerials.insert(s)
            return s
        }
        func notAfter(_ profile: CertificateProfile) -> Date {
            min(now + TimeInterval(profile.days) * 86400, ca.notAfter)
        }
        for (node, profile) in zip(inventory.nodes, profiles.nodes) {
            let holder = index.nodes[node.name]
            if holder == nil {
                jobs.append(Job(isNode: true, name: node.name, profile: profile, serial: try serial(), p12Only: false))
            } else if let (reason, reuseKey) = renewalReason(profile, holder: holder, notAfter: notAfter(profile)) {
                jobs.append(
                    Job(isNode: true, name: node.name, profile: profile, serial: try serial(), reuse: reuseKey ? store.nodes[node.name] : nil,
                        reason: reason, p12Only: false))
            }
        }
        for (user, profile) in zip(inventory.users, profiles.users) where user.cert && !user.revoked {
            let holder = index.users[user.name]
            let password = store.secrets.p12Passwords[user.name]
            if holder == nil {
                jobs.append(Job(isNode: false, name: user.name, profile: profile, serial: try serial(), p12Password: password, p12Only: false))
            } else if let (reason, reuseKey) = renewalReason(profile, holder: holder, notAfter: notAfter(profile)) {
                jobs.append(
                    Job(isNode: false, name: user.name, profile: profile, serial: try serial(), reuse: reuseKey ? store.users[user.name] : nil,
                        reason: reason, p12Password: password, p12Only: false))
            } else if holder?.p12 == nil {
                jobs.append(
                    Job(isNode: false, name: user.name, profile: profile, serial: holder!.serial, reuse: store.users[user.name],
                        reason: nil, p12Password: password, p12Only: true))
            }
        }
        guard !jobs.isEmpty else { return }
        let caKey = try store.caKey(passphrase: passphrase)
        let issueTime = self.now
        let total = jobs.count
        let counter = ParallelSlots<Int>(1)
        let outputs = try parallelMap(jobs.count) { i -> JobOutput in
            let job = jobs[i]
            let what = job.isNode ? "node '\(job.name)'" : "user '\(job.name)'"
            do {
                var held: HeldCertificate
                var newKey = false
                if job.p12Only, let reuse = job.reuse {
                    held = reuse
                } else {
                    let key: PrivateKey
                    let keyPEM: String
                    if let reuse = job.reuse {
                        (key, keyPEM) = (try reuse.privateKey(), reuse.keyPEM)
                    } else {
                        key = try PrivateKey.generate(job.profile.keyType.algorithm)
                        keyPEM = try key.pkcs8PEM()
                        newKey = true
                    }
                    let template = CertificateTemplate(
                        serial: bytesFromHex(job.serial)!, subject: job.profile.subject, notBefore: issueTime - PKIManager.backdate,
                        notAfter: min(issueTime + TimeInterval(job.profile.days) * 86400, ca.notAfter),
                        subjectAlternativeNames: job.profile.subjectAltNames, extendedKeyUsages: job.profile.extendedKeyUsages,
                        keyUsage: job.profile.keyUsage)
                    let cert = try CertificateIssuer.issue(template, subjectKey: key, issuer: ca, issuerKey: caKey)
                    held = HeldCertificate(parsedCertificate: cert, certificatePEM: cert.pem, key: key, keyPEM: keyPEM)
                }
                let certificate = try held.certificate()
                let keyID = hexString(Array(Digest.sha256(try certificate.publicKeyDER()).prefix(20)))
                var p12: [UInt8]? = nil
                if let password = job.p12Password {
                    p12 = try PKCS12.build(
                        key: try held.privateKey(), certificate: certificate, caCertificates: [ca], friendlyName: job.name,
                        password: password)
                }
                if let progress {
                    counter.lock.lock()
                    let done = (counter.values[0] ?? 0) + 1
                    counter.values[0] = done
                    counter.lock.unlock()
                    progress(done, total)
                }
                return JobOutput(held: held, keyID: keyID, newKey: newKey, p12: p12)
            } catch {
                throw cryptoFailure("cannot issue the certificate of \(what)", error)
            }
        }
        for (job, output) in zip(jobs, outputs) {
            let paths = store.paths
            var holder = HolderRecord(
                serial: job.serial, key: output.keyID, p12: nil, keySHA256: hexString(Digest.sha256(Array(output.held.keyPEM.utf8))),
                certificateSHA256: hexString(Digest.sha256(Array(output.held.certificatePEM.utf8))))
            if !job.p12Only {
                let cert = try output.held.certificate()
                if output.newKey { store.stage(paths.key(output.keyID), Array(output.held.keyPEM.utf8)) }
                store.stage(paths.certificate(job.serial), Array(output.held.certificatePEM.utf8))
                let previous = job.isNode ? index.nodes[job.name] : index.users[job.name]
                if let previous, var old = index.certificates[previous.serial], old.status == .valid {
                    old.status = .superseded
                    index.certificates[previous.serial] = old
                }
                index.certificates[job.serial] = CertificateRecord(
                    serial: job.serial, kind: job.profile.kind, holder: job.name, subject: job.profile.subject.description,
                    subjectAltNames: job.profile.subjectAltNames.map(\.description), keyType: job.profile.keyType, days: job.profile.days,
                    notBefore: cert.notBefore, notAfter: cert.notAfter, status: .valid)
                changes.append(
                    PKIChange(previous == nil ? .issued : .reissued, job.isNode ? .node(job.name) : .user(job.name), serial: job.serial,
                        reason: job.reason))
            }
            if let p12 = output.p12 {
                let file = "\(job.serial)-\(hexString(Array(Digest.sha256(p12).prefix(8)))).p12"
                store.stage(paths.p12(file), p12)
                store.p12s[file] = p12
                holder.p12 = P12Record(file: file, sha256: hexString(Digest.sha256(p12)))
            }
            if job.isNode {
                index.nodes[job.name] = holder
                store.nodes[job.name] = output.held
            } else {
                index.users[job.name] = holder
                store.users[job.name] = output.held
            }
        }
    }

    // MARK: CRL

    mutating func updateCRL() throws {
        guard let ca = store.caCertificate else { return }
        let revoked = index.certificates.values.filter { $0.status == .revoked }.sorted { $0.serial < $1.serial }
        let serials = revoked.map(\.serial)
        if let crl = index.crl, crl.revokedSerials == serials, crl.nextUpdate.timeIntervalSince(now) >= PKIManager.renewalWindow,
            store.crlPEM != nil
        {
            return
        }
        let number = (index.crl?.number ?? 0) + 1
        let nextUpdate = now + TimeInterval(PKIManager.crlDays) * 86400
        do {
            let crl = try CertificateRevocationList.build(
                issuer: ca, issuerKey: try store.caKey(passphrase: passphrase), number: number, thisUpdate: now, nextUpdate: nextUpdate,
                revoked: revoked.map { RevokedCertificate(serial: bytesFromHex($0.serial)!, revocationDate: $0.revokedAt ?? now) })
            let pem = crl.pem
            store.stage(store.paths.crl(number), Array(pem.utf8))
            store.crlPEM = pem
            index.crl = CRLRecord(number: number, thisUpdate: now, nextUpdate: nextUpdate, revokedSerials: serials)
            changes.append(PKIChange(.crlUpdated, .ca, serial: String(number), reason: "\(serials.count) revoked"))
        } catch {
            throw cryptoFailure("cannot build the CRL", error)
        }
    }

    // MARK: Materials

    func materials(psks: [String: String], passwords: [String: String]) throws -> Materials {
        guard let ca = store.caCertificate, let record = index.ca, let crlPEM = store.crlPEM else {
            throw PKIError(.stateInconsistent, "the state has no CA or CRL")
        }
        var nodes: [String: NodeMaterials] = [:]
        for node in inventory.nodes {
            guard let held = store.nodes[node.name] else { throw PKIError(.stateInconsistent, "node '\(node.name)' has no certificate") }
            var psk: String? = nil
            if node.services.contains(where: \.needsPSK) {
                psk = node.psk == .generate ? store.secrets.psks[node.name] : psks[node.name]
            }
            nodes[node.name] = NodeMaterials(certificatePEM: held.certificatePEM, privateKeyPEM: held.keyPEM, psk: psk)
        }
        var users: [String: UserMaterials] = [:]
        for user in inventory.users where !user.revoked {
            let password = user.password == .generate ? store.secrets.passwords[user.name] : passwords[user.name]
            var entry = UserMaterials(password: password)
            if user.cert {
                guard let held = store.users[user.name], let holder = index.users[user.name], let p12 = holder.p12,
                    let bytes = store.p12s[p12.file]
                else { throw PKIError(.stateInconsistent, "user '\(user.name)' has no certificate") }
                entry.certificatePEM = held.certificatePEM
                entry.privateKeyPEM = held.keyPEM
                entry.p12 = bytes
                entry.p12Password = store.secrets.p12Passwords[user.name]
                entry.keyType = index.certificates[holder.serial]?.keyType
            }
            users[user.name] = entry
        }
        return Materials(
            caCertificatePEM: ca.pem, caCommonName: ca.subject.commonName ?? record.commonName, caKeyType: record.keyType,
            crlPEM: crlPEM, nodes: nodes, users: users)
    }
}

extension KeyType {
    init?(algorithm: KeyAlgorithm) {
        switch algorithm {
        case .ecdsaP256: self = .ecdsaP256
        case .ecdsaP384: self = .ecdsaP384
        case .rsa(2048): self = .rsa2048
        case .rsa(3072): self = .rsa3072
        case .rsa(4096): self = .rsa4096
        default: return nil
        }
    }
}
