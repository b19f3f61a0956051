import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// The CRL: re-signed when the revoked set changes or it nears its next update. During a CA
/// rotation the previous CA's CRL is kept current as well (its certificates are still trusted).
extension PKISession {
    func updateCRL() throws {
        guard let ca = store.caCertificate, let record = index.ca else { return }
        let (mine, theirs) = Self.revokedByCA(index, current: record)
        if let crl = try signedCRL(
            mine, previous: index.crl, issuer: ca, key: { try store.caKey(passphrase: passphrase) },
            hasPEM: store.crlPEM != nil,
            path: { store.paths.crl($0, of: record) })
        {
            store.crlPEM = crl.pem
            index.crl = crl.record
            changes.append(
                PKIChange(.crlUpdated, .ca, serial: String(crl.record.number), reason: "\(mine.count) revoked"))
        }
        if var rotation = index.rotation, let previousCA = store.previousCACertificate {
            if let crl = try signedCRL(
                theirs, previous: rotation.previousCRL, issuer: previousCA,
                key: { try store.previousCAKey(passphrase: passphrase) },
                hasPEM: store.previousCRLPEM != nil, path: { store.paths.crl($0, of: rotation.previous) })
            {
                store.previousCRLPEM = crl.pem
                rotation.previousCRL = crl.record
                index.rotation = rotation
                changes.append(
                    PKIChange(
                        .crlUpdated, .ca, serial: String(crl.record.number),
                        reason: "previous CA, \(theirs.count) revoked"))
            }
        }
    }

    /// The revoked certificates of index.json by the CA whose CRL lists them: the current CA's and,
    /// during a rotation, the previous CA's; sorted by serial. From the index alone.
    package static func revokedByCA(_ index: StateIndex, current: CARecord) -> (
        current: [CertificateRecord], previous: [CertificateRecord]
    ) {
        let revoked = index.certificates.values.filter { $0.status == .revoked }.sorted { $0.serial < $1.serial }
        // Certificates without an issuer predate the first rotation, which names it on all of them:
        // they are the current CA's as long as no rotation ever happened.
        let mine = revoked.filter { ($0.issuer ?? current.serial) == current.serial }
        let theirs = index.rotation.map { rotation in revoked.filter { $0.issuer == rotation.previous.serial } } ?? []
        return (mine, theirs)
    }

    /// The number and entries of a new CRL listing `revoked` after `previous`, or nil when `previous`
    /// lists the same serials and is not near its next update (and its file is at hand). From the
    /// index alone; an index.json whose records cannot make a CRL (a serial that is not hexadecimal,
    /// a CRL number with no next one) is state-inconsistent, named after `stateDirectory`.
    package static func crlContents(
        _ revoked: [CertificateRecord], previous: CRLRecord?, hasPEM: Bool, now: Date, stateDirectory: String
    ) throws -> (number: Int, entries: [RevokedCertificate], serials: [String])? {
        let serials = revoked.map(\.serial)
        if let previous, previous.revokedSerials == serials,
            previous.nextUpdate.timeIntervalSince(now) >= PKIManager.renewalWindow, hasPEM
        {
            return nil
        }
        func inconsistent(_ message: String) -> StateError {
            StateError(
                .stateInconsistent,
                "state directory \(stateDirectory) is inconsistent: index.json \(message); nothing was changed")
        }
        let previousNumber = previous?.number ?? 0
        guard (0..<Int.max).contains(previousNumber) else {
            throw inconsistent("gives the CRL number \(previousNumber), which has no next number")
        }
        let entries = try revoked.map { record in
            // Serials vpnprov writes are hex; anything else cannot be listed (and was not written by it).
            guard !record.serial.isEmpty, let serial = bytesFromHex(record.serial) else {
                throw inconsistent(
                    "lists the revoked certificate '\(record.serial.prefix(64))', whose serial is not hexadecimal")
            }
            return RevokedCertificate(serial: serial, revocationDate: record.revokedAt ?? now)
        }
        return (previousNumber + 1, entries, serials)
    }

    /// A new CRL when `revoked` differs from `previous` or it nears its next update; nil: keep it.
    private func signedCRL(
        _ revoked: [CertificateRecord], previous: CRLRecord?, issuer: X509Certificate, key: () throws -> PrivateKey,
        hasPEM: Bool,
        path: (Int) -> String
    ) throws -> (pem: String, record: CRLRecord)? {
        guard
            let (number, entries, serials) = try Self.crlContents(
                revoked, previous: previous, hasPEM: hasPEM, now: now, stateDirectory: store.paths.root)
        else { return nil }
        let nextUpdate = now + TimeInterval(PKIManager.crlDays) * 86400
        do {
            let crl = try CertificateRevocationList.build(
                issuer: issuer, issuerKey: try key(), number: number, thisUpdate: now, nextUpdate: nextUpdate,
                revoked: entries)
            let pem = crl.pem
            store.stage(path(number), Array(pem.utf8))
            return (
                pem,
                CRLRecord(
                    number: number, thisUpdate: now, nextUpdate: nextUpdate, revokedSerials: serials,
                    sha256: hexString(Digest.sha256(Array(pem.utf8))))
            )
        } catch {
            throw Self.cryptoFailure("cannot build the CRL", error)
        }
    }
}
