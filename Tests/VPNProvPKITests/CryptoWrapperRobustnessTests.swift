import Foundation
import Testing
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures
import VPNProvTestSupport

/// Certificates read back from the state (or handed to the fuzzer) may be damaged or crafted: the
/// wrapper renders what it finds, never traps.
@Suite(.temporaries) struct CryptoWrapperRobustnessTests {
    /// A certificate whose subjectAltName holds iPAddress values of 3 and 5 bytes (the issuer writes
    /// whatever bytes it is given, like a crafted certificate would carry).
    static func certificateWithOddIPAddresses() throws -> X509Certificate {
        let template = CertificateTemplate(
            serial: GoldenPKI.serial("odd ip"),
            subject: DistinguishedName([NameAttribute("O", "acme"), NameAttribute("CN", "odd")]),
            notBefore: GoldenPKI.epoch, notAfter: GoldenPKI.epoch + 86400,
            subjectAlternativeNames: [
                .ipAddress([10, 0, 0]), .ipAddress([1, 2, 3, 4, 5]), .ipAddress([192, 0, 2, 1]),
            ],
            keyUsage: [.digitalSignature])
        return try CertificateIssuer.issue(
            template, subjectKey: GoldenPKI.key("server"), issuer: GoldenPKI.ca, issuerKey: GoldenPKI.key("ca"))
    }

    /// `GeneralName.description` read two bytes at a time up to the count: an odd length trapped
    /// (index out of range) on the last byte.
    @Test func oddLengthIPAddressIsShownAsHexNotATrap() throws {
        let parsed = try X509Certificate(pem: Self.certificateWithOddIPAddresses().pem)
        #expect(parsed.subjectAlternativeNames.map(\.description) == ["IP:#0a0000", "IP:#0102030405", "IP:192.0.2.1"])
        // The consistency check's view of it, and the fuzz target's reader of state PEM files.
        let facts = try #require(Pipeline.inspectCertificate(parsed.pem))
        #expect(facts.ipAddresses == [[10, 0, 0], [1, 2, 3, 4, 5], [192, 0, 2, 1]])
        #expect(StateInputs.readPEM(parsed.pem).certificates == 1)
    }

    /// `IPAddressText.format` handed inet_ntop fewer bytes than the family it named (it reads 4 or 16).
    @Test func formatNeverReadsPastAShortAddress() {
        #expect(IPAddressText.format([1, 2]) == "#0102")
        #expect(IPAddressText.format([]) == "#")
        #expect(IPAddressText.format([1, 2, 3, 4, 5]) == "#0102030405")
        #expect(IPAddressText.format([192, 0, 2, 1]) == "192.0.2.1")
        #expect(IPAddressText.format(IPAddressText.parse("2001:db8::1")!) == "2001:db8::1")
    }

    /// `pem` is armoured in Swift now (it was OpenSSL's PEM writer behind a `try!`): byte for byte what
    /// `openssl` writes, for a certificate and a CRL.
    @Test(.needs(.openssl)) func pemIsWhatOpenSSLWrites() throws {
        let dir = try temporaryDirectory("pem")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cert = try Self.certificateWithOddIPAddresses()
        let crl = try CertificateRevocationList.build(
            issuer: GoldenPKI.ca, issuerKey: GoldenPKI.key("ca"), number: 3, thisUpdate: GoldenPKI.epoch,
            nextUpdate: GoldenPKI.epoch + 86400,
            revoked: [RevokedCertificate(serial: GoldenPKI.serial("a"), revocationDate: GoldenPKI.epoch)])
        write(cert.pem, to: "\(dir)/cert.pem")
        write(crl.pem, to: "\(dir)/crl.pem")
        let x509 = try runTool(["openssl", "x509", "-in", "\(dir)/cert.pem"])
        #expect(x509.status == 0 && x509.output == cert.pem)
        let crlOut = try runTool(["openssl", "crl", "-in", "\(dir)/crl.pem"])
        #expect(crlOut.status == 0 && crlOut.output == crl.pem)
        #expect(try CertificateRevocationList(pem: crl.pem).der == crl.der)
        #expect(cert.der.count > 0 && crl.der.count > 0)
    }
}
