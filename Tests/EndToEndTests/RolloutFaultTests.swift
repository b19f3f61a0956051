import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// A rollout killed at a task boundary of the role converges with one more run (docs/deploy.md, "What
/// survives an interrupted rollout"). Ansible keeps a pending handler only in the memory of the running
/// ansible-playbook: before the role kept records on the node of what was loaded, a run killed after it
/// copied a node's files and before its handlers ran left charon, the nftables table and the kernel settings
/// on the old configuration, and every later run found the files in place and reported changed=0.
///
/// One node with a host behind it alternates between two generations of a fleet, A and B: B revokes bob,
/// adds dave, rotates the node's PSK, moves its pool (so swanctl.conf and the nftables table change) and
/// adds an IPv6 pool (so its kernel settings change). A recording run from A to B lists the run's
/// boundaries (every task and handler it starts, as `AnsibleKiller`'s callback plugin in the ansible-playbook
/// process sees them) and which of them follow a task that changed the node. At each of those but the last
/// (after it the rollout is complete), a run towards the other generation is SIGKILLed by the plugin just
/// before the boundary, and one more run completes it; a boundary after a task that changed nothing leaves
/// the node as the one before it does.
/// After every such rerun charon's pool and the nftables table's pool set are the new generation's, and the
/// node forwards IPv6 with B. Where the kill left the new files installed and the old configuration loaded
/// (the case the role used to lose), clients prove it: the user only the new generation has connects and
/// pings the host behind the node, the user only the other has is refused, and the other generation's PSK is
/// refused while the new one connects. Check mode, once, reports the pending load as a change and
/// loads nothing. A last run changes nothing.
@Suite struct RolloutFaultTests {
    /// Generation A (`b: false`) or B of the fleet.
    static func inventory(b: Bool) -> String {
        """
        vpnprov: 1
        name: lab
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        nodes:
          n1:
            address: 192.0.2.1
            pool: \(b ? "10.91.0.0/24\n    pool6: fd00:91::/112" : "10.81.0.0/24")
            services: [ikev2-eap, ikev2-psk]
            psk: gen
        users:
          ann:
            password: gen
          bob:
            password: gen
        \(b ? "    revoked: true\n  dave:\n    password: gen\n" : "")
        """
    }

    struct Generation {
        let name: String
        /// A copy of the output tree `generate` wrote for it (deploy/ finds servers/ beside it).
        let out: URL
        /// The node's pool, as `swanctl --list-pools` prints its base.
        let pool: String
        /// The user only this generation has.
        let newUser: String

        var arguments: [String] {
            [
                "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                out.appendingPathComponent("deploy/site.yml").path,
            ]
                + AnsibleRolloutTests.labVariables
        }
    }

    @Test("A rollout killed between two changes of the node is completed by the next run", .ansible)
    func aRolloutKilledAtATaskBoundaryIsLoadedByTheNextRun() async throws {
        try await Subprocess.onOwnExecutor { try await scenario() }
    }

    func scenario() async throws {
        try StrongSwanEnvironment.require()
        try AnsibleTools.require()
        let started = ContinuousClock.now
        let lab = try AnsibleLab.start(nodes: ["n1"])
        defer { lab.teardown() }
        let dir = try Scratch.makeDirectory("rollout-faults")
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = try lab.node("n1")
        let behind = try lab.addHostBehind(node)

        // The two generations, from one state: A, then B (bob revoked, dave added, the PSK rotated, new pools).
        let inventory = dir.appendingPathComponent("fleet.yaml").path
        let out = dir.appendingPathComponent("out")
        let state = dir.appendingPathComponent("state")
        func vpnprov(_ arguments: [String]) throws {
            let result = try VPNProvBinary.run(arguments + [inventory, "--out", out.path, "--state", state.path])
            guard result.succeeded else { throw HarnessError("vpnprov \(arguments): \(result)") }
        }
        func keep(_ name: String) throws -> URL {
            let copy = dir.appendingPathComponent(name)
            try Subprocess.check("/bin/cp", ["-a", out.path, copy.path])
            return copy
        }
        try Self.inventory(b: false).write(toFile: inventory, atomically: true, encoding: .utf8)
        try vpnprov(["generate"])
        let a = Generation(name: "A", out: try keep("out-a"), pool: "10.81.0.0", newUser: "bob")
        try Self.inventory(b: true).write(toFile: inventory, atomically: true, encoding: .utf8)
        try vpnprov(["rotate-psk", "n1"])
        let b = Generation(name: "B", out: try keep("out-b"), pool: "10.91.0.0", newUser: "dave")
        func other(_ generation: Generation) -> Generation { generation.name == "A" ? b : a }

        // The clients: each user's profile of each generation (ann's carry the node's PSK of their generation).
        var clients: [String: Charon] = [:]
        for (generation, users) in [(a, ["ann", "bob"]), (b, ["ann", "dave"])] {
            for user in users {
                let label = "\(user)-\(generation.name)"
                let client = try lab.addClient(label)
                try client.loadAllCleanly(
                    confFile: generation.out.appendingPathComponent("clients/\(user)/linux/swanctl/swanctl.conf").path)
                clients[label] = client
            }
        }

        // The killer, and the runs.
        let killer = try AnsibleKiller(directory: dir.appendingPathComponent("callbacks"))
        var runs = 0
        var seconds: [String: Double] = [:]
        /// A run towards `generation`, killed just before boundary `killAt` (0: not killed); the boundaries it
        /// reached.
        func run(_ generation: Generation, killAt: Int = 0, extra: [String] = [], what: String) async throws -> (
            result: CommandResult, boundaries: [AnsibleKiller.Boundary]
        ) {
            runs += 1
            let log = dir.appendingPathComponent("boundaries-\(runs)")
            let clock = ContinuousClock.now
            let result = try await lab.playbook(
                generation.arguments + extra, environment: killer.environment(log: log, killAt: killAt))
            seconds[what, default: 0] += (ContinuousClock.now - clock) / .seconds(1)
            let boundaries = AnsibleKiller.boundaries(log)
            if killAt > 0 {
                try #require(
                    AnsibleKiller.killed(boundaries, result) == killAt,
                    "\(what): not killed at boundary \(killAt): \(boundaries.suffix(3)) \(result)")
            } else {
                try #require(result.succeeded, "\(what): \(result.stdout.suffix(4000)) \(result.stderr.suffix(2000))")
            }
            return (result, boundaries)
        }

        /// The pools charon holds (their bases).
        func loadedPools() throws -> [String] {
            let pools = try lab.swanctl(node, ["--list-pools"])
            return [a.pool, b.pool].filter { pools.stdout.contains($0) }
        }
        /// What is live on the node is `generation`: charon's pool, the nftables table's pool set, and with B
        /// IPv6 forwarding (set to 0 before each run towards B, so only that run's `sysctl -p` turns it on).
        func expectLive(_ generation: Generation, _ what: String) throws {
            #expect(try loadedPools() == [generation.pool], "\(what): charon holds another pool")
            let set = try lab.run(node, ["nft", "list", "set", "inet", "vpnprov", "pool4"])
            #expect(set.stdout.contains(generation.pool + "/24"), "\(what): the nftables table: \(set)")
            if generation.name == "B" {
                let forwarding = try lab.run(node, ["sysctl", "-n", "net.ipv6.conf.all.forwarding"])
                #expect(forwarding.stdout == "1\n", "\(what): the node does not forward IPv6: \(forwarding)")
            }
        }
        func stopIPv6Forwarding() throws {
            try Subprocess.check(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", node.namespace, "sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=0"])
        }
        var proofs = 0
        /// Real clients: `generation`'s new user connects and pings the host behind the node, the other
        /// generation's new user is refused; `generation`'s PSK connects, the other's is refused.
        func proveWithClients(_ generation: Generation, _ what: String) throws {
            proofs += 1
            let clock = ContinuousClock.now
            defer { seconds["client proofs", default: 0] += (ContinuousClock.now - clock) / .seconds(1) }
            func connects(_ label: String, _ service: String) throws {
                let client = try #require(clients[label])
                let ike = "n1-\(service)"
                let result = try client.initiate(child: ike, ike: ike, timeout: .seconds(20))
                try #require(result.succeeded, "\(what): \(label) -> \(ike): \(result)\n\(lab.log(node).suffix(3000))")
                let vip = try #require(try client.virtualIPs(ike: ike).first { !$0.contains(":") }, "\(label): no VIP")
                #expect(vip.hasPrefix(String(generation.pool.dropLast(1))), "\(what): \(label) got \(vip)")
                let ping = try lab.ping(fromClient: label, source: vip, to: behind)
                #expect(ping.succeeded, "\(what): \(label) -> the host behind the node: \(ping)")
                _ = try client.terminate(ike: ike)
            }
            func refused(_ label: String, _ service: String) throws {
                let client = try #require(clients[label])
                let ike = "n1-\(service)"
                let result = try client.initiate(child: ike, ike: ike, timeout: .seconds(10))
                #expect(!result.succeeded, "\(what): \(label) connected with \(ike)")
                _ = try? client.terminate(ike: ike, timeout: .seconds(3))
            }
            try connects("\(generation.newUser)-\(generation.name)", "ikev2-eap")
            try refused("\(other(generation).newUser)-\(other(generation).name)", "ikev2-eap")
            try connects("ann-\(generation.name)", "ikev2-psk")
            try refused("ann-\(other(generation).name)", "ikev2-psk")
        }

        // A, then the recording run from A to B: the boundaries of a rollout that changes every part.
        _ = try await run(a, what: "rollouts to start from")
        try stopIPv6Forwarding()
        let boundaries = try await run(b, what: "rollouts to start from").boundaries
        try expectLive(b, "after the recording run")
        let handlers = boundaries.filter { $0.kind == "handler" }.map(\.name)
        #expect(
            handlers.contains { $0.hasSuffix("Apply the kernel settings") }
                && handlers.contains { $0.hasSuffix("Load the nftables table") }, "\(handlers)")
        // Killed at each boundary that follows a change of the node and precedes another: before the first change
        // the node is the previous generation's (the recording run is the run from there), after the last one it
        // is complete (the last run below is the run from there), and a boundary after a task that changed
        // nothing leaves the node as the one before it.
        let changes = boundaries.filter(\.afterChange).map(\.number)
        try #require(changes.count > 5, "\(boundaries)")
        let killPoints = changes.dropLast()

        // Each kill point: killed there on the way to the other generation, then one run.
        var current = b
        var lost: [String] = []
        var checked = false
        for k in killPoints {
            let target = other(current)
            let what = "killed before boundary \(k) (\(boundaries[k - 1].name)) on the way to \(target.name)"
            if target.name == "B" { try stopIPv6Forwarding() }
            _ = try await run(target, killAt: k, what: "killed runs")
            // The case the role used to lose: the new files installed, charon on the old ones.
            let installed = FileManager.default.contents(atPath: node.swanctlDirectory + "/swanctl.conf")
            let generated = FileManager.default.contents(
                atPath: target.out.appendingPathComponent("servers/n1/swanctl/swanctl.conf").path)
            let held = try loadedPools()
            let isLost = installed == generated && held == [current.pool]
            if isLost { lost.append(boundaries[k - 1].name) }
            if isLost && !checked {
                // Check mode reports the pending load and loads nothing.
                checked = true
                let check = try await run(target, extra: ["--check", "-v"], what: "check mode")
                #expect(
                    (PlayRecap.parse(check.result.stdout)["n1"]?.changed ?? 0) > 0
                        && check.result.stdout.contains("is not the one charon last loaded"),
                    "\(what): check mode did not report the pending load: \(check.result.stdout.suffix(3000))")
                #expect(try loadedPools() == [current.pool], "\(what): check mode loaded")
            }
            _ = try await run(target, what: "reruns")
            try expectLive(target, what)
            if isLost { try proveWithClients(target, what) }
            current = target
        }
        #expect(!lost.isEmpty, "no kill left the new files installed and the old configuration loaded")

        // The end: the last generation live (clients), and a run that changes nothing.
        try proveWithClients(current, "at the end")
        let last = try await run(current, what: "the last run")
        #expect(PlayRecap.parse(last.result.stdout)["n1"]?.changed == 0, "\(last.result.stdout.suffix(3000))")
        let total = (ContinuousClock.now - started) / .seconds(1)
        let spent = seconds.sorted { $0.key < $1.key }.map { "\($0.key) \(Int($0.value.rounded())) s" }
        print(
            "e2e rollout faults: \(boundaries.count) boundaries, killed at the \(killPoints.count) between changes"
                + " (\(killPoints.map(String.init).joined(separator: " ")));"
                + " \(lost.count) kills left new files installed and the old configuration loaded;"
                + " \(proofs) client proofs; \(runs) runs in \(Int(total.rounded())) s (\(spent.joined(separator: ", ")))"
        )
    }
}
