import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// The rollout scenarios on one node whose inventory changes: revocations (on strongSwan 5.9 and 6.0) and a
/// service added to a running node.
extension AnsibleRolloutTests {
    /// The fleet of `revocationTakesEffectOnTheLiveNode`: one node with certificate and EAP users, whose
    /// certificate users present every identity form a client can (the e-mail SAN, a DN written without
    /// spaces, the certificate's subject instead of its SAN, a DN that ends in "{").
    static func revocationInventory(version: Int) -> String {
        var text = """
            vpnprov: 1
            name: acme
            defaults:
              network:
                ipsec: libipsec   # the lab's charons run kernel-libipsec
            nodes:
              n1:
                address: 192.0.2.1
                pool: 10.81.0.0/24
                services: [ikev2-cert, ikev2-eap]
            users:
              ann:
                password: gen
              bob:
                cert: true
              frank:
                cert: true

            """
        if version == 1 {
            text += """
                  carol:
                    cert: true
                    id: "CN=carol,O=acme"
                  eve:
                    cert: true
                    id: "O=acme, CN=eve {"
                  gina:
                    password: gen

                """
        }
        text += version == 1 ? "  dave:\n    cert: true\n" : "  dave:\n    cert: true\n    revoked: true\n"
        return text
    }

    /// On each strongSwan version of the node's charon: a rollout after `vpnprov
    /// revoke`, after users are removed from the inventory or marked revoked, and after `rotate-ca --finish`
    /// ends the live tunnels of exactly those users (whatever identity form their client sent), and the
    /// revoked clients, initiating again with the certificate they hold, are refused by the node for the
    /// reason its log gives. charon caches the CRL it last checked a client with and consults it before a
    /// newly loaded one (without `--clear` every revoked client here reconnected: "using cached crl",
    /// "certificate status is good"), and keeps CA certificates no longer in the files: only the role's
    /// `swanctl --load-all --clear` makes the rollout's CRL and CAs the ones in use. (Without it the retired
    /// CA stays trusted after `rotate-ca --finish`; `ikev2-cert` still refused its certificate, by its
    /// `cacerts` constraint, "constraint check failed: peer not authenticated by CA". Now the chain fails.)
    @Test(
        "Revoked and removed users: the rollout ends their tunnels and their reconnects are refused (strongSwan 5.9 node)",
        .ansible)
    func revocationTakesEffectOnTheLiveNode() async throws {
        try await Subprocess.onOwnExecutor { try await revocationScenario(build: .host) }
    }

    @Test(
        "Revoked and removed users: the rollout ends their tunnels and their reconnects are refused (strongSwan 6.0 node)",
        .ansible,
        .strongSwan6)
    func revocationTakesEffectOnTheLiveNode6() async throws {
        try await Subprocess.onOwnExecutor { try await revocationScenario(build: .trixie) }
    }

    func revocationScenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(build: build, label: "revocation-fleet")
        defer { fleet.teardown() }
        let (lab, n1, dir, out) = (fleet.lab, fleet.n1, fleet.dir, fleet.out)
        func vpnprov(_ arguments: [String]) throws { try fleet.vpnprov(arguments) }
        func generate(_ version: Int) throws { try fleet.generate(Self.revocationInventory(version: version)) }
        func rollout(_ what: String) async throws -> ProgramResult { try await fleet.rollout(what) }
        /// The node's IKE SAs as `swanctl --list-sas --pretty` prints them (hostile identities included).
        func listing() throws -> String {
            let result = try lab.swanctl(n1, ["--list-sas", "--pretty"])
            guard result.succeeded else { throw HarnessError("list-sas on n1: \(result)") }
            return result.stdout
        }

        let daemon = try lab.swanctl(n1, ["--version", "--daemon"])
        #expect(daemon.stdout.contains(build.version), "n1 runs charon \(build.version): \(daemon)")

        try generate(1)
        _ = try await rollout("v1")

        // Every user connects with the profile vpnprov wrote, copied away (later runs remove or replace it).
        let kept = dir.appendingPathComponent("profiles")
        try FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
        struct User {
            var name: String
            var service: String
            var presented: String
        }
        let users = [
            User(name: "ann", service: "ikev2-eap", presented: "remote-eap-id = ann"),
            User(name: "bob", service: "ikev2-cert", presented: "remote-id = bob@acme"),
            User(name: "carol", service: "ikev2-cert", presented: "remote-id = CN=carol, O=acme"),
            User(name: "dave", service: "ikev2-cert", presented: "remote-id = O=acme, CN=dave@acme"),
            User(name: "eve", service: "ikev2-cert", presented: "remote-id = O=acme, CN=eve {"),
            User(name: "frank", service: "ikev2-cert", presented: "remote-id = frank@acme"),
            User(name: "gina", service: "ikev2-eap", presented: "remote-eap-id = gina"),
        ]
        var clients: [String: Charon] = [:]
        for user in users {
            let copy = kept.appendingPathComponent(user.name)
            try FileManager.default.copyItem(
                at: out.appendingPathComponent("clients/\(user.name)/linux/swanctl"), to: copy)
            let conf = copy.appendingPathComponent("swanctl.conf").path
            if user.name == "dave" {
                // dave's client sends his certificate's subject instead of its e-mail SAN.
                let text = try String(contentsOfFile: conf, encoding: .utf8)
                let edited = text.replacingOccurrences(of: "id = \"dave@acme\"", with: "id = \"O=acme, CN=dave@acme\"")
                try #require(edited != text, "dave's profile names his identity")
                try edited.write(toFile: conf, atomically: true, encoding: .utf8)
            }
            let client = try lab.addClient("\(user.name)-n1")
            try client.loadAllCleanly(confFile: conf)
            if user.name == "eve" {
                // The harness reads the client's SAs from `--list-sas --raw`, which an identity holding "{"
                // breaks; the node's listing below shows eve's SA.
                let result = try client.initiate(child: "n1-ikev2-cert", ike: "n1-ikev2-cert", timeout: .seconds(20))
                try #require(result.succeeded, "\(build): eve -> n1: \(result)\n\(lab.log(n1))")
            } else {
                _ = try Self.connect(lab, client, label: "\(user.name)-n1", node: n1, service: user.service)
            }
            clients[user.name] = client
        }
        let before = try listing()
        for user in users {
            #expect(
                before.contains("    \(user.presented)\n"),
                "\(build): \(user.name)'s IKE SA on n1 presents \(user.presented)")
        }
        let staying = try lab.securityAssociations(n1).filter { $0.remoteEAPID == "ann" || $0.remoteID == "frank@acme" }
        #expect(staying.count == 2, "\(build): ann's and frank's IKE SAs")

        // Every revocation path at once: `vpnprov revoke bob`, dave marked revoked, carol, eve and gina removed.
        try vpnprov(["revoke", "bob"])
        try generate(2)
        let revoked = try await rollout("after the revocations")
        let after = try listing()
        for user in users where !["ann", "frank"].contains(user.name) {
            #expect(!after.contains("    \(user.presented)\n"), "\(build): \(user.name)'s IKE SA must be gone from n1")
        }
        let stayed = try lab.securityAssociations(n1)
        for sa in staying {
            #expect(
                stayed.contains { $0.uniqueID == sa.uniqueID },
                "\(build): \(sa.remoteEAPID ?? sa.remoteID)'s tunnel must stay up")
        }
        #expect(!revoked.output.contains("failed=1"))

        // The revoked clients initiate again with the certificates they hold: refused, because revoked.
        for name in ["bob", "carol", "dave", "eve"] {
            let client = try #require(clients[name])
            _ = try? client.terminate(ike: "n1-ikev2-cert", timeout: .seconds(3))
            let mark = lab.log(n1).utf8.count
            let retry = try client.initiate(child: "n1-ikev2-cert", ike: "n1-ikev2-cert", timeout: .seconds(10))
            let log = NodeUnderTest.since(mark, lab.log(n1))
            #expect(!retry.succeeded, "\(build): \(name) reconnected with a revoked certificate:\n\(log)")
            #expect(log.contains("certificate was revoked"), "\(build): \(name) refused, but not as revoked:\n\(log)")
        }
        let gina = try #require(clients["gina"])
        _ = try? gina.terminate(ike: "n1-ikev2-eap", timeout: .seconds(3))
        #expect(
            !(try gina.initiate(child: "n1-ikev2-eap", ike: "n1-ikev2-eap", timeout: .seconds(10))).succeeded,
            "\(build): gina reconnected")

        // rotate-ca, rollout; --finish, rollout: frank's certificate from the retired CA is refused at once.
        try vpnprov(["rotate-ca"])
        _ = try await rollout("rotate-ca")
        try vpnprov(["rotate-ca", "--finish"])
        _ = try await rollout("rotate-ca --finish")
        let frank = try #require(clients["frank"])
        _ = try? frank.terminate(ike: "n1-ikev2-cert", timeout: .seconds(3))
        let mark = lab.log(n1).utf8.count
        let old = try frank.initiate(child: "n1-ikev2-cert", ike: "n1-ikev2-cert", timeout: .seconds(10))
        let log = NodeUnderTest.since(mark, lab.log(n1))
        #expect(!old.succeeded, "\(build): a certificate of the retired CA was accepted after --finish:\n\(log)")
        #expect(
            log.contains("no trusted") && log.contains("public key found"),
            "\(build): refused, but not for its CA:\n\(log)")
        // What the rollout loaded works: frank's new profile and ann's password (secrets were cleared and reloaded).
        let fresh = try lab.addClient("frank-new")
        try fresh.loadAllCleanly(confFile: out.appendingPathComponent("clients/frank/linux/swanctl/swanctl.conf").path)
        _ = try Self.connect(lab, fresh, label: "frank-new", node: n1, service: "ikev2-cert")
        let ann = try #require(clients["ann"])
        _ = try? ann.terminate(ike: "n1-ikev2-eap", timeout: .seconds(3))
        _ = try Self.connect(lab, ann, label: "ann-n1", node: n1, service: "ikev2-eap")
    }

    /// A service added to a running node: n1 offers ikev2-eap, then ikev2-cert too, which the generated
    /// swanctl.conf puts first. charon keeps a connection it loads again in its place and appends a new one,
    /// so without the role's reordering it held ikev2-eap before ikev2-cert after the rollout, and a
    /// certificate client (who matches both equally, `%any` remote identity) was tried against ikev2-eap
    /// first: AUTH_FAILED until charon restarted.
    static func addedServiceInventory(cert: Bool) -> String {
        """
        vpnprov: 1
        name: acme
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.82.0.0/24
            services: [\(cert ? "ikev2-cert, " : "")ikev2-eap]
        users:
          ann:
            password: gen
        \(cert ? "  bob:\n    cert: true\n" : "")
        """
    }

    @Test(
        "A service added to a running node: charon holds the connections in the generated order, a certificate client connects",
        .ansible)
    func anAddedServiceKeepsTheGeneratedOrder() async throws {
        try await Subprocess.onOwnExecutor { try await addedServiceScenario(build: .host) }
    }

    func addedServiceScenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(build: build, label: "added-service-fleet")
        defer { fleet.teardown() }
        let (lab, n1, out) = (fleet.lab, fleet.n1, fleet.out)
        func generate(cert: Bool) throws { try fleet.generate(Self.addedServiceInventory(cert: cert)) }
        func rollout(_ what: String) async throws -> ProgramResult { try await fleet.rollout(what) }
        /// The connections n1's charon holds, in the order it tries them.
        func held() throws -> [String] {
            let result = try lab.swanctl(n1, ["--list-conns", "--raw"])
            guard result.succeeded else { throw HarnessError("list-conns on n1: \(result)") }
            return result.stdout.split(separator: "\n").compactMap { line in
                guard let open = line.range(of: "list-conn event {") else { return nil }
                return line[open.upperBound...].split(separator: " ").first.map(String.init)
            }
        }

        try generate(cert: false)
        _ = try await rollout("with ikev2-eap")
        #expect(try held() == ["ikev2-eap"])
        // ann's tunnel is up across the next rollout.
        let ann = try lab.addClient("ann-n1")
        try ann.loadAllCleanly(confFile: out.appendingPathComponent("clients/ann/linux/swanctl/swanctl.conf").path)
        _ = try Self.connect(lab, ann, label: "ann-n1", node: n1, service: "ikev2-eap")
        let annSA = try #require(try lab.securityAssociations(n1).first { $0.remoteEAPID == "ann" })

        try generate(cert: true)
        _ = try await rollout("with ikev2-cert added")
        #expect(try held() == ["ikev2-cert", "ikev2-eap"], "charon's order after adding ikev2-cert")
        #expect(
            try lab.securityAssociations(n1).contains { $0.uniqueID == annSA.uniqueID },
            "ann's tunnel must stay up while the connections are loaded again")
        let bob = try lab.addClient("bob-n1")
        try bob.loadAllCleanly(confFile: out.appendingPathComponent("clients/bob/linux/swanctl/swanctl.conf").path)
        _ = try Self.connect(lab, bob, label: "bob-n1", node: n1, service: "ikev2-cert")
        // A third rollout changes nothing: the order holds.
        let third = try await rollout("again")
        #expect(try held() == ["ikev2-cert", "ikev2-eap"])
        #expect(
            Self.recap(third)["n1"]?.changed == 0, "a rollout with nothing new changed n1: \(third.stdout.suffix(2000))"
        )
    }

}
