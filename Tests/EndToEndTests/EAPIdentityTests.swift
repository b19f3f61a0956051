import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// A password's identity in a node's secrets.conf is never the node's identity (docs/security.md,
/// "Identities that must stay apart"). charon looks for an EAP secret owned by its own identity *or*
/// the peer's, so `eap-x { id = "<node id>" }` is found for every EAP name. Proven with real strongSwan:
/// an attacker holding alice's password but sending a made-up EAP identity gets no tunnel from the
/// node as vpnprov renders it, and gets one once alice's secret carries the node's identity (what a
/// user named like the node would produce); vpnprov refuses such an inventory.
@Suite(.serialized, .strongSwan)
struct EAPIdentityTests {
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.81.0.0/24
            services: [ikev2-eap]
        users:
          alice:
            password: gen
            devices: [linux]
          bob:
            password: gen
            devices: [linux]

        """

    /// Alice's generated Linux profile, edited to send the EAP identity `mallory` with alice's password.
    static func mallory(_ deployment: GeneratedDeployment, in scratch: URL) throws -> (conf: String, connection: String)
    {
        let original = deployment.out.appendingPathComponent("clients/alice/linux/swanctl")
        let dir = scratch.appendingPathComponent("mallory-\(Scratch.next())/swanctl")
        try FileManager.default.createDirectory(at: dir.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: original, to: dir)
        let conf = dir.appendingPathComponent("swanctl.conf").path
        let connection = try #require(try GeneratedDeployment.connectionNames(inFile: conf).first)
        try replace("eap_id = \"alice\"", with: "eap_id = \"mallory\"", in: conf)
        try replace(
            "id-1 = \"alice\"", with: "id-1 = \"mallory\"", in: dir.appendingPathComponent("conf.d/secrets.conf").path)
        return (conf, connection)
    }

    /// A copy of the node's swanctl directory whose secret for alice is owned by the node's identity.
    static func nodeOwnedSecret(_ deployment: GeneratedDeployment, in scratch: URL) throws -> String {
        let node = try deployment.node("n1")
        let dir = scratch.appendingPathComponent("owned/swanctl")
        try FileManager.default.createDirectory(at: dir.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: node.directory.appendingPathComponent("swanctl"), to: dir)
        try replace(
            "id = \"alice\"", with: "id = \"192.0.2.1\"", in: dir.appendingPathComponent("conf.d/secrets.conf").path)
        return dir.appendingPathComponent("swanctl.conf").path
    }

    static func replace(_ old: String, with new: String, in path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard text.components(separatedBy: old).count == 2 else {
            throw HarnessError("'\(old)' is not in \(path) exactly once")
        }
        try text.replacingOccurrences(of: old, with: new).write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Loads `server` and `client` into a fresh pair of daemons and initiates.
    static func attempt(
        server: String, client: (conf: String, connection: String), build: StrongSwanBuild
    ) throws -> (connected: Bool, serverLog: String) {
        let s = try TunnelScenario.start(builds: BuildPair(server: build, client: build))
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: server)
        try s.client.loadAllCleanly(confFile: client.conf)
        let result = try s.client.initiate(child: client.connection, ike: client.connection, timeout: .seconds(10))
        return (result.succeeded, s.server.log)
    }

    @Test(
        "A made-up EAP identity with another user's password gets no tunnel; a user named like the node is refused",
        arguments: StrongSwanBuild.all)
    func madeUpEAPIdentityIsRefused(_ build: StrongSwanBuild) throws {
        try build.require()
        let dir = try Scratch.makeDirectory("eap-identity")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("inventory.yaml").path
        try Self.inventory.write(toFile: path, atomically: true, encoding: .utf8)
        let deployment = try GeneratedDeployment.generate(inventory: path, label: "eap-identity-\(build.name)")
        defer { try? FileManager.default.removeItem(at: deployment.out.deletingLastPathComponent()) }
        let node = try deployment.node("n1")

        // The node as rendered: no secret is owned by 'mallory' or by the node, so the login fails.
        let shipped = try Self.attempt(
            server: node.confFile, client: try Self.mallory(deployment, in: dir), build: build)
        #expect(!shipped.connected, "a made-up EAP identity logged in with alice's password:\n\(shipped.serverLog)")

        // The control: with alice's secret owned by the node's identity, the same client gets in.
        let owned = try Self.attempt(
            server: try Self.nodeOwnedSecret(deployment, in: dir), client: try Self.mallory(deployment, in: dir),
            build: build)
        #expect(
            owned.connected,
            "the node-owned secret should have let 'mallory' in (is the client set up right?):\n\(owned.serverLog)")

        // And vpnprov refuses the inventory that would render that secret: a password user named like the node.
        let renamed = Self.inventory.replacingOccurrences(of: "  alice:", with: "  192.0.2.1:")
        try renamed.write(toFile: path, atomically: true, encoding: .utf8)
        for command in ["validate", "generate"] {
            var arguments = [command, path]
            if command == "generate" { arguments += ["--out", deployment.out.path, "--state", deployment.state.path] }
            let refused = try VPNProvBinary.run(arguments)
            #expect(refused.exitCode == 1, "\(command): \(refused)")
            #expect(refused.stderr.contains("[password-identity-overlap]"), "\(command): \(refused)")
        }
    }
}
