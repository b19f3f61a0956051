import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvTestFixtures

/// ACME nodes (docs/acme.md): the `acme:` section and `certificate:` key, refused at their lines when wrong, and
/// what an ACME node and its clients get from `generate`. The rollout that obtains the certificate, with Pebble, is
/// in EndToEndTests/AcmeRolloutTests.
@Suite(.temporaries) struct ACMETests {
    /// An inventory whose `acme:` section is `acme` (its first line is line 3) and whose node n1 (line 10 on)
    /// has `certificate: acme` and the identity `id`.
    static func inventory(acme: String = "acme:\n  email: ops@example.com\n", id: String = "n1.vpn.example.com")
        -> String
    {
        """
        vpnprov: 1
        name: demo
        \(acme)defaults:
          services: [ikev2-eap, ikev2-cert, ipsec-xauth-hybrid]
          pool: 10.9.0.0/24
        nodes:
          n1:
            address: n1.vpn.example.com
            id: \(id)
            certificate: acme
        users:
          ann:
            password: gen
            devices: [apple, android, linux, windows, networkmanager]
          bob:
            cert: true
            devices: [apple, android, linux, windows]

        """
    }

    static func findings(_ text: String) -> [Diagnostic] {
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        guard let inventory = result.inventory else { return result.diagnostics }
        return result.diagnostics + Validator.validate(inventory)
    }

    /// Each bad value is an error at its own line, with its rule code.
    @Test(arguments: [
        ("directory: http://acme.example/dir", "invalid-value", 5),
        ("directory: \"https://acme.example/dir x\"", "invalid-value", 5),
        ("email: \"ops at example.com\"", "invalid-value", 5),
        ("challenge: dns-01", "invalid-value", 5),
        ("key: rsa1024", "invalid-value", 5),
        ("renew_days: 0", "invalid-value", 5),
        ("renew_days: 90", "invalid-value", 5),
        ("colour: blue", "unknown-key", 5),
        ("roots: [etc/ssl/certs/ISRG_Root_X1.pem]", "invalid-value", 5),
        ("roots: [\"/etc/ssl/certs/a b.pem\"]", "invalid-value", 5),
    ])
    func aBadACMEValueIsAnErrorAtItsLine(_ line: String, _ code: String, _ lineNumber: Int) {
        // The section is lines 3 to 5: the value under test is on line 5 (an e-mail under test replaces the good one).
        let email = line.hasPrefix("email:") ? "key: rsa2048" : "email: ops@example.com"
        let found = Self.findings(Self.inventory(acme: "acme:\n  \(email)\n  \(line)\n"))
        let errors = found.filter { $0.severity == .error }
        #expect(errors.count == 1, "\(line): \(found.map(\.message))")
        #expect(errors.first?.code.rawValue == code && errors.first?.location?.line == lineNumber, "\(errors)")
    }

    @Test func anACMENodeNeedsADNSNameTheSectionAndAnEmail() {
        let ip = Self.findings(Self.inventory(id: "192.0.2.7")).filter { $0.severity == .error }
        #expect(ip.map(\.code.rawValue) == ["acme-identity"] && ip.first?.location?.line == 11, "\(ip)")
        #expect(ip.first?.message.contains("id: vpn1.example.com") == true)
        let none = Self.findings(Self.inventory(acme: "")).filter { $0.severity == .error }
        #expect(none.map(\.code.rawValue) == ["acme-settings-missing"] && none.first?.location?.line == 10, "\(none)")
        let noEmail = Self.findings(Self.inventory(acme: "acme:\n  key: ec256\n")).filter { $0.severity == .error }
        #expect(noEmail.map(\.code.rawValue) == ["acme-settings-missing"] && noEmail.first?.location?.line == 4)
        let bad = Self.findings(
            Self.inventory().replacingOccurrences(of: "certificate: acme", with: "certificate: lets"))
        #expect(bad.filter { $0.severity == .error }.map(\.code.rawValue) == ["invalid-value"])
        // Written but unused: a warning at the section.
        let unused = Self.findings(
            Self.inventory().replacingOccurrences(of: "certificate: acme", with: "certificate: ca"))
        #expect(unused.map(\.code.rawValue) == ["acme-unused"] || unused.contains { $0.code.rawValue == "acme-unused" })
        #expect(Self.findings(Self.inventory()).filter { $0.severity == .error }.isEmpty)
    }

    /// `generate`: the node ships no certificate or key of vpnprov's and names the one its rollout obtains; no
    /// client of the node carries the deployment CA unless it also needs it for another node.
    @Test func generateGivesAnACMENodeAndItsClientsNoDeploymentCertificate() throws {
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("acme-generate"))
        let bundle = dir.appendingPathComponent("pebble.pem")
        try GoldenPKI.ca.pem.write(to: bundle, atomically: true, encoding: .utf8)
        let text = Self.inventory(acme: "acme:\n  email: ops@example.com\n  ca_bundle: pebble.pem\n")
        let inventoryURL = dir.appendingPathComponent("inventory.yaml")
        try text.write(to: inventoryURL, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out")
        let run = vpnprov([
            "generate", inventoryURL.path, "--out", out.path, "--state", dir.appendingPathComponent("state").path,
        ])
        #expect(run.code == 0, "\(run.err)")
        let server = out.appendingPathComponent("servers/n1")
        let fm = FileManager.default
        #expect(!fm.fileExists(atPath: server.appendingPathComponent("swanctl/x509/n1.pem").path))
        #expect(!fm.fileExists(atPath: server.appendingPathComponent("swanctl/private/n1.key").path))
        #expect(fm.fileExists(atPath: server.appendingPathComponent("swanctl/x509ca/ca.pem").path))
        let shipped = try String(contentsOf: server.appendingPathComponent("acme/ca-bundle.pem"), encoding: .utf8)
        #expect(shipped.hasPrefix("-----BEGIN CERTIFICATE-----") && shipped.contains("-----END CERTIFICATE-----"))
        let conf = try String(contentsOf: server.appendingPathComponent("swanctl/swanctl.conf"), encoding: .utf8)
        #expect(conf.components(separatedBy: "certs = \"vpnprov-acme.pem\"").count - 1 == 3, "\(conf)")
        let clients = out.appendingPathComponent("clients")
        let apple = try String(contentsOf: clients.appendingPathComponent("ann/ann.mobileconfig"), encoding: .utf8)
        #expect(!apple.contains("com.apple.security.root") && !apple.contains("ServerCertificateIssuerCommonName"))
        // Apple's schema requires the issuer's name with CertificateType and extended authentication: neither.
        #expect(!apple.contains("<key>CertificateType</key>"), "\(apple)")
        let sswan =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: clients.appendingPathComponent("ann/n1-ikev2-eap.sswan"))) as? [String: Any]
        #expect((sswan?["remote"] as? [String: Any])?["cert"] == nil)
        let keyfile = try String(
            contentsOf: clients.appendingPathComponent("ann/networkmanager/demo-n1-ikev2-eap.nmconnection"),
            encoding: .utf8)
        #expect(!keyfile.contains("certificate="))
        #expect(!fm.fileExists(atPath: clients.appendingPathComponent("ann/linux/swanctl/x509ca/ca.pem").path))
        // charon reads no system trust store: the Linux client names the ACME CA's root where Debian keeps it.
        let linux = try String(
            contentsOf: clients.appendingPathComponent("ann/linux/swanctl/swanctl.conf"), encoding: .utf8)
        #expect(linux.contains("cacerts = \"/etc/ssl/certs/ISRG_Root_X1.pem\"") && !linux.contains("ca.pem"))
        let windows = try String(contentsOf: clients.appendingPathComponent("ann/ann-windows.ps1"), encoding: .utf8)
        #expect(!windows.contains("LocalMachine\\Root"))
        // bob logs in with a certificate of the deployment CA: Windows still imports the CA for it.
        let bobWindows = try String(contentsOf: clients.appendingPathComponent("bob/bob-windows.ps1"), encoding: .utf8)
        #expect(bobWindows.contains("LocalMachine\\Root"))
        let hostVars = try String(contentsOf: out.appendingPathComponent("deploy/host_vars/n1.yml"), encoding: .utf8)
        #expect(hostVars.contains("  domain: \"n1.vpn.example.com\"\n") && hostVars.contains("  ca_bundle: true\n"))
    }

    /// Windows compares the address it dials with the certificate's dNSName, and an ACME certificate names only
    /// the node's identity: a node dialled by its IP address fails `generate` for its Windows users.
    @Test func windowsUsersOfAnACMENodeMustDialItsName() throws {
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("acme-windows"))
        let inventoryURL = dir.appendingPathComponent("inventory.yaml")
        try Self.inventory().replacingOccurrences(of: "address: n1.vpn.example.com", with: "address: 192.0.2.7")
            .write(to: inventoryURL, atomically: true, encoding: .utf8)
        let run = vpnprov([
            "generate", inventoryURL.path, "--out", dir.appendingPathComponent("out").path, "--state",
            dir.appendingPathComponent("state").path,
        ])
        #expect(run.code != 0)
        #expect(run.err.contains("[windows-certificate]") && run.err.contains("192.0.2.7"), "\(run.err)")
    }

    /// `status` shows an ACME node's certificate as the rollout reported it into `<out>/rollout/acme/`, the expiry
    /// gate counts it (and not the unused certificate of the state), and `check` does not call the report drift.
    @Test func statusAndTheExpiryGateReadWhatTheRolloutReported() throws {
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("acme-status"))
        let inventoryURL = dir.appendingPathComponent("inventory.yaml")
        try Self.inventory().write(to: inventoryURL, atomically: true, encoding: .utf8)
        let (out, state) = (dir.appendingPathComponent("out").path, dir.appendingPathComponent("state").path)
        #expect(vpnprov(["generate", inventoryURL.path, "--out", out, "--state", state]).code == 0)
        let before = vpnprov(["status", inventoryURL.path, "--out", out, "--state", state])
        #expect(before.out.contains("ACME certificate of n1 (n1.vpn.example.com): not reported yet"), "\(before.out)")
        // Within 10 years the CA and the state's certificates expire too; the window shows what is counted.
        let quiet = vpnprov(["status", inventoryURL.path, "--out", out, "--state", state, "--expiring", "30"])
        #expect(quiet.code == 0, "\(quiet.out)")

        // What the role fetches: the node's certificate (here one of the test PKI, 825 days from 2026-01-01).
        let inventory = try #require(
            InventoryLoader.decode(bytes: Array(Self.inventory().utf8), file: "inventory.yaml").inventory)
        let pem = GoldenPKI.serverCertificatePEM(inventory.nodes[0], in: inventory)
        let reported = URL(fileURLWithPath: out).appendingPathComponent("rollout/acme")
        try FileManager.default.createDirectory(at: reported, withIntermediateDirectories: true)
        try pem.write(to: reported.appendingPathComponent("n1.pem"), atomically: true, encoding: .utf8)
        let certificate = try X509Certificate(pem: pem)
        let now = certificate.notAfter.addingTimeInterval(-10 * 86400)
        let status = vpnprov(["status", inventoryURL.path, "--out", out, "--state", state], now: now)
        #expect(
            status.out.contains("ACME certificate of n1 (n1.vpn.example.com): serial \(certificate.serialHex)"),
            "\(status.out)")
        let gate = vpnprov(
            ["status", inventoryURL.path, "--out", out, "--state", state, "--expiring", "20"], now: now)
        #expect(gate.code == 1, "\(gate.out)")
        #expect(gate.out.contains("expiring: node n1 ACME certificate \(certificate.serialHex)"), "\(gate.out)")
        #expect(!gate.out.contains("expiring: node n1 certificate"), "the state's unused certificate: \(gate.out)")
        let json = vpnprov(["status", inventoryURL.path, "--out", out, "--state", state, "--format", "json"], now: now)
        #expect(json.out.contains("\"acme\"") && json.out.contains("\"reported\" : true"), "\(json.out)")
        // The report is the rollout's, not drift.
        let check = vpnprov(["check", inventoryURL.path, "--out", out, "--state", state])
        #expect(check.code == 0 && !check.out.contains("rollout/acme"), "\(check.out)\n\(check.err)")
    }

    @Test func anUnreadableOrEmptyCABundleIsAnErrorAtItsLine() throws {
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("acme-bundle"))
        let inventoryURL = dir.appendingPathComponent("inventory.yaml")
        for (content, expected) in [(nil, "cannot read"), ("not a certificate\n", "holds no PEM certificate")] {
            let bundle = dir.appendingPathComponent("bundle.pem")
            try? FileManager.default.removeItem(at: bundle)
            if let content { try content.write(to: bundle, atomically: true, encoding: .utf8) }
            let text = Self.inventory(acme: "acme:\n  email: ops@example.com\n  ca_bundle: bundle.pem\n")
            try text.write(to: inventoryURL, atomically: true, encoding: .utf8)
            let run = vpnprov([
                "generate", inventoryURL.path, "--out", dir.appendingPathComponent("out").path, "--state",
                dir.appendingPathComponent("state").path,
            ])
            #expect(run.code != 0)
            #expect(run.err.contains("inventory.yaml:5:") && run.err.contains(expected), "\(run.err)")
        }
    }
}
