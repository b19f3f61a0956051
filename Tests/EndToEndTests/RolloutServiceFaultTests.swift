import Foundation
import Glibc
import Testing
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// A rollout killed between a copy and the restart or daemon-reload that puts it live is completed by the
/// next run, on a RADIUS node with monitoring whose services the role manages (`vpnprov_manage_service=true`,
/// through the lab's stand-in `systemctl`, `StandInSystemctl`, which starts charon, the RADIUS relay's
/// FreeRADIUS and the node exporter by pid, and reads unit files only when systemd would). docs/deploy.md,
/// "What survives an interrupted rollout".
///
/// `RolloutFaultTests` kills at every boundary after a change with the services left alone; this kills, with
/// the plugin's kill-by-name, at the three boundaries only a managed node has, each followed by one run:
/// - the node's first rollout, killed just before "Restart strongSwan for its new Disconnect-Request listener"
///   (charon starts the listener only when it starts): the rerun restarts charon (a new pid) and it listens on
///   the Disconnect-Request port. The role used to take a node without a listener record for one whose charon
///   runs the file in place, and never restarted it;
/// - a rollout that gives the relay a second RADIUS server, killed just before "Restart the RADIUS relay with what
///   is installed": the rerun restarts the relay (a new pid);
/// - a rollout that changes the metrics collector's service unit (its vici socket), killed just before "Run the
///   collector on its timer" (the task that reloads systemd): the rerun has systemd read the unit again. The role
///   used to reload only when its copy changed the unit.
/// A last run changes nothing.
@Suite struct RolloutServiceFaultTests {
    /// The fleet: one RADIUS node with monitoring; `twoServers`: with a second RADIUS server (the relay's
    /// proxy.conf changes).
    static func inventory(twoServers: Bool) -> String {
        """
        vpnprov: 1
        name: lab
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        monitoring:
          from: [192.0.2.254]
        accounts:
          database: env:VPN_ACCOUNTS_DB
          radius_database: env:VPN_RADIUS_DB
          secret: gen
          servers:
            rad-1: { address: 192.0.2.11 }
        \(twoServers ? "    rad-2: { address: 192.0.2.12 }\n" : "")\
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.81.0.0/24
            services: [ikev2-eap]
            accounts: radius
        users:
          ann:
            password: gen

        """
    }

    @Test("A rollout killed before a restart or a daemon-reload is completed by the next run", .ansible)
    func aRolloutKilledBeforeARestartIsRestartedByTheNextRun() async throws {
        try await Subprocess.onOwnExecutor { try await scenario() }
    }

    func scenario() async throws {
        try StrongSwanEnvironment.require()
        try AnsibleTools.require()
        let started = ContinuousClock.now
        // The relay's run, log and state directories, the exporter's textfile directory, the collector.
        let exporter = "/usr/bin/prometheus-node-exporter"
        let lab = try AnsibleLab.start(
            nodes: ["n1"],
            views: [
                "/var/lib": ["prometheus", "vpnprov-radius-relay"], "/var/log": ["vpnprov-radius-relay"],
                "/usr/local/lib": ["vpnprov"],
            ],
            etc: ["default"],
            services: [
                "freeradius.service": .init(exec: nil, ready: nil),
                "prometheus-node-exporter.service": .init(
                    exec: ["/bin/sh", "-c", ". /etc/default/prometheus-node-exporter; exec \(exporter) $ARGS"],
                    ready: nil),
            ],
            run: ["vpnprov-radius-relay"], plugins: ["eap-radius"])
        defer { lab.teardown() }
        let dir = try Scratch.makeDirectory("rollout-services")
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = try lab.node("n1")
        let services = lab.serviceState(node)

        // Two output trees from one state: one RADIUS server, then two.
        let inventory = dir.appendingPathComponent("fleet.yaml").path
        let out = dir.appendingPathComponent("out")
        let state = dir.appendingPathComponent("state")
        func generate(twoServers: Bool, keep name: String) throws -> URL {
            try Self.inventory(twoServers: twoServers).write(toFile: inventory, atomically: true, encoding: .utf8)
            let result = try VPNProvBinary.run(
                ["generate", inventory, "--out", out.path, "--state", state.path],
                environment: ["VPN_ACCOUNTS_DB": "dbname=accounts", "VPN_RADIUS_DB": "dbname=radius"])
            guard result.succeeded else { throw HarnessError("vpnprov generate: \(result)") }
            let copy = dir.appendingPathComponent(name)
            try Subprocess.check("/bin/cp", ["-a", out.path, copy.path])
            return copy
        }
        let one = try generate(twoServers: false, keep: "out-one")
        let two = try generate(twoServers: true, keep: "out-two")

        let killer = try AnsibleKiller(directory: dir.appendingPathComponent("callbacks"))
        var runs = 0
        /// A run of `tree`'s site.yml on n1 (the RADIUS servers are not in the lab), killed just before the task
        /// named `killBefore` (nil: not killed).
        func run(_ tree: URL, killBefore: String? = nil, extra: [String] = []) async throws -> ProgramResult {
            runs += 1
            let log = dir.appendingPathComponent("boundaries-\(runs)")
            let result = try await lab.playbook(
                [
                    "-i", tree.appendingPathComponent("deploy/inventory.yml").path,
                    tree.appendingPathComponent("deploy/site.yml").path, "--limit", "n1",
                    "-e", "vpnprov_manage_service=true", "-e", "vpnprov_install_packages=false",
                    "-e", "ansible_python_interpreter=/usr/bin/python3",
                ] + extra,
                environment: killer.environment(log: log, killBefore: killBefore))
            let boundaries = AnsibleKiller.boundaries(log)
            if let killBefore {
                let killed = AnsibleKiller.killed(boundaries, result).map { boundaries[$0 - 1].name } ?? ""
                try #require(
                    killed.hasSuffix(killBefore), "not killed before \(killBefore): \(boundaries.suffix(3)) \(result)")
            } else {
                try #require(
                    result.succeeded, "run \(runs): \(result.stdout.suffix(4000)) \(result.stderr.suffix(2000))")
            }
            return result
        }
        func pid(_ unit: String) -> Int32 { StandInSystemctl.pid(unit, state: services) }
        func listening() throws -> Bool {
            let sockets = try lab.run(node, ["ss", "-Hlun", "sport = :3799"])
            return !sockets.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        }

        // 1. The first rollout, killed between the listener's copy and charon's restart.
        let firstCharon = pid("strongswan.service")
        let listeningAtFirst = try listening()
        #expect(firstCharon > 0 && !listeningAtFirst)
        _ = try await run(one, killBefore: "Restart strongSwan for its new Disconnect-Request listener")
        let installed = node.settingsDirectory + "/vpnprov-radius-dae.conf"
        #expect(FileManager.default.fileExists(atPath: installed), "the kill came before the listener's copy")
        let listeningAfterTheKill = try listening()
        #expect(pid("strongswan.service") == firstCharon && !listeningAfterTheKill, "charon restarted before the kill")
        _ = try await run(one)
        let charon = pid("strongswan.service")
        #expect(charon != firstCharon && Scratch.processExists(charon), "the rerun did not restart charon")
        #expect(try listening(), "charon does not listen for Disconnect-Requests after the rerun")

        // 2. The relay gets a second server, killed between the relay's copies and its restart.
        let relay = pid("vpnprov-radius-relay.service")
        #expect(relay > 0 && Scratch.processExists(relay), "the relay is not running")
        _ = try await run(two, killBefore: "Restart the RADIUS relay with what is installed")
        let proxy = try String(contentsOfFile: node.etc + "/vpnprov/radius-relay/proxy.conf", encoding: .utf8)
        #expect(proxy.contains("192.0.2.12"), "the kill came before the relay's copies")
        #expect(pid("vpnprov-radius-relay.service") == relay, "the relay restarted before the kill")
        _ = try await run(two)
        let restarted = pid("vpnprov-radius-relay.service")
        #expect(restarted != relay && Scratch.processExists(restarted), "the rerun did not restart the relay")
        #expect(pid("strongswan.service") == charon, "charon restarted although its listener did not change")

        // 3. The collector's unit changes (the operator points it at the lab's vici socket), killed between the
        // unit's copy and the task that reloads systemd.
        let socketPath = node.run.appendingPathComponent("charon.vici").path
        let socket = ["-e", "vpnprov_vici_socket=" + socketPath]
        let unit = "vpnprov-strongswan-metrics.service"
        let unitFile = node.etc + "/systemd/system/" + unit
        _ = try await run(two, killBefore: "Run the collector on its timer", extra: socket)
        let written = FileManager.default.contents(atPath: unitFile)
        #expect(
            String(decoding: written ?? Data(), as: UTF8.self).contains("--socket " + socketPath),
            "the kill came before the unit's copy")
        #expect(StandInSystemctl.loaded(unit, state: services) != written, "systemd read the unit before the kill")
        _ = try await run(two, extra: socket)
        #expect(
            StandInSystemctl.loaded(unit, state: services) == FileManager.default.contents(atPath: unitFile),
            "after the rerun systemd still runs the collector's old unit")

        // The end: a run that changes nothing.
        let last = try await run(two, extra: socket)
        #expect(PlayRecap.parse(last.stdout)["n1"]?.changed == 0, "\(last.stdout.suffix(3000))")
        let total = (ContinuousClock.now - started) / .seconds(1)
        print("e2e rollout service faults: 3 kills (listener, relay, unit), \(runs) runs in \(Int(total.rounded())) s")
    }
}
