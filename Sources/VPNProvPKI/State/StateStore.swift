import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Where things live in a state directory (docs/state.md):
///
///     .lock                 flock target (empty)
///     manifest.sha256       the digest of each record below; renamed into place last: the commit point
///     index.json            certificate database + what is current (no secrets)   (a record)
///     secrets.json          generated PSKs/passwords and p12 passwords              (a record)
///     rollout-pending       nodes waiting for a rollout                             (a record)
///     output-location       where the output tree is                                (a record)
///     ca/ca.key ca/ca.pem   the first CA (key never overwritten; optionally encrypted)
///     ca/<SERIAL>.key .pem  CAs created by `rotate-ca` (same rules)
///     certs/<SERIAL>.pem    every certificate ever issued
///     keys/<KEYID>.pem      node and user keys (KEYID = SHA-256 of the public key, 40 hex)
///     p12/<SERIAL>-<HASH>.p12   PKCS#12 containers, stored so their bytes are stable
///     crl/<NUMBER>.pem      CRLs by crlNumber
///     issuing.json          certificates signed but not yet in index.json (only between a run's
///                           signing and its commit, or after that run was killed)
///
/// Files other than the records are content-addressed and never rewritten, so a crash before the
/// manifest is committed leaves only unreferenced files behind (`StateRecords`).
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
    var lock: String { "\(root)/\(StateLock.fileName)" }
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
    /// The manifest the records were read against; for a state from before manifests, the manifest of
    /// the records as read, which the next commit writes.
    let loadedManifest: StateManifest
    /// Whether the state had a manifest.
    let sealed: Bool

    var caCertificate: X509Certificate?
    var caKeyPEM: String?
    /// The CA key, parsed (and decrypted) once and checked by its private half (`caKey`).
    private var decryptedCAKey: PrivateKey?
    /// During a CA rotation: the previous CA, its key (PEM, decrypted on use) and the cross certificate.
    var previousCACertificate: X509Certificate?
    var previousCAKeyPEM: String?
    private var decryptedPreviousCAKey: PrivateKey?
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

    init(
        directory: StateDirectory, index: StateIndex, secrets: SecretsFile, secretsFileExisted: Bool,
        records: StateRecords
    ) {
        self.directory = directory
        self.index = index
        self.secrets = secrets
        self.originalIndex = index
        self.originalSecrets = secrets
        self.secretsFileExisted = secretsFileExisted
        self.sealed = records.sealed
        self.loadedManifest = records.manifest ?? StateManifest(records: records.bytes)
    }

    // MARK: The keys that sign

    /// The previous CA's key during a rotation (signs its CRL until the rotation is finished), checked
    /// by its private half like the CA key.
    func previousCAKey(passphrase: String?) throws -> PrivateKey {
        if let decryptedPreviousCAKey { return decryptedPreviousCAKey }
        guard let pem = previousCAKeyPEM, let certificate = previousCACertificate, let record = index.rotation?.previous
        else {
            throw StateError(.stateInconsistent, "the state has no previous CA key")
        }
        let key = try signingKey(pem, passphrase: passphrase, path: paths.caKey(record), what: "the previous CA key")
        try requireSigns(
            key, for: certificate, keyPath: paths.caKey(record), certificatePath: paths.caCertificate(record))
        decryptedPreviousCAKey = key
        return key
    }

    /// The CA key, decrypting it on first use when it is stored encrypted, and checked once by its
    /// private half: a key whose signatures its certificate does not verify signs nothing.
    func caKey(passphrase: String?) throws -> PrivateKey {
        if let decryptedCAKey { return decryptedCAKey }
        guard let pem = caKeyPEM else { throw StateError(.stateInconsistent, "the state has no CA key") }
        let keyPath = index.ca.map { paths.caKey($0) } ?? paths.caKey
        let key = try signingKey(pem, passphrase: passphrase, path: keyPath, what: "the CA key")
        if let caCertificate {
            try requireSigns(
                key, for: caCertificate, keyPath: keyPath,
                certificatePath: index.ca.map { paths.caCertificate($0) } ?? paths.caCertificate)
        }
        decryptedCAKey = key
        return key
    }

    /// The key in `pem` (the file `path`), decrypted with `passphrase` when it is encrypted.
    private func signingKey(_ pem: String, passphrase: String?, path: String, what: String) throws -> PrivateKey {
        if PrivateKey.isEncryptedPEM(pem) {
            guard let passphrase, !passphrase.isEmpty else {
                throw StateError(
                    .caPassphrase, "\(what) \(path) is encrypted: set VPNPROV_CA_PASSPHRASE to its passphrase")
            }
            do {
                return try PrivateKey(pem: pem, passphrase: passphrase)
            } catch {
                throw StateError(.caPassphrase, "cannot decrypt \(what) \(path): wrong VPNPROV_CA_PASSPHRASE?")
            }
        }
        do {
            return try PrivateKey(pem: pem)
        } catch {
            throw StateError(
                .stateInconsistent,
                "state directory \(paths.root) is inconsistent: \(path) is not a private key; nothing was changed")
        }
    }

    /// Refuses a CA key whose private half does not sign for its certificate (`PrivateKey.signsFor`).
    func requireSigns(_ key: PrivateKey, for certificate: X509Certificate, keyPath: String, certificatePath: String)
        throws
    {
        guard key.signsFor(certificate) else {
            throw StateError(
                .stateInconsistent,
                "state directory \(paths.root) is inconsistent: the CA key \(keyPath) does not sign for the CA certificate "
                    + "\(certificatePath) (its private half is damaged or belongs to another key); nothing was signed or "
                    + "changed. Restore the state directory from a backup")
        }
    }

    func setCA(certificate: X509Certificate, key: PrivateKey, keyPEM: String) {
        caCertificate = certificate
        caKeyPEM = keyPEM
        decryptedCAKey = key
    }

    /// The previous CA of a rotation (its key as this run already checked it), or none.
    func setPreviousCA(certificate: X509Certificate?, keyPEM: String?, key: PrivateKey?) {
        previousCACertificate = certificate
        previousCAKeyPEM = keyPEM
        decryptedPreviousCAKey = key
    }

    // MARK: Staging and commit

    func stage(_ path: String, _ bytes: [UInt8], overwrite: Bool = true) {
        pending.append((path, bytes, overwrite))
    }

    /// True when a commit would change anything (a state from before manifests is sealed by the next commit).
    var hasChanges: Bool {
        !pending.isEmpty || index != originalIndex || secrets != originalSecrets || !secretsFileExisted
            || (!sealed && !loadedManifest.digests.isEmpty)
    }

    /// What the last `commit` narrowed: entries of the state whose modes were wider than vpnprov's own.
    private(set) var narrowedModes: [StatePermissions.Wide] = []

    /// Writes staged files (no per-file fsync), syncs the file system, then commits index.json and
    /// secrets.json with one rename, the manifest's (`StateDirectory.commitRecords`): the state is the
    /// old one or the new one, never a mix. Gives entries with modes wider than vpnprov's own its own
    /// modes first (`narrowedModes`).
    func commit() throws {
        try directory.refuseSymlinks()
        // Leftovers of a run killed mid-write (never renamed into place, so never part of the state),
        // and the records of a commit killed after its manifest was renamed, put in place.
        directory.removeTemporaries()
        if sealed { try directory.finishCommit(loadedManifest) }
        narrowedModes = try directory.narrowModes()
        guard hasChanges else {
            // A journal whose certificates index.json already holds (its run was killed after the commit point).
            if foundJournal != nil { directory.remove(paths.issuingJournal) }
            return
        }
        // Before the first certificate reaches a file (no-op when the pipeline recorded it already).
        try recordIssuing()
        // What this commit creates, so a failure (a full disk) can take it back: files and
        // subdirectories that do not exist yet. Before the manifest is committed nothing refers to them.
        let createdDirectories = paths.subdirectories.filter { !directory.exists($0) }
        let createdFiles = pending.map(\.path).filter { !directory.exists($0) }
        // index.json and secrets.json (a fleet's are megabytes) are encoded on another core while the
        // keys, certificates and PKCS#12 files are written.
        let (index, secrets) = (self.index, self.secrets)
        let encoded = Background {
            Result { (index: try StateJSON.encode(index), secrets: try StateJSON.encode(secrets)) }
        }
        defer { _ = encoded.value }
        let writesSecrets = secrets != originalSecrets || !secretsFileExisted || !sealed
        let writesIndex = index != originalIndex || !directory.exists(paths.index) || !sealed
        do {
            try writePending()
            let (indexBytes, secretsBytes) = try encoded.value.get()
            var records: [StateRecord: [UInt8]?] = [:]
            if writesIndex { records[.index] = indexBytes }
            if writesSecrets { records[.secrets] = secretsBytes }
            try directory.commitRecords(records, current: loadedManifest)
            // index.json holds every certificate the journal named: it has done its work.
            if journalRecorded || foundJournal != nil {
                directory.remove(paths.issuingJournal)
                try? directory.syncDirectory(paths.root)
            }
        } catch {
            // Committed after all when the manifest changed (only a directory sync after its rename
            // failed): then everything stays.
            let committed = (try? directory.readManifest()) != (sealed ? loadedManifest : nil)
            if !committed {
                for path in createdFiles { directory.remove(path) }
                for subdirectory in createdDirectories.reversed() { directory.removeSubdirectory(subdirectory) }
            }
            throw error
        }
        pending = []
    }

    /// The staged files and the subdirectories they go in, written and then synced to disk.
    private func writePending() throws {
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
        try directory.write(try StateJSON.encode(try IssuingJournal(sealing: signed)), to: paths.issuingJournal)
        journalRecorded = true
    }

    /// After a failure that removed every file this run wrote (nothing it signed is left anywhere):
    /// the journal goes back to what it was, so the certificates that never left memory are not revoked.
    func abandonIssuing() {
        guard journalRecorded else { return }
        if let foundJournal, let bytes = try? StateJSON.encode(foundJournal) {
            // Written back as it was read (a journal from before digests stays one).
            try? directory.write(bytes, to: paths.issuingJournal)
        } else {
            directory.remove(paths.issuingJournal)
        }
        journalRecorded = false
    }
}

/// `issuing.json` (docs/state.md, "Interrupted runs"): every certificate a run signed, by serial,
/// written before any of them reaches a file and removed once index.json records them. It is not a
/// record of the manifest (it is written before the state commit, and may be moved away by hand), so it
/// carries its own digest.
package struct IssuingJournal: Codable, Equatable {
    static let currentVersion = 1
    var version: Int = IssuingJournal.currentVersion
    package var certificates: [String: CertificateRecord]
    /// SHA-256 of `certificates` as vpnprov encodes them (absent in journals from before): with it,
    /// a journal must be byte for byte what vpnprov writes for the certificates it names.
    var certificatesSHA256: String? = nil

    /// A journal naming `certificates`, with their digest.
    init(sealing certificates: [String: CertificateRecord]) throws {
        self.certificates = certificates
        self.certificatesSHA256 = try Self.digest(of: certificates)
    }

    static func digest(of certificates: [String: CertificateRecord]) throws -> String {
        hexString(Digest.sha256(try StateJSON.encode(certificates)))
    }
}
