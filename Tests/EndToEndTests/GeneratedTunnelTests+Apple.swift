import Foundation
import Testing
import VPNProvCrypto
import VPNProvTestHarness

/// What only Apple's client does: PFS on the CHILD_SA rekey, the server's revocation checked, the CRL fetched
/// from the distribution point.
extension GeneratedTunnelTests {
    @Test(
        "Apple PFS: a CHILD_SA rekey with the child DH group completes on the generated node, not without its ESP group"
    )
    func applePFSRekeyCompletes() throws {
        try StrongSwanEnvironment.require()
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "pfs")
        let apple = try #require(
            try example.clientCases().first {
                $0.kind == .apple && $0.node == "fra-1" && $0.service == "ikev2-eap"
            })
        let payload = try #require(apple.applePayload?["IKEv2"] as? [String: Any])
        #expect(payload["EnablePFS"] as? Int == 1)
        #expect((payload["ChildSecurityAssociationParameters"] as? [String: Any])?["DiffieHellmanGroup"] as? Int == 19)

        /// Connects, rekeys the CHILD_SA from the client and returns (rekeyed with ECP_256, server log of the rekey).
        func rekey(_ nut: NodeUnderTest) throws -> (Bool, String) {
            guard case .translated(let setup) = try apple.make() else { throw HarnessError("not translated") }
            #expect(setup.swanctlConf.contains("esp_proposals = aes256gcm16-ecp256"))
            _ = try nut.prove(.translated(setup), label: apple.label, ikeVersion: 2)
            // prove() terminated the SA: connect again and keep it up for the rekey.
            let (ike, child) = try nut.load(.translated(setup), label: apple.label)
            defer { _ = try? nut.client.terminate(ike: ike) }
            let up = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(15))
            guard up.succeeded else { throw HarnessError("initiate failed: \(up)") }
            func childPart(_ raw: String) -> String { raw.components(separatedBy: "child-sas").dropFirst().joined() }
            // The first CHILD_SA comes with IKE_AUTH, which carries no key exchange: no group yet.
            let before = try nut.client.swanctl(["--list-sas", "--raw"]).stdout
            #expect(!childPart(before).contains("dh-group="), "\(before)")
            let mark = nut.server.log.utf8.count
            let rekeyed = try nut.client.swanctl(["--rekey", "--child", child])
            #expect(rekeyed.succeeded, "\(rekeyed)")
            // The rekey is asynchronous: poll (bounded) until the client lists a CHILD_SA negotiated with a DH group
            // or the server has answered.
            let deadline = ContinuousClock.now + .seconds(10)
            var withGroup = false
            var serverSaid = ""
            while ContinuousClock.now < deadline {
                let sas = try nut.client.swanctl(["--list-sas", "--raw"]).stdout
                withGroup = childPart(sas).contains("dh-group=ECP_256") && childPart(sas).contains("state=INSTALLED")
                serverSaid = NodeUnderTest.since(mark, nut.server.log)
                if withGroup || serverSaid.contains("no acceptable proposal found") { break }
                Thread.sleep(forTimeInterval: 0.1)  // polling interval of the bounded wait above
            }
            return (withGroup, serverSaid)
        }

        do {
            let nut = try NodeUnderTest.start(example, node: "fra-1")
            defer { nut.teardown() }
            #expect(nut.serverLoad.succeeded)
            let (ok, log) = try rekey(nut)
            #expect(ok, "the CHILD_SA was not rekeyed with ECP_256; server log:\n\(log)")
            #expect(log.contains("CREATE_CHILD_SA") && !log.contains("no acceptable proposal found"), "\(log)")
        }
        do {
            // The same device against the node's ESP proposals as written (no group): the rekey is refused,
            // which is what the server side of `pfs` prevents.
            let nut = try NodeUnderTest.start(example, node: "fra-1") { conf in
                conf.replacingOccurrences(of: "aes256gcm16-ecp256-modpnone", with: "aes256gcm16")
            }
            defer { nut.teardown() }
            let (ok, log) = try rekey(nut)
            #expect(!ok)
            #expect(log.contains("no acceptable proposal found"), "server log of the refused rekey:\n\(log)")
        }
    }

    @Test(
        "Apple revocation checking: a server certificate its CA revoked is refused by the checking profile, not without the check"
    )
    func appleRevocationCheckRefusesARevokedServer() throws {
        try StrongSwanEnvironment.require()
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "crl")
        let apple = try #require(
            try example.clientCases().first {
                $0.kind == .apple && $0.node == "fra-1" && $0.service == "ikev2-eap"
            })
        var payload = try #require(apple.applePayload)
        var ikev2 = try #require(payload["IKEv2"] as? [String: Any])
        #expect(ikev2["EnableCertificateRevocationCheck"] as? Int == 1)
        // vpnprov never revokes a server certificate; the test does, with the deployment's CA, as after a
        // server compromise, and hands the CRL to the device as if fetched.
        let ca = try X509Certificate(
            pem: String(contentsOf: example.state.appendingPathComponent("ca/ca.pem"), encoding: .utf8))
        let caKey = try PrivateKey(
            pem: String(contentsOf: example.state.appendingPathComponent("ca/ca.key"), encoding: .utf8))
        let node = try example.node("fra-1")
        let server = try X509Certificate(
            pem: String(
                contentsOf: node.directory.appendingPathComponent("swanctl/x509/fra-1.pem"), encoding: .utf8))
        let crl = try CertificateRevocationList.build(
            issuer: ca, issuerKey: caKey, number: 1000, thisUpdate: Date() - 60, nextUpdate: Date() + 86400,
            revoked: [RevokedCertificate(serial: server.serial, revocationDate: Date() - 60)])
        let inputs = DeviceInputs(fetchableCRLs: [Data(crl.pem.utf8)])

        do {
            let nut = try NodeUnderTest.start(example, node: "fra-1")
            defer { nut.teardown() }
            let checking = try AppleProfileTranslator.translate(
                vpnPayload: payload, otherPayloads: apple.appleOthers, inputs: inputs)
            #expect(checking.revocationCheck && checking.files.keys.contains("x509crl/fetched-1.crl"))
            let (ike, child) = try nut.load(.translated(checking), label: "revocation check")
            let mark = nut.client.log.utf8.count
            let attempt = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(8))
            _ = try? nut.client.terminate(ike: ike, timeout: .seconds(3))
            #expect(!attempt.succeeded, "connected to a revoked server")
            let clientLog = NodeUnderTest.since(mark, nut.client.log)
            #expect(clientLog.contains("certificate was revoked"), "client log:\n\(clientLog)")
        }

        // The same profile without the check never consults the CRL and connects (fresh daemons: charon
        // caches a CRL it has loaded).
        ikev2["EnableCertificateRevocationCheck"] = 0
        payload["IKEv2"] = ikev2
        let unchecked = try AppleProfileTranslator.translate(
            vpnPayload: payload, otherPayloads: apple.appleOthers, inputs: inputs)
        #expect(!unchecked.files.keys.contains { $0.hasPrefix("x509crl/") })
        let nut = try NodeUnderTest.start(example, node: "fra-1")
        defer { nut.teardown() }
        _ = try nut.prove(.translated(unchecked), label: "no revocation check", ikeVersion: 2)
    }

    @Test(
        "pki.crl_url: the checking Apple client downloads the published CRL from the server certificate's URL and refuses a revoked server"
    )
    func appleClientFetchesTheCRLFromTheDistributionPoint() throws {
        try StrongSwanEnvironment.require()
        // The server namespace answers on 192.0.2.1: the operator's web server for the CRL runs there.
        let url = "http://192.0.2.1:8080/acme.crl"
        let dir = try Scratch.makeDirectory("crl-url")
        let inventory = dir.appendingPathComponent("inventory.yaml")
        let example = try String(contentsOfFile: Inventories.example, encoding: .utf8)
        #expect(example.contains("\n  client_days: 365\n"))
        try example.replacingOccurrences(
            of: "\n  client_days: 365\n", with: "\n  client_days: 365\n  crl_url: \(url)\n"
        )
        .write(to: inventory, atomically: true, encoding: .utf8)
        let deployment = try GeneratedDeployment.generate(inventory: inventory.path, label: "crl-url")
        let node = try deployment.node("fra-1")
        let serverPEM = node.directory.appendingPathComponent("swanctl/x509/fra-1.pem").path
        let extensionText = try Subprocess.check(
            "/usr/bin/openssl", ["x509", "-in", serverPEM, "-noout", "-ext", "crlDistributionPoints"])
        #expect(extensionText.stdout.contains("URI:\(url)"), "\(extensionText.stdout)")
        let published = try Data(contentsOf: deployment.out.appendingPathComponent("crl/crl.der"))

        let apple = try #require(
            try deployment.clientCases().first {
                $0.kind == .apple && $0.node == "fra-1" && $0.service == "ikev2-eap"
            })
        let payload = try #require(apple.applePayload)
        // The device has no CRL of its own: everything it learns comes from the URL.
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: payload, otherPayloads: apple.appleOthers, inputs: DeviceInputs())
        #expect(setup.revocationCheck && !setup.files.keys.contains { $0.hasPrefix("x509crl/") })
        // The client charon fetches over HTTP with strongSwan's curl plugin, as a device fetches the URL.
        let fetching = "charon-systemd {\n  load = \(StrongSwanBuild.host.charonPlugins) curl\n}\n"

        // Fresh daemons for each CRL: charon caches a CRL it has fetched.
        func attempt(serving crl: Data, label: String) throws -> (connected: Bool, clientLog: String, requests: String)
        {
            let webroot = try Scratch.makeDirectory("webroot")
            try crl.write(to: webroot.appendingPathComponent("acme.crl"))
            let nut = try NodeUnderTest.start(deployment, node: "fra-1", clientExtraSettings: fetching)
            defer { nut.teardown() }
            let web = try HTTPFileServer(
                namespace: nut.scenario.pair.serverNamespace, address: "192.0.2.1", port: 8080, directory: webroot)
            defer { web.stop() }
            let (ike, child) = try nut.load(.translated(setup), label: label)
            let mark = nut.client.log.utf8.count
            let result = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(10))
            _ = try? nut.client.terminate(ike: ike, timeout: .seconds(3))
            return (result.succeeded, NodeUnderTest.since(mark, nut.client.log), web.requestLog)
        }

        // The CRL vpnprov published (nothing revoked): fetched, valid, the server is accepted.
        let clean = try attempt(serving: published, label: "published CRL")
        #expect(clean.requests.contains("GET /acme.crl"), "requests:\n\(clean.requests)")
        #expect(clean.connected, "client log:\n\(clean.clientLog)")
        #expect(!clean.clientLog.contains("certificate was revoked"))

        // The same CA's next CRL lists the server certificate (made by the test, as after a server
        // compromise): the device downloads it and refuses the server.
        let ca = try X509Certificate(
            pem: String(contentsOf: deployment.state.appendingPathComponent("ca/ca.pem"), encoding: .utf8))
        let caKey = try PrivateKey(
            pem: String(contentsOf: deployment.state.appendingPathComponent("ca/ca.key"), encoding: .utf8))
        let server = try X509Certificate(pem: String(contentsOfFile: serverPEM, encoding: .utf8))
        let revoking = try CertificateRevocationList.build(
            issuer: ca, issuerKey: caKey, number: 1000, thisUpdate: Date() - 60, nextUpdate: Date() + 86400,
            revoked: [RevokedCertificate(serial: server.serial, revocationDate: Date() - 60)])
        let refused = try attempt(serving: Data(revoking.der), label: "revoking CRL")
        #expect(refused.requests.contains("GET /acme.crl"), "requests:\n\(refused.requests)")
        #expect(!refused.connected, "connected to a revoked server")
        #expect(refused.clientLog.contains("certificate was revoked"), "client log:\n\(refused.clientLog)")
    }
}
