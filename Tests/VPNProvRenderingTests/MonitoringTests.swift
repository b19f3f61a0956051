import Foundation
import Testing
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvModel
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvTemplates

/// Monitoring (docs/monitoring.md): the `monitoring:` section, refused at its lines when wrong; the nodes'
/// firewall rule for the exporter; the Prometheus files of monitoring/prometheus/, checked by Debian's
/// promtool (the configuration and the rules, and the rules' unit tests: each alert fires in one case and
/// is quiet in the next). The node side, with a real Prometheus, is EndToEndTests/MonitoringRolloutTests.
@Suite(.temporaries) struct MonitoringTests {
    static let promtool = TestDependency(
        path: "/usr/bin/promtool", installedBy: "the Debian package prometheus (scripts/install-test-deps)")

    static let systemdAnalyze = TestDependency(
        path: "/usr/bin/systemd-analyze", installedBy: "the Debian package systemd")

    /// An inventory whose `monitoring:` section is `monitoring` (its first line is line 3).
    static func inventory(monitoring: String = "monitoring:\n  from: [192.0.2.250]\n") -> String {
        """
        vpnprov: 1
        name: demo
        \(monitoring)defaults:
          services: [ikev2-eap]
          pool: 10.9.0.0/24
        nodes:
          n1:
            address: 192.0.2.1
            region: eu-central
            country: DE
            tier: pro
          n2:
            address: n2.vpn.example.com
            deploy: {host: "2001:db8::2"}
            pool: 10.10.0.0/24
            pool6: fd00:10::/112
        users:
          ann:
            password: gen

        """
    }

    static func findings(_ text: String) -> [Diagnostic] {
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        guard let inventory = result.inventory else { return result.diagnostics }
        return result.diagnostics + Validator.validate(inventory)
    }

    static func decoded(_ text: String) throws -> Inventory {
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics.map(\.message))")
        return try #require(result.inventory)
    }

    @Test func theSectionIsDecodedWithItsDefaults() throws {
        let plain = try Self.decoded(Self.inventory())
        let monitoring = try #require(plain.monitoring)
        #expect(monitoring.from.map(\.description) == ["192.0.2.250/32"])
        #expect(monitoring.port == 9100 && monitoring.userLabels == false)
        #expect(monitoring.fromLocations.map(\.line) == [4])
        let full = try Self.decoded(
            Self.inventory(
                monitoring: "monitoring:\n  from: [192.0.2.0/28, 2001:db8:ff::7]\n  port: 9200\n  user_labels: true\n"))
        let settings = try #require(full.monitoring)
        #expect(settings.from.map(\.description) == ["192.0.2.0/28", "2001:db8:ff::7/128"])
        #expect(settings.port == 9200 && settings.userLabels)
        #expect(settings.location(of: .port).line == 5 && settings.location(of: .userLabels).line == 6)
        #expect(try Self.decoded(Self.inventory(monitoring: "")).monitoring == nil)
        #expect(Self.findings(Self.inventory()).filter { $0.severity == .error }.isEmpty)
    }

    /// Each bad value is an error at its own line, with its rule code (the value under test is on line 5).
    @Test(arguments: [
        ("port: 80", "invalid-value"),
        ("port: 70000", "invalid-value"),
        ("port: \"9100\"", "type-mismatch"),
        ("user_labels: yes", "type-mismatch"),
        ("colour: blue", "unknown-key"),
    ])
    func aBadValueIsAnErrorAtItsLine(_ line: String, _ code: String) {
        let found = Self.findings(Self.inventory(monitoring: "monitoring:\n  from: [192.0.2.250]\n  \(line)\n"))
        let errors = found.filter { $0.severity == .error }
        #expect(errors.count == 1, "\(line): \(found.map(\.message))")
        #expect(errors.first?.code.rawValue == code && errors.first?.location?.line == 5, "\(errors)")
    }

    /// `from`: required, not empty, addresses or networks, never every address, a node's pool nor its address.
    @Test(arguments: [
        ("monitoring:\n  port: 9100\n", "missing-key", 4),
        ("monitoring:\n  from: []\n", "invalid-value", 4),
        ("monitoring:\n  from: [prometheus.example.com]\n", "invalid-cidr", 4),
        ("monitoring:\n  from: [192.0.2.1/24]\n", "invalid-cidr", 4),
        ("monitoring:\n  from: 192.0.2.250\n", "type-mismatch", 4),
        ("monitoring:\n  from:\n    - 192.0.2.250\n    - 0.0.0.0/0\n", "monitoring-from-wide", 6),
        ("monitoring:\n  from:\n    - ::/0\n", "monitoring-from-wide", 5),
        ("monitoring:\n  from:\n    - 192.0.2.250\n    - 10.0.0.0/8\n", "monitoring-from-wide", 6),
        ("monitoring:\n  from:\n    - fd00:10::1\n", "monitoring-from-wide", 5),
        // n1's address: n1 masquerades its tunnel clients to it
        ("monitoring:\n  from:\n    - 192.0.2.250\n    - 192.0.2.1\n", "monitoring-from-wide", 6),
        ("monitoring:\n  from:\n    - 192.0.2.0/24\n", "monitoring-from-wide", 5),
    ])
    func aBadFromIsAnErrorAtItsEntry(_ section: String, _ code: String, _ line: Int) {
        let found = Self.findings(Self.inventory(monitoring: section))
        let errors = found.filter { $0.severity == .error }
        #expect(!errors.isEmpty && errors.allSatisfy { $0.code.rawValue == code }, "\(found.map(\.message))")
        #expect(errors.first?.location?.line == line, "\(errors)")
    }

    /// The pool a `from` entry overlaps is named, with its line.
    @Test func aFromInsideAPoolPointsAtThePool() {
        let found = Self.findings(Self.inventory(monitoring: "monitoring:\n  from: [10.10.0.5]\n"))
        let wide = found.filter { $0.code.rawValue == "monitoring-from-wide" }
        #expect(wide.count == 1 && wide.first?.message.contains("node 'n2''s pool 10.10.0.0/24") == true, "\(wide)")
        #expect(wide.first?.notes.first?.location?.line == 17, "\(wide)")
    }

    @Test func theFirewallAdmitsTheExporterPortOnlyFromTheList() throws {
        let inventory = try Self.decoded(
            Self.inventory(monitoring: "monitoring:\n  from: [192.0.2.250, 2001:db8:ff::/64]\n  port: 9200\n"))
        let templates = try TemplateSet.builtin()
        let n1 = try #require(inventory.nodes.first)
        let text = try templates.template(ServerRenderer.nftablesTemplate).render(
            ServerRenderer.networkContext(ServerPlan.make(for: n1, in: inventory)))
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            $0.hasPrefix("tcp dport 9200")
        }
        #expect(
            lines == [
                "tcp dport 9200 iifname \"lo\" accept comment \"the node's own look at its exporter\"",
                "tcp dport 9200 ip saddr 192.0.2.250/32 accept comment \"Prometheus (monitoring.from)\"",
                "tcp dport 9200 ip6 saddr 2001:db8:ff::/64 accept comment \"Prometheus (monitoring.from)\"",
                "tcp dport 9200 drop comment \"nobody else may read the exporter\"",
            ], "\(text)")
        // Without monitoring: no exporter rule.
        let plain = try Self.decoded(Self.inventory(monitoring: ""))
        let without = try templates.template(ServerRenderer.nftablesTemplate).render(
            ServerRenderer.networkContext(ServerPlan.make(for: plain.nodes[0], in: plain)))
        #expect(!without.contains("exporter") && !without.contains("tcp dport"))
    }

    @Test func theTargetsCarryEachNodesLabels() throws {
        let inventory = try Self.decoded(Self.inventory())
        let files = try Render.files(MonitoringRenderer.self, inventory)
        #expect(
            files.map(\.path) == [
                "monitoring/prometheus/rules.test.yml", "monitoring/prometheus/rules.yml",
                "monitoring/prometheus/scrape.yml", "monitoring/prometheus/targets.json",
            ])
        let targets = try #require(files.first { $0.path.hasSuffix("targets.json") })
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(targets.contents)) as? [[String: Any]])
        #expect(json.count == 2)
        #expect(json[0]["targets"] as? [String] == ["192.0.2.1:9100"])
        #expect(
            json[0]["labels"] as? [String: String]
                == ["node": "n1", "region": "eu-central", "country": "DE", "tier": "pro"])
        // Scraped where Ansible reaches the node (deploy.host), an IPv6 address in brackets.
        #expect(json[1]["targets"] as? [String] == ["[2001:db8::2]:9100"])
        #expect(json[1]["labels"] as? [String: String] == ["node": "n2", "tier": "free"])
        #expect(try Render.files(MonitoringRenderer.self, try Self.decoded(Self.inventory(monitoring: ""))).isEmpty)
    }

    /// promtool accepts the scrape configuration (with its targets file) and the rules, and the rules' own
    /// tests pass: every alert fires in its case and stays quiet in its counter-case.
    @Test(.needs(promtool)) func promtoolChecksTheFilesAndRunsTheRulesTests() throws {
        try Self.promtool.require()
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("monitoring-promtool"))
        let inventory = try Self.decoded(Self.inventory())
        for file in try Render.files(MonitoringRenderer.self, inventory) {
            let url = dir.appendingPathComponent(URL(fileURLWithPath: file.path).lastPathComponent)
            try Data(file.contents).write(to: url)
        }
        for arguments in [
            ["check", "config", "scrape.yml"], ["check", "rules", "rules.yml"], ["test", "rules", "rules.test.yml"],
        ] {
            let result = try Self.run(Self.promtool.path, arguments, in: dir)
            #expect(result.code == 0, "promtool \(arguments.joined(separator: " ")): \(result.output)")
        }
        // Each alert has a case where it fires and one where it stays quiet.
        let tests = try String(contentsOf: dir.appendingPathComponent("rules.test.yml"), encoding: .utf8)
        let alerts = MonitoringRenderer.alerts(try #require(MonitoringPlan.make(inventory))).map(\.name)
        #expect(
            Set(alerts) == [
                "VPNProvNodeDown", "VPNProvCharonDown", "VPNProvMetricsStale", "VPNProvCertificateExpiring",
                "VPNProvCAExpiring", "VPNProvCRLStale", "VPNProvPoolNearlyFull", "VPNProvRadiusUnreachable",
            ])
        for alert in alerts {
            #expect(tests.contains("  # \(alert) fires\n") && tests.contains("  # \(alert) stays quiet\n"), "\(alert)")
        }
        // The tests can fail: a quiet case that expected the alert fails promtool.
        let broken = tests.replacingOccurrences(
            of: "alertname: VPNProvPoolNearlyFull\n        exp_alerts: []",
            with:
                "alertname: VPNProvPoolNearlyFull\n        exp_alerts:\n          - exp_labels: {severity: warning}")
        #expect(broken != tests)
        try broken.write(to: dir.appendingPathComponent("broken.test.yml"), atomically: true, encoding: .utf8)
        let failing = try Self.run(Self.promtool.path, ["test", "rules", "broken.test.yml"], in: dir)
        #expect(failing.code != 0, "\(failing.output)")
    }

    /// The certificate threshold follows an ACME node's renewal: below acme.renew_days.
    @Test func theCertificateWarningComesAfterTheRenewal() throws {
        #expect(try #require(MonitoringPlan.make(try Self.decoded(Self.inventory()))).certificateWarningDays == 21)
        let acme = Self.inventory(
            monitoring: "monitoring:\n  from: [192.0.2.250]\nacme:\n  email: ops@example.com\n  renew_days: 10\n"
        )
        .replacingOccurrences(
            of: "    address: n2.vpn.example.com\n", with: "    address: n2.vpn.example.com\n    certificate: acme\n")
        #expect(try #require(MonitoringPlan.make(try Self.decoded(acme))).certificateWarningDays == 9)
    }

    /// `generate` with monitoring added to a tree written without it: the render cache does not keep the old
    /// servers' files (the firewall, the host_vars), and monitoring/ appears; removed again, it goes.
    @Test func generateWritesMonitoringOnlyWithTheSection() throws {
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("monitoring-generate"))
        let inventoryURL = dir.appendingPathComponent("inventory.yaml")
        let out = dir.appendingPathComponent("out")
        func generate(_ text: String) throws {
            try text.write(to: inventoryURL, atomically: true, encoding: .utf8)
            let run = vpnprov([
                "generate", inventoryURL.path, "--out", out.path, "--state", dir.appendingPathComponent("state").path,
            ])
            #expect(run.code == 0, "\(run.err)")
        }
        let fm = FileManager.default
        let nft = out.appendingPathComponent("servers/n1/network/vpnprov.nft")
        let hostVars = out.appendingPathComponent("deploy/host_vars/n1.yml")
        try generate(Self.inventory(monitoring: ""))
        #expect(!fm.fileExists(atPath: out.appendingPathComponent("monitoring").path))
        #expect(try !String(contentsOf: hostVars, encoding: .utf8).contains("vpnprov_monitoring"))
        try generate(Self.inventory())
        #expect(fm.fileExists(atPath: out.appendingPathComponent("monitoring/prometheus/rules.yml").path))
        #expect(try String(contentsOf: nft, encoding: .utf8).contains("tcp dport 9100 ip saddr 192.0.2.250/32 accept"))
        let vars = try String(contentsOf: hostVars, encoding: .utf8)
        #expect(
            vars.contains("vpnprov_monitoring:\n  port: 9100\n") && vars.contains("    \"ikev2-eap\": \"ikev2-eap\"\n"))
        #expect(
            try String(contentsOf: out.appendingPathComponent("README"), encoding: .utf8).contains(
                "monitoring/prometheus/"))
        try generate(Self.inventory(monitoring: ""))
        #expect(!fm.fileExists(atPath: out.appendingPathComponent("monitoring/prometheus/rules.yml").path))
        #expect(try !String(contentsOf: nft, encoding: .utf8).contains("9100"))
    }

    /// The collector's service and timer, and a RADIUS node's relay service, as the role renders them with its
    /// defaults, pass `systemd-analyze verify` without a word (an unknown key or a bad value is only a warning
    /// there).
    @Test(.needs(systemdAnalyze)) func theCollectorsUnitsVerify() throws {
        try Self.systemdAnalyze.require()
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("monitoring-units"))
        let values = [
            "vpnprov_service": "strongswan", "vpnprov_monitoring_script": "/usr/local/lib/vpnprov/strongswan-metrics",
            "vpnprov_monitoring_config": "/etc/vpnprov/monitoring.json",
            "vpnprov_monitoring_textfile_dir": "/var/lib/prometheus/node-exporter",
            "vpnprov_vici_socket": "/var/run/charon.vici", "vpnprov_strongswan_d_dir": "/etc/strongswan.d",
            "vpnprov_monitoring.interval | default(15)": "15",
            "vpnprov_radius_relay_dir": "/etc/vpnprov/radius-relay", "vpnprov_radius_relay_user": "freerad",
            "vpnprov_radius_relay_group": "freerad", "ansible_managed": "Ansible managed",
        ]
        var paths: [String] = []
        for unit in [
            "vpnprov-strongswan-metrics.service", "vpnprov-strongswan-metrics.timer", "vpnprov-radius-relay.service",
        ] {
            var text = try #require(BuiltinDeployFiles.files["roles/vpnprov_node/templates/\(unit).j2"])
            for (name, value) in values { text = text.replacingOccurrences(of: "{{ \(name) }}", with: value) }
            #expect(!text.contains("{{"), "\(unit): \(text)")
            let path = dir.appendingPathComponent(unit).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        // systemd-analyze records its unit loading in /run/systemd (systemd-units-load), which no test may write on
        // the host: it runs in a mount namespace of its own with a tmpfs over /run (a user namespace makes that
        // possible without privileges too).
        let result = try Self.run(
            "/usr/bin/unshare",
            [
                "--mount", "--map-root-user", "sh", "-c",
                "mount -t tmpfs -o size=1m vpnprov-verify /run && exec \"$0\" \"$@\"", Self.systemdAnalyze.path,
                "verify", "--man=no",
            ] + paths, in: dir)
        #expect(result.code == 0, "\(result.output)")
        #expect(!result.output.contains("vpnprov-strongswan-metrics"), "\(result.output)")
        #expect(!result.output.contains("vpnprov-radius-relay"), "\(result.output)")
    }

    static func run(_ path: String, _ arguments: [String], in directory: URL) throws -> (code: Int32, output: String) {
        let result = try Subprocess.run(path, arguments, directory: directory.path, timeout: .seconds(120))
        return (result.succeeded ? 0 : max(result.exitCode, 1), result.output)
    }
}
