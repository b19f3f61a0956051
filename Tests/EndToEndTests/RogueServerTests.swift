import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// A server identity must be one that no client certificate of the same CA can prove (docs/security.md).
/// Proven with real strongSwan: a rogue server built from another user's client certificate and key
/// is refused by a generated Linux client profile, whichever identity it claims; and the same rogue is
/// accepted once the profile's remote identity is the DN wildcard vpnprov now refuses to write, which
/// shows the refusals are about the identity and nothing else.
@Suite(.serialized, .strongSwan)
struct RogueServerTests {
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            id: "O=acme, CN=n1"
            pool: 10.80.0.0/24
            services: [ikev2-cert]
        users:
          alice:
            cert: true
            devices: [linux]
          bob:
            cert: true
            devices: [linux]

        """

    /// A copy of the node's swanctl directory whose certificate and key are bob's client ones, and
    /// whose local identity is `identity`.
    static func rogue(_ deployment: GeneratedDeployment, identity: String) throws -> String {
        let node = try deployment.node("n1")
        let dir = try Scratch.makeDirectory("rogue").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(at: node.directory.appendingPathComponent("swanctl"), to: dir)
        let bob = deployment.out.appendingPathComponent("clients/bob/linux/swanctl")
        for (from, to) in [("x509/bob.pem", "x509/n1.pem"), ("private/bob.key", "private/n1.key")] {
            let target = dir.appendingPathComponent(to)
            try FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: bob.appendingPathComponent(from), to: target)
        }
        let conf = dir.appendingPathComponent("swanctl.conf").path
        let text = try String(contentsOfFile: conf, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "id = \"O=acme, CN=n1\"", with: "id = \"\(identity)\"")
        guard edited != text || identity == "O=acme, CN=n1" else {
            throw HarnessError("the node's local id was not where expected")
        }
        try edited.write(toFile: conf, atomically: true, encoding: .utf8)
        return conf
    }

    /// Alice's generated Linux profile, or a copy with its remote identity replaced.
    static func alice(_ deployment: GeneratedDeployment, remoteID: String? = nil) throws -> (
        conf: String, connection: String
    ) {
        let original = deployment.out.appendingPathComponent("clients/alice/linux/swanctl/swanctl.conf").path
        let connection = try #require(try GeneratedDeployment.connectionNames(inFile: original).first)
        guard let remoteID else { return (original, connection) }
        let dir = try Scratch.makeDirectory("alice-edited").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: original).deletingLastPathComponent(), to: dir)
        let conf = dir.appendingPathComponent("swanctl.conf").path
        let text = try String(contentsOfFile: conf, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "id = \"O=acme, CN=n1\"", with: "id = \"\(remoteID)\"")
        guard edited != text else { throw HarnessError("alice's remote id was not where expected") }
        try edited.write(toFile: conf, atomically: true, encoding: .utf8)
        return (conf, connection)
    }

    /// Loads `server` and `client` into a fresh pair of daemons and initiates; returns whether the
    /// tunnel came up, with the client's log of the attempt.
    static func attempt(server: String, client: (conf: String, connection: String)) throws -> (
        connected: Bool, clientLog: String
    ) {
        let s = try TunnelScenario.start()
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: server)
        try s.client.loadAllCleanly(confFile: client.conf)
        let result = try s.client.initiate(child: client.connection, ike: client.connection, timeout: .seconds(10))
        return (result.succeeded, s.client.log)
    }

    @Test("A rogue server holding another user's client certificate is refused by a generated Linux profile")
    func rogueServerWithAClientCertificateIsRefused() throws {
        try StrongSwanEnvironment.require()
        let dir = try Scratch.makeDirectory("rogue-inventory")
        let path = dir.appendingPathComponent("inventory.yaml").path
        try Self.inventory.write(toFile: path, atomically: true, encoding: .utf8)
        let deployment = try GeneratedDeployment.generate(inventory: path, label: "rogue")
        let node = try deployment.node("n1")

        // The real node: alice's profile connects (the profile works; only the server changes below).
        let real = try Self.attempt(server: node.confFile, client: try Self.alice(deployment))
        #expect(real.connected, "the real node must accept alice:\n\(real.clientLog)")

        // Bob's certificate, claiming the node's identity: the certificate does not carry it, and
        // alice's client refuses the server's authentication.
        let claimsNode = try Self.attempt(
            server: try Self.rogue(deployment, identity: "O=acme, CN=n1"), client: try Self.alice(deployment))
        #expect(!claimsNode.connected, "a client certificate posed as the node:\n\(claimsNode.clientLog)")
        #expect(
            claimsNode.clientLog.contains("public key found for 'O=acme, CN=n1'"),
            "the client must refuse bob's certificate:\n\(claimsNode.clientLog)")

        // Bob's certificate, claiming bob's own subject: alice asks for the node's identity (IDr), which
        // the rogue does not hold, so the exchange fails.
        let claimsBob = try Self.attempt(
            server: try Self.rogue(deployment, identity: "O=acme, CN=bob@acme"), client: try Self.alice(deployment))
        #expect(!claimsBob.connected, "a client certificate posed as the node:\n\(claimsBob.clientLog)")

        // The control: with the wildcard remote identity vpnprov refuses to write (identity-pattern),
        // the same rogue gets in. This is the impersonation the validator now prevents.
        let wildcard = try Self.attempt(
            server: try Self.rogue(deployment, identity: "O=acme, CN=bob@acme"),
            client: try Self.alice(deployment, remoteID: "O=acme, CN=*"))
        #expect(
            wildcard.connected,
            "the wildcard profile should have accepted the rogue (is the rogue set up right?):\n\(wildcard.clientLog)")

        // And vpnprov refuses to generate that profile in the first place.
        let patterned = Self.inventory.replacingOccurrences(of: "id: \"O=acme, CN=n1\"", with: "id: \"O=acme, CN=*\"")
        try patterned.write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try VPNProvBinary.run([
            "generate", "--strict", path, "--out", deployment.out.path, "--state", deployment.state.path,
        ])
        #expect(refused.exitCode == 1, "\(refused)")
        #expect(refused.stderr.contains("[identity-pattern]"), "\(refused)")
    }
}
