import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// The node's uplink: a third namespace ("internet") with one host, 203.0.113.80 / 2001:db8:80::80,
/// joined to the node's namespace by a veth. The host knows no route to the pools: only NAT brings
/// its answers back. It drops ICMP "fragmentation needed" and "packet too big" (a PMTUD black hole)
/// and counts the echo requests it receives.
final class Internet: Sendable {
    let namespace: String
    private let tornDown = Once()

    private init(namespace: String) { self.namespace = namespace }

    static func attach(to serverNamespace: String) throws -> Internet {
        // One more letter, not a fifth dash-separated field: NetworkPair.removeStale() then also removes
        // it after a killed run.
        let internet = Internet(namespace: serverNamespace + "i")
        do {
            let ip = StrongSwanEnvironment.ipPath
            try Subprocess.check(ip, ["netns", "add", internet.namespace])
            try Subprocess.check(
                ip,
                [
                    "link", "add", "up0", "netns", serverNamespace, "type", "veth", "peer", "name", "eth0", "netns",
                    internet.namespace,
                ])
            try Subprocess.check(
                ip, ["-n", serverNamespace, "addr", "add", "\(ForwardingTests.nodeUplinkAddress)/24", "dev", "up0"])
            try Subprocess.check(
                ip,
                [
                    "-n", serverNamespace, "addr", "add", "\(ForwardingTests.nodeUplinkAddress6)/64", "dev", "up0",
                    "nodad",
                ])
            try Subprocess.check(ip, ["-n", serverNamespace, "link", "set", "up0", "up"])
            try Subprocess.check(ip, ["-n", internet.namespace, "link", "set", "lo", "up"])
            try Subprocess.check(
                ip, ["-n", internet.namespace, "addr", "add", "\(ForwardingTests.hostAddress)/24", "dev", "eth0"])
            try Subprocess.check(
                ip,
                ["-n", internet.namespace, "addr", "add", "\(ForwardingTests.hostAddress6)/64", "dev", "eth0", "nodad"])
            try Subprocess.check(ip, ["-n", internet.namespace, "link", "set", "eth0", "up"])
            let rules = """
                table inet host {
                    chain input {
                        type filter hook input priority filter; policy accept;
                        icmp type destination-unreachable icmp code frag-needed drop
                        icmpv6 type packet-too-big drop
                        icmp type echo-request counter name echoes
                    }
                    counter echoes {}
                }
                """
            try NetworkPair.loadNftables(rules, in: internet.namespace)
        } catch {
            internet.teardown()
            throw error
        }
        return internet
    }

    func teardown() {
        guard tornDown.claim() else { return }
        let pids = (try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "pids", namespace]).stdout) ?? ""
        for pid in pids.split(separator: "\n") { kill(pid_t(pid) ?? 0, SIGKILL) }
        _ = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "delete", namespace])
    }

    deinit { teardown() }

    /// The node's generated sysctl file and nftables table, applied as the node README says
    /// (`mssRules: false` loads the same table without its MSS lines).
    func applyGenerated(node: GeneratedDeployment.Node, in serverNamespace: String, mssRules: Bool) throws {
        let network = node.directory.appendingPathComponent("network")
        try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", serverNamespace, "sysctl", "-q", "-p",
                network.appendingPathComponent("60-vpnprov.conf").path,
            ])
        var rules = try String(contentsOf: network.appendingPathComponent("vpnprov.nft"), encoding: .utf8)
        if !mssRules {
            rules = rules.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("maxseg") }
                .joined(separator: "\n")
        }
        try NetworkPair.loadNftables(rules, in: serverNamespace)
    }

    /// `curl` from `source` in `namespace`: prints "<status> <bytes>".
    func download(from namespace: String, source: String, maxTime: Int, ipv6: Bool = false) throws -> ProgramResult {
        let url = ipv6 ? "http://[\(ForwardingTests.hostAddress6)]/blob" : "http://\(ForwardingTests.hostAddress)/blob"
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, "curl", "-s", "-o", "/dev/null", "--interface", source, "--max-time",
                String(maxTime),
                "-w", "%{http_code} %{size_download}", url,
            ],
            timeout: .seconds(maxTime + 10))
    }

    /// Echo requests the host has received so far.
    func echoRequestsSeen() throws -> Int {
        let out = try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", namespace, "nft", "list", "counter", "inet", "host", "echoes"]
        ).stdout
        guard let range = out.range(of: "packets ") else { throw HarnessError("no counter in: \(out)") }
        return Int(out[range.upperBound...].prefix { $0.isNumber }) ?? -1
    }
}

/// dnsmasq on the host behind the node, answering web.vpn.test with the host's address and logging
/// every query. It runs as a daemon (dnsmasq closes every inherited descriptor, which Foundation's
/// Process would take for its exit) and is stopped by the pid it writes.
final class Dnsmasq: Sendable {
    private let pidFile: URL
    private let logURL: URL

    private init(pidFile: URL, logURL: URL) {
        self.pidFile = pidFile
        self.logURL = logURL
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Listens on `addresses` (the host behind the node by default) and answers web.vpn.test with the
    /// host's address.
    static func start(in namespace: String, listen addresses: [String] = [ForwardingTests.hostAddress]) throws
        -> Dnsmasq
    {
        let dir = try Scratch.makeDirectory("dnsmasq")
        let logURL = dir.appendingPathComponent("queries.log")
        let pidFile = dir.appendingPathComponent("dnsmasq.pid")
        try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, "dnsmasq", "--no-resolv", "--no-hosts", "--conf-file=/dev/null",
                "--user=root", "--pid-file=\(pidFile.path)", "--bind-interfaces",
            ] + addresses.map { "--listen-address=\($0)" } + [
                "--address=/web.vpn.test/\(ForwardingTests.hostAddress)", "--log-queries",
                "--log-facility=\(logURL.path)",
            ])
        let d = Dnsmasq(pidFile: pidFile, logURL: logURL)
        // The parent exits once the daemon's sockets are bound: it answers from here on.
        for address in addresses {
            let probe = try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", namespace, "dig", "+short", "+time=2", "+tries=2", "@\(address)", "web.vpn.test"])
            guard probe.stdout.contains(ForwardingTests.hostAddress) else {
                d.stop()
                throw HarnessError("dnsmasq does not answer on \(address) in \(namespace): \(probe)")
            }
        }
        return d
    }

    func stop() {
        if let text = try? String(contentsOf: pidFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGKILL)
        }
    }
}

/// A second client namespace beside a NetworkPair, linked to the server namespace by its own veth
/// (198.18.0.0/24, RFC 2544's benchmarking range), with its own charon: two clients of one node at once.
final class SecondClient: Sendable {
    let namespace: String
    let charon: Charon

    private init(namespace: String, charon: Charon) {
        self.namespace = namespace
        self.charon = charon
    }

    static func start(beside pair: NetworkPair, build: StrongSwanBuild) throws -> SecondClient {
        let ns = pair.serverNamespace + "c2"  // four dash-separated fields, as removeStale() expects
        let ip = StrongSwanEnvironment.ipPath
        do {
            try Subprocess.check(ip, ["netns", "add", ns])
            try Subprocess.check(
                ip,
                [
                    "link", "add", "veth2", "netns", pair.serverNamespace, "type", "veth", "peer", "name", "veth0",
                    "netns", ns,
                ])
            try Subprocess.check(ip, ["-n", pair.serverNamespace, "addr", "add", "198.18.0.1/24", "dev", "veth2"])
            try Subprocess.check(ip, ["-n", pair.serverNamespace, "link", "set", "veth2", "up"])
            try Subprocess.check(ip, ["-n", ns, "link", "set", "lo", "up"])
            try Subprocess.check(ip, ["-n", ns, "addr", "add", "198.18.0.2/24", "dev", "veth0"])
            try Subprocess.check(ip, ["-n", ns, "link", "set", "veth0", "up"])
            try Subprocess.check(ip, ["-n", ns, "route", "add", "\(pair.serverAddress)/32", "via", "198.18.0.1"])
            let etc = try PrivateView.create(of: "/etc", for: ns, own: ["hosts"])
            let hosts =
                "127.0.0.1 localhost\n::1 localhost\n"
                + ForwardingTests.hosts.map { "\(pair.serverAddress) \($0)\n" }.joined()
            try hosts.write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
            let charon = try Charon.start(in: ns, build: build, label: "client2")
            return SecondClient(namespace: ns, charon: charon)
        } catch {
            _ = try? Subprocess.run(ip, ["netns", "delete", ns])
            PrivateView.remove(for: ns)
            throw error
        }
    }

    func stop() {
        charon.stop()
        _ = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "delete", namespace])
        PrivateView.remove(for: namespace)
    }
}
