import Foundation
import Testing
import VPNProvCrypto
import VPNProvTestHarness

/// Windows' built-in client, emulated from the generated PowerShell script, refuses what Windows refuses and is
/// refused where Windows is: a server certificate without the dialled address as dNSName (error 13801), and a
/// connection whose proposals end in MODP1024 (Windows' own default, which the node does not offer: 13868).
/// The connecting cases (EAP and machine certificate, IPv4 and DNS-name nodes) are in GeneratedTunnelTests.
@Suite(.serialized, .strongSwan)
struct WindowsClientTests {
    /// ann's Windows connection to lab-v4 (192.0.2.1) with `service`, from her generated script.
    private func annCase(_ lab: GeneratedDeployment, _ service: String) throws -> ClientCase {
        guard
            let c = try lab.clientCases().first(where: {
                $0.kind == .windows && $0.user == "ann" && $0.node == "lab-v4" && $0.service == service
            })
        else { throw HarnessError("no windows case ann lab-v4 \(service)") }
        return c
    }

    @Test(
        "A server certificate without the dialled IP address as dNSName: strongSwan clients accept it, Windows refuses it (13801)"
    )
    func serverCertificateWithoutDialledDNSName() throws {
        try StrongSwanEnvironment.require()
        let lab = try Inventories.generateLab(label: "win-san")
        let node = try lab.node("lab-v4")
        // Re-issue the node's certificate from the same CA and key with the IP address only as iPAddress.
        let certFile = node.directory.appendingPathComponent("swanctl/x509/lab-v4.pem")
        let keyFile = node.directory.appendingPathComponent("swanctl/private/lab-v4.key")
        let dir = try Scratch.makeDirectory("win-san-cert")
        let ext = dir.appendingPathComponent("ext.cnf")
        try """
        subjectAltName = IP:192.0.2.1
        extendedKeyUsage = serverAuth, 1.3.6.1.5.5.8.2.2
        keyUsage = digitalSignature

        """.write(to: ext, atomically: true, encoding: .utf8)
        let csr = dir.appendingPathComponent("req.pem")
        let req = try Subprocess.run(
            "/usr/bin/openssl", ["req", "-new", "-key", keyFile.path, "-subj", "/O=lab/CN=lab-v4", "-out", csr.path])
        #expect(req.succeeded, "\(req)")
        let sign = try Subprocess.run(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", csr.path, "-CA", lab.state.appendingPathComponent("ca/ca.pem").path,
                "-CAkey", lab.state.appendingPathComponent("ca/ca.key").path, "-set_serial", "4242", "-days", "30",
                "-sha256", "-extfile", ext.path, "-out", certFile.path,
            ])
        #expect(sign.succeeded, "\(sign)")
        let cert = try X509Certificate(pem: try String(contentsOf: certFile, encoding: .utf8))
        #expect(
            !cert.subjectAlternativeNames.contains {
                if case .dnsName = $0 { return true }
                return false
            })

        let nut = try NodeUnderTest.start(lab, node: "lab-v4")
        defer { nut.teardown() }
        // A strongSwan client (the generated Linux profile) checks the IP identity against the iPAddress: accepted.
        let linux = try #require(
            try lab.clientCases().first {
                $0.kind == .linux && $0.user == "ann" && $0.node == "lab-v4" && $0.service == "ikev2-eap"
            })
        _ = try nut.prove(try linux.make(), label: linux.label, ikeVersion: 2)
        // Windows: the handshake reaches the server certificate, which Windows refuses.
        for service in ["ikev2-eap", "ikev2-cert"] {
            let c = try annCase(lab, service)
            let before = try WindowsClientChecks.prepare(nut)
            let loadable = try c.make()
            let (ike, child) = try nut.load(loadable, label: c.label)
            defer { _ = try? nut.client.terminate(ike: ike) }
            _ = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(15))
            let reason = try WindowsClientChecks.refusal(
                nut, dialled: "192.0.2.1", before: before, own: WindowsClientChecks.own(loadable))
            #expect(
                reason?.contains("13801") == true && reason?.contains("no dNSName '192.0.2.1'") == true,
                "\(c.label): Windows must refuse the certificate, got \(reason ?? "acceptance")")
        }
    }

    @Test(
        "Windows' MODP1024 offer is refused by the node: without the script's IPsec settings, and with DHGroup Group2")
    func modp1024IsRefused() throws {
        try StrongSwanEnvironment.require()
        let lab = try Inventories.generateLab(label: "win-modp")
        let scriptFile = lab.out.appendingPathComponent("clients/ann/ann-windows.ps1")
        let script = try String(contentsOf: scriptFile, encoding: .utf8)
        let password = Inventories.annPassword
        let nut = try NodeUnderTest.start(lab, node: "lab-v4")
        defer { nut.teardown() }

        // 1. The script without its Set-VpnConnectionIPsecConfiguration calls: Windows' default offer.
        let withoutIPsec = script.replacingOccurrences(of: "Set-VpnConnectionIPsecConfiguration @ipsec\n", with: "")
        #expect(withoutIPsec != script)
        // 2. The script with only MODP1024 (Group2) as its DH group.
        let group2 = try Self.replacingDHGroup(in: script, with: "'Group2'")
        for (label, text) in [("default IPsec policy", withoutIPsec), ("DHGroup Group2", group2)] {
            let result = try WindowsScriptTranslator.interpret(script: text)
            let connection = try #require(result.connections.first { $0.name == "lab lab-v4 ikev2-eap" })
            let setup = try WindowsScriptTranslator.setup(connection, of: result, password: password)
            #expect(setup.swanctlConf.contains("modp1024"), "\(label): \(setup.swanctlConf)")
            let log = try nut.refuse(.translated(setup), label: "windows ann \(label)")
            #expect(
                log.contains("received proposals unacceptable") || log.contains("NO_PROPOSAL_CHOSEN"),
                "\(label): the server log does not say why:\n\(log)")
        }
        // And the script as generated connects (control).
        let c = try annCase(lab, "ikev2-eap")
        _ = try nut.prove(try c.make(), label: c.label, ikeVersion: 2)
    }

    /// Replaces every `DHGroup = '…'` value of the script's IPsec hashtables.
    static func replacingDHGroup(in script: String, with value: String) throws -> String {
        var lines = script.components(separatedBy: "\n")
        var replaced = 0
        for i in lines.indices where lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("DHGroup ") {
            let prefix = lines[i].prefix { $0 != "=" }
            lines[i] = prefix + "= " + value
            replaced += 1
        }
        guard replaced > 0 else { throw HarnessError("no DHGroup in the script") }
        return lines.joined(separator: "\n")
    }
}
