import Foundation
import Testing
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// Draining a node (docs/operations.md, "Draining a node"), with real daemons: two nodes of one region and tier,
/// rolled out by the generated site.yml; `state: draining` on node a prepares its sibling b (its certificate also
/// names a, its `ikev2-eap-from-a` connection), the static catalogue marks a, and the generated deploy/drain.yml
/// moves a's IKEv2 clients to b (IKEv2 redirect) and ends the others after the grace period.
@Suite struct DrainTests {
    static func inventory(draining: Bool) -> String {
        """
        vpnprov: 1
        name: lab
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
          region: lab
          services: [ikev2-eap]
        nodes:
          a:
            address: 192.0.2.1
            pool: 10.81.0.0/24
        \(draining ? "    state: draining\n" : "")  b:
            address: 192.0.2.2
            pool: 10.82.0.0/24
        users:
          ann:
            password: gen
            nodes: [a]
          win:
            password: gen
            nodes: [a]

        """
    }

    /// The catalogue entries' `state` of each node.
    static func catalogueStates(_ out: URL) throws -> [String: String] {
        let data = try Data(contentsOf: out.appendingPathComponent("catalog/servers.json"))
        let top = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var states: [String: String] = [:]
        for entry in top["servers"] as? [[String: Any]] ?? [] {
            states[entry["node"] as? String ?? ""] = entry["state"] as? String ?? "active"
        }
        return states
    }

    @Test(
        "Draining a node: a Linux swanctl client follows the redirect to the sibling and keeps pinging a host behind the drained node, a client that does not follow is ended after the grace period, and leaving the drain takes the record off",
        .ansible)
    func aDrainedNodesClientsMoveToTheSibling() async throws {
        try await Subprocess.onOwnExecutor { try await drainScenario() }
    }

    func drainScenario() async throws {
        try AnsibleTools.require()
        let lab = try AnsibleLab.start(nodes: ["a", "b"])
        defer { lab.teardown() }
        let work = try Scratch.makeDirectory("drain")
        let inventory = work.appendingPathComponent("inventory.yaml").path
        let out = work.appendingPathComponent("out")
        let state = work.appendingPathComponent("state")
        func generate(draining: Bool) throws {
            try Self.inventory(draining: draining).write(toFile: inventory, atomically: true, encoding: .utf8)
            let result = try VPNProvBinary.run(["generate", inventory, "--out", out.path, "--state", state.path])
            guard result.succeeded else { throw HarnessError("generate failed: \(result)") }
        }
        func playbook(_ file: String, _ extra: [String]) async throws -> ProgramResult {
            let result = try await lab.playbook(
                [
                    "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                    out.appendingPathComponent("deploy/\(file)").path,
                ]
                    + AnsibleRolloutTests.labVariables + ["-e", "vpnprov_manage_network=false"] + extra)
            guard result.succeeded else { throw HarnessError("\(file) \(extra): \(result)") }
            return result
        }
        let a = try lab.node("a")
        let b = try lab.node("b")
        // A host behind a: its inner address, which b reaches through a (b forwards its clients' packets there).
        _ = try lab.run(b, ["/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"])
        _ = try lab.run(b, [StrongSwanEnvironment.ipPath, "route", "add", "\(a.innerAddress)/32", "via", a.address])
        _ = try lab.run(a, [StrongSwanEnvironment.ipPath, "route", "add", "10.82.0.0/24", "via", b.address])

        // 1. In service: both nodes rolled out, ann and win connected to a.
        try generate(draining: false)
        #expect(try Self.catalogueStates(out) == ["a": "active", "b": "active"])
        _ = try await playbook("site.yml", ["-e", "vpnprov_serial=2"])
        let ann = try lab.addClient("ann")
        try ann.loadAllCleanly(confFile: out.appendingPathComponent("clients/ann/linux/swanctl/swanctl.conf").path)
        // win: a client that does not follow a redirect (Windows' RasMan announces no REDIRECT_SUPPORTED).
        let win = try lab.addClient("win")
        win.stop()
        let winNamespace = try #require(lab.clientNamespace("win"))
        let winCharon = try Charon.start(
            in: winNamespace, label: "win-noredirect", extraSettings: "charon-systemd {\n  follow_redirects = no\n}\n")
        defer { winCharon.stop() }
        try winCharon.loadAllCleanly(
            confFile: out.appendingPathComponent("clients/win/linux/swanctl/swanctl.conf").path)
        for (client, label) in [(ann, "ann"), (winCharon, "win")] {
            let up = try client.initiate(child: "a-ikev2-eap", ike: "a-ikev2-eap")
            #expect(up.succeeded, "\(label) -> a: \(up)\n\(lab.log(a))")
        }
        // The lab's clients run kernel-libipsec, which keeps only its current peer's IKE packets out of the tunnel's
        // routes (an exclude route); charon with the kernel's IPsec exempts its IKE sockets from every policy
        // (bypass_socket in strongSwan's kernel-netlink plugin). So the sibling is kept out of the tunnel here, as
        // a device's own IPsec stack does.
        for namespace in [try #require(lab.clientNamespace("ann")), winNamespace] {
            try Subprocess.check(
                StrongSwanEnvironment.ipPath,
                ["-n", namespace, "route", "add", "\(b.address)/32", "dev", "eth0", "table", "220"])
        }
        let annVIP = try #require(try ann.virtualIPs().first)
        #expect(annVIP.hasPrefix("10.81.0."))

        // 2. a drains: b rolled out first (a's identity in its certificate, its ikev2-eap-from-a connection).
        try generate(draining: true)
        #expect(try Self.catalogueStates(out) == ["a": "draining", "b": "active"])
        _ = try await playbook("site.yml", ["--limit", "b"])
        #expect(try lab.swanctl(b, ["--list-conns"]).stdout.contains("ikev2-eap-from-a:"))
        #expect(try lab.ping(fromClient: "ann", source: annVIP, to: a.innerAddress).succeeded)

        // ann pings the host behind a (five a second, unbound: the source follows the virtual IP) through the drain.
        let annNamespace = try #require(lab.clientNamespace("ann"))
        async let pings = Subprocess.runAwaiting(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", annNamespace, StrongSwanEnvironment.pingPath, "-n", "-i", "0.2", "-w", "50",
                a.innerAddress,
            ],
            timeout: .seconds(90))
        let started = ContinuousClock.now
        let drain = try await playbook("drain.yml", ["--limit", "a", "-e", "vpnprov_drain_grace=40", "-v"])
        let took = ContinuousClock.now - started
        #expect(drain.stdout.contains("changed=1"), "\(drain.stdout)")
        // ann now runs on b: a new virtual IP from b's pool, the old SA at a gone.
        let moved = try ann.virtualIPs()
        let listed = try ann.swanctl(["--list-sas"]).stdout
        #expect(
            moved.contains { $0.hasPrefix("10.82.0.") } && !moved.contains { $0.hasPrefix("10.81.0.") },
            "ann: \(moved)\n\(listed)")
        #expect(listed.contains("192.0.2.2"), "\(listed)")
        #expect(lab.log(b).contains("ikev2-eap-from-a"), "b selected the connection for a's clients\n\(lab.log(b))")
        // win never announced redirect support, so a asked it in vain; it was ended after the grace period.
        #expect(lab.log(a).contains("does not support IKE redirection"))
        #expect(try winCharon.securityAssociations().isEmpty, "win is still connected")
        #expect(took >= .seconds(40), "the grace period was not kept: \(took)")
        #expect(try lab.swanctl(a, ["--list-sas"]).stdout.contains("a-ikev2-eap") == false)
        let ping = try await pings
        let summary = ping.stdout.split(separator: "\n").first { $0.contains("packets transmitted") } ?? ""
        let numbers = summary.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.count >= 2, "\(ping)")
        let sent = numbers.first ?? 0
        let received = numbers.count > 1 ? numbers[1] : 0
        // Make-before-break: the client builds its SA at b before it deletes the one at a.
        #expect(sent >= 200 && sent - received <= 2, "pings lost during the redirect: \(summary)")
        print("drain: \(sent - received) of \(sent) pings lost; drain.yml took \(took)")

        // 3. Run again, with no client left: nothing changes.
        let again = try await playbook("drain.yml", ["--limit", "a", "-e", "vpnprov_drain_grace=40"])
        #expect(again.stdout.contains("changed=0"), "\(again.stdout)")
        #expect(FileManager.default.fileExists(atPath: a.etc + "/swanctl/.vpnprov-drain.json"))

        // 4. Leaving the drain: the inventory says active again, the catalogue too, the record goes.
        try generate(draining: false)
        #expect(try Self.catalogueStates(out) == ["a": "active", "b": "active"])
        let check = try await playbook("drain.yml", ["--limit", "a", "--check"])
        #expect(check.stdout.contains("changed=1"), "\(check.stdout)")
        #expect(FileManager.default.fileExists(atPath: a.etc + "/swanctl/.vpnprov-drain.json"), "check mode removed it")
        _ = try await playbook("drain.yml", ["--limit", "a"])
        #expect(!FileManager.default.fileExists(atPath: a.etc + "/swanctl/.vpnprov-drain.json"))
        // win, ended, connects to a again, which is in service.
        let back = try winCharon.initiate(child: "a-ikev2-eap", ike: "a-ikev2-eap")
        #expect(back.succeeded, "\(back)\n\(lab.log(a))")
    }
}
