import Foundation
import Glibc
import Testing

/// The generated deploy/ (inventory, site.yml, vpnprov_node role) run by a real ansible-playbook over SSH
/// against two nodes, each a network namespace with its own /etc, sshd and charon (see `AnsibleLab`), and
/// real strongSwan clients connecting through the nodes after every rollout.
@Suite struct AnsibleRolloutTests {
    /// Role variables of every run here: the lab's charons are started by the harness, not by systemd,
    /// and the packages are installed already; the nodes' Python is the system one.
    static let labVariables = [
        "-e", "vpnprov_manage_service=false", "-e", "vpnprov_install_packages=false",
        "-e", "ansible_python_interpreter=/usr/bin/python3",
    ]

    /// Both nodes in one batch (`vpnprov_serial`, docs/deploy.md) for the runs that are not about the
    /// node-by-node order: the rollout test is the run's longest, and its two nodes' module runs then go on
    /// side by side. The run with a broken node keeps the default of one node at a time, which it proves.
    static let bothNodesAtOnce = ["-e", "vpnprov_serial=2"]

    /// n1 starts with IKEv1 aggressive mode (so it gets strongswan.d/vpnprov.conf) and drops it later.
    static func inventory(version: Int) -> String {
        var text = """
            vpnprov: 1
            name: lab
            defaults:
              network:
                ipsec: libipsec   # the lab's charons run kernel-libipsec
            monitoring:         # the role's exporter tasks, rolled out, repeated, checked and retired here too
              from: [192.0.2.254]
            nodes:
              n1:
                address: 192.0.2.1
                region: lab-a
                pool: 10.81.0.0/24

            """
        text +=
            version == 1
            ? "    services: [ikev2-eap, ipsec-xauth-psk]\n    psk: gen\n    group: labgroup\n"
            : "    services: [ikev2-eap]\n"
        text += """
              n2:
                address: 192.0.2.2
                region: lab-b
                pool: 10.82.0.0/24
                services: [ikev2-eap]
            users:
              ann:
                password: gen
              bob:
                password: gen

            """
        if version >= 2 { text += "    revoked: true\n  dave:\n    password: gen\n" }
        if version >= 3 {
            text += "  erin:\n    password: gen\n"
            // And n1's MSS: a change of its nftables table for check mode to show.
            text = text.replacingOccurrences(
                of: "    pool: 10.81.0.0/24\n", with: "    pool: 10.81.0.0/24\n    network: {mss: 1300}\n")
        }
        return text
    }

    struct Fleet {
        let inventory: String
        let out: URL
        let state: URL

        func generate(version: Int) throws {
            try AnsibleRolloutTests.inventory(version: version).write(
                toFile: inventory, atomically: true, encoding: .utf8)
            let result = try VPNProvBinary.run(["generate", inventory, "--out", out.path, "--state", state.path])
            guard result.succeeded else { throw HarnessError("generate v\(version) failed: \(result)") }
        }

        /// Every generated secret in the state, as written and as strongSwan's `0s` base64 form.
        func secrets() throws -> Set<String> {
            let json = try JSONSerialization.jsonObject(
                with: Data(contentsOf: state.appendingPathComponent("secrets.json")))
            var found = Set<String>()
            for case let table as [String: String] in (json as? [String: Any] ?? [:]).values {
                for secret in table.values {
                    found.insert(secret)
                    found.insert(Data(secret.utf8).base64EncodedString())
                }
            }
            return found
        }

        var playbookArguments: [String] {
            [
                "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                out.appendingPathComponent("deploy/site.yml").path,
            ]
        }
    }

    /// path (relative to the node's /etc overlay) -> (mode, SHA-free contents): the node's files as they are.
    static func snapshot(_ node: AnsibleLab.Node) throws -> [String: String] {
        var result: [String: String] = [:]
        for top in ["swanctl", "strongswan.d", "sysctl.d", "vpnprov"] {
            let dir = node.etc + "/" + top
            for case let path as String in FileManager.default.enumerator(atPath: dir)?.allObjects ?? [] {
                let full = dir + "/" + path
                let attributes = try FileManager.default.attributesOfItem(atPath: full)
                let mode = (attributes[.posixPermissions] as? Int).map { String($0, radix: 8) } ?? "?"
                let isFile = (attributes[.type] as? FileAttributeType) == .typeRegular
                result[top + "/" + path] =
                    mode + ":" + (isFile ? (try String(contentsOfFile: full, encoding: .utf8)) : "dir")
            }
        }
        return result
    }

    /// Connects `label`'s client charon (already holding the user's generated Linux profile) to `node` and
    /// pings the node's inner address through the tunnel from the virtual IP.
    static func connect(
        _ lab: AnsibleLab, _ client: Charon, label: String, node: AnsibleLab.Node, service: String = "ikev2-eap"
    ) throws -> String {
        let name = "\(node.name)-\(service)"
        let result = try client.initiate(child: name, ike: name, timeout: .seconds(20))
        guard result.succeeded else {
            throw HarnessError(
                "\(label) -> \(node.name): initiate failed: \(result)\n--- node log ---\n\(lab.log(node))")
        }
        let vip = try #require(try client.virtualIPs(ike: name).first { !$0.contains(":") }, "\(label): no virtual IP")
        let ping = try lab.ping(fromClient: label, source: vip, to: node.innerAddress)
        #expect(ping.succeeded, "\(label) -> \(node.name): ping through the tunnel: \(ping)")
        return vip
    }

    /// The node's file at `path` (below its /etc overlay) has the content and mode of the generated
    /// `servers/<node>/<path>`.
    static func expectInstalledAsGenerated(_ path: String, on node: AnsibleLab.Node, fleet: Fleet) throws {
        let source = fleet.out.appendingPathComponent("servers/\(node.name)/\(path)").path
        let target = node.etc + "/" + path
        #expect(
            FileManager.default.contents(atPath: target) == FileManager.default.contents(atPath: source),
            "\(node.name): \(path)")
        let mode = try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int
        let expected = try FileManager.default.attributesOfItem(atPath: source)[.posixPermissions] as? Int
        #expect(mode == expected, "\(node.name): \(path) has mode \(String(mode ?? 0, radix: 8))")
    }

    static func recap(_ result: CommandResult) -> [String: PlayRecap] { PlayRecap.parse(result.stdout) }

    // No `.timeLimit` on the rollout tests: it runs the body in a child task, queued behind every test
    // already waiting for one of the few threads Swift Testing runs tests on (a minute into the run), and
    // these are the run's longest tests. Every command they run has a deadline of its own.
    @Test(.ansible)
    func rollsOutRevokesLiveTunnelsIsIdempotentAndStopsAtABrokenNode() async throws {
        try await Command.onOwnExecutor { try await rolloutScenario() }
    }

    func rolloutScenario() async throws {
        try StrongSwanEnvironment.require()
        try AnsibleTools.require()
        // The monitoring tasks write /etc/default/prometheus-node-exporter, /var/lib/prometheus and the collector.
        let lab = try AnsibleLab.start(
            nodes: ["n1", "n2"], views: ["/var/lib": ["prometheus"], "/usr/local/lib": ["vpnprov"]], etc: ["default"])
        defer { lab.teardown() }
        let dir = try Scratch.makeDirectory("fleet")
        let fleet = Fleet(
            inventory: dir.appendingPathComponent("fleet.yaml").path, out: dir.appendingPathComponent("out"),
            state: dir.appendingPathComponent("state"))
        let n1 = try lab.node("n1")
        let n2 = try lab.node("n2")

        // An operator's own file, which no rollout may touch.
        let operatorFile = "swanctl/conf.d/local.conf"
        let operatorText = "# the operator's own settings, not vpnprov's\n"
        for node in [n1, n2] {
            try operatorText.write(toFile: node.etc + "/" + operatorFile, atomically: true, encoding: .utf8)
        }

        // An operator's own nftables table, which no rollout may touch.
        for node in [n1, n2] {
            try NetworkPair.loadNftables(
                "add table inet operator\nadd chain inet operator mine { type filter hook input priority 10; }\n",
                in: node.namespace)
        }

        // 1. First rollout, verbose and with diffs: every generated file lands with its mode, nothing secret is
        // printed.
        try fleet.generate(version: 1)
        let secretsV1 = try fleet.secrets()
        let first = try await lab.playbook(
            fleet.playbookArguments + Self.labVariables + Self.bothNodesAtOnce + ["-v", "--diff"])
        try #require(first.succeeded, "first rollout: \(first)")
        // Compared as a Bool, so a failure never prints the secret.
        let firstLeaks = secretsV1.contains { first.output.contains($0) }
        #expect(!firstLeaks, "a secret reached the playbook output")
        for node in [n1, n2] {
            let dir = fleet.out.appendingPathComponent("servers/\(node.name)/swanctl")
            let key = try String(contentsOf: dir.appendingPathComponent("private/\(node.name).key"), encoding: .utf8)
            let certificate = try String(
                contentsOf: dir.appendingPathComponent("x509/\(node.name).pem"), encoding: .utf8)
            // An EC key's last PEM line holds the public key, which the certificate (shown by --diff) holds too.
            for line in key.split(separator: "\n") where !line.hasPrefix("-----") && !certificate.contains(line) {
                let leaked = first.output.contains(line)
                #expect(!leaked, "\(node.name)'s private key reached the playbook output")
            }
        }
        for node in [n1, n2] {
            #expect(Self.recap(first)[node.name]?.failed == 0)
            let generated = fleet.out.appendingPathComponent("servers/\(node.name)")
            // network/ goes to /etc/sysctl.d and /etc/vpnprov (checked below).
            for case let path as String in FileManager.default.enumerator(atPath: generated.path)?.allObjects ?? []
            where path != "README" && !path.hasPrefix("network") {
                var isDirectory: ObjCBool = false
                guard
                    FileManager.default.fileExists(
                        atPath: generated.appendingPathComponent(path).path, isDirectory: &isDirectory),
                    !isDirectory.boolValue
                else { continue }
                try Self.expectInstalledAsGenerated(path, on: node, fleet: fleet)
            }
        }
        #expect(
            try FileManager.default.attributesOfItem(atPath: n1.etc + "/swanctl/conf.d/secrets.conf")[.posixPermissions]
                as? Int == 0o600)
        // The node forwards, and its table is loaded beside the operator's.
        for node in [n1, n2] {
            let generated = fleet.out.appendingPathComponent("servers/\(node.name)/network")
            #expect(
                FileManager.default.contents(atPath: node.etc + "/vpnprov/vpnprov.nft")
                    == FileManager.default.contents(atPath: generated.appendingPathComponent("vpnprov.nft").path),
                "\(node.name): nftables file")
            #expect(
                FileManager.default.contents(atPath: node.etc + "/sysctl.d/60-vpnprov.conf")
                    == FileManager.default.contents(atPath: generated.appendingPathComponent("60-vpnprov.conf").path),
                "\(node.name): sysctl file")
            #expect(
                try lab.run(node, ["sysctl", "-n", "net.ipv4.ip_forward"]).stdout == "1\n", "\(node.name) forwards")
            #expect(
                try lab.run(node, ["nft", "list", "table", "inet", "vpnprov"]).stdout.contains("masquerade"),
                "\(node.name): table loaded")
            #expect(
                try lab.run(node, ["nft", "list", "table", "inet", "operator"]).succeeded,
                "\(node.name): the operator's table survived")
        }
        #expect(FileManager.default.fileExists(atPath: n1.etc + "/strongswan.d/vpnprov.conf"))
        for node in [n1, n2] {
            #expect(
                FileManager.default.fileExists(atPath: node.etc + "/vpnprov/monitoring.json"),
                "\(node.name): the collector's configuration")
            #expect(try lab.run(node, ["/usr/bin/test", "-x", "/usr/local/lib/vpnprov/strongswan-metrics"]).succeeded)
        }
        let conns = try lab.swanctl(n1, ["--list-conns"])
        #expect(conns.stdout.contains("ipsec-xauth-psk-aggressive:"), "n1 runs the generated connections: \(conns)")

        // 2. Real clients: ann on both nodes, bob on n1; all stay up.
        let annClientConf = fleet.out.appendingPathComponent("clients/ann/linux/swanctl/swanctl.conf").path
        let ann1 = try lab.addClient("ann-n1")
        let ann2 = try lab.addClient("ann-n2")
        let bob1 = try lab.addClient("bob-n1")
        // The profiles are copied away: the next generate removes bob's, and a revoked user keeps what they had.
        let kept = try Scratch.makeDirectory("kept-profiles")
        try FileManager.default.copyItem(
            atPath: fleet.out.appendingPathComponent("clients/bob/linux").path,
            toPath: kept.appendingPathComponent("bob").path)
        try ann1.loadAllCleanly(confFile: annClientConf)
        try ann2.loadAllCleanly(confFile: annClientConf)
        try bob1.loadAllCleanly(confFile: kept.appendingPathComponent("bob/swanctl/swanctl.conf").path)
        let annVIP1 = try Self.connect(lab, ann1, label: "ann-n1", node: n1)
        let annVIP2 = try Self.connect(lab, ann2, label: "ann-n2", node: n2)
        _ = try Self.connect(lab, bob1, label: "bob-n1", node: n1)
        let n1Before = try lab.securityAssociations(n1)
        let annSA1 = try #require(n1Before.first { $0.remoteEAPID == "ann" }).uniqueID
        let annSA2 = try #require(try lab.securityAssociations(n2).first { $0.remoteEAPID == "ann" }).uniqueID
        #expect(n1Before.contains { $0.remoteEAPID == "bob" })

        // 3. Revoke bob (tunnel up), add dave, drop n1's IKEv1 service; generate; roll out.
        try fleet.generate(version: 2)
        // Drift on n2 since the last rollout, in two files this change leaves as they are: the certificate's
        // content and the CA certificate's mode. The role compares what is installed before it copies, and
        // must put both back.
        let drifted = ["swanctl/x509/n2.pem", "swanctl/x509ca/ca.pem"]
        try "drifted\n".write(toFile: n2.etc + "/" + drifted[0], atomically: false, encoding: .utf8)
        #expect(chmod(n2.etc + "/" + drifted[1], 0o640) == 0)
        let second = try await lab.playbook(fleet.playbookArguments + Self.labVariables + Self.bothNodesAtOnce + ["-v"])
        try #require(second.succeeded, "second rollout: \(second)")
        #expect(
            second.stdout.contains("changed: [n1] => {\"changed\": true, \"loaded\": [], \"terminated\": [\""),
            "the role ended bob's IKE SA")
        for path in drifted { try Self.expectInstalledAsGenerated(path, on: n2, fleet: fleet) }
        let secondLeaks = secretsV1.contains { second.output.contains($0) }
        #expect(!secondLeaks, "a secret reached the playbook output")
        let n1After = try lab.securityAssociations(n1)
        #expect(
            !n1After.contains { $0.remoteEAPID == "bob" }, "bob's IKE SA must be gone from n1: \(n1After.map(\.name))")
        #expect(n1After.first { $0.remoteEAPID == "ann" }?.uniqueID == annSA1, "ann's tunnel on n1 must stay up")
        #expect(
            try lab.securityAssociations(n2).first { $0.remoteEAPID == "ann" }?.uniqueID == annSA2,
            "ann's tunnel on n2 must stay up")
        #expect(try lab.ping(fromClient: "ann-n1", source: annVIP1, to: n1.innerAddress).succeeded)
        #expect(try lab.ping(fromClient: "ann-n2", source: annVIP2, to: n2.innerAddress).succeeded)
        // bob's old profile is refused now.
        _ = try? bob1.terminate(ike: "n1-ikev2-eap", timeout: .seconds(3))
        let retry = try bob1.initiate(child: "n1-ikev2-eap", ike: "n1-ikev2-eap", timeout: .seconds(10))
        #expect(!retry.succeeded, "bob reconnected after his revocation")
        // The new user connects.
        let dave1 = try lab.addClient("dave-n1")
        try dave1.loadAllCleanly(
            confFile: fleet.out.appendingPathComponent("clients/dave/linux/swanctl/swanctl.conf").path)
        _ = try Self.connect(lab, dave1, label: "dave-n1", node: n1)
        // bob's secret is gone from the node, the file vpnprov no longer writes is removed, the operator's stays.
        let bobSecrets = secretsV1.subtracting(try fleet.secrets())
        #expect(!bobSecrets.isEmpty)
        let n1Files = try Self.snapshot(n1)
        let bobSecretStayed = bobSecrets.contains { secret in n1Files.values.contains { $0.contains(secret) } }
        #expect(!bobSecretStayed, "a removed user's secret is still on n1")
        #expect(
            !FileManager.default.fileExists(atPath: n1.etc + "/strongswan.d/vpnprov.conf"),
            "a file vpnprov no longer writes stayed")
        for node in [n1, n2] {
            #expect((try? String(contentsOfFile: node.etc + "/" + operatorFile, encoding: .utf8)) == operatorText)
        }
        #expect(!(try lab.swanctl(n1, ["--list-conns"])).stdout.contains("ipsec-xauth-psk"))

        // 4. Nothing changed: nothing to do.
        let third = try await lab.playbook(fleet.playbookArguments + Self.labVariables + Self.bothNodesAtOnce)
        try #require(third.succeeded, "third rollout: \(third)")
        #expect(Self.recap(third)["n1"]?.changed == 0 && Self.recap(third)["n2"]?.changed == 0, "\(Self.recap(third))")
        for node in [n1, n2] {
            #expect(
                try lab.run(node, ["nft", "list", "table", "inet", "operator"]).succeeded,
                "\(node.name): the operator's table survived")
        }

        // 5. Check mode on a changed tree: it reports changes and changes nothing.
        try fleet.generate(version: 3)
        let before = (try Self.snapshot(n1), try Self.snapshot(n2))
        let check = try await lab.playbook(
            fleet.playbookArguments + Self.labVariables + Self.bothNodesAtOnce + ["--check", "--diff"])
        try #require(check.succeeded, "check mode: \(check)")
        #expect((Self.recap(check)["n1"]?.changed ?? 0) > 0, "check mode reports what it would change")
        #expect(
            check.output.contains("+\t\tip saddr @pool4 tcp flags syn / syn,rst tcp option maxseg size > 1300"),
            "--diff shows n1's new MSS rule")
        #expect(
            try lab.run(n1, ["nft", "list", "table", "inet", "vpnprov"]).stdout.contains("maxseg size > 1360"),
            "check mode changed the loaded table")
        let secretsV3 = try fleet.secrets()
        let checkLeaks = secretsV3.contains { check.output.contains($0) }
        #expect(!checkLeaks, "a secret reached the --diff output")
        // Compared as Bools: the snapshots hold the nodes' secrets.
        let unchangedByCheck = try Self.snapshot(n1) == before.0 && (try Self.snapshot(n2)) == before.1
        #expect(unchangedByCheck, "check mode changed a node")

        // 6. A broken node: n1's charon is down. The rollout fails there and never reaches n2.
        lab.stopCharon(n1)
        let broken = try await lab.playbook(fleet.playbookArguments + Self.labVariables)
        #expect(!broken.succeeded, "the rollout must fail")
        #expect(Self.recap(broken)["n1"]?.failed == 1, "\(Self.recap(broken))")
        #expect((Self.recap(broken)["n2"]?.ok ?? 0) == 0, "n2 must not be touched: \(Self.recap(broken))")
        #expect(
            broken.output.contains("NO MORE HOSTS LEFT") || broken.output.contains("maximum failure"),
            "\(broken.output.suffix(2000))")
        let n2Untouched = try Self.snapshot(n2) == before.1
        #expect(n2Untouched, "n2 changed although the rollout stopped at n1")
        #expect(broken.output.contains("fatal: [n1]"))

        // 7. n2 leaves the fleet: retire.yml takes vpnprov off it and leaves the operator's things.
        let retireArguments = [
            "-i", fleet.out.appendingPathComponent("deploy/inventory.yml").path,
            fleet.out.appendingPathComponent("deploy/retire.yml").path, "--limit", "n2",
        ]
        let retired = try await lab.playbook(retireArguments + Self.labVariables)
        try #require(retired.succeeded, "retire: \(retired)")
        #expect(!(try lab.run(n2, ["nft", "list", "table", "inet", "vpnprov"])).succeeded, "n2's table is gone")
        #expect(try lab.run(n2, ["nft", "list", "table", "inet", "operator"]).succeeded, "the operator's table stayed")
        for path in [
            "vpnprov/vpnprov.nft", "sysctl.d/60-vpnprov.conf", "swanctl/conf.d/secrets.conf", "swanctl/private/n2.key",
            "vpnprov/monitoring.json",
        ] {
            #expect(!FileManager.default.fileExists(atPath: n2.etc + "/" + path), "n2: \(path) stayed")
        }
        #expect(
            try lab.run(n2, ["/usr/bin/test", "!", "-e", "/usr/local/lib/vpnprov/strongswan-metrics"]).succeeded,
            "n2: the metrics collector stayed")
        #expect((try? String(contentsOfFile: n2.etc + "/" + operatorFile, encoding: .utf8)) == operatorText)
        #expect(
            !(try lab.swanctl(n2, ["--list-conns"])).stdout.contains("ikev2-eap"),
            "n2's charon still has vpnprov's connections")
        let retiredAgain = try await lab.playbook(retireArguments + Self.labVariables)
        #expect(
            retiredAgain.succeeded && Self.recap(retiredAgain)["n2"]?.changed == 0,
            "retire twice: \(Self.recap(retiredAgain))")
    }

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
        try await Command.onOwnExecutor { try await revocationScenario(build: .host) }
    }

    @Test(
        "Revoked and removed users: the rollout ends their tunnels and their reconnects are refused (strongSwan 6.0 node)",
        .ansible,
        .strongSwan6)
    func revocationTakesEffectOnTheLiveNode6() async throws {
        try await Command.onOwnExecutor { try await revocationScenario(build: .trixie) }
    }

    func revocationScenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(build: build, label: "revocation-fleet")
        defer { fleet.teardown() }
        let (lab, n1, dir, out) = (fleet.lab, fleet.n1, fleet.dir, fleet.out)
        func vpnprov(_ arguments: [String]) throws { try fleet.vpnprov(arguments) }
        func generate(_ version: Int) throws { try fleet.generate(Self.revocationInventory(version: version)) }
        func rollout(_ what: String) async throws -> CommandResult { try await fleet.rollout(what) }
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
        try await Command.onOwnExecutor { try await addedServiceScenario(build: .host) }
    }

    func addedServiceScenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(build: build, label: "added-service-fleet")
        defer { fleet.teardown() }
        let (lab, n1, out) = (fleet.lab, fleet.n1, fleet.out)
        func generate(cert: Bool) throws { try fleet.generate(Self.addedServiceInventory(cert: cert)) }
        func rollout(_ what: String) async throws -> CommandResult { try await fleet.rollout(what) }
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

    @Test(
        "A node whose strongSwan cannot compute ML-KEM: the rollout of a quantum-safe configuration stops with the reason before anything is loaded",
        .ansible)
    func aQuantumSafeNodeNeedsStrongSwan61() async throws {
        try await Command.onOwnExecutor {
            let fleet = try OneNodeFleet.start(build: .host, label: "quantum-safe-fleet")
            defer { fleet.teardown() }
            try fleet.generate(
                Self.addedServiceInventory(cert: false).replacingOccurrences(
                    of: "    services: [ikev2-eap]\n",
                    with: "    services: [ikev2-eap]\n    quantum_safe: {ml_kem: [mlkem768]}\n"
                ).replacingOccurrences(of: "    password: gen\n", with: "    password: gen\n    devices: [linux]\n"))
            let result = try await fleet.attemptRollout()
            #expect(!result.succeeded, "a 5.9 node took an ML-KEM configuration: \(result.stdout.suffix(2000))")
            #expect(
                result.stdout.contains("cannot compute ML-KEM")
                    && result.stdout.contains("needs strongSwan 6.1 or later"),
                "\(result.stdout.suffix(3000)) \(result.stderr.suffix(2000))")
            let held = try fleet.lab.swanctl(fleet.n1, ["--list-conns"])
            #expect(held.succeeded && held.stdout.isEmpty, "n1 loaded connections: \(held)")
        }
    }

    /// ansible-lint (production profile) finds nothing in the generated deploy/, nor in the playbook and role of
    /// an accounts database cluster (a tree of its own: the example has none).
    @Test(.ansible) func generatedDeployPassesAnsibleLint() throws {
        try AnsibleTools.require()
        guard FileManager.default.isExecutableFile(atPath: AnsibleTools.lint) else {
            throw HarnessError("ansible-lint not found at \(AnsibleTools.lint) (.ci/run installs it)")
        }
        let dir = try Scratch.makeDirectory("lint")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try VPNProvBinary.run([
            "generate", Inventories.example, "--out", dir.path + "/out", "--state", dir.path + "/state",
        ])
        try #require(result.succeeded, "\(result)")
        let cluster = dir.path + "/cluster"
        try FileManager.default.createDirectory(atPath: cluster, withIntermediateDirectories: true)
        try Self.clusterInventory.write(toFile: cluster + "/inventory.yaml", atomically: true, encoding: .utf8)
        let clusterRun = try VPNProvBinary.run(["generate", cluster + "/inventory.yaml", "--quiet"])
        try #require(clusterRun.succeeded, "\(clusterRun)")
        let lint = try Command.run(
            "/usr/bin/env",
            [
                "-C", dir.path + "/out/deploy", "PATH=\(AnsibleTools.binDirectory):/usr/bin:/bin", "HOME=\(dir.path)",
                AnsibleTools.lint, "--offline", "--profile", "production", "--nocolor", ".",
                cluster + "/out/deploy/accounts-db.yml", cluster + "/out/deploy/roles/vpnprov_accounts_db",
            ],
            timeout: .seconds(600))
        #expect(lint.succeeded, "ansible-lint: \(lint)")
    }
}

extension AnsibleRolloutTests {
    /// A RADIUS fleet whose accounts database is a pg_auto_failover cluster (docs/accounts.md).
    static let clusterInventory = """
        vpnprov: 1
        name: lint
        accounts:
          servers:
            rad-1: { address: 192.0.2.11, region: eu }
            rad-2: { address: 192.0.2.12, region: us }
          cluster:
            tls_dir: /etc/vpnprov-ops/accounts-db
            hosts:
              db-eu: { address: 192.0.2.31, region: eu }
              db-us: { address: 192.0.2.32, region: us }
              db-mon: { address: 192.0.2.30, region: ap, role: monitor }
        nodes:
          fra-1:
            address: 198.51.100.1
            region: eu
            tier: free
            pool: 10.27.1.0/24
            services: [ikev2-eap]
            accounts: radius

        """
}

/// One lab node with an inventory, output tree and state of its own (below `dir`), for the scenarios that
/// change the inventory and roll it out again. Its rollouts leave out the node's forwarding and firewall
/// (proven by the rollout test), which play no part in who may connect to the node itself: eight module
/// runs fewer per rollout.
struct OneNodeFleet {
    let lab: AnsibleLab
    let n1: AnsibleLab.Node
    let dir: URL
    let out: URL
    private let inventory: String
    private let state: URL

    /// Fails (the test) when Ansible or the strongSwan build cannot run here.
    /// `node`: the node's name (an ACME node's is its DNS name); `views`: as `AnsibleLab.start`.
    static func start(
        build: StrongSwanBuild, label: String, node: String = "n1", views: [String: [String]] = [:]
    ) throws -> OneNodeFleet {
        try AnsibleTools.require()
        // Requires the build (and strongSwan).
        let lab = try AnsibleLab.start(nodes: [node], build: build, views: views)
        do {
            let dir = try Scratch.makeDirectory(label)
            return OneNodeFleet(
                lab: lab, n1: try lab.node(node), dir: dir, out: dir.appendingPathComponent("out"),
                inventory: dir.appendingPathComponent("fleet.yaml").path, state: dir.appendingPathComponent("state"))
        } catch {
            lab.teardown()
            throw error
        }
    }

    func teardown() {
        lab.teardown()
        try? FileManager.default.removeItem(at: dir)
    }

    /// `vpnprov <arguments> <inventory> --out … --state …`, which must succeed; returns what it printed.
    @discardableResult
    func vpnprov(_ arguments: [String]) throws -> CommandResult {
        let result = try VPNProvBinary.run(arguments + [inventory, "--out", out.path, "--state", state.path])
        guard result.succeeded else {
            throw HarnessError("vpnprov \(arguments.joined(separator: " ")) failed: \(result)")
        }
        return result
    }

    /// Writes `text` as the inventory and generates.
    func generate(_ text: String) throws {
        try text.write(toFile: inventory, atomically: true, encoding: .utf8)
        try vpnprov(["generate"])
    }

    /// Rolls the generated deploy/ out to the node (`extra`: more ansible-playbook arguments), which must
    /// succeed.
    func rollout(_ what: String, extra: [String] = []) async throws -> CommandResult {
        let result = try await attemptRollout(extra: extra)
        guard result.succeeded else { throw HarnessError("\(lab.build): rollout \(what): \(result)") }
        return result
    }

    /// Rolls the generated deploy/ out to the node, whatever the outcome (`environment`: more variables for
    /// ansible-playbook).
    func attemptRollout(extra: [String] = [], environment: [String: String] = [:]) async throws -> CommandResult {
        let arguments =
            [
                "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                out.appendingPathComponent("deploy/site.yml").path,
            ] + AnsibleRolloutTests.labVariables + ["-e", "vpnprov_manage_network=false", "-v"] + extra
        return try await lab.playbook(arguments, environment: environment)
    }
}
