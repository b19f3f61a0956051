import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// The lifecycle commands against real strongSwan: a rotated PSK or password refuses the old secret and
/// accepts the new one; during a CA rotation the profiles saved before it (Apple-emulated, Android and Linux,
/// certificate and EAP) still connect to the rotated node, and so do the new ones; after `rotate-ca --finish`
/// the saved certificate profiles are refused and the newest profiles connect.
@Suite(.serialized, .strongSwan)
struct LifecycleTunnelTests {
    static let inventory = """
        vpnprov: 1
        name: life
        nodes:
          life-1:
            address: 192.0.2.1
            pool: 10.80.0.0/24
            services: [ikev2-cert, ikev2-eap, ikev2-psk]
            psk: gen
        users:
          cora:
            password: gen
            cert: true

        """

    /// Every client case of the deployment as it is now, made into loadables that no later run changes
    /// (Linux directories copied, device profiles translated now).
    static func saved(_ deployment: GeneratedDeployment, tag: String) throws -> [(ClientCase, ClientCase.Loadable)] {
        var copies: [String: String] = [:]
        return try deployment.clientCases().map { c in
            switch try c.make() {
            case .translated(let setup): return (c, .translated(setup))
            case .asWritten(let conf, let connection, let child):
                if copies[conf] == nil {
                    let copy = try Scratch.makeDirectory("\(tag)-linux").appendingPathComponent("swanctl")
                    try FileManager.default.copyItem(
                        at: URL(fileURLWithPath: conf).deletingLastPathComponent(), to: copy)
                    copies[conf] = copy.appendingPathComponent("swanctl.conf").path
                }
                return (c, .asWritten(confFile: copies[conf]!, connection: connection, child: child))
            }
        }
    }

    static func vpnprov(_ arguments: [String], _ d: GeneratedDeployment) throws -> ProgramResult {
        let result = try VPNProvBinary.run(
            arguments + [d.inventory, "--out", d.out.path, "--state", d.state.path], environment: d.environment)
        guard result.succeeded else {
            throw HarnessError("vpnprov \(arguments.joined(separator: " ")) failed: \(result)")
        }
        return result
    }

    /// Runs `body` against a freshly started node (new server and client charon), then tears it down.
    func session(_ deployment: GeneratedDeployment, _ body: (NodeUnderTest) -> Void) throws {
        let nut = try NodeUnderTest.start(deployment, node: "life-1")
        defer { nut.teardown() }
        body(nut)
    }

    func connects(_ nut: NodeUnderTest, _ cases: [(ClientCase, ClientCase.Loadable)], _ what: String) -> Int {
        var proven = 0
        for (c, loadable) in cases {
            do {
                let proof = try nut.prove(loadable, label: "\(what): \(c.label)", ikeVersion: c.ikeVersion)
                #expect(
                    proof.serverPeerConfig == c.service,
                    "\(what): \(c.label): server chose \(proof.serverPeerConfig ?? "?")")
                proven += 1
            } catch {
                Issue.record("\(what): \(error)")
            }
        }
        return proven
    }

    func refused(
        _ nut: NodeUnderTest, _ cases: [(ClientCase, ClientCase.Loadable)], _ what: String, because reason: String
    ) -> Int {
        var proven = 0
        for (c, loadable) in cases {
            do {
                let log = try nut.refuse(loadable, label: "\(what): \(c.label)")
                #expect(
                    log.contains(reason),
                    "\(what): \(c.label): refused, but the server log does not say \(reason):\n\(log)")
                proven += 1
            } catch {
                Issue.record("\(what): \(error)")
            }
        }
        return proven
    }

    /// The manual deploy of servers/<node>/README on a running node: a client certificate that was accepted
    /// (so charon cached the CRL it checked it with) is revoked, the README's `swanctl --load-all` line is run
    /// against the live charon, and the client is refused at once, for the reason the log gives. Without
    /// `--clear` charon kept using its cached CRL and accepted it.
    func manualRevocation(_ builds: BuildPair) throws {
        try builds.require()
        let dir = try Scratch.makeDirectory("manual-revocation")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("life.yaml").path
        try """
        vpnprov: 1
        name: life
        nodes:
          life-1:
            address: 192.0.2.1
            pool: 10.80.0.0/24
            services: [ikev2-cert]
        users:
          bob:
            cert: true
          frank:
            cert: true

        """.write(toFile: path, atomically: true, encoding: .utf8)
        let deployment = try GeneratedDeployment.generate(inventory: path, label: "manual")
        defer { try? FileManager.default.removeItem(at: deployment.out.deletingLastPathComponent()) }
        let kept = dir.appendingPathComponent("bob")
        try FileManager.default.copyItem(
            at: deployment.out.appendingPathComponent("clients/bob/linux/swanctl"), to: kept)
        let bob = ClientCase.Loadable.asWritten(
            confFile: kept.appendingPathComponent("swanctl.conf").path, connection: "life-1-ikev2-cert",
            child: "life-1-ikev2-cert")
        let nut = try NodeUnderTest.start(deployment, node: "life-1", builds: builds)
        defer { nut.teardown() }
        _ = try nut.prove(bob, label: "\(builds): bob before the revocation", ikeVersion: 2)

        _ = try Self.vpnprov(["revoke", "bob"], deployment)
        let readme = try String(
            contentsOf: deployment.out.appendingPathComponent("servers/life-1/README"), encoding: .utf8)
        let line = try #require(
            readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first {
                $0.hasPrefix("swanctl --load-all")
            },
            "the README says how to load the configuration")
        // The README's command as written; --file points it at the generated tree instead of /etc/swanctl.
        let arguments = Array(line.split(separator: " ").dropFirst().map(String.init)) + ["--file", nut.node.confFile]
        let load = try nut.server.swanctl(arguments)
        #expect(load.succeeded, "\(builds): \(line): \(load)")
        let log = try nut.refuse(bob, label: "\(builds): bob after the revocation")
        #expect(log.contains("certificate was revoked"), "\(builds): bob refused, but not as revoked:\n\(log)")
        // The node still has everything else: frank connects.
        let frank = ClientCase.Loadable.asWritten(
            confFile: deployment.out.appendingPathComponent("clients/frank/linux/swanctl/swanctl.conf").path,
            connection: "life-1-ikev2-cert", child: "life-1-ikev2-cert")
        _ = try nut.prove(frank, label: "\(builds): frank after the reload", ikeVersion: 2)
    }

    @Test("The node README's manual reload makes a revocation count on a running strongSwan 5.9 node")
    func manualRevocationOnALiveNode() throws { try manualRevocation(.host) }

    @Test("The node README's manual reload makes a revocation count on a running strongSwan 6.0 node", .strongSwan6)
    func manualRevocationOnALiveNode6() throws { try manualRevocation(.trixie) }

    @Test("rotate-psk, rotate-password and rotate-ca (with --finish) against real strongSwan")
    func lifecycle() throws {
        try StrongSwanEnvironment.require()
        let dir = try Scratch.makeDirectory("life-inventory")
        let path = dir.appendingPathComponent("life.yaml").path
        try Self.inventory.write(toFile: path, atomically: true, encoding: .utf8)
        let deployment = try GeneratedDeployment.generate(inventory: path, label: "life")
        let original = try Self.saved(deployment, tag: "original")
        let kinds = Set(original.map { "\($0.0.kind.rawValue) \($0.0.service)" })
        #expect(
            kinds.isSuperset(of: [
                "apple ikev2-cert", "apple ikev2-eap", "apple ikev2-psk", "android ikev2-cert", "android ikev2-eap",
                "linux ikev2-cert", "linux ikev2-eap", "linux ikev2-psk",
            ]), "\(kinds.sorted())")
        var handshakes = 0
        var refusals = 0

        // 1. New PSK and password: the old ones are refused by the real server, the new ones work.
        let psk = try Self.vpnprov(["rotate-psk", "life-1"], deployment)
        #expect(
            psk.stderr.contains("--limit life-1\n") && psk.stderr.contains("hand new profiles to cora "),
            "\(psk.stderr)")
        let password = try Self.vpnprov(["rotate-password", "cora"], deployment)
        #expect(
            password.stderr.contains("--limit life-1\n") && password.stderr.contains("hand new profiles to cora "),
            "\(password.stderr)")
        let rotatedSecrets = try Self.saved(deployment, tag: "secrets")
        // A fresh server and client per group: the client charon keeps credentials it loaded earlier (a
        // newer certificate or secret could stand in for a saved one), and the server ignores a peer with
        // five half-open attempts.
        try session(deployment) {
            handshakes += connects($0, rotatedSecrets.filter { $0.0.service != "ikev2-cert" }, "new secrets")
        }
        try session(deployment) {
            refusals += refused(
                $0, original.filter { $0.0.service == "ikev2-psk" }, "old PSK", because: "MAC mismatched")
        }
        try session(deployment) {
            refusals += refused(
                $0, original.filter { $0.0.service == "ikev2-eap" }, "old password",
                because: "EAP-MS-CHAPv2 verification failed")
        }

        // 2. CA rotation: profiles from before it and new ones both connect during the overlap.
        let start = try Self.vpnprov(["rotate-ca"], deployment)
        #expect(
            start.stderr.contains("--limit life-1\n") && start.stderr.contains("hand new profiles to cora "),
            "\(start.stderr)")
        let x509ca = deployment.out.appendingPathComponent("servers/life-1/swanctl/x509ca")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: x509ca.path)) == ["ca.pem", "ca-next.pem"])
        let again = try VPNProvBinary.run(
            ["rotate-ca", deployment.inventory, "--out", deployment.out.path, "--state", deployment.state.path])
        #expect(again.exitCode == 1 && again.stderr.contains("already in progress"), "\(again)")
        let overlap = try Self.saved(deployment, tag: "overlap")
        do {
            let nut = try NodeUnderTest.start(deployment, node: "life-1")
            defer { nut.teardown() }
            handshakes += connects(
                nut, rotatedSecrets.filter { $0.0.service != "ikev2-psk" }, "saved before the rotation")
            handshakes += connects(nut, overlap.filter { $0.0.service != "ikev2-psk" }, "new during the overlap")
            // How the old profiles got there: the node sent the cross certificate after its own.
            #expect(nut.server.log.contains("sending issuer cert \"O=life, OU=generation 2, CN=life VPN Root CA\""))
        }

        // 3. --finish: the previous CA is gone from the server; certificates from it are refused.
        _ = try Self.vpnprov(["rotate-ca", "--finish"], deployment)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: x509ca.path)) == ["ca.pem"])
        let finished = try Self.saved(deployment, tag: "finished")
        try session(deployment) {
            handshakes += connects($0, finished.filter { $0.0.service != "ikev2-psk" }, "after --finish")
        }
        try session(deployment) {
            refusals += refused(
                $0, rotatedSecrets.filter { $0.0.service == "ikev2-cert" }, "old CA after --finish",
                because: "no trusted ECDSA public key found")
        }
        print("e2e lifecycle: \(handshakes) handshakes, \(refusals) refusals proven")
    }
}
