import Foundation
import Testing

/// A node whose certificate comes from ACME (issue 38): the generated deploy/'s vpnprov_node role, run by a
/// real ansible-playbook over SSH, obtains it with the node's lego from a real ACME server (Pebble, on a
/// server host of the lab that resolves the node's name to its lab address and validates HTTP-01 on the
/// node's port 80), installs it for the node's charon, leaves it alone on an unchanged rollout, renews it
/// on demand without ending a live tunnel, and keeps it when a renewal fails.
@Suite struct AcmeRolloutTests {
    static let domain = "n1.vpn.test"
    /// The role writes /var/lib/vpnprov/acme (lego's state) and /usr/local/lib/vpnprov/acme-renew: the
    /// node's own, not the host's.
    static let nodeViews = ["/var/lib": ["vpnprov"], "/usr/local/lib": ["vpnprov"]]
    static let script = "/usr/local/lib/vpnprov/acme-renew"

    static let inventory = """
        vpnprov: 1
        name: lab
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        nodes:
          \(domain):
            address: 192.0.2.1
            pool: 10.81.0.0/24
            services: [ikev2-eap]
        users:
          ann:
            password: gen

        """

    /// What `vpnprov generate` will write into the node's host_vars for `acme:` in the inventory (the
    /// generator side of issue 38); until then the test passes it as extra variables, and writes the
    /// ca-bundle.pem the generator will copy. With the generator: put `acme:` (directory, email,
    /// ca_bundle) and `certificate: acme` into `inventory`, drop `acmeVariables` and `writeCABundle`.
    static func acmeVariables(_ pebble: PebbleServer) -> [String: Any] {
        [
            "vpnprov_acme": [
                "directory": pebble.directoryURL, "email": "ops@vpn.test", "domain": domain, "key_type": "rsa2048",
                "renew_days": 30, "ca_bundle": true,
            ] as [String: Any]
        ]
    }

    static func writeCABundle(_ pebble: PebbleServer, fleet: OneNodeFleet) throws {
        let dir = fleet.out.appendingPathComponent("servers/\(domain)/acme")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: pebble.httpsCA, toPath: dir.appendingPathComponent("ca-bundle.pem").path)
    }

    static func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1
    }

    static func openssl(_ arguments: [String]) throws -> CommandResult {
        try Command.check(StrongSwanEnvironment.openSSLPath, arguments)
    }

    /// The serial number of the PEM certificate at `path`, as openssl prints it (`serial=…`).
    static func serial(_ path: String) throws -> String {
        try openssl(["x509", "-in", path, "-noout", "-serial"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // No `.timeLimit`: see AnsibleRolloutTests. Every command has a deadline of its own.
    @Test(
        .ansible,
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"))
    func nodeObtainsKeepsRenewsAndSurvivesAFailedRenewalOfItsACMECertificate() async throws {
        try await Command.onOwnExecutor { try await scenario(build: .host) }
    }

    @Test(
        .ansible, .strongSwan6,
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"))
    func nodeObtainsKeepsRenewsAndSurvivesAFailedRenewalOfItsACMECertificate6() async throws {
        try await Command.onOwnExecutor { try await scenario(build: .trixie) }
    }

    func scenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(
            build: build, label: "acme-fleet", node: Self.domain, views: Self.nodeViews)
        defer { fleet.teardown() }
        let (lab, n1) = (fleet.lab, fleet.n1)
        let daemon = try lab.swanctl(n1, ["--version", "--daemon"])
        #expect(daemon.stdout.contains(build.version), "n1 runs charon \(build.version): \(daemon)")
        let pebble = try PebbleServer.start(in: lab, hosts: [Self.domain: n1.address])
        defer { pebble.stop() }

        try fleet.generate(Self.inventory)
        try Self.writeCABundle(pebble, fleet: fleet)
        let variables = fleet.dir.appendingPathComponent("acme-vars.json")
        try JSONSerialization.data(withJSONObject: Self.acmeVariables(pebble), options: [.sortedKeys])
            .write(to: variables)
        let acme = ["-e", "@" + variables.path]

        let root = fleet.dir.appendingPathComponent("pebble-root.pem").path
        try pebble.issuingRoot().write(toFile: root, atomically: true, encoding: .utf8)
        let intermediate = try pebble.issuingIntermediate()
        let leaf = n1.swanctlDirectory + "/x509/vpnprov-acme.pem"
        let chain = n1.swanctlDirectory + "/x509ca/vpnprov-acme-1.pem"
        let key = n1.swanctlDirectory + "/private/vpnprov-acme.pem"
        let reported = fleet.out.appendingPathComponent("rollout/acme/\(Self.domain).pem").path

        // (a) The first rollout obtains the certificate from Pebble, before the connections are loaded.
        let first = try await fleet.rollout("first", extra: acme)
        #expect((AnsibleRolloutTests.recap(first)[Self.domain]?.changed ?? 0) > 0, "first rollout: \(first.stdout)")
        #expect(try Self.mode(leaf) == 0o644)
        #expect(try Self.mode(chain) == 0o644)
        #expect(try Self.mode(key) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: n1.swanctlDirectory + "/x509ca/vpnprov-acme-2.pem"))
        let state = try lab.run(n1, ["/usr/bin/stat", "-c", "%a", "/var/lib/vpnprov/acme"])
        #expect(state.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "700", "lego's directory: \(state)")
        // The chain is Pebble's: the leaf verifies against its root through the installed intermediate,
        // which is the one Pebble serves; the leaf names the node; the key is the leaf's.
        #expect(try String(contentsOfFile: chain, encoding: .utf8) == intermediate)
        let verify = try Self.openssl(["verify", "-CAfile", root, "-untrusted", chain, leaf])
        #expect(verify.stdout.contains(": OK"), "\(verify)")
        let san = try Self.openssl(["x509", "-in", leaf, "-noout", "-ext", "subjectAltName"])
        #expect(san.stdout.contains("DNS:\(Self.domain)"), "\(san)")
        let certificateKey = try Self.openssl(["x509", "-in", leaf, "-noout", "-pubkey"]).stdout
        #expect(try Self.openssl(["pkey", "-in", key, "-pubout"]).stdout == certificateKey, "the key is the leaf's")
        // charon holds the leaf with its key, and the chain.
        let listed = try lab.swanctl(n1, ["--list-certs"])
        #expect(listed.succeeded, "\(listed)")
        #expect(listed.stdout.contains("altNames:  \(Self.domain)"), "\(listed.stdout)")
        #expect(listed.stdout.contains("has private key"), "\(listed.stdout)")
        #expect(listed.stdout.contains("subject:  \"CN=Pebble Intermediate CA"), "\(listed.stdout)")
        let issued = try Self.serial(leaf)
        #expect(listed.stdout.contains(Self.swanctlSerial(issued)), "charon holds serial \(issued): \(listed.stdout)")
        // The controller gets the certificate (public), never the key.
        #expect(FileManager.default.contents(atPath: reported) == FileManager.default.contents(atPath: leaf))
        #expect(try Self.mode(reported) == 0o644)
        let keyBody = try Self.keyBody(key)
        #expect(!first.output.contains(keyBody), "the rollout's output shows the private key")
        #expect(try !Self.tree(fleet.out, contains: keyBody), "the private key reached the controller")

        // (b) An unchanged rollout changes nothing and obtains no new certificate.
        let second = try await fleet.rollout("second", extra: acme)
        #expect(AnsibleRolloutTests.recap(second)[Self.domain]?.changed == 0, "second rollout: \(second.stdout)")
        #expect(try Self.serial(leaf) == issued, "the unchanged rollout obtained a new certificate")

        // (c) A forced renewal (what an operator runs) installs a new certificate; the live tunnel stays.
        let client = try lab.addClient("ann")
        let profile = fleet.out.appendingPathComponent("clients/ann/linux/swanctl/swanctl.conf").path
        _ = try client.loadAllCleanly(confFile: profile)
        // The profile names the connection after the node, dots replaced.
        let connection = "n1_vpn_test-ikev2-eap"
        let initiated = try client.initiate(child: connection, ike: connection, timeout: .seconds(20))
        try #require(initiated.succeeded, "ann -> n1: \(initiated)\n--- node log ---\n\(lab.log(n1))")
        let before = try lab.securityAssociations(n1).map(\.uniqueID)
        try #require(before.count == 1, "ann's tunnel is up")
        let renewal = try lab.run(n1, [Self.script, "--force"])
        #expect(renewal.succeeded && renewal.stdout.hasPrefix("installed"), "forced renewal: \(renewal)")
        let renewed = try Self.serial(leaf)
        #expect(renewed != issued, "the forced renewal kept serial \(issued)")
        #expect(try Self.openssl(["verify", "-CAfile", root, "-untrusted", chain, leaf]).succeeded)
        let relisted = try lab.swanctl(n1, ["--list-certs"]).stdout
        #expect(relisted.contains(Self.swanctlSerial(renewed)), "charon holds serial \(renewed): \(relisted)")
        #expect(!relisted.contains(Self.swanctlSerial(issued)), "charon still holds serial \(issued): \(relisted)")
        #expect(try lab.securityAssociations(n1).map(\.uniqueID) == before, "the renewal ended ann's tunnel")
        let vip = try #require(try client.virtualIPs(ike: connection).first { !$0.contains(":") })
        #expect(
            try lab.ping(fromClient: "ann", source: vip, to: n1.innerAddress).succeeded,
            "ann's tunnel after the renewal")

        // (d) With the node's port 80 closed, a forced renewal fails with lego's reason, the play fails,
        // and the node keeps its certificate.
        for command in [
            "add table inet acmetest",
            "add chain inet acmetest input { type filter hook input priority -10; policy accept; }",
            "add rule inet acmetest input tcp dport 80 reject with tcp reset",
        ] {
            let result = try lab.run(n1, ["/usr/sbin/nft", command])
            try #require(result.succeeded, "nft \(command): \(result)")
        }
        let blocked = try await fleet.attemptRollout(
            extra: acme + ["-e", "vpnprov_acme_force_renewal=true"])
        #expect(!blocked.succeeded, "the rollout succeeded with port 80 closed: \(blocked.stdout)")
        #expect(AnsibleRolloutTests.recap(blocked)[Self.domain]?.failed == 1, "\(blocked.stdout)")
        #expect(
            blocked.output.contains("lego could not obtain a certificate for \(Self.domain)"), "\(blocked.output)")
        #expect(blocked.output.contains("urn:ietf:params:acme:error:connection"), "lego's reason: \(blocked.output)")
        #expect(!blocked.output.contains(keyBody), "the failed rollout's output shows the private key")
        #expect(try Self.serial(leaf) == renewed, "the failed renewal replaced the certificate")
        #expect(try lab.swanctl(n1, ["--list-certs"]).stdout.contains(Self.swanctlSerial(renewed)))
        #expect(try lab.securityAssociations(n1).map(\.uniqueID) == before, "the failed renewal ended ann's tunnel")
    }

    /// openssl's `serial=0A1B…` as swanctl --list-certs prints it (`serial:    0a:1b:…`).
    static func swanctlSerial(_ openssl: String) -> String {
        var hex = openssl.replacingOccurrences(of: "serial=", with: "").lowercased()
        if hex.count % 2 == 1 { hex = "0" + hex }
        var pairs: [String] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            pairs.append(String(hex[index..<next]))
            index = next
        }
        return "serial:    " + pairs.joined(separator: ":")
    }

    /// A line from the middle of the PEM key's base64 (what a leak would show), never printed.
    static func keyBody(_ path: String) throws -> String {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter {
            !$0.hasPrefix("-----")
        }
        guard lines.count > 2 else { throw HarnessError("\(path) holds no PEM key") }
        return String(lines[lines.count / 2])
    }

    /// Whether any file below `dir` holds `text`.
    static func tree(_ dir: URL, contains text: String) throws -> Bool {
        let fm = FileManager.default
        for case let path as String in fm.enumerator(atPath: dir.path)?.allObjects ?? [] {
            let full = dir.appendingPathComponent(path).path
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if let data = fm.contents(atPath: full), String(decoding: data, as: UTF8.self).contains(text) {
                return true
            }
        }
        return false
    }
}
