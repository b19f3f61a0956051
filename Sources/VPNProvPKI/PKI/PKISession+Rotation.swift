import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// CA rotation. Starting one creates the new CA and a cross certificate (the new CA's name and key,
/// signed by the previous CA); every node and client certificate is then re-issued under the new CA
/// by the ordinary renewal rules (a certificate from another CA is due). During the overlap the
/// servers keep the previous CA as their trust root and present their new certificate together with
/// the cross certificate, so a device that trusts only the previous CA builds
/// server -> cross -> previous CA, and a device with a new profile builds server -> new CA. Client
/// certificates of both CAs verify on the servers (previous CA directly, new ones through the cross
/// certificate). Finishing retires the previous CA: servers then hold the new CA alone.
/// docs/lifecycle.md explains why this shape and what was proven against strongSwan.
extension PKISession {
    func startCARotation() throws {
        guard let previous = index.ca, let previousCert = store.caCertificate,
            !changes.contains(where: { $0.kind == .caCreated })
        else {
            throw PKIError(.caRotation, "the state has no CA yet: run 'vpnprov generate' first")
        }
        if let rotation = index.rotation {
            throw PKIError(
                .caRotation,
                "a CA rotation is already in progress (started \(StatusReport.day(rotation.startedAt))); run 'vpnprov rotate-ca --finish' "
                    + "once every device has its new profile, then start the next one")
        }
        let previousKey = try store.caKey(passphrase: passphrase)
        let settings = inventory.pki.ca
        let generation = try Self.nextGeneration(after: previous, stateDirectory: store.paths.root)
        // The name differs from the previous CA's (chain building matches issuers by name), the
        // common name stays what the inventory says: Apple profiles name the issuer by its CN.
        let subject = DistinguishedName([
            NameAttribute("O", inventory.name), NameAttribute("OU", "generation \(generation)"),
            NameAttribute("CN", settings.name),
        ])
        do {
            let new = try issueCrossCertifiedCA(subject: subject, previousCert: previousCert, previousKey: previousKey)
            let keyPEM = try passphrase.map { try new.key.encryptedPKCS8PEM(passphrase: $0) } ?? new.key.pkcs8PEM()
            let record = CARecord(
                serial: new.serial, commonName: settings.name, keyType: settings.key,
                fingerprint: hexString(new.cert.fingerprintSHA256),
                notAfter: new.cert.notAfter, generation: generation, anyPolicy: true,
                certificateSHA256: hexString(Digest.sha256(Array(new.cert.pem.utf8))),
                keySHA256: hexString(Digest.sha256(Array(keyPEM.utf8))))
            // Key first, then certificate, never replacing a file (see StateStore.commit).
            store.stage(store.paths.caKey(record), Array(keyPEM.utf8), overwrite: false)
            store.stage(store.paths.caCertificate(record), Array(new.cert.pem.utf8), overwrite: false)
            store.stage(store.paths.certificate(new.crossSerial), Array(new.cross.pem.utf8))
            recordRotation(
                to: new, record: record, keyPEM: keyPEM, subject: subject, previous: previous,
                previousCert: previousCert, previousKey: previousKey)
            changes.append(
                PKIChange(
                    .caRotationStarted, .ca, serial: new.serial,
                    reason: "generation \(generation), cross-certified by \(previous.serial)"))
        } catch {
            throw Self.cryptoFailure("cannot create the new CA", error)
        }
    }

    /// A rotation's new CA: its key and self-signed certificate, and the cross certificate.
    private struct CrossCertifiedCA {
        var key: PrivateKey
        var cert: X509Certificate
        var serial: String
        var cross: X509Certificate
        var crossSerial: String
    }

    /// A new CA key and certificate named `subject`, and the cross certificate: same subject and key, issued by
    /// the previous CA, valid as long as both CAs are.
    private func issueCrossCertifiedCA(
        subject: DistinguishedName, previousCert: X509Certificate, previousKey: PrivateKey
    ) throws -> CrossCertifiedCA {
        let settings = inventory.pki.ca
        let key = try PrivateKey.generate(settings.key.algorithm)
        let serial = try newSerial()
        var crossSerial = try newSerial()
        while crossSerial == serial { crossSerial = try newSerial() }
        let notAfter = now + TimeInterval(settings.days) * 86400
        let template = CertificateTemplate(
            serial: bytesFromHex(serial)!, subject: subject, notBefore: now - PKIManager.backdate,
            notAfter: notAfter,
            keyUsage: [.keyCertSign, .cRLSign], isCA: true, policies: [NodeAccessPolicy.anyPolicy])
        let cert = try CertificateIssuer.selfSigned(template, key: key)
        let crossTemplate = CertificateTemplate(
            serial: bytesFromHex(crossSerial)!, subject: subject, notBefore: now - PKIManager.backdate,
            notAfter: min(notAfter, previousCert.notAfter), keyUsage: [.keyCertSign, .cRLSign], isCA: true,
            policies: [NodeAccessPolicy.anyPolicy])
        let cross = try CertificateIssuer.issue(
            crossTemplate, subjectKey: key, issuer: previousCert, issuerKey: previousKey)
        return CrossCertifiedCA(key: key, cert: cert, serial: serial, cross: cross, crossSerial: crossSerial)
    }

    /// The rotation into the index (the new CA and cross certificate, every earlier certificate's issuer) and
    /// the new CA into the store, the previous one and its CRL kept beside it for the overlap.
    private func recordRotation(
        to new: CrossCertifiedCA, record: CARecord, keyPEM: String, subject: DistinguishedName, previous: CARecord,
        previousCert: X509Certificate, previousKey: PrivateKey
    ) {
        let settings = inventory.pki.ca
        let (serial, crossSerial, cert, cross) = (new.serial, new.crossSerial, new.cert, new.cross)
        // Every certificate so far names its issuer, so the CRLs can be split by CA.
        for (serial, var existing) in index.certificates where existing.issuer == nil && existing.kind != .ca {
            existing.issuer = previous.serial
            index.certificates[serial] = existing
        }
        index.certificates[serial] = CertificateRecord(
            serial: serial, kind: .ca, holder: "", subject: subject.description, subjectAltNames: [],
            keyType: settings.key,
            days: settings.days, notBefore: cert.notBefore, notAfter: cert.notAfter, status: .valid)
        index.certificates[crossSerial] = CertificateRecord(
            serial: crossSerial, kind: .cross, holder: "", subject: subject.description, subjectAltNames: [],
            keyType: settings.key, days: settings.days, notBefore: cross.notBefore, notAfter: cross.notAfter,
            status: .valid,
            issuer: previous.serial)
        index.rotation = CARotationRecord(
            startedAt: now, previous: previous, crossSerial: crossSerial, previousCRL: index.crl,
            crossSHA256: hexString(Digest.sha256(Array(cross.pem.utf8))))
        index.ca = record
        index.crl = nil
        store.setPreviousCA(certificate: previousCert, keyPEM: store.caKeyPEM, key: previousKey)
        store.previousCRLPEM = store.crlPEM
        store.crossCertificate = cross
        store.crlPEM = nil
        store.setCA(certificate: cert, key: new.key, keyPEM: keyPEM)
    }

    func finishCARotation() throws {
        guard let rotation = index.rotation else {
            throw PKIError(.caRotation, "no CA rotation is in progress: start one with 'vpnprov rotate-ca'")
        }
        index.retiredCAs = (index.retiredCAs ?? []) + [rotation.previous]
        for serial in [rotation.crossSerial, rotation.previous.serial] {
            if var record = index.certificates[serial] {
                record.status = .superseded
                index.certificates[serial] = record
            }
        }
        index.rotation = nil
        store.setPreviousCA(certificate: nil, keyPEM: nil, key: nil)
        store.previousCRLPEM = nil
        store.crossCertificate = nil
        changes.append(
            PKIChange(
                .caRotationFinished, .ca, serial: index.ca?.serial, reason: "retired CA \(rotation.previous.serial)"))
    }

    /// The generation of the CA that a rotation away from `ca` creates (index.json alone decides it).
    package static func nextGeneration(after ca: CARecord, stateDirectory: String) throws -> Int {
        let generation = ca.generation ?? 1
        guard generation < Int.max else {
            throw StateError(
                .stateInconsistent,
                "state directory \(stateDirectory) is inconsistent: index.json gives the CA generation \(generation), which has no next "
                    + "generation; nothing was changed")
        }
        return generation + 1
    }
}
