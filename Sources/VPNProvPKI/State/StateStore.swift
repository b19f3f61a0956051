import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Where things live in a state directory (docs/state.md):
///
///     .lock                 flock target (empty)
///     index.json            certificate database + what is current (no secrets)
///     secrets.json          generated PSKs/passwords and p12 passwords
///     ca/ca.key ca/ca.pem   the first CA (key never overwritten; optionally encrypted)
///     ca/<SERIAL>.key .pem  CAs created by `rotate-ca` (same rules)
///     certs/<SERIAL>.pem    every certificate ever issued
///     keys/<KEYID>.pem      node and user keys (KEYID = SHA-256 of the public key, 40 hex)
///     p12/<SERIAL>-<HASH>.p12   PKCS#12 containers, stored so their bytes are stable
///     crl/<NUMBER>.pem      CRLs by crlNumber
///     issuing.json          certificates signed but not yet in index.json (only between a run's
///                           signing and its commit, or after that run was killed)
///
/// Files other than index.json/secrets.json are content-addressed and never rewritten, so a crash
/// before index.json is committed leaves only unreferenced files behind.
package struct StatePaths: Sendable {
    package let root: String

    package init(root: String) { self.root = root }

    package var index: String { "\(root)/index.json" }
    package var secrets: String { "\(root)/secrets.json" }
    var caDirectory: String { "\(root)/ca" }
    var caKey: String { "\(root)/ca/ca.key" }
    package var caCertificate: String { "\(root)/ca/ca.pem" }
    /// The files of a CA: the first one's at ca/ca.key and ca/ca.pem, a rotated-in one's by serial.
    func caKey(_ record: CARecord) -> String {
        (record.generation ?? 1) <= 1 ? caKey : "\(root)/ca/\(record.serial).key"
    }
    func caCertificate(_ record: CARecord) -> String {
        (record.generation ?? 1) <= 1 ? caCertificate : "\(root)/ca/\(record.serial).pem"
    }
    func certificate(_ serial: String) -> String { "\(root)/certs/\(serial).pem" }
    func key(_ id: String) -> String { "\(root)/keys/\(id).pem" }
    func p12(_ file: String) -> String { "\(root)/p12/\(file)" }
    func crl(_ number: Int) -> String { "\(root)/crl/\(number).pem" }
    /// CRLs of a CA other than the first: by the CA's serial, so two CAs' numbers never collide.
    func crl(_ number: Int, of ca: CARecord) -> String {
        (ca.generation ?? 1) <= 1 ? crl(number) : "\(root)/crl/\(ca.serial)-\(number).pem"
    }
    var subdirectories: [String] { ["ca", "certs", "keys", "p12", "crl"].map { "\(root)/\($0)" } }
    /// `issuing.json`: certificates signed by a run that has not committed them to index.json yet
    /// (written before any of them reaches a file, removed once index.json holds them).
    package var issuingJournal: String { "\(root)/issuing.json" }
    /// The lock file (`StateLock`).
    var lock: String { "\(root)/.lock" }
}

/// A certificate with its key, as loaded from (or about to be written to) the state.
struct HeldCertificate: Sendable {
    /// The parsed certificate when it was at hand; otherwise parsed from `certificatePEM` on demand.
    var parsedCertificate: X509Certificate?
    var certificatePEM: String
    /// The parsed key when it was at hand (new keys); otherwise parsed from `keyPEM` on demand.
    var key: PrivateKey?
    var keyPEM: String

    /// The private key (parsed now when the load only checked its digest).
    func privateKey() throws -> PrivateKey {
        if let key { return key }
        return try PrivateKey(pem: keyPEM)
    }

    /// The certificate (parsed now when the load only checked its digest).
    func certificate() throws -> X509Certificate {
        if let parsedCertificate { return parsedCertificate }
        return try X509Certificate(pem: certificatePEM)
    }
}

/// The state directory loaded and checked; changes are staged here and committed at once.
package final class StateStore {
    /// The state directory, opened once: every file below is read and written through it.
    let directory: StateDirectory
    var paths: StatePaths { directory.paths }
    var index: StateIndex
    var secrets: SecretsFile
    let originalIndex: StateIndex
    let originalSecrets: SecretsFile
    let secretsFileExisted: Bool

    var caCertificate: X509Certificate?
    var caKeyPEM: String?
    private var decryptedCAKey: PrivateKey?
    /// During a CA rotation: the previous CA, its key (PEM, decrypted on use) and the cross certificate.
    var previousCACertificate: X509Certificate?
    var previousCAKeyPEM: String?
    var crossCertificate: X509Certificate?
    var previousCRLPEM: String?
    /// Current node and user material by holder name.
    var nodes: [String: HeldCertificate] = [:]
    var users: [String: HeldCertificate] = [:]
    /// p12 bytes by file name.
    var p12s: [String: [UInt8]] = [:]
    var crlPEM: String?

    /// The issuing journal a killed run left (its certificates are adopted by `prepare`), and whether
    /// this run has written its own.
    var foundJournal: IssuingJournal?
    private var journalRecorded = false

    /// Files to write on commit: path -> (bytes, may overwrite).
    private(set) var pending: [(path: String, bytes: [UInt8], overwrite: Bool)] = []

    private init(directory: StateDirectory, index: StateIndex, secrets: SecretsFile, secretsFileExisted: Bool) {
        self.directory = directory
        self.index = index
        self.secrets = secrets
        self.originalIndex = index
        self.originalSecrets = secrets
        self.secretsFileExisted = secretsFileExisted
    }

    // MARK: Loading

    /// Loads and checks the state directory. Any unreadable or inconsistent part is an error and
    /// nothing is changed.
    static func load(_ directory: StateDirectory, caPassphrase: String?) throws -> StateStore {
        try directory.refuseSymlinks()
        let root = directory.root
        @Sendable func inconsistent(_ message: String) -> StateError {
            StateError(
                .stateInconsistent, "state directory \(root) is inconsistent: \(message); nothing was changed")
        }
        let store = try loadRecords(directory, inconsistent: inconsistent)
        try loadCAs(store, caPassphrase: caPassphrase, inconsistent: inconsistent)
        try loadHolders(store, inconsistent: inconsistent)
        try loadCRL(store, inconsistent: inconsistent)
        return store
    }

    /// index.json, secrets.json and a killed run's issuing.json, decoded: the store before its files are read.
    private static func loadRecords(_ directory: StateDirectory, inconsistent: (String) -> StateError) throws
        -> StateStore
    {
        let paths = directory.paths
        var index = StateIndex()
        var secrets = SecretsFile()
        let hasIndex = directory.exists(paths.index)
        if hasIndex {
            index = try decodeIndex(
                try directory.read(paths.index, limit: BoundedFile.stateIndexLimit), path: paths.index)
        }
        let secretsExist = directory.exists(paths.secrets)
        if secretsExist {
            secrets = try decodeSecrets(
                try directory.read(paths.secrets, limit: BoundedFile.stateIndexLimit), path: paths.secrets)
        } else if hasIndex && index.ca != nil {
            throw inconsistent("index.json exists but secrets.json is missing")
        }
        let store = StateStore(
            directory: directory, index: index, secrets: secrets, secretsFileExisted: secretsExist)
        if directory.exists(paths.issuingJournal) {
            store.foundJournal = try decodeJournal(
                try directory.read(paths.issuingJournal, limit: BoundedFile.stateIndexLimit),
                path: paths.issuingJournal)
        }
        return store
    }

    /// The current CA (the first one, or one a rotation made), and during a rotation the previous CA,
    /// the cross certificate and the previous CA's CRL.
    private static func loadCAs(_ store: StateStore, caPassphrase: String?, inconsistent: (String) -> StateError)
        throws
    {
        let directory = store.directory
        let paths = store.paths
        let index = store.index
        if let record = index.ca, (record.generation ?? 1) > 1 {
            let (cert, keyPEM) = try loadCA(
                record, in: directory, caPassphrase: caPassphrase, inconsistent: inconsistent)
            store.caCertificate = cert
            store.caKeyPEM = keyPEM
            if !PrivateKey.isEncryptedPEM(keyPEM) || caPassphrase != nil {
                let key = try store.caKey(passphrase: caPassphrase)
                guard key.matches(cert) else { throw inconsistent("the CA key does not match the CA certificate") }
            }
        } else {
            try loadFirstCA(store, caPassphrase: caPassphrase, inconsistent: inconsistent)
        }
        if let rotation = index.rotation {
            let (cert, keyPEM) = try loadCA(
                rotation.previous, in: directory, caPassphrase: caPassphrase, inconsistent: inconsistent)
            store.previousCACertificate = cert
            store.previousCAKeyPEM = keyPEM
            let crossPath = paths.certificate(rotation.crossSerial)
            guard directory.exists(crossPath),
                let cross = try? X509Certificate(pem: String(decoding: try directory.read(crossPath), as: UTF8.self))
            else { throw inconsistent("the cross certificate \(crossPath) is missing or unreadable") }
            guard let current = store.caCertificate, cross.isSigned(by: cert),
                (try? cross.publicKeyDER()) == (try? current.publicKeyDER())
            else { throw inconsistent("\(crossPath) is not the current CA certified by the previous CA") }
            store.crossCertificate = cross
            if let crl = rotation.previousCRL {
                let path = paths.crl(crl.number, of: rotation.previous)
                guard directory.exists(path) else { throw inconsistent("the CRL \(path) is missing") }
                store.previousCRLPEM = String(decoding: try directory.read(path), as: UTF8.self)
            }
        }
        if index.ca == nil && !(index.nodes.isEmpty && index.users.isEmpty && index.crl == nil) {
            throw inconsistent("index.json lists certificates but no CA")
        }
    }

    /// What `loadHolder` reads for one node or user: its certificate and key, its p12 and its passwordless p12.
    private typealias LoadedHolder = (held: HeldCertificate, p12: [UInt8]?, open: (file: String, bytes: [UInt8])?)

    /// Current node and user certificates, keys and p12 containers (checked in parallel).
    private static func loadHolders(_ store: StateStore, inconsistent: @escaping @Sendable (String) -> StateError)
        throws
    {
        let index = store.index
        let holders = index.nodes.map { (true, $0.key, $0.value) } + index.users.map { (false, $0.key, $0.value) }
        let directory = store.directory
        let caCertificate = store.caCertificate
        let certificates = index.certificates
        let results = try parallelMap(holders.count) { i -> LoadedHolder in
            let (isNode, name, holder) = holders[i]
            return try loadHolder(
                holder, what: isNode ? "node '\(name)'" : "user '\(name)'", in: directory,
                certificates: certificates, caCertificate: caCertificate, inconsistent: inconsistent)
        }
        for (i, (isNode, name, holder)) in holders.enumerated() {
            if isNode { store.nodes[name] = results[i].held } else { store.users[name] = results[i].held }
            if !isNode, holder.p12 != nil, store.secrets.p12Passwords[name] == nil {
                // secrets.json is committed before index.json: a run killed between the two (one that
                // revoked this user) leaves a p12 whose password is gone. Nothing can open it, so its
                // records are dropped and the run rebuilds what the inventory still needs.
                store.index.users[name]?.p12 = nil
                store.index.users[name]?.openP12 = nil
                continue
            }
            if let file = holder.p12?.file, let bytes = results[i].p12 { store.p12s[file] = bytes }
            if let (file, bytes) = results[i].open { store.p12s[file] = bytes }
        }
    }

    /// One node's or user's (`what`) current certificate, key and p12 containers, checked against the
    /// digests the index recorded (or, in an older state without them, parsed and checked against each
    /// other and `caCertificate`).
    private static func loadHolder(
        _ holder: HolderRecord, what: String, in directory: StateDirectory,
        certificates: [String: CertificateRecord], caCertificate: X509Certificate?,
        inconsistent: (String) -> StateError
    ) throws -> LoadedHolder {
        let paths = directory.paths
        guard let record = certificates[holder.serial] else {
            throw inconsistent("\(what) refers to serial \(holder.serial), which is not in the index")
        }
        guard record.status == .valid else {
            throw inconsistent("\(what) holds certificate \(holder.serial) marked \(record.status.rawValue)")
        }
        let certPath = paths.certificate(holder.serial)
        let keyPath = paths.key(holder.key)
        guard directory.exists(certPath) else {
            throw inconsistent("the certificate \(certPath) of \(what) is missing")
        }
        guard directory.exists(keyPath) else { throw inconsistent("the key \(keyPath) of \(what) is missing") }
        let certPEM = String(decoding: try directory.read(certPath), as: UTF8.self)
        let keyPEM = String(decoding: try directory.read(keyPath), as: UTF8.self)
        var cert: X509Certificate? = nil
        var key: PrivateKey? = nil
        if let keyDigest = holder.keySHA256, let certDigest = holder.certificateSHA256 {
            // Both files are byte for byte what this state wrote when it issued the certificate
            // (signed by its CA, for this key): checked without parsing either.
            guard hexString(Digest.sha256(Array(certPEM.utf8))) == certDigest else {
                throw inconsistent("\(certPath) of \(what) has changed")
            }
            guard hexString(Digest.sha256(Array(keyPEM.utf8))) == keyDigest else {
                throw inconsistent("the key of \(what) does not match its certificate (\(keyPath) has changed)")
            }
        } else {
            // An older state without digests: parse and check everything.
            guard let parsedCert = try? X509Certificate(pem: certPEM) else {
                throw inconsistent("\(certPath) is not a certificate")
            }
            guard parsedCert.serialHex == holder.serial else {
                throw inconsistent("\(certPath) has serial \(parsedCert.serialHex)")
            }
            guard let parsed = try? PrivateKey(pem: keyPEM) else {
                throw inconsistent("\(keyPath) is not a private key")
            }
            guard parsed.matches(parsedCert) else {
                throw inconsistent("the key of \(what) does not match its certificate")
            }
            if let caCertificate, !parsedCert.isSigned(by: caCertificate) {
                throw inconsistent("the certificate of \(what) is not signed by the CA")
            }
            (cert, key) = (parsedCert, parsed)
        }
        func container(_ p12Record: P12Record?) throws -> [UInt8]? {
            guard let p12Record else { return nil }
            let path = paths.p12(p12Record.file)
            guard directory.exists(path) else { throw inconsistent("the PKCS#12 \(path) of \(what) is missing") }
            let bytes = try directory.read(path)
            guard hexString(Digest.sha256(bytes)) == p12Record.sha256 else {
                throw inconsistent("\(path) has changed")
            }
            return bytes
        }
        let p12 = try container(holder.p12)
        let open = try holder.openP12.flatMap { record in try container(record).map { (record.file, $0) } }
        return (
            HeldCertificate(parsedCertificate: cert, certificatePEM: certPEM, key: key, keyPEM: keyPEM), p12, open
        )
    }

    /// The current CRL, checked: its number as the index records it, signed by the CA.
    private static func loadCRL(_ store: StateStore, inconsistent: (String) -> StateError) throws {
        let index = store.index
        let paths = store.paths
        let directory = store.directory
        if let crl = index.crl {
            let path = index.ca.map { paths.crl(crl.number, of: $0) } ?? paths.crl(crl.number)
            guard directory.exists(path) else { throw inconsistent("the CRL \(path) is missing") }
            let pem = String(decoding: try directory.read(path, limit: BoundedFile.stateIndexLimit), as: UTF8.self)
            guard let parsed = try? CertificateRevocationList(pem: pem), parsed.number == crl.number else {
                throw inconsistent("\(path) is not CRL number \(crl.number)")
            }
            if let caCert = store.caCertificate, !parsed.isSigned(by: caCert) {
                throw inconsistent("\(path) is not signed by the CA")
            }
            store.crlPEM = pem
        }
    }

    /// The bytes of index.json (read from `path`) as `load` takes them: decoded and of the version this
    /// vpnprov reads, else state-unreadable. Touches no file (the fuzzer and the mutation tests call it).
    package static func decodeIndex(_ bytes: [UInt8], path: String) throws -> StateIndex {
        let index: StateIndex
        do {
            index = try StateJSON.decode(StateIndex.self, bytes)
        } catch {
            throw StateError(
                .stateUnreadable, "cannot read \(path): it is not a valid vpnprov index (\(error)); nothing was changed"
            )
        }
        guard index.version == StateIndex.currentVersion else {
            throw StateError(
                .stateUnreadable,
                "\(path) has version \(index.version); this vpnprov reads version \(StateIndex.currentVersion)")
        }
        if let bad = index.firstUnsafeFileName {
            throw StateError(
                .stateUnreadable,
                "\(path) names a state file '\(bad)' that is not a name vpnprov writes; nothing was changed")
        }
        return index
    }

    /// The bytes of issuing.json (read from `path`) as `load` takes them. It is written atomically, so
    /// one that does not decode was not written by vpnprov; it is not ignored (it may name certificates
    /// that must be revoked).
    package static func decodeJournal(_ bytes: [UInt8], path: String) throws -> IssuingJournal {
        let journal: IssuingJournal
        do {
            journal = try StateJSON.decode(IssuingJournal.self, bytes)
        } catch {
            throw StateError(
                .stateUnreadable,
                "cannot read \(path): it is not a valid vpnprov issuing journal (\(error)); nothing was changed. It lists certificates a "
                    + "killed run signed; restore it from a backup, or move it away once you know those certificates were never handed out"
            )
        }
        guard journal.version == IssuingJournal.currentVersion else {
            throw StateError(
                .stateUnreadable,
                "\(path) has version \(journal.version); this vpnprov reads version \(IssuingJournal.currentVersion)")
        }
        for (serial, record) in journal.certificates
        where serial != record.serial || bytesFromHex(serial) == nil || serial.utf8.count > 128 {
            throw StateError(
                .stateUnreadable,
                "\(path) names the certificate '\(serial.prefix(64))', which is not a serial vpnprov writes; nothing was changed"
            )
        }
        return journal
    }

    /// The bytes of secrets.json (read from `path`) as `load` takes them. The error never quotes the
    /// decoder's message, which could show part of a secret.
    /// secrets.json of `stateDirectory` read on its own, without the lock (for read-only commands):
    /// bounded, never through a symbolic link, decoded as `load` decodes it; nil when there is none.
    package static func readSecrets(stateDirectory: String) throws -> SecretsFile? {
        guard let directory = try StateDirectory.open(stateDirectory, create: false) else { return nil }
        return try readSecrets(directory)
    }

    /// secrets.json of the open state directory, as `readSecrets(stateDirectory:)` reads it.
    static func readSecrets(_ directory: StateDirectory) throws -> SecretsFile? {
        let path = directory.paths.secrets
        guard directory.exists(path) else { return nil }
        return try decodeSecrets(try directory.read(path, limit: BoundedFile.stateIndexLimit), path: path)
    }

    package static func decodeSecrets(_ bytes: [UInt8], path: String) throws -> SecretsFile {
        do {
            return try StateJSON.decode(SecretsFile.self, bytes)
        } catch {
            throw StateError(
                .stateUnreadable, "cannot read \(path): it is not valid JSON of vpnprov; nothing was changed")
        }
    }

    /// The first CA (ca/ca.key + ca/ca.pem), including the adoption of a key whose certificate a killed
    /// first run never wrote.
    private static func loadFirstCA(_ store: StateStore, caPassphrase: String?, inconsistent: (String) -> StateError)
        throws
    {
        let paths = store.paths
        let directory = store.directory
        let index = store.index
        let keyExists = directory.exists(paths.caKey)
        let certExists = directory.exists(paths.caCertificate)
        if index.ca == nil && keyExists && !certExists {
            // A first run killed between writing the new CA's key and its certificate (commit writes
            // the key first): nothing was committed with this key, so it is adopted and gets its
            // certificate on this run (PKIManager.ensureCA).
            let keyPEM = String(decoding: try directory.read(paths.caKey), as: UTF8.self)
            store.caKeyPEM = keyPEM
            if !PrivateKey.isEncryptedPEM(keyPEM) || caPassphrase != nil {
                _ = try store.caKey(passphrase: caPassphrase)
            }
        } else if index.ca != nil || keyExists || certExists {
            guard keyExists else { throw inconsistent("the CA key \(paths.caKey) is missing") }
            guard certExists else { throw inconsistent("the CA certificate \(paths.caCertificate) is missing") }
            let certPEM = String(decoding: try directory.read(paths.caCertificate), as: UTF8.self)
            let keyPEM = String(decoding: try directory.read(paths.caKey), as: UTF8.self)
            let ca: X509Certificate
            do { ca = try X509Certificate(pem: certPEM) } catch {
                throw inconsistent("\(paths.caCertificate) is not a certificate")
            }
            guard ca.isCA else { throw inconsistent("\(paths.caCertificate) is not a CA certificate") }
            if let record = index.ca, record.fingerprint != hexString(ca.fingerprintSHA256) {
                throw inconsistent("\(paths.caCertificate) is not the CA recorded in index.json")
            }
            store.caCertificate = ca
            store.caKeyPEM = keyPEM
            if !PrivateKey.isEncryptedPEM(keyPEM) || caPassphrase != nil {
                let key = try store.caKey(passphrase: caPassphrase)
                guard key.matches(ca) else { throw inconsistent("the CA key does not match the CA certificate") }
            }
        }
    }

    /// A CA recorded in the index: its certificate (checked against the recorded fingerprint) and key PEM.
    private static func loadCA(
        _ record: CARecord, in directory: StateDirectory, caPassphrase: String?, inconsistent: (String) -> StateError
    ) throws -> (X509Certificate, String) {
        let paths = directory.paths
        let certPath = paths.caCertificate(record)
        let keyPath = paths.caKey(record)
        guard directory.exists(keyPath) else { throw inconsistent("the CA key \(keyPath) is missing") }
        guard directory.exists(certPath) else { throw inconsistent("the CA certificate \(certPath) is missing") }
        guard let cert = try? X509Certificate(pem: String(decoding: try directory.read(certPath), as: UTF8.self)),
            cert.isCA
        else {
            throw inconsistent("\(certPath) is not a CA certificate")
        }
        guard record.fingerprint == hexString(cert.fingerprintSHA256) else {
            throw inconsistent("\(certPath) is not the CA recorded in index.json")
        }
        return (cert, String(decoding: try directory.read(keyPath), as: UTF8.self))
    }

    /// The previous CA's key during a rotation (signs its CRL until the rotation is finished).
    func previousCAKey(passphrase: String?) throws -> PrivateKey {
        guard let pem = previousCAKeyPEM else {
            throw StateError(.stateInconsistent, "the state has no previous CA key")
        }
        if PrivateKey.isEncryptedPEM(pem) {
            guard let passphrase, !passphrase.isEmpty else {
                throw StateError(
                    .caPassphrase, "the previous CA key is encrypted: set VPNPROV_CA_PASSPHRASE to its passphrase")
            }
            guard let key = try? PrivateKey(pem: pem, passphrase: passphrase) else {
                throw StateError(.caPassphrase, "cannot decrypt the previous CA key: wrong VPNPROV_CA_PASSPHRASE?")
            }
            return key
        }
        guard let key = try? PrivateKey(pem: pem) else {
            throw StateError(.stateInconsistent, "the previous CA key is not a private key")
        }
        return key
    }

    /// The CA key, decrypting it on first use when it is stored encrypted.
    func caKey(passphrase: String?) throws -> PrivateKey {
        if let decryptedCAKey { return decryptedCAKey }
        guard let pem = caKeyPEM else { throw StateError(.stateInconsistent, "the state has no CA key") }
        if PrivateKey.isEncryptedPEM(pem) {
            guard let passphrase, !passphrase.isEmpty else {
                throw StateError(
                    .caPassphrase, "the CA key \(paths.caKey) is encrypted: set VPNPROV_CA_PASSPHRASE to its passphrase"
                )
            }
            do {
                decryptedCAKey = try PrivateKey(pem: pem, passphrase: passphrase)
            } catch {
                throw StateError(
                    .caPassphrase, "cannot decrypt the CA key \(paths.caKey): wrong VPNPROV_CA_PASSPHRASE?")
            }
        } else {
            do {
                decryptedCAKey = try PrivateKey(pem: pem)
            } catch {
                throw StateError(
                    .stateInconsistent,
                    "state directory \(paths.root) is inconsistent: \(paths.caKey) is not a private key; nothing was changed"
                )
            }
        }
        return decryptedCAKey!
    }

    func setCA(certificate: X509Certificate, key: PrivateKey, keyPEM: String) {
        caCertificate = certificate
        caKeyPEM = keyPEM
        decryptedCAKey = key
    }

    // MARK: Staging and commit

    func stage(_ path: String, _ bytes: [UInt8], overwrite: Bool = true) {
        pending.append((path, bytes, overwrite))
    }

    /// True when a commit would change anything.
    var hasChanges: Bool {
        !pending.isEmpty || index != originalIndex || secrets != originalSecrets || !secretsFileExisted
    }

    /// Writes staged files (no per-file fsync), syncs the file system, then secrets.json and
    /// index.json atomically (index last: it is the commit point).
    func commit() throws {
        try directory.refuseSymlinks()
        // Leftovers of a run killed mid-write (never renamed into place, so never part of the state).
        directory.removeTemporaries()
        guard hasChanges else {
            // A journal whose certificates index.json already holds (its run was killed after the commit point).
            if foundJournal != nil { directory.remove(paths.issuingJournal) }
            return
        }
        // Before the first certificate reaches a file (no-op when the pipeline recorded it already).
        try recordIssuing()
        // What this commit creates, so a failure (a full disk) can take it back: files and
        // subdirectories that do not exist yet. Before index.json is committed nothing refers to them.
        let createdDirectories = paths.subdirectories.filter { !directory.exists($0) }
        let createdFiles = pending.map(\.path).filter { !directory.exists($0) }
        // index.json and secrets.json (a fleet's are megabytes) are encoded on another core while the
        // keys, certificates and PKCS#12 files are written.
        let (index, secrets) = (self.index, self.secrets)
        let encoded = Background {
            Result { (index: try StateJSON.encode(index), secrets: try StateJSON.encode(secrets)) }
        }
        defer { _ = encoded.value }
        var newIndex: [UInt8]?
        let writesSecrets = secrets != originalSecrets || !secretsFileExisted
        let writesIndex = index != originalIndex || !directory.exists(paths.index)
        let previousSecrets =
            writesSecrets && secretsFileExisted
            ? try? directory.read(paths.secrets, limit: BoundedFile.stateIndexLimit) : nil
        do {
            for subdirectory in paths.subdirectories { try directory.makeSubdirectory(subdirectory) }
            // Files that are never replaced (the CA key, then its certificate) go first, one by one in the
            // order staged, so a kill between them leaves a key without certificate, which load adopts,
            // never a certificate without its key.
            for file in pending where !file.overwrite {
                if directory.exists(file.path) {
                    throw StateError(.stateInconsistent, "refusing to overwrite \(file.path)")
                }
                try directory.write(file.bytes, to: file.path, sync: false, overwrite: false)
            }
            let files = pending.filter(\.overwrite)
            let directory = directory
            _ = try parallelMap(files.count) { i in
                let file = files[i]
                // A file from an earlier crashed run may exist already: content-addressed names make it
                // the same content (keys, certs, p12, CRL).
                try directory.write(file.bytes, to: file.path, sync: false, overwrite: file.overwrite)
            }
            try directory.syncFileSystem()
            for subdirectory in paths.subdirectories { try directory.syncDirectory(subdirectory) }
            let (indexBytes, secretsBytes) = try encoded.value.get()
            newIndex = indexBytes
            if writesSecrets { try directory.write(secretsBytes, to: paths.secrets) }
            if writesIndex { try directory.write(indexBytes, to: paths.index) }
            // index.json holds every certificate the journal named: it has done its work.
            if journalRecorded || foundJournal != nil {
                directory.remove(paths.issuingJournal)
                try? directory.syncDirectory(paths.root)
            }
        } catch {
            // Committed after all when index.json already holds the new index (only its directory
            // sync failed): then everything stays.
            let committed =
                !writesIndex
                || (newIndex != nil
                    && (try? directory.read(paths.index, limit: BoundedFile.stateIndexLimit)) == newIndex)
            if !committed {
                for path in createdFiles { directory.remove(path) }
                if writesSecrets {
                    if let previousSecrets {
                        try? directory.write(previousSecrets, to: paths.secrets)
                    } else if !secretsFileExisted {
                        directory.remove(paths.secrets)
                    }
                }
                for subdirectory in createdDirectories.reversed() { directory.removeSubdirectory(subdirectory) }
            }
            throw error
        }
        pending = []
    }

    /// Certificates this run's index holds that the committed index.json does not: signed now (or
    /// adopted from a killed run's journal). CA certificates are left out: a self-signed certificate
    /// is trusted only where a profile installs it, and only a committed CA reaches a profile.
    var uncommittedCertificates: [String: CertificateRecord] {
        index.certificates.filter { originalIndex.certificates[$0.key] == nil && $0.value.kind != .ca }
    }

    /// Writes issuing.json (fsynced) with every certificate this run signed, before any of them is
    /// written to the state or the output tree: a run killed (SIGKILL, SIGINT, SIGTERM, power loss)
    /// before index.json is committed leaves them named there, and the next run records and revokes
    /// them. Once per run; nothing to write when the run signed nothing.
    func recordIssuing() throws {
        guard !journalRecorded else { return }
        let signed = uncommittedCertificates
        guard !signed.isEmpty else { return }
        try directory.write(try StateJSON.encode(IssuingJournal(certificates: signed)), to: paths.issuingJournal)
        journalRecorded = true
    }

    /// After a failure that removed every file this run wrote (nothing it signed is left anywhere):
    /// the journal goes back to what it was, so the certificates that never left memory are not revoked.
    func abandonIssuing() {
        guard journalRecorded else { return }
        if let foundJournal, let bytes = try? StateJSON.encode(foundJournal) {
            try? directory.write(bytes, to: paths.issuingJournal)
        } else {
            directory.remove(paths.issuingJournal)
        }
        journalRecorded = false
    }
}

/// `issuing.json` (docs/state.md, "Interrupted runs"): every certificate a run signed, by serial,
/// written before any of them reaches a file and removed once index.json records them.
package struct IssuingJournal: Codable, Equatable {
    static let currentVersion = 1
    var version: Int = IssuingJournal.currentVersion
    package var certificates: [String: CertificateRecord]
}
