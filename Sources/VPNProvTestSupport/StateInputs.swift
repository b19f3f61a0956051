import Foundation
import VPNProvCLI
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// The state directory's files as bytes, taken by the same functions `status`, `generate`, `revoke`
/// and the lifecycle commands (`rotate-ca`, `rotate-psk`, `rotate-password`, `unrevoke`) apply to the
/// files, without opening any file: for the fuzzer (`vpnprov-fuzz`, docs/testing.md "Fuzzing") and
/// the mutation tests. Each function returns, or throws an error that says what is wrong; none may
/// trap, whatever the bytes.
package enum StateInputs {
    /// The state directory the messages name (no file in it is ever opened here).
    package static let stateDirectory = "/srv/vpn/state"

    /// The clock of every status report and CRL decision the fuzzer and the mutation tests ask for:
    /// 2026-11-30T00:00:00Z, a few hours before the seed states (fuzz/corpus/state-*) were written.
    package static let seedClock = Date(timeIntervalSince1970: 1_795_996_800)

    /// An index.json with nothing in it, for `status` over secrets.json inputs.
    package static let emptyIndex = Array(#"{"certificates":{},"nodes":{},"users":{},"version":1}"#.utf8)

    /// The inventory `status` reports against: some of the names the seed states hold, not all, so both
    /// "in the inventory" and "not in the inventory" are reached.
    package static let statusInventory: Inventory = {
        let text = """
            vpnprov: 1
            name: acme
            nodes:
              fra-1: {address: fra-1.vpn.example.com}
              nyc-1: {address: 203.0.113.10}
            users:
              alice: {password: gen}
              bob: {cert: true}
              carol: {password: gen, cert: true}
              mallory: {password: gen, cert: true, revoked: true}
            """
        guard let inventory = InventoryLoader.decode(bytes: Array(text.utf8), file: "status.yaml").inventory else {
            fatalError("StateInputs: the built-in status inventory does not decode")
        }
        return inventory
    }()

    /// What `readIndex` found: enough for a test to tell a decoded seed from a rejected one.
    package struct IndexContents: Sendable, Hashable {
        package var certificates: Int
        package var revoked: Int
        package var nodes: Int
        package var users: Int
        package var heldUsers: Int
        /// The number the next CRL of the current CA (and, in a rotation, of the previous CA) would
        /// carry; nil where the CRL is current.
        package var nextCRLNumbers: [Int?]
        /// The generation of the CA that `rotate-ca` would create.
        package var nextCAGeneration: Int?
    }

    /// index.json as `generate`, `revoke` and the lifecycle commands load it (decoded, version
    /// checked), then what the index alone decides for them: the CRL entries by CA, each CRL's next
    /// number (the CRL file counts as present) and the next CA generation.
    @discardableResult
    package static func readIndex(_ bytes: [UInt8], now: Date) throws -> IndexContents {
        let index = try StateStore.decodeIndex(bytes, path: StatePaths(root: stateDirectory).index)
        var numbers: [Int?] = []
        var generation: Int? = nil
        if let ca = index.ca {
            let (mine, theirs) = PKISession.revokedByCA(index, current: ca)
            numbers.append(
                try PKISession.crlContents(
                    mine, previous: index.crl, hasPEM: true, now: now, stateDirectory: stateDirectory)?.number)
            if let rotation = index.rotation {
                numbers.append(
                    try PKISession.crlContents(
                        theirs, previous: rotation.previousCRL, hasPEM: true, now: now, stateDirectory: stateDirectory)?
                        .number)
            }
            generation = try PKISession.nextGeneration(after: ca, stateDirectory: stateDirectory)
        }
        return IndexContents(
            certificates: index.certificates.count,
            revoked: index.certificates.values.filter { $0.status == .revoked }.count,
            nodes: index.nodes.count, users: index.users.count, heldUsers: index.revokedByCommand?.count ?? 0,
            nextCRLNumbers: numbers, nextCAGeneration: generation)
    }

    /// issuing.json (certificates a killed run signed, docs/state.md "Interrupted runs") as the state
    /// loader takes it, and the records the next run would add to index.json (revoked) from it, against
    /// an empty index. Returns how many it would record.
    @discardableResult
    package static func readIssuingJournal(_ bytes: [UInt8], now: Date) throws -> Int {
        let journal = try StateStore.decodeJournal(bytes, path: StatePaths(root: stateDirectory).issuingJournal)
        var index = StateIndex()
        for serial in journal.certificates.keys.sorted() where index.certificates[serial] == nil {
            var record = journal.certificates[serial]!
            record.status = .revoked
            record.revokedAt = now
            index.certificates[serial] = record
        }
        // The CRL the adoption makes must be buildable from those records.
        let revoked = index.certificates.values.filter { $0.status == .revoked }.sorted { $0.serial < $1.serial }
        _ = try PKISession.crlContents(revoked, previous: nil, hasPEM: false, now: now, stateDirectory: stateDirectory)
        return index.certificates.count
    }

    /// secrets.json as `generate`, `revoke` and the lifecycle commands load it. Returns how many
    /// names it holds (never a value).
    @discardableResult
    package static func readSecrets(_ bytes: [UInt8]) throws -> Int {
        let secrets = try StateStore.decodeSecrets(bytes, path: StatePaths(root: stateDirectory).secrets)
        return secrets.psks.count + secrets.passwords.count + secrets.p12Passwords.count
    }

    /// `manifest.sha256` as every reader of the state takes it (its lines and its seal checked).
    /// Returns how many records it lists.
    @discardableResult
    package static func readManifest(_ bytes: [UInt8]) throws -> Int {
        try StateManifest.decode(bytes, path: stateDirectory + "/" + StateManifest.fileName).digests.count
    }

    /// `rollout-pending` as `generate`, `check`, `status` and `rolled-out` read it. Returns the names.
    package static func readRolloutPending(_ bytes: [UInt8]) throws -> [String] {
        try RolloutLedger.decode(bytes, path: stateDirectory + "/rollout-pending")
    }

    /// `status` from the bytes of index.json and secrets.json (nil: no secrets.json), for
    /// `inventory`: the report, its text and the JSON document `status --format json` prints.
    package static func status(
        indexJSON: [UInt8], secretsJSON: [UInt8]?, inventory: Inventory, now: Date, expiringWithin days: Int?
    ) throws -> (report: StatusReport, text: String, json: String) {
        let report = try StatusReport.make(
            inventory: inventory, stateDirectory: stateDirectory, indexJSON: indexJSON, secretsJSON: secretsJSON,
            now: now,
            expiringWithin: days)
        let (console, capture) = Console.capturing()
        let output = CommandOutput(command: "status", format: .json, console: console)
        let expired = report.expiring?.isEmpty == false
        output.record(report)
        output.result(report.text, failing: expired)
        output.finish(exitCode: expired ? ExitCode.failure : ExitCode.success)
        return (report, report.text, capture.stdout)
    }

    /// `state/output-location` as the output-location check of `generate`, `check`, `revoke` and the
    /// lifecycle commands reads it (its first 4 KiB): the recorded output tree, or nil.
    package static func readOutputLocation(_ bytes: [UInt8]) -> String? {
        OutputLocation.recorded(Array(bytes.prefix(OutputLocation.maxBytes)), stateDirectory: stateDirectory)
    }

    /// What `readPEM` found.
    package struct PEMContents: Sendable, Hashable {
        /// Certificates of the bundle (as a profile-signing chain is read), at least the first one.
        package var certificates: Int
        package var firstIsCA: Bool
        package var crlNumber: Int?
        package var crlEntries: Int
        /// The CRL verifies with the first certificate's key.
        package var crlSignedByFirst: Bool
        package var privateKey: Bool
    }

    /// PEM text as the state loader reads its files (`ca/*.pem`, `certs/*.pem`, `crl/*.pem`,
    /// `keys/*.pem`) and the profile-signing loader its chain: the first certificate with every
    /// property the loader, the consistency check and the CA adoption look at, each certificate of the
    /// bundle, the first CRL (number, dates, entries, signature against the first certificate) and an
    /// unencrypted private key (checked against the first certificate). An encrypted key is not
    /// decrypted: the loader asks for the passphrase first.
    package static func readPEM(_ text: String) -> PEMContents {
        var contents = PEMContents(
            certificates: 0, firstIsCA: false, crlNumber: nil, crlEntries: 0, crlSignedByFirst: false, privateKey: false
        )
        let first = try? X509Certificate(pem: text)
        if let first {
            contents.certificates = 1
            contents.firstIsCA = first.isCA
            _ = (
                first.serialHex, hexString(first.fingerprintSHA256), try? first.publicKeyDER(), first.notBefore,
                first.notAfter
            )
            _ = (
                first.keyUsage, first.extensions, first.subjectKeyIdentifier, first.authorityKeyIdentifier,
                first.signatureAlgorithm
            )
            _ = first.publicKeyAlgorithm.flatMap(KeyType.init(algorithm:))
            _ = first.isSigned(by: first)
            _ = Pipeline.inspectCertificate(text)
            // How status, the index and the consistency messages show the subjectAltName.
            for name in first.subjectAlternativeNames {
                _ = name.description
                if case .ipAddress(let bytes) = name { _ = IPAddressText.format(bytes) }
            }
            _ = first.pem
        }
        if let bundle = try? X509Certificate.all(pem: text), !bundle.isEmpty {
            contents.certificates = max(contents.certificates, bundle.count)
            for certificate in bundle {
                _ = (certificate.subject.description, certificate.issuer.description, certificate.der)
            }
        }
        if let crl = try? CertificateRevocationList(pem: text) {
            contents.crlNumber = crl.number
            contents.crlEntries = crl.revoked.map { hexString($0.serial) }.count
            _ = (crl.thisUpdate, crl.nextUpdate, crl.issuer.description, crl.pem, crl.der)
            if let first { contents.crlSignedByFirst = crl.isSigned(by: first) }
        }
        if !PrivateKey.isEncryptedPEM(text), let key = try? PrivateKey(pem: text) {
            contents.privateKey = true
            if let first { _ = key.matches(first) }
        }
        return contents
    }
}
