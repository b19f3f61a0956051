import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning

/// The golden PKI: a deterministic one, so golden files hold real certificate, CRL and PKCS#12 bytes.
///
/// Certificates and the CRL are issued at test time by the product's own code (the certificate
/// profiles of `CertificateProfile`, `CertificateIssuer`, `CertificateRevocationList`) from
/// fixed RSA keys (`Fixtures/testpki/*.key`), fixed serials and fixed dates. RSA PKCS#1 v1.5 signatures
/// are deterministic, so the same code gives the same bytes: a change in how a certificate or a CRL is
/// encoded changes every golden that embeds one. ECDSA signatures are randomized, which is why the test
/// PKI uses RSA.
///
/// A PKCS#12 has random salts, so goldens embed the stored `Fixtures/testpki/client.p12` (built by the
/// product's `PKCS12.build`, re-made by `scripts/regenerate-goldens`), and `GoldenPKITests` checks the
/// structure of a p12 built now (algorithms, iterations, MAC, bags) against a golden of its own.
package enum GoldenPKI {
    package static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/testpki")
    }

    /// 2026-01-01T00:00:00Z: every certificate's notBefore and the CRL's thisUpdate.
    package static let epoch = Date(timeIntervalSince1970: 1_767_225_600)
    package static let caName = "acme VPN Root CA"
    package static let p12Password = "p12-secret-alice"

    package static func keyPEM(_ role: String) -> String {
        // Test fixtures of a few KiB, read whole.
        try! String(contentsOf: directory.appendingPathComponent("\(role).key"), encoding: .utf8)
    }

    package static func key(_ role: String) -> PrivateKey { try! PrivateKey(pem: keyPEM(role)) }

    /// A serial derived from what it certifies: stable across runs, distinct per holder.
    package static func serial(_ label: String) -> [UInt8] {
        var bytes = Array(Digest.sha256(Array(label.utf8)).prefix(16))
        bytes[0] = bytes[0] & 0x7F | 0x01
        return bytes
    }

    package static let ca: X509Certificate = {
        let template = CertificateTemplate(
            serial: serial("ca"),
            subject: DistinguishedName([NameAttribute("O", "acme"), NameAttribute("CN", caName)]),
            notBefore: epoch, notAfter: epoch + 3650 * 86400, keyUsage: [.keyCertSign, .cRLSign], isCA: true)
        return try! CertificateIssuer.selfSigned(template, key: key("ca"))
    }()

    package static func issue(_ profile: CertificateProfile, label: String, role: String) -> X509Certificate {
        var profile = profile
        profile.keyType = .rsa2048
        let template = CertificateTemplate(
            serial: serial(label), subject: profile.subject, notBefore: epoch,
            notAfter: epoch + TimeInterval(profile.days) * 86400,
            subjectAlternativeNames: profile.subjectAltNames, extendedKeyUsages: profile.extendedKeyUsages,
            keyUsage: profile.keyUsage)
        return try! CertificateIssuer.issue(template, subjectKey: key(role), issuer: ca, issuerKey: key("ca"))
    }

    package static func serverCertificatePEM(_ node: Node, in inventory: Inventory) -> String {
        issue(try! CertificateProfile.server(node, inventory: inventory), label: "node \(node.name)", role: "server")
            .pem
    }

    package static func clientCertificatePEM(_ user: User, in inventory: Inventory) -> String {
        issue(try! CertificateProfile.client(user, inventory: inventory), label: "user \(user.name)", role: "client")
            .pem
    }

    /// The CRL listing the certificates of `revokedUsers`, revoked at the epoch.
    package static func crlPEM(revokedUsers: [String]) -> String {
        let revoked = revokedUsers.sorted().map {
            RevokedCertificate(serial: serial("user \($0)"), revocationDate: epoch)
        }
        return try! CertificateRevocationList.build(
            issuer: ca, issuerKey: key("ca"), number: 1, thisUpdate: epoch, nextUpdate: epoch + 365 * 86400,
            revoked: revoked
        ).pem
    }

    /// The stored p12 (the client key and a certificate of this PKI, password `p12Password`).
    package static var storedP12: [UInt8] {
        (try? [UInt8](Data(contentsOf: directory.appendingPathComponent("client.p12")))) ?? []
    }

    /// The stored empty-password p12 for `.sswan` goldens (same key and certificate as `storedP12`).
    package static var storedOpenP12: [UInt8] {
        (try? [UInt8](Data(contentsOf: directory.appendingPathComponent("client-open.p12")))) ?? []
    }

    /// The empty-password p12 of the client key and `certificatePEM`, built now (random salts).
    package static func buildOpenP12(certificatePEM: String, friendlyName: String) throws -> [UInt8] {
        try PKCS12.buildWithEmptyPassword(
            key: key("client"), certificate: try X509Certificate(pem: certificatePEM), caCertificates: [ca],
            friendlyName: friendlyName)
    }

    /// A p12 of the client key and `certificatePEM` built now by the product's code (random salts).
    package static func buildP12(certificatePEM: String, friendlyName: String) throws -> [UInt8] {
        try PKCS12.build(
            key: key("client"), certificate: try X509Certificate(pem: certificatePEM), caCertificates: [ca],
            friendlyName: friendlyName,
            password: p12Password)
    }
}
