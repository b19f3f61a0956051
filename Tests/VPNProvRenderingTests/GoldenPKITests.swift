import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvTestFixtures

/// Goldens of the encodings themselves: the test PKI's certificates and CRL byte for byte, and the
/// structure of a PKCS#12 built now (its salts are random, so its bytes cannot be a golden).
/// `VPNPROV_RECORD=1` re-records them; `VPNPROV_RECORD_P12=1` re-makes the stored
/// `Fixtures/testpki/client.p12` that the renderer goldens embed (`scripts/regenerate-goldens` does both).
@Suite(.temporaries) struct GoldenPKITests {
    let inventory = ClientFixtures.inventory()
    var alice: User { inventory.users.first { $0.name == "alice" }! }

    @Test func certificatesAndCRLMatchTheirGoldens() throws {
        let fra = inventory.nodes.first { $0.name == "fra-1" }!
        let ams = inventory.nodes.first { $0.name == "ams-1" }!
        try Golden.check(
            [
                OutputFile(path: "ca.pem", text: GoldenPKI.ca.pem),
                OutputFile(path: "fra-1.pem", text: GoldenPKI.serverCertificatePEM(fra, in: inventory)),
                OutputFile(path: "ams-1.pem", text: GoldenPKI.serverCertificatePEM(ams, in: inventory)),
                OutputFile(path: "alice.pem", text: GoldenPKI.clientCertificatePEM(alice, in: inventory)),
                OutputFile(path: "crl.pem", text: GoldenPKI.crlPEM(revokedUsers: ["carol"])),
            ], against: "pki/certificates")
    }

    @Test(.needs(.openssl)) func theCertificatesAreDeterministicAndVerify() throws {
        let fra = inventory.nodes.first { $0.name == "fra-1" }!
        #expect(
            GoldenPKI.serverCertificatePEM(fra, in: inventory) == GoldenPKI.serverCertificatePEM(fra, in: inventory))
        let dir = try temporaryDirectory("pki")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        write(GoldenPKI.ca.pem, to: "\(dir)/ca.pem")
        write(GoldenPKI.serverCertificatePEM(fra, in: inventory), to: "\(dir)/fra-1.pem")
        write(GoldenPKI.crlPEM(revokedUsers: ["carol"]), to: "\(dir)/crl.pem")
        let verify = try runTool([
            "openssl", "verify", "-purpose", "sslserver", "-CAfile", "\(dir)/ca.pem", "\(dir)/fra-1.pem",
        ])
        #expect(verify.status == 0, "openssl verify: \(verify.output)")
        let crl = try runTool(["openssl", "crl", "-in", "\(dir)/crl.pem", "-CAfile", "\(dir)/ca.pem", "-noout"])
        #expect(crl.status == 0 && crl.output.contains("verify OK"), "openssl crl: \(crl.output)")
    }

    /// What `openssl pkcs12 -info` says of a p12's structure: algorithms, iterations, MAC, bags.
    func structure(of p12: [UInt8]) throws -> String {
        let dir = try temporaryDirectory("pki")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(p12).write(to: URL(fileURLWithPath: "\(dir)/t.p12"))
        let info = try runTool(
            ["openssl", "pkcs12", "-in", "\(dir)/t.p12", "-info", "-noout", "-passin", "env:VPNPROV_TEST_P12"],
            environment: ["VPNPROV_TEST_P12": GoldenPKI.p12Password])
        #expect(info.status == 0)
        return info.output
    }

    @Test(.needs(.openssl)) func pkcs12StructureMatchesItsGolden() throws {
        let now = try GoldenPKI.buildP12(
            certificatePEM: GoldenPKI.clientCertificatePEM(alice, in: inventory), friendlyName: "alice")
        // Re-made only when out of date, so re-recording twice changes nothing (its salts are random).
        let storedCertificate = try? PKCS12.parse(GoldenPKI.storedP12, password: GoldenPKI.p12Password).certificate.pem
        if ProcessInfo.processInfo.environment["VPNPROV_RECORD_P12"] == "1",
            try storedCertificate != GoldenPKI.clientCertificatePEM(alice, in: inventory)
                || structure(of: GoldenPKI.storedP12) != structure(of: now)
        {
            try Data(now).write(to: GoldenPKI.directory.appendingPathComponent("client.p12"))
        }
        try Golden.check(
            [OutputFile(path: "client-p12-structure.txt", text: try structure(of: now))], against: "pki/pkcs12")
        // The stored p12 the renderer goldens embed has the same structure and holds today's certificate.
        #expect(try structure(of: GoldenPKI.storedP12) == structure(of: now))
        let stored = try PKCS12.parse(GoldenPKI.storedP12, password: GoldenPKI.p12Password)
        #expect(
            stored.certificate.pem == GoldenPKI.clientCertificatePEM(alice, in: inventory),
            "re-record: scripts/regenerate-goldens")
    }

    @Test func storedEmptyPasswordP12HoldsTodaysCertificate() throws {
        let certificate = GoldenPKI.clientCertificatePEM(alice, in: inventory)
        let storedCertificate = try? PKCS12.parse(GoldenPKI.storedOpenP12, password: "").certificate.pem
        if ProcessInfo.processInfo.environment["VPNPROV_RECORD_P12"] == "1", storedCertificate != certificate {
            let now = try GoldenPKI.buildOpenP12(certificatePEM: certificate, friendlyName: "alice")
            try Data(now).write(to: GoldenPKI.directory.appendingPathComponent("client-open.p12"))
        }
        let stored = try PKCS12.parse(GoldenPKI.storedOpenP12, password: "")
        #expect(stored.certificate.pem == certificate, "re-record: VPNPROV_RECORD_P12=1")
    }
}
