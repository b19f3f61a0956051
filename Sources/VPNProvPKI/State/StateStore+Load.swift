import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Loading: every file a run takes from the state is checked before anything is signed or written
/// (docs/state.md, "What survives what"): the records against the manifest's digests (or, in a state
/// from before the manifest, key by key), the content-addressed files against the digests index.json
/// records, and where a digest is not recorded yet by what the file is (a CA key by its private half).
extension StateStore {
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

    /// The records (index.json, secrets.json, the rollout ledger, the output tree's place) and a killed
    /// run's issuing.json, decoded: the store before its other files are read.
    private static func loadRecords(_ directory: StateDirectory, inconsistent: (String) -> StateError) throws
        -> StateStore
    {
        let paths = directory.paths
        let records = try directory.readRecords(StateRecord.allCases)
        var index = StateIndex()
        var secrets = SecretsFile()
        let indexBytes = records.bytes[.index]
        if let indexBytes { index = try decodeIndex(indexBytes, path: paths.index, sealed: records.sealed) }
        if !records.sealed && indexBytes != nil && index.version > 1 {
            throw inconsistent(
                "\(paths.index) has version \(index.version), which vpnprov writes only beside "
                    + "\(directory.manifestPath), and that is missing (restore the state directory from a backup)")
        }
        let secretsBytes = records.bytes[.secrets]
        if let secretsBytes {
            secrets = try decodeSecrets(secretsBytes, path: paths.secrets, sealed: records.sealed)
        } else if indexBytes != nil && index.ca != nil {
            throw inconsistent("index.json exists but secrets.json is missing")
        }
        if !records.sealed {
            // Checked before the next commit seals them (the engine reads the output tree's place itself).
            if let ledger = records.bytes[.rolloutPending] {
                _ = try RolloutLedger.decode(ledger, path: directory.path(.rolloutPending))
            }
            if let location = records.bytes[.outputLocation], !isOneLine(location) {
                throw StateError(
                    .stateUnreadable,
                    "cannot read \(directory.path(.outputLocation)): it is not the one line vpnprov writes; nothing was changed"
                )
            }
        }
        let store = StateStore(
            directory: directory, index: index, secrets: secrets, secretsFileExisted: secretsBytes != nil,
            records: records)
        if !records.sealed && indexBytes != nil { store.index.version = StateIndex.currentVersion }
        if directory.exists(paths.issuingJournal) {
            store.foundJournal = try decodeJournal(
                try directory.read(paths.issuingJournal, limit: BoundedFile.stateIndexLimit),
                path: paths.issuingJournal)
        }
        return store
    }

    /// One line of UTF-8 text ending with its newline, as vpnprov writes the output tree's place.
    static func isOneLine(_ bytes: [UInt8]) -> Bool {
        bytes.count > 1 && bytes.last == UInt8(ascii: "\n") && !bytes.dropLast().contains(UInt8(ascii: "\n"))
            && String(validating: bytes, as: UTF8.self) != nil
    }

    /// The current CA (the first one, or one a rotation made), and during a rotation the previous CA,
    /// the cross certificate and the previous CA's CRL.
    private static func loadCAs(_ store: StateStore, caPassphrase: String?, inconsistent: (String) -> StateError)
        throws
    {
        let directory = store.directory
        let paths = store.paths
        if let record = store.index.ca {
            // The first CA (ca/ca.key, ca/ca.pem) or one a rotation made (by serial).
            let (cert, keyPEM, certificateDigest) = try loadCA(record, in: directory, inconsistent: inconsistent)
            store.caCertificate = cert
            store.caKeyPEM = keyPEM
            store.index.ca = try verifiedCA(
                record, cert, certificateDigest: certificateDigest, keyPEM: keyPEM, store: store,
                caPassphrase: caPassphrase, current: true)
        } else {
            try loadUnrecordedCA(store, caPassphrase: caPassphrase, inconsistent: inconsistent)
        }
        if var rotation = store.index.rotation {
            let (cert, keyPEM, certificateDigest) = try loadCA(
                rotation.previous, in: directory, inconsistent: inconsistent)
            store.previousCACertificate = cert
            store.previousCAKeyPEM = keyPEM
            // The accessor finds the record in the index.
            store.index.rotation = rotation
            rotation.previous = try verifiedCA(
                rotation.previous, cert, certificateDigest: certificateDigest, keyPEM: keyPEM, store: store,
                caPassphrase: caPassphrase, current: false)
            let crossPath = paths.certificate(rotation.crossSerial)
            guard directory.exists(crossPath) else {
                throw inconsistent("index.json names \(crossPath) as the cross certificate, and it is missing")
            }
            let crossBytes = try directory.read(crossPath)
            let crossDigest = hexString(Digest.sha256(crossBytes))
            if let recorded = rotation.crossSHA256, recorded != crossDigest {
                throw inconsistent("the cross certificate \(crossPath) has changed since vpnprov wrote it")
            }
            guard let cross = try? X509Certificate(pem: String(decoding: crossBytes, as: UTF8.self)) else {
                throw inconsistent("the cross certificate \(crossPath) is unreadable")
            }
            guard let current = store.caCertificate, cross.isSigned(by: cert),
                (try? cross.publicKeyDER()) == (try? current.publicKeyDER())
            else { throw inconsistent("\(crossPath) is not the current CA certified by the previous CA") }
            rotation.crossSHA256 = crossDigest
            store.crossCertificate = cross
            if let crl = rotation.previousCRL {
                let (pem, checked) = try loadCRL(
                    crl, at: paths.crl(crl.number, of: rotation.previous), signedBy: cert, in: directory,
                    inconsistent: inconsistent)
                store.previousCRLPEM = pem
                rotation.previousCRL = checked
            }
            store.index.rotation = rotation
        }
        if store.index.ca == nil && !(store.index.nodes.isEmpty && store.index.users.isEmpty && store.index.crl == nil)
        {
            throw inconsistent("index.json lists certificates but no CA")
        }
    }

    /// `record` with the digests of its CA's files: checked against those it records, or, in a state
    /// from before vpnprov recorded them, recorded now once the key has shown by its private half that
    /// it signs for `certificate` (an encrypted key without its passphrase waits for the run that signs
    /// with it). A key that does not is refused, named.
    private static func verifiedCA(
        _ record: CARecord, _ certificate: X509Certificate, certificateDigest: String, keyPEM: String,
        store: StateStore, caPassphrase: String?, current: Bool
    ) throws -> CARecord {
        let paths = store.paths
        var record = record
        record.certificateSHA256 = certificateDigest
        let keyDigest = hexString(Digest.sha256(Array(keyPEM.utf8)))
        if let recorded = record.keySHA256 {
            guard recorded == keyDigest else {
                throw StateError(
                    .stateInconsistent,
                    "state directory \(paths.root) is inconsistent: the CA key \(paths.caKey(record)) has changed since vpnprov "
                        + "wrote it; nothing was changed (restore the state directory from a backup)")
            }
        } else if !PrivateKey.isEncryptedPEM(keyPEM) || caPassphrase != nil {
            _ = try current ? store.caKey(passphrase: caPassphrase) : store.previousCAKey(passphrase: caPassphrase)
            record.keySHA256 = keyDigest
        }
        return record
    }

    /// CA files at ca/ca.key and ca/ca.pem that index.json does not record: the key of a first run killed
    /// before it wrote the certificate, or files placed in (or left in) the state without an index.
    private static func loadUnrecordedCA(
        _ store: StateStore, caPassphrase: String?, inconsistent: (String) -> StateError
    ) throws {
        let paths = store.paths
        let directory = store.directory
        let keyExists = directory.exists(paths.caKey)
        let certExists = directory.exists(paths.caCertificate)
        if keyExists && !certExists {
            // A first run killed between writing the new CA's key and its certificate (commit writes
            // the key first): nothing was committed with this key, so it is adopted and gets its
            // certificate on this run (PKIManager.ensureCA), which checks it by its private half.
            let keyPEM = String(decoding: try directory.read(paths.caKey), as: UTF8.self)
            store.caKeyPEM = keyPEM
            if !PrivateKey.isEncryptedPEM(keyPEM) || caPassphrase != nil {
                _ = try store.caKey(passphrase: caPassphrase)
            }
        } else if keyExists || certExists {
            // Adopted by ensureCA, which checks the key by its private half first.
            guard keyExists else { throw inconsistent("the CA key \(paths.caKey) is missing") }
            let certPEM = String(decoding: try directory.read(paths.caCertificate), as: UTF8.self)
            let ca: X509Certificate
            do { ca = try X509Certificate(pem: certPEM) } catch {
                throw inconsistent("\(paths.caCertificate) is not a certificate")
            }
            guard ca.isCA else { throw inconsistent("\(paths.caCertificate) is not a CA certificate") }
            store.caCertificate = ca
            store.caKeyPEM = String(decoding: try directory.read(paths.caKey), as: UTF8.self)
        }
    }

    /// A CA recorded in the index: its certificate (checked against the recorded digest of its file,
    /// and its fingerprint), its key's PEM (checked by `verifiedCA`) and the digest of its certificate's file.
    private static func loadCA(
        _ record: CARecord, in directory: StateDirectory, inconsistent: (String) -> StateError
    ) throws -> (X509Certificate, String, String) {
        let paths = directory.paths
        let certPath = paths.caCertificate(record)
        let keyPath = paths.caKey(record)
        guard directory.exists(keyPath) else { throw inconsistent("the CA key \(keyPath) is missing") }
        guard directory.exists(certPath) else { throw inconsistent("the CA certificate \(certPath) is missing") }
        let certBytes = try directory.read(certPath)
        let certificateDigest = hexString(Digest.sha256(certBytes))
        if let recorded = record.certificateSHA256, recorded != certificateDigest {
            throw inconsistent("the CA certificate \(certPath) has changed since vpnprov wrote it")
        }
        guard let cert = try? X509Certificate(pem: String(decoding: certBytes, as: UTF8.self)), cert.isCA else {
            throw inconsistent("\(certPath) is not a CA certificate")
        }
        guard record.fingerprint == hexString(cert.fingerprintSHA256) else {
            throw inconsistent("\(certPath) is not the CA recorded in index.json")
        }
        return (cert, String(decoding: try directory.read(keyPath), as: UTF8.self), certificateDigest)
    }

    /// What `loadHolder` reads for one node or user: its certificate and key, its p12, its passwordless
    /// p12, and for an older record without them the digests of its key and certificate files (checked
    /// the long way now, recorded for the next runs).
    private typealias LoadedHolder = (
        held: HeldCertificate, p12: [UInt8]?, open: (file: String, bytes: [UInt8])?,
        digests: (key: String, certificate: String)?
    )

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
            if let (key, certificate) = results[i].digests {
                if isNode {
                    store.index.nodes[name]?.keySHA256 = key
                    store.index.nodes[name]?.certificateSHA256 = certificate
                } else {
                    store.index.users[name]?.keySHA256 = key
                    store.index.users[name]?.certificateSHA256 = certificate
                }
            }
            if !isNode, holder.p12 != nil, store.secrets.p12Passwords[name] == nil {
                // A state from before secrets.json and index.json were committed together could be left
                // with secrets.json committed and index.json not, by a run that revoked this user: a p12
                // whose password is gone. Nothing can open it, so its records are dropped and the run
                // rebuilds what the inventory still needs.
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
            throw inconsistent("index.json gives \(what) the certificate \(holder.serial), which it does not list")
        }
        guard record.status == .valid else {
            throw inconsistent(
                "index.json gives \(what) the certificate \(holder.serial), which it marks \(record.status.rawValue)")
        }
        let certPath = paths.certificate(holder.serial)
        let keyPath = paths.key(holder.key)
        guard directory.exists(certPath) else {
            throw inconsistent("index.json names \(certPath) as the certificate of \(what), and it is missing")
        }
        guard directory.exists(keyPath) else {
            throw inconsistent("index.json names \(keyPath) as the key of \(what), and it is missing")
        }
        let certPEM = String(decoding: try directory.read(certPath), as: UTF8.self)
        let keyPEM = String(decoding: try directory.read(keyPath), as: UTF8.self)
        var cert: X509Certificate? = nil
        var key: PrivateKey? = nil
        var digests: (key: String, certificate: String)? = nil
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
            // An older state without digests: parse and check everything, then record the digests.
            (cert, key) = try parsedHolder(
                certPEM: certPEM, keyPEM: keyPEM, serial: holder.serial, what: what, certPath: certPath,
                keyPath: keyPath, caCertificate: caCertificate, inconsistent: inconsistent)
            digests = (hexString(Digest.sha256(Array(keyPEM.utf8))), hexString(Digest.sha256(Array(certPEM.utf8))))
        }
        func container(_ p12Record: P12Record?) throws -> [UInt8]? {
            try loadContainer(p12Record, of: what, in: directory, inconsistent: inconsistent)
        }
        let p12 = try container(holder.p12)
        let open = try holder.openP12.flatMap { record in try container(record).map { (record.file, $0) } }
        return (
            HeldCertificate(parsedCertificate: cert, certificatePEM: certPEM, key: key, keyPEM: keyPEM), p12, open,
            digests
        )
    }

    /// A holder's certificate and key parsed and checked against each other and the CA (an older state
    /// without digests).
    private static func parsedHolder(
        certPEM: String, keyPEM: String, serial: String, what: String, certPath: String, keyPath: String,
        caCertificate: X509Certificate?, inconsistent: (String) -> StateError
    ) throws -> (X509Certificate, PrivateKey) {
        guard let parsedCert = try? X509Certificate(pem: certPEM) else {
            throw inconsistent("\(certPath) is not a certificate")
        }
        guard parsedCert.serialHex == serial else {
            throw inconsistent("\(certPath) has serial \(parsedCert.serialHex)")
        }
        guard let parsed = try? PrivateKey(pem: keyPEM) else {
            throw inconsistent("\(keyPath) is not a private key")
        }
        guard parsed.signsFor(parsedCert) else {
            throw inconsistent("the key \(keyPath) of \(what) does not sign for its certificate \(certPath)")
        }
        if let caCertificate, !parsedCert.isSigned(by: caCertificate) {
            throw inconsistent("the certificate of \(what) is not signed by the CA")
        }
        return (parsedCert, parsed)
    }

    /// A holder's PKCS#12 file, byte for byte what the index recorded.
    private static func loadContainer(
        _ p12Record: P12Record?, of what: String, in directory: StateDirectory, inconsistent: (String) -> StateError
    ) throws -> [UInt8]? {
        guard let p12Record else { return nil }
        let path = directory.paths.p12(p12Record.file)
        guard directory.exists(path) else {
            throw inconsistent("index.json names \(path) as a PKCS#12 file of \(what), and it is missing")
        }
        let bytes = try directory.read(path)
        guard hexString(Digest.sha256(bytes)) == p12Record.sha256 else {
            throw inconsistent("\(path) has changed")
        }
        return bytes
    }

    /// The current CRL.
    private static func loadCRL(_ store: StateStore, inconsistent: (String) -> StateError) throws {
        guard let crl = store.index.crl else { return }
        let path = store.index.ca.map { store.paths.crl(crl.number, of: $0) } ?? store.paths.crl(crl.number)
        let (pem, checked) = try loadCRL(
            crl, at: path, signedBy: store.caCertificate, in: store.directory, inconsistent: inconsistent)
        store.crlPEM = pem
        store.index.crl = checked
    }

    /// The CRL `record` names, at `path`: checked against the digest of its file, or, in a state from
    /// before vpnprov recorded it, by its number and its signature (by `issuer`), and its digest recorded.
    private static func loadCRL(
        _ record: CRLRecord, at path: String, signedBy issuer: X509Certificate?, in directory: StateDirectory,
        inconsistent: (String) -> StateError
    ) throws -> (pem: String, record: CRLRecord) {
        guard directory.exists(path) else {
            throw inconsistent("index.json names the CRL \(path), and it is missing")
        }
        let bytes = try directory.read(path, limit: BoundedFile.stateIndexLimit)
        let digest = hexString(Digest.sha256(bytes))
        let pem = String(decoding: bytes, as: UTF8.self)
        var record = record
        if let recorded = record.sha256 {
            guard recorded == digest else { throw inconsistent("the CRL \(path) has changed since vpnprov wrote it") }
            return (pem, record)
        }
        guard let parsed = try? CertificateRevocationList(pem: pem), parsed.number == record.number else {
            throw inconsistent("\(path) is not CRL number \(record.number)")
        }
        if let issuer, !parsed.isSigned(by: issuer) {
            throw inconsistent("\(path) is not signed by the CA")
        }
        record.sha256 = digest
        return (pem, record)
    }

    /// The bytes of index.json (read from `path`) as `load` takes them: decoded, of a version this
    /// vpnprov reads, naming only files vpnprov writes, and, unless the manifest vouches for the bytes
    /// (`sealed`), holding nothing the decoder would skip or read otherwise than written
    /// (`StateJSON.firstDifference`); else state-unreadable. Touches no file (the fuzzer and the mutation
    /// tests call it).
    package static func decodeIndex(_ bytes: [UInt8], path: String, sealed: Bool = false) throws -> StateIndex {
        let index: StateIndex
        do {
            index = try StateJSON.decode(StateIndex.self, bytes)
        } catch {
            throw StateError(
                .stateUnreadable, "cannot read \(path): it is not a valid vpnprov index (\(error)); nothing was changed"
            )
        }
        guard StateIndex.readableVersions.contains(index.version) else {
            throw StateError(
                .stateUnreadable,
                "\(path) has version \(index.version); this vpnprov reads versions \(StateIndex.readableVersions.lowerBound) "
                    + "to \(StateIndex.readableVersions.upperBound)")
        }
        if let bad = index.firstUnsafeFileName {
            throw StateError(
                .stateUnreadable,
                "\(path) names a state file '\(bad)' that is not a name vpnprov writes; nothing was changed")
        }
        if !sealed { try refuseDifference(bytes, index, path: path) }
        return index
    }

    /// Refuses `bytes` (read from `path`) when they hold what `value`, decoded from them, does not.
    static func refuseDifference<T: Encodable>(_ bytes: [UInt8], _ value: T, path: String) throws {
        let difference: String?
        do {
            difference = try StateJSON.firstDifference(bytes, value)
        } catch {
            difference = "what vpnprov writes"
        }
        if let difference {
            throw StateError(
                .stateUnreadable,
                "cannot read \(path): it holds \(difference), which vpnprov does not write (a damaged disk or an edit); "
                    + "nothing was changed")
        }
    }

    /// The bytes of issuing.json (read from `path`) as `load` takes them. It is written atomically, so
    /// one that does not decode was not written by vpnprov; it is not ignored (it may name certificates
    /// that must be revoked). One that records the digest of its certificates must be byte for byte the
    /// journal vpnprov writes for them.
    package static func decodeJournal(_ bytes: [UInt8], path: String) throws -> IssuingJournal {
        func refuse(_ why: String) -> StateError {
            StateError(
                .stateUnreadable,
                "cannot read \(path): \(why); nothing was changed. It lists certificates a killed run signed; restore it from a "
                    + "backup, or move it away once you know those certificates were never handed out")
        }
        let journal: IssuingJournal
        do {
            journal = try StateJSON.decode(IssuingJournal.self, bytes)
        } catch {
            throw refuse("it is not a valid vpnprov issuing journal (\(error))")
        }
        guard journal.version == IssuingJournal.currentVersion else {
            throw StateError(
                .stateUnreadable,
                "\(path) has version \(journal.version); this vpnprov reads version \(IssuingJournal.currentVersion)")
        }
        if let recorded = journal.certificatesSHA256 {
            guard (try? StateJSON.encode(journal)) == bytes,
                recorded == (try? IssuingJournal.digest(of: journal.certificates))
            else { throw refuse("it has changed since vpnprov wrote it") }
        } else if (try? StateJSON.firstDifference(bytes, journal)) != nil {
            throw refuse("it holds what vpnprov does not write")
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

    /// secrets.json of `stateDirectory` read on its own, without the lock (for read-only commands):
    /// bounded, never through a symbolic link, checked against the manifest and decoded as `load`
    /// decodes it; nil when there is none.
    package static func readSecrets(stateDirectory: String) throws -> SecretsFile? {
        guard let directory = try StateDirectory.open(stateDirectory, create: false) else { return nil }
        return try readSecrets(directory)
    }

    /// secrets.json of the open state directory, as `readSecrets(stateDirectory:)` reads it.
    static func readSecrets(_ directory: StateDirectory) throws -> SecretsFile? {
        let records = try directory.readRecords([.secrets])
        return try records.bytes[.secrets].map {
            try decodeSecrets($0, path: directory.paths.secrets, sealed: records.sealed)
        }
    }

    /// The bytes of secrets.json (read from `path`) as `load` takes them (strictly, unless the manifest
    /// vouches for them). The error never quotes the decoder's message, which could show part of a secret.
    package static func decodeSecrets(_ bytes: [UInt8], path: String, sealed: Bool = false) throws -> SecretsFile {
        let secrets: SecretsFile
        do {
            secrets = try StateJSON.decode(SecretsFile.self, bytes)
        } catch {
            throw StateError(
                .stateUnreadable, "cannot read \(path): it is not valid JSON of vpnprov; nothing was changed")
        }
        if !sealed { try refuseDifference(bytes, secrets, path: path) }
        return secrets
    }
}
