import Foundation
import Glibc
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// Monitoring (docs/monitoring.md) with the real pieces: a node rolled out by the generated vpnprov_node
/// role with `monitoring:` (Debian's prometheus-node-exporter configured by the role, the role's strongSwan
/// collector, the generated nftables table), and Debian's Prometheus in a namespace of its own running the
/// generated scrape job (file service discovery from targets.json) and rules, scraping the node through its
/// firewall. A client connects through the node's ikev2-eap service, pings, and disconnects; what Prometheus
/// holds is compared with what charon and the certificate say.
///
/// The lab runs no systemd: the harness starts the exporter with the ARGS the role wrote into the node's
/// /etc/default/prometheus-node-exporter, and runs the collector the role installed where its timer would
/// (before each look at Prometheus). The only change to the generated Prometheus files is the scrape
/// interval (1 s instead of 30 s), so the test waits seconds, not minutes.
@Suite struct MonitoringRolloutTests {
    static let prometheusPath = "/usr/bin/prometheus"
    static let exporterPath = "/usr/bin/prometheus-node-exporter"
    static let curlPath = "/usr/bin/curl"

    /// Why the test cannot run here, or nil.
    static var unavailableReason: String? {
        if let reason = AnsibleTools.unavailableReason { return reason }
        for (path, what) in [
            (prometheusPath, "prometheus (apt: prometheus; scripts/install-test-deps)"),
            (exporterPath, "prometheus-node-exporter (apt: prometheus-node-exporter; scripts/install-test-deps)"),
            (curlPath, "curl"),
        ] where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(what) not found at \(path)"
        }
        return nil
    }

    static let inventory = """
        vpnprov: 1
        name: lab
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        monitoring:
          from: [192.0.2.201]   # the lab's Prometheus (AnsibleLab's first server host)
          port: 9100
        nodes:
          n1:
            address: 192.0.2.1
            region: lab-a
            country: DE
            pool: 10.81.0.0/24
            services: [ikev2-eap]
        users:
          ann:
            password: gen

        """

    @Test(
        .enabled(
            if: unavailableReason == nil || StrongSwanEnvironment.isRequired,
            Comment(rawValue: unavailableReason ?? "available")))
    func prometheusSeesTheRolledOutNode() async throws {
        try await Subprocess.onOwnExecutor { try await scenario() }
    }

    func scenario() async throws {
        if let reason = Self.unavailableReason { throw HarnessError("the monitoring test cannot run: \(reason)") }
        let lab = try AnsibleLab.start(
            nodes: ["n1"], views: ["/var/lib": ["prometheus"], "/usr/local/lib": ["vpnprov"]], etc: ["default"])
        var daemons: [Daemon] = []
        defer {
            for daemon in daemons { daemon.stop() }
            lab.teardown()
        }
        let dir = try Scratch.makeDirectory("monitoring")
        let out = dir.appendingPathComponent("out")
        let inventory = dir.appendingPathComponent("fleet.yaml").path
        try Self.inventory.write(toFile: inventory, atomically: true, encoding: .utf8)
        let generated = try VPNProvBinary.run([
            "generate", inventory, "--out", out.path, "--state", dir.appendingPathComponent("state").path,
        ])
        try #require(generated.succeeded, "generate: \(generated)")
        let n1 = try lab.node("n1")

        // Prometheus with the generated files, in its own namespace at 192.0.2.201 (monitoring.from), started
        // first: it retries the target until the node's exporter is there.
        let prometheusHost = try lab.addServerHost("prometheus", ownEtc: [])
        #expect(prometheusHost.address == "192.0.2.201")
        let config = dir.appendingPathComponent("prometheus")
        try FileManager.default.copyItem(at: out.appendingPathComponent("monitoring/prometheus"), to: config)
        let scrapePath = config.appendingPathComponent("scrape.yml").path
        let scrape = try String(contentsOfFile: scrapePath, encoding: .utf8)
        let fast = scrape.replacingOccurrences(of: "scrape_interval: 30s", with: "scrape_interval: 1s")
            .replacingOccurrences(of: "scrape_timeout: 10s", with: "scrape_timeout: 1s")
        try #require(fast != scrape, "scrape.yml sets the interval")
        try fast.write(toFile: scrapePath, atomically: true, encoding: .utf8)
        daemons.append(
            try Daemon.start(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", prometheusHost.namespace, Self.prometheusPath, "--config.file=" + scrapePath,
                    "--storage.tsdb.path=" + config.appendingPathComponent("data").path,
                    "--web.listen-address=127.0.0.1:9090",
                ], outputPath: dir.appendingPathComponent("prometheus.log").path))

        // 1. The rollout: the role configures the exporter and installs the collector (AnsibleRolloutTests rolls
        // monitoring out too, and proves that a second rollout changes nothing and retire.yml removes it).
        let arguments =
            [
                "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                out.appendingPathComponent("deploy/site.yml").path,
            ] + AnsibleRolloutTests.labVariables
        let first = try await lab.playbook(arguments)
        try #require(first.succeeded, "rollout: \(first)")
        let defaults = try String(contentsOfFile: n1.etc + "/default/prometheus-node-exporter", encoding: .utf8)
        let argsLine = try #require(
            defaults.split(separator: "\n").first { $0.hasPrefix("ARGS=") }, "no ARGS in \(defaults)")
        let exporterArguments = argsLine.dropFirst("ARGS=".count).trimmingCharacters(
            in: CharacterSet(charactersIn: "\"")
        )
        .split(separator: " ").map(String.init)
        #expect(exporterArguments.contains("--web.listen-address=:9100"), "\(exporterArguments)")
        daemons.append(
            try Daemon.start(
                StrongSwanEnvironment.ipPath,
                PrivateView.exec(
                    n1.namespace, Self.exporterPath,
                    exporterArguments + ["--collector.disable-defaults", "--collector.textfile"]),
                outputPath: dir.appendingPathComponent("exporter.log").path))

        // The collector as its timer runs it (the lab's charon has its vici socket in its run directory).
        let metricsFile = "/var/lib/prometheus/node-exporter/vpnprov.prom"
        func collect() throws {
            let result = try lab.run(
                n1,
                [
                    "/usr/bin/python3", "/usr/local/lib/vpnprov/strongswan-metrics", "--socket",
                    n1.run.path + "/charon.vici",
                ])
            guard result.succeeded else { throw HarnessError("collector: \(result)") }
        }
        try collect()

        /// The samples of `query` (labels, value), or nil while Prometheus does not answer.
        func query(_ expression: String) throws -> [([String: String], Double)]? {
            let result = try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", prometheusHost.namespace, Self.curlPath, "-s", "--max-time", "2", "-G",
                    "--data-urlencode", "query=" + expression, "http://127.0.0.1:9090/api/v1/query",
                ], timeout: .seconds(10))
            guard result.succeeded,
                let json = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                let data = json["data"] as? [String: Any], let samples = data["result"] as? [[String: Any]]
            else { return nil }
            return samples.compactMap { sample in
                guard let labels = sample["metric"] as? [String: String], let value = sample["value"] as? [Any],
                    value.count == 2, let text = value[1] as? String, let number = Double(text)
                else { return nil }
                return (labels, number)
            }
        }
        /// Runs the collector and asks Prometheus until `condition` holds for the query's samples (20 s at most).
        @discardableResult
        func waitFor(
            _ expression: String, _ what: String, _ condition: ([([String: String], Double)]) -> Bool
        ) throws -> [([String: String], Double)] {
            let deadline = ContinuousClock.now + .seconds(20)
            var last: [([String: String], Double)]?
            while ContinuousClock.now < deadline {
                try collect()
                if let samples = try query(expression) {
                    last = samples
                    if condition(samples) { return samples }
                }
                usleep(200_000)
            }
            throw HarnessError(
                "\(what): Prometheus never had it; last answer to \(expression): \(String(describing: last))\n"
                    + "--- prometheus log ---\n"
                    + ((try? String(contentsOf: dir.appendingPathComponent("prometheus.log"), encoding: .utf8)) ?? ""))
        }
        func value(_ samples: [([String: String], Double)]) -> Double? { samples.count == 1 ? samples[0].1 : nil }

        // The node as the targets file labels it, scraped through its firewall.
        let up = try waitFor("up{job=\"vpnprov-nodes\"}", "the node is scraped") { value($0) == 1 }
        #expect(up.first?.0["node"] == "n1" && up.first?.0["region"] == "lab-a")
        #expect(up.first?.0["country"] == "DE" && up.first?.0["tier"] == "free")
        try waitFor("strongswan_up{node=\"n1\"}", "charon is up") { value($0) == 1 }
        let sas = "vpnprov_ike_sas{node=\"n1\",service=\"ikev2-eap\"}"
        try waitFor(sas, "no SA before the client connects") { value($0) == 0 }

        // 3. The certificate's expiry is the node certificate's notAfter, the CRL's next update the CRL's
        // (openssl's reading of the generated files).
        func opensslDate(_ arguments: [String], _ field: String) throws -> Double {
            let result = try Subprocess.check(StrongSwanEnvironment.openSSLPath, arguments + ["-dateopt", "iso_8601"])
            // notAfter=2027-12-05 07:09:12Z
            let text = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let parser = ISO8601DateFormatter()
            parser.formatOptions = [.withInternetDateTime, .withSpaceBetweenDateAndTime]
            guard text.hasPrefix(field + "="),
                let date = parser.date(from: String(text.dropFirst(field.count + 1)))
            else { throw HarnessError("openssl said \(result.stdout)") }
            return date.timeIntervalSince1970
        }
        let swanctlDirectory = out.appendingPathComponent("servers/n1/swanctl")
        let notAfter = try opensslDate(
            ["x509", "-noout", "-enddate", "-in", swanctlDirectory.appendingPathComponent("x509/n1.pem").path],
            "notAfter")
        try waitFor("vpnprov_certificate_not_after_seconds{node=\"n1\",kind=\"node\"}", "the certificate's expiry") {
            value($0) == notAfter
        }
        let nextUpdate = try opensslDate(
            ["crl", "-noout", "-nextupdate", "-in", swanctlDirectory.appendingPathComponent("x509crl/crl.pem").path],
            "nextUpdate")
        try waitFor("vpnprov_crl_next_update_seconds{node=\"n1\"}", "the CRL's next update") { value($0) == nextUpdate }

        // 4. A client through ikev2-eap: one SA for that service, and the byte counters grow with traffic.
        let client = try lab.addClient("ann")
        try client.loadAllCleanly(
            confFile: out.appendingPathComponent("clients/ann/linux/swanctl/swanctl.conf").path)
        let vip = try AnsibleRolloutTests.connect(lab, client, label: "ann", node: n1)
        try waitFor(sas, "the client's IKE SA") { value($0) == 1 }
        try waitFor("vpnprov_child_sas{node=\"n1\",service=\"ikev2-eap\"}", "the client's CHILD SA") { value($0) == 1 }
        let bytesIn = "vpnprov_sa_bytes_total{node=\"n1\",service=\"ikev2-eap\",direction=\"in\"}"
        let bytesOut = "vpnprov_sa_bytes_total{node=\"n1\",service=\"ikev2-eap\",direction=\"out\"}"
        let inBefore = try #require(value(try waitFor(bytesIn, "bytes in") { (value($0) ?? 0) > 0 }))
        let outBefore = try #require(value(try waitFor(bytesOut, "bytes out") { (value($0) ?? 0) > 0 }))
        for _ in 0..<3 {
            let ping = try lab.ping(fromClient: "ann", source: vip, to: n1.innerAddress)
            #expect(ping.succeeded, "ping through the tunnel: \(ping)")
        }
        try waitFor(bytesIn, "bytes in grow with the pings") { (value($0) ?? 0) > inBefore }
        try waitFor(bytesOut, "bytes out grow with the pings") { (value($0) ?? 0) > outBefore }

        // Pool usage is what charon reports (`swanctl --list-pools --leases`: "NAME BASE online / offline / size").
        let pools = try lab.swanctl(n1, ["--list-pools", "--leases"])
        try #require(pools.succeeded, "list-pools: \(pools)")
        let poolLine = try #require(
            pools.stdout.split(separator: "\n").first { $0.hasPrefix("pool-v4") }, "no pool-v4 in \(pools.stdout)")
        let counts = poolLine.split(separator: " ").compactMap { Int($0) }
        try #require(counts.count == 3, "unexpected pool line: \(poolLine)")
        let onlineLeases = pools.stdout.split(separator: "\n").filter { $0.contains(" online ") }.count
        #expect(counts[0] == onlineLeases && onlineLeases == 1, "\(pools.stdout)")
        try waitFor(
            "vpnprov_pool_leases{node=\"n1\",pool=\"pool-v4\",state=\"online\"}", "the pool's online leases"
        ) { value($0) == Double(counts[0]) }
        try waitFor("vpnprov_pool_addresses{node=\"n1\",pool=\"pool-v4\"}", "the pool's size") {
            value($0) == Double(counts[2])
        }
        // No per-user series without monitoring.user_labels, and no user name in the metrics.
        let text = try lab.run(n1, ["/bin/cat", metricsFile])
        #expect(text.succeeded && text.stdout.contains("vpnprov_ike_sas{"), "\(text)")
        #expect(!text.stdout.contains("ann") && !text.stdout.contains("vpnprov_user_"), "\(text.stdout)")

        // monitoring.user_labels (the role writes it into the collector's configuration): the user's own series.
        let configPath = n1.etc + "/vpnprov/monitoring.json"
        let configText = try String(contentsOfFile: configPath, encoding: .utf8)
        let withUsers = configText.replacingOccurrences(of: "\"user_labels\": false", with: "\"user_labels\": true")
        try #require(withUsers != configText, "the collector's configuration: \(configText)")
        try withUsers.write(toFile: configPath, atomically: true, encoding: .utf8)
        try collect()
        let labelled = try lab.run(n1, ["/bin/cat", metricsFile]).stdout
        #expect(
            labelled.contains("vpnprov_user_ike_sas{connection=\"ikev2-eap\",service=\"ikev2-eap\",user=\"ann\"} 1"),
            "\(labelled)")
        try configText.write(toFile: configPath, atomically: true, encoding: .utf8)

        // 5. After the client disconnects, no SA.
        _ = try client.terminate(ike: "n1-ikev2-eap", timeout: .seconds(10))
        try waitFor(sas, "no SA after the client disconnected") { value($0) == 0 }
        try waitFor("vpnprov_child_sas{node=\"n1\",service=\"ikev2-eap\"}", "no CHILD SA after") { value($0) == 0 }

        // 6. The exporter port from outside monitoring.from (the client's namespace, 192.0.2.101): nothing;
        // from Prometheus's address it answers. With the node's table removed the client gets in: the table
        // is what keeps it out.
        func fetch(from namespace: String) throws -> ProgramResult {
            try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", namespace, Self.curlPath, "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "--max-time", "2", "http://\(n1.address):9100/metrics",
                ], timeout: .seconds(10))
        }
        let clientNamespace = try #require(lab.clientNamespace("ann"))
        let refused = try fetch(from: clientNamespace)
        #expect(!refused.succeeded, "a client outside monitoring.from read the exporter: \(refused)")
        let allowed = try fetch(from: prometheusHost.namespace)
        #expect(allowed.succeeded && allowed.stdout == "200", "Prometheus's address: \(allowed)")
        try #require(try lab.run(n1, ["nft", "delete", "table", "inet", "vpnprov"]).succeeded)
        let open = try fetch(from: clientNamespace)
        #expect(open.succeeded && open.stdout == "200", "without the table the client reaches the exporter: \(open)")
    }
}
