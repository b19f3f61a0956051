import Foundation
import VPNProvCrypto

/// The CRL: re-signed when the revoked set changes or it nears its next update.
extension PKISession {
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
}
