import Foundation
import Testing
import VPNProvSupport
import VPNProvTestHarness

/// The strongSwan-made PKI of the hand-written fixture tests (made once per process, on first use).
enum SharedFixturePKI {
    struct Material: Sendable {
        var pki: StrongSwanPKI
        var server: (cert: String, key: String)
        var client: (cert: String, key: String)
    }
    /// Held while it is made, so concurrent first uses make one.
    private static let cached = Locked<Material?>(nil)

    static func get() throws -> Material {
        try cached.withLock { cached in
            if let cached { return cached }
            let pki = try StrongSwanPKI.make()
            let server = try pki.issue(
                name: "server", sans: [HandWritten.serverID], flags: ["serverAuth", "ikeIntermediate"])
            let client = try pki.issue(name: "dave", sans: [HandWritten.certClientID], flags: ["clientAuth"])
            let material = Material(pki: pki, server: server, client: client)
            cached = material
            return material
        }
    }

    /// The full hand-written server directory plus its strongswan.d snippet.
    static func serverDirectory() throws -> (swanctl: SwanctlDirectory, settings: String) {
        let m = try get()
        let dir = try SwanctlDirectory.make(
            label: "server", conf: HandWritten.serverConf(),
            files: try HandWritten.serverFiles(pki: m.pki, serverCert: m.server))
        let settings = dir.root.appendingPathComponent("strongswan.d-vpnprov.conf").path
        try HandWritten.aggressiveModeSettings.write(toFile: settings, atomically: true, encoding: .utf8)
        return (dir, settings)
    }

    static func clientFiles() throws -> [String: Data] {
        ["x509ca/ca.pem": try SwanctlDirectory.contents(of: try get().pki.caCert)]
    }
}

/// Real strongSwan server and client in two namespaces, hand-written configs: CHILD_SA up and a ping through it.
/// The generated configs are proven in GeneratedTunnelTests; what stays here is the harness's own smoke test
/// (independent of vpnprov: if this fails, the environment is broken, not the generator) and the RC2 PKCS#12 case.
@Suite(.serialized, .strongSwan)
struct HandWrittenTunnelTests {
    /// Starts a scenario with the full server loaded.
    private func serverScenario() throws -> TunnelScenario {
        try StrongSwanEnvironment.require()
        let (serverDir, settings) = try SharedFixturePKI.serverDirectory()
        let scenario = try TunnelScenario.start(serverSettingsIncludes: [settings])
        do {
            try scenario.server.loadAllCleanly(confFile: serverDir.confFile)
        } catch {
            scenario.teardown()
            throw error
        }
        return scenario
    }

    private func expectTunnelCarriesTraffic(_ s: TunnelScenario, child: String = "home", ipv6: Bool = false) throws {
        let tunnel = try s.connect(child: child)
        #expect(tunnel.virtualIPv4?.hasPrefix("10.99.0.") == true, "virtual IPs: \(tunnel.virtualIPs)")
        let ping = try s.pingThroughTunnel(tunnel)
        #expect(ping.succeeded, "\(ping)")
        if ipv6 {
            #expect(tunnel.virtualIPv6?.hasPrefix("fd00:99::") == true, "virtual IPs: \(tunnel.virtualIPs)")
            let ping6 = try s.pingThroughTunnel(tunnel, ipv6: true)
            #expect(ping6.succeeded, "\(ping6)")
        }
        // The echo went out and came back through ESP, not around it.
        let child = try s.client.securityAssociations().flatMap(\.children).first { $0.name == child }
        #expect(
            (child?.packetsOut ?? 0) >= 1 && (child?.packetsIn ?? 0) >= 1,
            "CHILD_SA counters: \(String(describing: child))")
    }

    @Test("IKEv2: server certificate + EAP-MSCHAPv2 client, IPv4 and IPv6 through the tunnel")
    func ikev2EAP() throws {
        let s = try serverScenario()
        defer { s.teardown() }
        let client = try SwanctlDirectory.make(
            label: "eap", conf: HandWritten.eapClientConf(), files: try SharedFixturePKI.clientFiles())
        try s.client.loadAllCleanly(confFile: client.confFile)
        try expectTunnelCarriesTraffic(s, ipv6: true)
        #expect(s.server.logContains("selected peer config 'ikev2-eap'"))
    }

    @Test("PKCS#12 made with plain `openssl pkcs12 -legacy` (RC2 certificate bag) loads too")
    func rc2PKCS12Loads() throws {
        let s = try serverScenario()
        defer { s.teardown() }
        let m = try SharedFixturePKI.get()
        var files = try SharedFixturePKI.clientFiles()
        files["pkcs12/dave.p12"] = try m.pki.pkcs12(
            cert: m.client.cert, key: m.client.key, password: HandWritten.p12Password, rc2CertBag: true)
        let client = try SwanctlDirectory.make(label: "cert-rc2", conf: HandWritten.certClientConf(), files: files)
        let load = try s.client.loadAllCleanly(confFile: client.confFile)
        #expect(load.output.contains("key from '\(client.root.path)/pkcs12/dave.p12'"), "\(load)")
        _ = try s.connect(child: "home")
    }
}

/// The load checker catches the one-line-section trap (docs/decisions.md, "One key = value per line").
@Suite(.serialized, .strongSwan)
struct SwanctlLoadCheckTests {
    @Test("A `{ id = a secret = b }` one-liner is reported as a load problem")
    func oneLineSecretIsCaught() throws {
        try StrongSwanEnvironment.require()
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let charon = try Charon.start(in: pair.serverNamespace, label: "load-check")
        defer { charon.stop() }
        let bad = try SwanctlDirectory.make(
            label: "bad", conf: "secrets {\n  eap-x { id = a secret = b }\n}\n")
        let result = try charon.loadAll(confFile: bad.confFile)
        #expect(!Charon.loadProblems(in: result.output).isEmpty, "\(result)")
        #expect(throws: HarnessError.self) { try charon.loadAllCleanly(confFile: bad.confFile) }
        let good = try SwanctlDirectory.make(
            label: "good", conf: "secrets {\n  eap-x {\n    id = a\n    secret = b\n  }\n}\n")
        try charon.loadAllCleanly(confFile: good.confFile)
    }

    @Test("A pkcs12 passphrase written as 0s<base64> is taken literally and the load says so")
    func pkcs12PassphraseIsLiteral() throws {
        try StrongSwanEnvironment.require()
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let charon = try Charon.start(in: pair.clientNamespace, label: "p12-check")
        defer { charon.stop() }
        let m = try SharedFixturePKI.get()
        let p12 = try m.pki.pkcs12(cert: m.client.cert, key: m.client.key, password: HandWritten.p12Password)
        let encoded = "0s" + Data(HandWritten.p12Password.utf8).base64EncodedString()
        let conf = HandWritten.certClientConf().replacingOccurrences(
            of: HandWritten.quoted(HandWritten.p12Password), with: encoded)
        let dir = try SwanctlDirectory.make(label: "p12-0s", conf: conf, files: ["pkcs12/dave.p12": p12])
        let result = try charon.loadAll(confFile: dir.confFile)
        #expect(Charon.loadProblems(in: result.output).contains { $0.contains("MAC verification") }, "\(result)")
    }

    @Test("Namespaces of a killed earlier run are removed, live ones kept")
    func staleNamespacesAreRemoved() throws {
        try StrongSwanEnvironment.require()
        // A pid that does not exist: above every live one, below pid_max.
        var dead: Int32 = 4_000_000
        while Scratch.processExists(dead) { dead -= 1 }
        let stale = "\(Scratch.prefix)-\(dead)-1-s"
        try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "add", stale])
        let live = try NetworkPair.create()  // create() sweeps stale namespaces first
        defer { live.teardown() }
        let list = try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "list"]).stdout
        #expect(!list.contains(stale))
        #expect(list.contains(live.serverNamespace) && list.contains(live.clientNamespace))
        live.teardown()
        let after = try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "list"]).stdout
        #expect(!after.contains(live.serverNamespace) && !after.contains(live.clientNamespace))
    }
}

/// Pure harness helpers (no strongSwan needed).
@Suite struct HarnessUnitTests {
    @Test func problemLinesAreRecognised() {
        let output = """
            opening directory '/x/swanctl/x509aa' failed: No such file or directory
            loaded certificate from '/x/swanctl/x509/s.pem'
            invalid value for: rekey_time, config discarded
            loading connection 'a' failed: ...
            ignoring unsupported secret 'foo'
            """
        #expect(Charon.loadProblems(in: output).count == 3)
    }

    @Test func listSAsRawIsParsed() {
        let raw =
            "list-sa event {home {uniqueid=1 version=2 state=ESTABLISHED local-id=alice remote-id=vpn.example.com "
            + "encr-alg=AES_CBC integ-alg=HMAC_SHA2_256_128 prf-alg=PRF_HMAC_SHA2_256 dh-group=CURVE_25519 "
            + "local-vips=[10.99.0.1 fd00:99::1] child-sas {home-1 {name=home state=INSTALLED encr-alg=AES_GCM_16 "
            + "packets-in=3 packets-out=2 local-ts=[10.99.0.1/32] remote-ts=[0.0.0.0/0]}}}}\nlist-sas reply {}\n"
        let sas = IKESA.parse(raw: raw)
        #expect(sas.count == 1)
        #expect(sas.first?.localVirtualIPs == ["10.99.0.1", "fd00:99::1"])
        #expect(sas.first?.children.first?.packetsIn == 3)
        #expect(sas.first?.children.first?.remoteTS == ["0.0.0.0/0"])
        #expect(sas.first?.dhGroup == "CURVE_25519")
    }
}
