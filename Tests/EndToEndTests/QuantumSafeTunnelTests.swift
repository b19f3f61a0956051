import Foundation
import Testing
import VPNProvTestHarness

/// Quantum-safe tunnels as vpnprov generates them (docs/quantum-safe.md), on strongSwan 6.1 (Debian testing's tree,
/// `StrongSwanBuild.testing`): a node that requires ML-KEM-768 and the user's PPK, and one that admits classical
/// clients and takes a PPK where one comes. Server and client are the generated `servers/<node>/` and
/// `clients/<user>/linux/swanctl/` as written; each check runs on fresh daemons (a charon keeps credentials it loaded
/// before).
@Suite(.serialized, .strongSwan, .strongSwan61)
struct QuantumSafeTunnelTests {
    static func inventory(_ quantumSafe: String, extraUsers: String = "") -> String {
        """
        vpnprov: 1
        name: pq
        nodes:
          q1:
            address: 192.0.2.1
            pool: 10.9.0.0/24
            services: [ikev2-cert, ikev2-eap]
            quantum_safe: \(quantumSafe)
        users:
          alice:
            password: gen
            cert: true
            devices: [linux, apple]
        \(extraUsers)

        """
    }

    static let builds = BuildPair(server: .testing, client: .testing)

    /// A copy of alice's generated Linux directory, so it survives a regeneration.
    static func linuxCopy(_ d: GeneratedDeployment, tag: String) throws -> String {
        let copy = try Scratch.makeDirectory("pq-linux-\(tag)").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(
            at: d.out.appendingPathComponent("clients/alice/linux/swanctl"), to: copy)
        return copy.appendingPathComponent("swanctl.conf").path
    }

    /// `conf` with its text changed by `edit` (secrets.conf beside it too), in a directory of its own.
    static func edited(_ conf: String, tag: String, _ edit: (String) -> String) throws -> String {
        let source = URL(fileURLWithPath: conf).deletingLastPathComponent()
        let copy = try Scratch.makeDirectory("pq-edit-\(tag)").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(at: source, to: copy)
        for file in ["swanctl.conf", "conf.d/secrets.conf"] {
            let url = copy.appendingPathComponent(file)
            try edit(try String(contentsOf: url, encoding: .utf8)).write(to: url, atomically: true, encoding: .utf8)
        }
        return copy.appendingPathComponent("swanctl.conf").path
    }

    /// The client without ML-KEM and without a PPK (its connections name no `ppk_id`, so the key in its secrets goes
    /// unused): what a classical client of the same user sends.
    static func classical(_ text: String) -> String {
        text.replacingOccurrences(of: "-ke1_mlkem768", with: "").split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .filter { !$0.contains("ppk_") }.joined(separator: "\n")
    }

    /// Starts a fresh node and client for `d`'s q1 and runs `body`.
    static func session(_ d: GeneratedDeployment, _ body: (TunnelScenario) throws -> Void) throws {
        let node = try d.node("q1")
        // 6.1's kernel-libipsec routes everything into its TUN device, the IKE peer too (5.9 and 6.0 left the peer
        // out): like the lab's RADIUS servers, both charons mark their own IKE and ESP packets past those routes.
        let s = try TunnelScenario.start(
            builds: builds, serverSettingsIncludes: node.settingsInclude.map { [$0] } ?? [],
            serverExtraSettings: RadiusLab.radiusLibipsecSettings, clientExtraSettings: RadiusLab.radiusLibipsecSettings
        )
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: node.confFile)
        try body(s)
    }

    @Test(
        "strongSwan 6.1: a node requiring ML-KEM and the user's PPK carries the generated Linux client's traffic, refuses a classical client, a wrong PPK and, after rotate-ppk, the old one; a node with classical_fallback admits a classical client"
    )
    func generatedQuantumSafeTunnels() throws {
        try Self.builds.require()
        let dir = try Scratch.makeDirectory("pq-inventory")
        let path = dir.appendingPathComponent("pq.yaml").path
        try Self.inventory("{ml_kem: [mlkem768], ppk: required}").write(toFile: path, atomically: true, encoding: .utf8)
        let d = try GeneratedDeployment.generate(inventory: path, label: "pq")
        let original = try Self.linuxCopy(d, tag: "original")
        var proven: [String] = []

        // Both services, hybrid and with the PPK, carrying traffic.
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: original)
            for service in ["ikev2-eap", "ikev2-cert"] {
                let tunnel = try s.connect(child: "q1-\(service)", ike: "q1-\(service)")
                #expect(try s.pingThroughTunnel(tunnel).succeeded, "\(service): no traffic through the tunnel")
                _ = try s.client.terminate(ike: "q1-\(service)")
                proven.append(service)
            }
            #expect(
                s.server.logContains("selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_256/ECP_256/KE1_ML_KEM_768"),
                "no additional key exchange: \(s.server.log.suffix(3000))")
            #expect(s.server.logContains("using PPK for PPK_ID 'ppk-alice'"), "\(s.server.log.suffix(3000))")
        }
        // alice's Apple profile as a device on iOS / macOS 26 reads it (AppleProfileTranslator, from Apple's schema and
        // documentation): each IKEv2 payload asks for ML-KEM-768 and sends her PPK.
        let profile = try Data(contentsOf: d.out.appendingPathComponent("clients/alice/alice.mobileconfig"))
        for (index, setup) in try AppleProfileTranslator.translate(profileData: profile).enumerated() {
            try Self.session(d) { s in
                try s.client.loadAllCleanly(confFile: try setup.write(label: "pq-apple-\(index)").confFile)
                let tunnel = try s.connect(child: setup.childName, ike: setup.connectionName)
                #expect(try s.pingThroughTunnel(tunnel).succeeded, "Apple payload \(index): no traffic")
                #expect(s.server.logContains("KE1_ML_KEM_768"), "Apple payload \(index): \(s.server.log.suffix(2000))")
                #expect(s.server.logContains("using PPK for PPK_ID 'ppk-alice'"), "Apple payload \(index)")
            }
            proven.append("apple \(index + 1)")
        }
        // A classical client of the same user: no proposal the node accepts.
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: try Self.edited(original, tag: "classical", Self.classical))
            let result = try s.client.initiate(child: "q1-ikev2-eap", ike: "q1-ikev2-eap", timeout: .seconds(10))
            #expect(!result.succeeded, "a classical client was admitted: \(result)")
            #expect(
                s.server.logContains("no acceptable ADDITIONAL_KEY_EXCHANGE_1 found"), "\(s.server.log.suffix(2000))")
        }
        // Another PPK under alice's PPK_ID: the AUTH payloads, computed with the PPK, do not verify.
        try Self.session(d) { s in
            let wrong = try Self.edited(original, tag: "wrong") { text in
                text.replacingOccurrences(
                    of: #"(ppk-1 \{\n\s*id = "ppk-alice"\n\s*secret = )"[^"]*""#,
                    with:
                        "$1\"0s\(Data("another PPK of 48 characters, but not alice's 01".utf8).base64EncodedString())\"",
                    options: .regularExpression)
            }
            try s.client.loadAllCleanly(confFile: wrong)
            let result = try s.client.initiate(child: "q1-ikev2-cert", ike: "q1-ikev2-cert", timeout: .seconds(10))
            #expect(!result.succeeded, "a wrong PPK was admitted: \(result)")
            #expect(s.server.logContains("signature validation failed"), "\(s.server.log.suffix(1500))")
        }

        // rotate-ppk, then the rollout (the node's new files) and the new profile: the old key is refused.
        _ = try LifecycleTunnelTests.vpnprov(["rotate-ppk", "alice"], d)
        let rotated = try Self.linuxCopy(d, tag: "rotated")
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: rotated)
            let tunnel = try s.connect(child: "q1-ikev2-eap", ike: "q1-ikev2-eap")
            #expect(try s.pingThroughTunnel(tunnel).succeeded, "the rotated PPK carries no traffic")
            proven.append("rotated PPK")
        }
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: original)
            let result = try s.client.initiate(child: "q1-ikev2-eap", ike: "q1-ikev2-eap", timeout: .seconds(10))
            #expect(!result.succeeded, "the PPK from before rotate-ppk was admitted: \(result)")
        }

        // The same node admitting classical clients, with an optional PPK: a classical client connects without the
        // additional exchange, the generated client still gets ML-KEM and uses its PPK.
        // bea's phone runs the strongSwan app, which has no PPK: she may use only this node.
        try Self.inventory(
            "{ml_kem: [mlkem768], classical_fallback: true, ppk: optional}",
            extraUsers: "  bea:\n    password: gen\n    devices: [android]\n"
        ).write(toFile: path, atomically: true, encoding: .utf8)
        _ = try LifecycleTunnelTests.vpnprov(["generate"], d)
        let fallback = try Self.linuxCopy(d, tag: "fallback")
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: try Self.edited(fallback, tag: "fallback-classical", Self.classical))
            let tunnel = try s.connect(child: "q1-ikev2-eap", ike: "q1-ikev2-eap")
            #expect(try s.pingThroughTunnel(tunnel).succeeded, "the classical client carries no traffic")
            #expect(
                s.server.logContains("selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_256/ECP_256\n")
                    || s.server.logLines(containing: "selected proposal: IKE:").allSatisfy { !$0.contains("KE1_") },
                "the classical client got an additional key exchange: \(s.server.log.suffix(2000))")
            proven.append("classical fallback")
        }
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: fallback)
            let tunnel = try s.connect(child: "q1-ikev2-eap", ike: "q1-ikev2-eap")
            #expect(try s.pingThroughTunnel(tunnel).succeeded)
            #expect(s.server.logContains("KE1_ML_KEM_768"), "\(s.server.log.suffix(2000))")
            #expect(s.server.logContains("using PPK for PPK_ID 'ppk-alice'"), "\(s.server.log.suffix(2000))")
            proven.append("hybrid with fallback")
        }
        // bea's Android profile as the app imports it (SswanTranslator): ML-KEM through its ike-proposal, no PPK.
        let secrets = try JSONSerialization.jsonObject(
            with: Data(contentsOf: d.state.appendingPathComponent("secrets.json")))
        let password = try #require(((secrets as? [String: Any])?["passwords"] as? [String: String])?["bea"])
        let sswan = try Data(contentsOf: d.out.appendingPathComponent("clients/bea/q1-ikev2-eap.sswan"))
        let android = try SswanTranslator.translate(json: sswan, inputs: DeviceInputs(password: password))
        try Self.session(d) { s in
            try s.client.loadAllCleanly(confFile: try android.write(label: "pq-android").confFile)
            let tunnel = try s.connect(child: android.childName, ike: android.connectionName)
            #expect(try s.pingThroughTunnel(tunnel).succeeded, "Android: no traffic")
            #expect(s.server.logContains("KE1_ML_KEM_768"), "Android: \(s.server.log.suffix(2000))")
            #expect(!s.server.logContains("using PPK"), "Android sent a PPK it does not have")
            proven.append("android")
        }
        #expect(
            proven == [
                "ikev2-eap", "ikev2-cert", "apple 1", "apple 2", "rotated PPK", "classical fallback",
                "hybrid with fallback",
                "android",
            ])
        print("e2e quantum-safe \(StrongSwanBuild.testing.version): \(proven.joined(separator: ", "))")
    }
}
