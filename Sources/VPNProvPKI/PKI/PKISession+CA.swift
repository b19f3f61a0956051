import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// The CA: created once, its key optionally encrypted with a passphrase, checked on every run.
extension PKISession {
    func ensureCA() throws {
        let settings = inventory.pki.ca
        if let record = index.ca {
            if record.keyType != settings.key || record.commonName != settings.name {
                warnings.append(
                    "pki.ca (\(settings.name), \(settings.key.rawValue)) differs from the CA in the state (\(record.commonName), \(record.keyType.rawValue)); the existing CA is kept"
                )
            }
            return
        }
        if let ca = store.caCertificate {
            // CA files placed in (or left in) the state without an index: adopt them.
            try adoptCA(ca)
            return
        }
        try createCA()
    }

    /// Records a CA certificate found in the state without an index, once its key is shown to match.
    private func adoptCA(_ ca: X509Certificate) throws {
        let key = try store.caKey(passphrase: passphrase)
        guard key.matches(ca) else {
            throw StateError(
                .stateInconsistent,
                "state directory \(store.paths.root) is inconsistent: the CA key does not match the CA certificate")
        }
        guard let keyType = ca.publicKeyAlgorithm.flatMap(KeyType.init(algorithm:)) else {
            throw StateError(
                .stateInconsistent,
                "the CA in \(store.paths.caCertificate) uses a key type vpnprov does not support")
        }
        index.ca = CARecord(
            serial: ca.serialHex, commonName: ca.subject.commonName ?? "", keyType: keyType,
            fingerprint: hexString(ca.fingerprintSHA256), notAfter: ca.notAfter,
            certificateSHA256: hexString(Digest.sha256(try store.directory.read(store.paths.caCertificate))),
            keySHA256: store.caKeyPEM.map { hexString(Digest.sha256(Array($0.utf8))) })
        changes.append(PKIChange(.caAdopted, .ca, serial: ca.serialHex))
    }

    /// A new self-signed CA, staged key first; on a key left without certificate, that key is certified.
    private func createCA() throws {
        let settings = inventory.pki.ca
        // A key without certificate is the CA key of a first run killed mid-commit: certify that key.
        let orphanKey = store.caKeyPEM == nil ? nil : try store.caKey(passphrase: passphrase)
        do {
            let key = try orphanKey ?? PrivateKey.generate(settings.key.algorithm)
            let serial = try newSerial()
            let template = CertificateTemplate(
                serial: bytesFromHex(serial)!,
                subject: DistinguishedName([NameAttribute("O", inventory.name), NameAttribute("CN", settings.name)]),
                notBefore: now - PKIManager.backdate, notAfter: now + TimeInterval(settings.days) * 86400,
                keyUsage: [.keyCertSign, .cRLSign], isCA: true, policies: [NodeAccessPolicy.anyPolicy])
            let cert = try CertificateIssuer.selfSigned(template, key: key)
            // An adopted key's private half may be damaged (its file carries its public half too).
            try store.requireSigns(
                key, for: cert, keyPath: store.paths.caKey, certificatePath: store.paths.caCertificate)
            let keyPEM =
                try store.caKeyPEM ?? passphrase.map { try key.encryptedPKCS8PEM(passphrase: $0) } ?? key.pkcs8PEM()
            store.setCA(certificate: cert, key: key, keyPEM: keyPEM)
            if orphanKey == nil { store.stage(store.paths.caKey, Array(keyPEM.utf8), overwrite: false) }
            let keyType =
                orphanKey == nil
                ? settings.key : cert.publicKeyAlgorithm.flatMap(KeyType.init(algorithm:)) ?? settings.key
            store.stage(store.paths.caCertificate, Array(cert.pem.utf8), overwrite: false)
            index.ca = CARecord(
                serial: serial, commonName: settings.name, keyType: keyType,
                fingerprint: hexString(cert.fingerprintSHA256),
                notAfter: cert.notAfter, anyPolicy: true,
                certificateSHA256: hexString(Digest.sha256(Array(cert.pem.utf8))),
                keySHA256: hexString(Digest.sha256(Array(keyPEM.utf8))))
            index.certificates[serial] = CertificateRecord(
                serial: serial, kind: .ca, holder: "", subject: template.subject.description, subjectAltNames: [],
                keyType: keyType, days: settings.days, notBefore: cert.notBefore, notAfter: cert.notAfter,
                status: .valid)
            changes.append(PKIChange(.caCreated, .ca, serial: serial))
        } catch {
            throw Self.cryptoFailure("cannot create the CA", error)
        }
    }
}
