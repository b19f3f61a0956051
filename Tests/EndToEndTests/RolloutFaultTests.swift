import Foundation
import Glibc
import Testing
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// A rollout killed at a task boundary of the role converges with one more run (docs/deploy.md, "What
/// survives an interrupted rollout"). Ansible keeps a pending handler only in the memory of the running
/// ansible-playbook: before the role kept records on the node of what was loaded, a run killed after it
/// copied a node's files and before its handlers ran left charon, the nftables table and the kernel settings
/// on the old configuration, and every later run found the files in place and reported changed=0.
///
/// A node with a host behind it alternates between two generations of a fleet, A and B: B revokes bob,
/// adds dave, rotates the node's PSK, moves its pool (so swanctl.conf and the nftables table change) and
/// adds an IPv6 pool (so its kernel settings change). A recording run from A to B lists the run's
/// boundaries (every task and handler it starts, as `AnsibleKiller`'s callback plugin in the ansible-playbook
/// process sees them) and which of them follow a task that changed the node. At each of those but the last
/// (after it the rollout is complete), a run towards the other generation is SIGKILLed by the plugin just
/// before the boundary, and one more run completes it; a boundary after a task that changed nothing leaves
/// the node as the one before it does. The kill points are shared out between two such labs, side by side.
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
        let dir = try Scratch.makeDirectory("rollout-faults")
        defer { try? FileManager.default.removeItem(at: dir) }

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

        // Two labs, each a node with a host behind it and the clients, that run half of the kill points each, side
        // by side: the kill points are a chain of runs one after another (each starts from where the last left the
        // node), the run's longest, and one chain would use one core of two.
        let killer = try AnsibleKiller(directory: dir.appendingPathComponent("callbacks"))
        let tally = Tally()
        let first = try FaultNode.start(label: "1", a: a, b: b, killer: killer, tally: tally, dir: dir)
        defer { first.lab.teardown() }
        let second = try FaultNode.start(label: "2", a: a, b: b, killer: killer, tally: tally, dir: dir)
        defer { second.lab.teardown() }

        // A, then on the first lab the recording run from A to B: the boundaries of a rollout that changes every
        // part. The second lab waits at A.
        async let recorded = Subprocess.onOwnExecutor { () async throws -> [AnsibleKiller.Boundary] in
            _ = try await first.run(a, what: "rollouts to start from")
            try first.stopIPv6Forwarding()
            let boundaries = try await first.run(b, what: "rollouts to start from").boundaries
            try first.expectLive(b, "after the recording run")
            return boundaries
        }
        async let secondAtA = Subprocess.onOwnExecutor { _ = try await second.run(a, what: "rollouts to start from") }
        let boundaries = try await recorded
        try await secondAtA
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
        let killPoints = Array(changes.dropLast())

        // Each kill point: killed there on the way to the other generation, then one run; in one chain from B the
        // runs go to A, B, A, ... The first lab (at B) takes the first half, an odd number of kill points, and the
        // second (at A) the rest, so every kill point is reached on the way to the same generation as in one chain.
        let half = killPoints.count / 2 | 1
        async let firstChain = Subprocess.onOwnExecutor {
            try await first.kill(at: Array(killPoints[..<half]), boundaries: boundaries, from: b)
        }
        async let secondChain = Subprocess.onOwnExecutor {
            let current = try await second.kill(at: Array(killPoints[half...]), boundaries: boundaries, from: a)
            // The end: the last generation live (clients), and a run that changes nothing.
            try second.proveWithClients(current, "at the end")
            let last = try await second.run(current, what: "the last run")
            #expect(PlayRecap.parse(last.result.stdout)["n1"]?.changed == 0, "\(last.result.stdout.suffix(3000))")
        }
        _ = try await firstChain
        try await secondChain
        let (runs, seconds, proofs, lost) = tally.state.withLock { ($0.runs, $0.seconds, $0.proofs, $0.lost) }
        #expect(!lost.isEmpty, "no kill left the new files installed and the old configuration loaded")

        let total = (ContinuousClock.now - started) / .seconds(1)
        let spent = seconds.sorted { $0.key < $1.key }.map { "\($0.key) \(Int($0.value.rounded())) s" }
        let split = "\(half) on one lab, the rest on another"
        let points = killPoints.map(String.init).joined(separator: " ")
        let summary =
            "\(boundaries.count) boundaries, killed at the \(killPoints.count) between changes (\(points), \(split))"
        let found = "\(lost.count) kills left new files installed and the old configuration loaded"
        let timing =
            "\(runs) runs in \(Int(total.rounded())) s (\(spent.joined(separator: ", ")), summed over both labs)"
        print("e2e rollout faults: \(summary); \(found); \(proofs) client proofs; \(timing)")
    }

    /// What the runs of both labs took and found.
    final class Tally: Sendable {
        struct State {
            var runs = 0
            var seconds: [String: Double] = [:]
            var proofs = 0
            /// The boundaries whose kill left the new files installed and the old configuration loaded.
            var lost: [String] = []
            /// Check mode was run (once, at the first such kill).
            var checked = false
        }
        let state = Locked(State())

        func add(_ what: String, since clock: ContinuousClock.Instant) {
            let spent = (ContinuousClock.now - clock) / .seconds(1)
            state.withLock { $0.seconds[what, default: 0] += spent }
        }
    }

    /// One lab node with a host behind it, the clients (each user's profile of each generation; ann's carry the
    /// node's PSK of their generation), and the runs towards either generation.
    struct FaultNode {
        let label: String
        let lab: AnsibleLab
        let node: AnsibleLab.Node
        let behind: String
        let clients: [String: Charon]
        let a: Generation
        let b: Generation
        let killer: AnsibleKiller
        let tally: Tally
        let dir: URL

        static func start(
            label: String, a: Generation, b: Generation, killer: AnsibleKiller, tally: Tally, dir: URL
        ) throws -> FaultNode {
            let lab = try AnsibleLab.start(nodes: ["n1"])
            do {
                let node = try lab.node("n1")
                let behind = try lab.addHostBehind(node)
                var clients: [String: Charon] = [:]
                for (generation, users) in [(a, ["ann", "bob"]), (b, ["ann", "dave"])] {
                    for user in users {
                        let label = "\(user)-\(generation.name)"
                        let client = try lab.addClient(label)
                        try client.loadAllCleanly(
                            confFile: generation.out.appendingPathComponent(
                                "clients/\(user)/linux/swanctl/swanctl.conf"
                            ).path)
                        clients[label] = client
                    }
                }
                return FaultNode(
                    label: label, lab: lab, node: node, behind: behind, clients: clients, a: a, b: b, killer: killer,
                    tally: tally, dir: dir)
            } catch {
                lab.teardown()
                throw error
            }
        }

        func other(_ generation: Generation) -> Generation { generation.name == "A" ? b : a }

        /// A run towards `generation`, killed just before boundary `killAt` (0: not killed); the boundaries it
        /// reached.
        func run(_ generation: Generation, killAt: Int = 0, extra: [String] = [], what: String) async throws -> (
            result: ProgramResult, boundaries: [AnsibleKiller.Boundary]
        ) {
            let runs = tally.state.withLock {
                $0.runs += 1
                return $0.runs
            }
            let log = dir.appendingPathComponent("boundaries-\(runs)")
            let clock = ContinuousClock.now
            let result = try await lab.playbook(
                generation.arguments + extra, environment: killer.environment(log: log, killAt: killAt))
            tally.add(what, since: clock)
            let boundaries = AnsibleKiller.boundaries(log)
            if killAt > 0 {
                try #require(
                    AnsibleKiller.killed(boundaries, result) == killAt,
                    "lab \(label): \(what): not killed at boundary \(killAt): \(boundaries.suffix(3)) \(result)")
            } else {
                try #require(
                    result.succeeded,
                    "lab \(label): \(what): \(result.stdout.suffix(4000)) \(result.stderr.suffix(2000))")
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

        /// Real clients: `generation`'s new user connects and pings the host behind the node, the other
        /// generation's new user is refused; `generation`'s PSK connects, the other's is refused.
        func proveWithClients(_ generation: Generation, _ what: String) throws {
            tally.state.withLock { $0.proofs += 1 }
            let clock = ContinuousClock.now
            defer { tally.add("client proofs", since: clock) }
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

        /// Each of `killPoints` in turn, the node being at `start` first: a run towards the other generation killed
        /// there, then one run. Returns the generation live at the end.
        func kill(
            at killPoints: [Int], boundaries: [AnsibleKiller.Boundary], from start: Generation
        ) async throws -> Generation {
            var current = start
            for k in killPoints {
                let target = other(current)
                let what =
                    "lab \(label): killed before boundary \(k) (\(boundaries[k - 1].name)) on the way to \(target.name)"
                if target.name == "B" { try stopIPv6Forwarding() }
                _ = try await run(target, killAt: k, what: "killed runs")
                // The case the role used to lose: the new files installed, charon on the old ones.
                let installed = FileManager.default.contents(atPath: node.swanctlDirectory + "/swanctl.conf")
                let generated = FileManager.default.contents(
                    atPath: target.out.appendingPathComponent("servers/n1/swanctl/swanctl.conf").path)
                let held = try loadedPools()
                let isLost = installed == generated && held == [current.pool]
                let checking = tally.state.withLock { state in
                    guard isLost else { return false }
                    state.lost.append(boundaries[k - 1].name)
                    defer { state.checked = true }
                    return !state.checked
                }
                if checking {
                    // Check mode reports the pending load and loads nothing.
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
            return current
        }
    }
}
