import Foundation
import Glibc
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

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

    static func recap(_ result: ProgramResult) -> [String: PlayRecap] { PlayRecap.parse(result.stdout) }

    // No `.timeLimit` on the rollout tests: it runs the body in a child task, queued behind every test
    // already waiting for one of the few threads Swift Testing runs tests on (a minute into the run), and
    // these are the run's longest tests. Every command they run has a deadline of its own.
    @Test(.ansible)
    func rollsOutRevokesLiveTunnelsIsIdempotentAndStopsAtABrokenNode() async throws {
        try await Subprocess.onOwnExecutor { try await rolloutScenario() }
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

    @Test(
        "A node whose strongSwan cannot compute ML-KEM: the rollout of a quantum-safe configuration stops with the reason before anything is loaded",
        .ansible)
    func aQuantumSafeNodeNeedsStrongSwan61() async throws {
        try await Subprocess.onOwnExecutor {
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
        let lint = try Subprocess.run(
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
