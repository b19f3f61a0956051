import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestHarness

/// The central-accounts topology: VPN nodes that ask RADIUS about passwords, two FreeRADIUS servers sharing one
/// PostgreSQL, clients, and a host on a LAN behind every node. One bridge (in a namespace of its own) joins
///
///     node i        namespace n<i>   its address from the inputs (e.g. 192.0.2.1), uplink eth0
///     client i      namespace c<i>   192.0.2.(101+i)
///     RADIUS i      namespace r<i>   its address from the inputs (e.g. 192.0.2.11)
///
/// PostgreSQL (`PostgresCluster`) listens only on its unix socket, which every namespace reaches (a path).
///
/// and every node has a LAN (`lan0`, 198.51.100.1/24, forwarding on) with one host, namespace l<i>,
/// 198.51.100.10, whose default route is the node: a ping from a client's virtual IP to that host proves traffic
/// reaches a host *behind* the node. Namespaces are `vpnp-<pid>-<n>-<suffix>` (stale ones are removed like
/// `NetworkPair`'s).
///
/// Every node's namespace runs its RADIUS relay as generated (`servers/<node>/radius-relay/`, a FreeRADIUS on the node
/// that its charon talks to over loopback and that forwards to the RADIUS servers).
///
/// With `accounts.protection: ipsec` every RADIUS namespace also runs a charon with the server's generated
/// `radius/<server>/ipsec/swanctl.conf` and loads its `vpnprov-radius.nft`: RADIUS between nodes and servers then
/// travels in ESP, as it does in production.
///
/// The lab owns every daemon it starts (PostgreSQL, FreeRADIUS, charons); `teardown()` stops them by pid —
/// clients, then nodes (their Accounting-Stop reaches their relays), then the relays, the RADIUS servers' charons,
/// RADIUS, then PostgreSQL — and deletes the namespaces.
final class RadiusLab: @unchecked Sendable {
    struct Member: Sendable {
        var name: String
        var namespace: String
        var address: String
    }

    static let lanPrefix = "198.51.100.0/24"
    static let lanGateway = "198.51.100.1"
    static let lanHostAddress = "198.51.100.10"
    static let subnet = "192.0.2.0/24"

    let base: String
    let nodes: [Member]
    let clients: [Member]
    let radiusMembers: [Member]
    /// Namespace of the host behind each node (by node name).
    let lanHosts: [String: String]
    private let bridgeNamespace: String
    private var namespaces: [String] = []

    private(set) var postgres: PostgresCluster?
    private(set) var radiusServers: [String: FreeRADIUSServer] = [:]
    /// The nodes' RADIUS relays, by node name.
    private(set) var relays: [String: FreeRADIUSServer] = [:]
    private(set) var nodeDaemons: [String: Charon] = [:]
    private(set) var clientDaemons: [String: Charon] = [:]
    /// The RADIUS servers' charons (the IPsec end of the node-RADIUS path), by server name.
    private(set) var radiusCharons: [String: Charon] = [:]
    /// Client namespaces (by index) that run no charon: a NetworkManager desktop runs its charon-nm there, and both
    /// would bind the IKE ports. Set before `start`.
    var clientsWithoutCharon: Set<Int> = []
    private var tornDown = false

    private init(nodes: [(String, String)], clients: Int, radius: [(String, String)]) {
        let base = "\(Scratch.prefix)-\(Scratch.pid)-\(Scratch.next())"
        self.base = base
        bridgeNamespace = base + "-br"
        self.nodes = nodes.enumerated().map { Member(name: $1.0, namespace: "\(base)-n\($0)", address: $1.1) }
        self.clients = (0..<clients).map {
            Member(name: "client\($0 + 1)", namespace: "\(base)-c\($0)", address: "192.0.2.\(101 + $0)")
        }
        radiusMembers = radius.enumerated().map { Member(name: $1.0, namespace: "\(base)-r\($0)", address: $1.1) }
        lanHosts = Dictionary(uniqueKeysWithValues: nodes.enumerated().map { ($1.0, "\(base)-l\($0)") })
    }

    /// Creates the namespaces and links; on failure removes what was made.
    static func create(
        nodes: [(name: String, address: String)], clients: Int, radius: [(name: String, address: String)]
    ) throws -> RadiusLab {
        NetworkPair.removeStale()
        let lab = RadiusLab(
            nodes: nodes.map { ($0.name, $0.address) }, clients: clients, radius: radius.map { ($0.name, $0.address) })
        do {
            try lab.setUp()
        } catch {
            lab.teardown()
            throw error
        }
        return lab
    }

    private func setUp() throws {
        let onBridge = nodes + clients + radiusMembers
        for ns in [bridgeNamespace] + onBridge.map(\.namespace) + lanHosts.values.sorted() {
            try ip(["netns", "add", ns])
            namespaces.append(ns)
            try ip(["-n", ns, "link", "set", "lo", "up"])
        }
        try ip(["-n", bridgeNamespace, "link", "add", "br0", "type", "bridge"])
        try ip(["-n", bridgeNamespace, "link", "set", "br0", "up"])
        for (index, member) in onBridge.enumerated() {
            let port = "p\(index)"
            try ip([
                "link", "add", port, "netns", bridgeNamespace, "type", "veth", "peer", "name", "eth0", "netns",
                member.namespace,
            ])
            try ip(["-n", bridgeNamespace, "link", "set", port, "master", "br0", "up"])
            try ip(["-n", member.namespace, "addr", "add", "\(member.address)/24", "dev", "eth0"])
            try ip(["-n", member.namespace, "link", "set", "eth0", "up"])
        }
        for node in nodes {
            guard let lan = lanHosts[node.name] else { continue }
            try Self.addLAN(behind: node.namespace, host: lan)
        }
    }

    /// The node's LAN: a veth `lan0` (`lanGateway`/24, forwarding on) into namespace `host`, whose one host
    /// (`lanHostAddress`) routes everything through the node. Both namespaces exist.
    static func addLAN(behind node: String, host lan: String) throws {
        func ip(_ args: [String]) throws {
            try Subprocess.check(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10))
        }
        try ip(["link", "add", "lan0", "netns", node, "type", "veth", "peer", "name", "eth0", "netns", lan])
        try ip(["-n", node, "addr", "add", "\(lanGateway)/24", "dev", "lan0"])
        try ip(["-n", node, "link", "set", "lan0", "up"])
        try ip(["-n", lan, "addr", "add", "\(lanHostAddress)/24", "dev", "eth0"])
        try ip(["-n", lan, "link", "set", "eth0", "up"])
        try ip(["-n", lan, "route", "add", "default", "via", lanGateway])
        try Subprocess.check(
            StrongSwanEnvironment.ipPath, ["netns", "exec", node, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    }

    func node(_ name: String) throws -> Member {
        guard let node = nodes.first(where: { $0.name == name }) else { throw HarnessError("no node \(name)") }
        return node
    }

    func radiusMember(_ name: String) throws -> Member {
        guard let member = radiusMembers.first(where: { $0.name == name }) else {
            throw HarnessError("no RADIUS server \(name)")
        }
        return member
    }

    // MARK: daemons

    /// PostgreSQL with its cluster in `directory` (socket `directory/postgres`) and the database
    /// `PostgresCluster.database`.
    @discardableResult
    func startPostgres(in directory: String) throws -> PostgresCluster {
        let pg = try PostgresCluster.start(in: directory)
        postgres = pg
        return pg
    }

    /// strongswan.conf text for a RADIUS server's charon in this lab: like every test charon it runs ESP in
    /// kernel-libipsec (the kernel here has no XFRM ESP), so, as on a libipsec node (the node's generated
    /// vpnprov-radius-dae.conf), its IKE and ESP packets are marked and skip the routes into its TUN device.
    /// A production RADIUS server runs the kernel's IPsec and needs none of this.
    static let radiusLibipsecSettings = """
        charon {
          plugins {
            socket-default {
              fwmark = 0x42
            }
            kernel-netlink {
              fwmark = !0x42
            }
            kernel-libipsec {
              allow_peer_ts = yes
            }
          }
        }

        """

    /// The RADIUS server's charon with its generated swanctl.conf loaded cleanly, and its generated firewall table.
    @discardableResult
    func startRadiusIPsec(_ name: String, build: StrongSwanBuild, confFile: String, firewall: String) throws
        -> Charon
    {
        let charon = try Self.startRadiusIPsec(
            in: try radiusMember(name).namespace, label: "radius-\(name)", build: build, confFile: confFile,
            firewall: firewall)
        radiusCharons[name] = charon
        return charon
    }

    /// A RADIUS server's charon in `namespace` (`radiusLibipsecSettings`) with its generated swanctl.conf loaded
    /// cleanly, and its generated firewall table loaded there; stopped by the caller.
    static func startRadiusIPsec(
        in namespace: String, label: String, build: StrongSwanBuild, confFile: String, firewall: String
    ) throws -> Charon {
        let charon = try Charon.start(in: namespace, build: build, label: label, extraSettings: radiusLibipsecSettings)
        do {
            try charon.loadAllCleanly(confFile: confFile)
            try NetworkPair.loadNftables(firewall, in: namespace)
        } catch {
            charon.stop()
            throw error
        }
        return charon
    }

    func radiusCharon(_ name: String) throws -> Charon {
        guard let charon = radiusCharons[name] else { throw HarnessError("no charon on RADIUS server \(name)") }
        return charon
    }

    func radius(_ name: String) throws -> FreeRADIUSServer {
        guard let server = radiusServers[name] else { throw HarnessError("RADIUS server \(name) not started") }
        return server
    }

    /// Node `name`'s RADIUS relay.
    func relay(_ name: String) throws -> FreeRADIUSServer {
        guard let relay = relays[name] else { throw HarnessError("node \(name) has no RADIUS relay") }
        return relay
    }

    /// Starts the RADIUS servers' and the nodes' relays' FreeRADIUS at once (each checks its configuration and
    /// waits for its "Ready to process requests"): one start after the other took a second each.
    private func startFreeRADIUS(
        servers: [(name: String, directory: String, environment: [String: String])],
        relays nodeRelays: [(node: String, directory: String)]
    ) throws {
        struct Job: Sendable {
            var name: String
            var namespace: String
            var kind: FreeRADIUSServer.Kind
            var directory: String
            var environment: [String: String]
        }
        var jobs: [Job] = []
        for server in servers {
            jobs.append(
                Job(
                    name: server.name, namespace: try radiusMember(server.name).namespace, kind: .server,
                    directory: server.directory, environment: server.environment))
        }
        for relay in nodeRelays {
            jobs.append(
                Job(
                    name: relay.node, namespace: try node(relay.node).namespace, kind: .relay,
                    directory: relay.directory, environment: [:]))
        }
        let results = Locked((started: [Int: FreeRADIUSServer](), failures: [String]()))
        let all = jobs
        DispatchQueue.concurrentPerform(iterations: all.count) { i in
            let job = all[i]
            do {
                let daemon = try FreeRADIUSServer.start(
                    in: job.namespace, label: job.kind == .relay ? "relay-\(job.name)" : job.name, kind: job.kind,
                    configDirectory: job.directory, environment: job.environment)
                results.withLock { $0.started[i] = daemon }
            } catch {
                results.withLock { $0.failures.append("\(error)") }
            }
        }
        let (started, failures) = results.withLock { ($0.started, $0.failures) }
        for (i, daemon) in started {
            if jobs[i].kind == .relay { relays[jobs[i].name] = daemon } else { radiusServers[jobs[i].name] = daemon }
        }
        if let failure = failures.first { throw HarnessError(failure) }
    }

    /// A node's charon (with the eap-radius plugin), its settings snippets included, its swanctl.conf loaded
    /// cleanly.
    @discardableResult
    func startNode(_ name: String, build: StrongSwanBuild, settingsIncludes: [String], confFile: String) throws
        -> Charon
    {
        let charon = try Self.startNode(
            in: try node(name).namespace, label: "node-\(name)", build: build, settingsIncludes: settingsIncludes,
            confFile: confFile)
        nodeDaemons[name] = charon
        return charon
    }

    /// A RADIUS node's charon in `namespace` (with the eap-radius plugin), its generated settings snippets
    /// included, its swanctl.conf loaded cleanly; stopped by the caller.
    static func startNode(
        in namespace: String, label: String, build: StrongSwanBuild, settingsIncludes: [String], confFile: String
    ) throws -> Charon {
        let charon = try Charon.start(
            in: namespace, build: build, label: label, settingsIncludes: settingsIncludes, extraPlugins: ["eap-radius"])
        do {
            try charon.loadAllCleanly(confFile: confFile)
        } catch {
            charon.stop()
            throw error
        }
        return charon
    }

    func nodeDaemon(_ name: String) throws -> Charon {
        guard let charon = nodeDaemons[name] else { throw HarnessError("node \(name) not started") }
        return charon
    }

    /// Client charons, one per client namespace.
    func startClients(build: StrongSwanBuild, settings: String = "") throws {
        for (index, client) in clients.enumerated() where !clientsWithoutCharon.contains(index) {
            clientDaemons[client.name] = try Charon.start(
                in: client.namespace, build: build, label: client.name, extraSettings: settings)
        }
    }

    func client(_ index: Int) throws -> Charon {
        guard index < clients.count, let charon = clientDaemons[clients[index].name] else {
            throw HarnessError("client \(index) not started")
        }
        return charon
    }

    /// Gives node `name` a second address, `address` (a /32 on its uplink), from which it reaches every RADIUS server,
    /// as a private network between them would (`radius_address`): its routes to the servers take that source, and
    /// each server routes its answers back to it. The node's address on the shared link stays what clients dial.
    func addRadiusPath(node name: String, address: String) throws {
        let member = try node(name)
        try ip(["-n", member.namespace, "addr", "add", "\(address)/32", "dev", "eth0"])
        for server in radiusMembers {
            try ip(["-n", member.namespace, "route", "add", "\(server.address)/32", "dev", "eth0", "src", address])
            try ip(["-n", server.namespace, "route", "add", "\(address)/32", "dev", "eth0"])
        }
    }

    /// Pings the host behind the nodes from client `index`'s namespace, its source address the kernel's choice (a
    /// desktop's tunnel route names its virtual IP). Like every ping of the lab it waits for one answer, an echo a
    /// second for up to 10 s (`-w`): every caller expects an answer, and under load a single echo through a
    /// fresh kernel-libipsec tunnel went unanswered within its 3 s.
    func pingHostBehind(fromClient index: Int) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", clients[index].namespace, StrongSwanEnvironment.pingPath, "-n", "-c", "1", "-w", "10",
                Self.lanHostAddress,
            ], timeout: .seconds(20))
    }

    /// Pings the host behind `node` from client `index`'s virtual IP `source` (through the tunnel).
    func pingHostBehind(fromClient index: Int, source: String) throws -> ProgramResult {
        try Self.pingHostBehind(from: clients[index].namespace, source: source)
    }

    /// Pings the host behind a node (`lanHostAddress`) from `namespace`, from address `source` (a client's virtual
    /// IP: through its tunnel), waiting for one answer as `pingHostBehind(fromClient:)` does.
    static func pingHostBehind(from namespace: String, source: String) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, StrongSwanEnvironment.pingPath, "-n", "-c", "1", "-w", "10", "-I", source,
                lanHostAddress,
            ], timeout: .seconds(20))
    }

    /// A packet capture (tcpdump from Debian) on `namespace`'s `eth0`, written to a file in the test's scratch
    /// directory; `finish()` stops it and returns the file.
    final class Capture {
        let file: URL
        private let process: Daemon
        private let output: URL

        init(namespace: String, filter: [String]) throws {
            let dir = try Scratch.makeDirectory("capture")
            file = dir.appendingPathComponent("link.pcap")
            output = dir.appendingPathComponent("tcpdump.out")
            // --immediate-mode, -U: every packet is delivered and written as it is captured (a stop does not
            // lose what the kernel still buffers); -s 0: whole packets; -Z root: the file is written
            // into the scratch directory (root's, 0700), not as Debian's `tcpdump` user
            process = try Daemon.start(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", namespace, RadiusEnvironment.tcpdumpPath, "-i", "eth0", "-n", "-U",
                    "--immediate-mode", "-s", "0",
                    "-Z", "root", "-w", file.path,
                ] + filter,
                outputPath: output.path)
            let deadline = ContinuousClock.now + .seconds(10)
            while !((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("listening on") {
                if !process.isRunning || ContinuousClock.now > deadline {
                    process.stop()
                    throw HarnessError(
                        "tcpdump did not start: " + ((try? String(contentsOf: output, encoding: .utf8)) ?? ""))
                }
                usleep(20_000)
            }
        }

        /// Stops tcpdump (SIGINT: it writes what it holds and exits); returns the capture's bytes.
        func finish() throws -> Data {
            process.stop(signal: SIGINT)
            return try Data(contentsOf: file)
        }

        /// What tcpdump printed (its start and its counts).
        var log: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

        /// `tcpdump -r` of the capture, `-v` decoded, with `filter`: one packet per line (and its details).
        func read(_ filter: [String] = []) throws -> String {
            let result = try Subprocess.run(
                RadiusEnvironment.tcpdumpPath, ["-r", file.path, "-n", "-v"] + filter, timeout: .seconds(20))
            guard result.succeeded else { throw HarnessError("reading the capture: \(result)") }
            return result.stdout
        }
    }

    /// Starts capturing what RADIUS server `server`'s link carries to and from `peer` (an address).
    func capture(atRadius server: String, peer: String) throws -> Capture {
        try Capture(namespace: try radiusMember(server).namespace, filter: ["host", peer])
    }

    /// Runs `radclient` inside RADIUS server `from`'s namespace (as an operator's host next to it would).
    func radclient(from: String, arguments: [String], input: String) throws -> ProgramResult {
        try radclient(inNamespace: try radiusMember(from).namespace, arguments: arguments, input: input)
    }

    /// Runs `radclient` inside `namespace` with `input` as its request.
    func radclient(inNamespace namespace: String, arguments: [String], input: String) throws -> ProgramResult {
        let file = try Scratch.makeDirectory("radclient").appendingPathComponent("request")
        try input.write(to: file, atomically: true, encoding: .utf8)
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", namespace, RadiusEnvironment.radclientPath, "-f", file.path] + arguments,
            timeout: .seconds(20))
    }

    /// Starts the deployment `inputs` describes: migrates its database (PostgreSQL already running), starts its
    /// RADIUS servers and nodes, loads the nodes' firewalls, then starts the client charons (`clientSettings`
    /// appended to their strongswan.conf).
    func start(_ inputs: any RadiusFleetInputs, build: StrongSwanBuild, clientSettings: String = "") throws {
        try inputs.migrate()
        try startFreeRADIUS(
            servers: try inputs.radiusServers.map { server in
                let (directory, environment) = try inputs.radiusConfiguration(server.name)
                return (server.name, directory, environment)
            },
            relays: try inputs.nodes.compactMap { node in
                try inputs.nodeRelayDirectory(node.name).map { (node.name, $0) }
            })
        for server in inputs.radiusServers {
            if let ipsec = try inputs.radiusIPsec(server.name) {
                try startRadiusIPsec(server.name, build: build, confFile: ipsec.confFile, firewall: ipsec.firewall)
            }
        }
        for node in inputs.nodes {
            try startNode(
                node.name, build: build, settingsIncludes: try inputs.nodeSettingsIncludes(node.name),
                confFile: try inputs.nodeConfFile(node.name))
        }
        for node in inputs.nodes {
            if let rules = try inputs.nodeFirewall(node.name) {
                try NetworkPair.loadNftables(rules, in: try self.node(node.name).namespace)
            }
        }
        try startClients(build: build, settings: clientSettings)
    }

    // MARK: teardown

    /// Stops every daemon by pid (clients, nodes, RADIUS, PostgreSQL) and deletes the namespaces. Safe twice.
    func teardown() {
        if tornDown { return }
        tornDown = true
        for charon in clientDaemons.values { charon.stop() }
        for charon in nodeDaemons.values { charon.stop() }
        for relay in relays.values { relay.stop() }
        for charon in radiusCharons.values { charon.stop() }
        for server in radiusServers.values {
            server.stop()
            try? server.unsilence()
        }
        postgres?.stop()
        for ns in namespaces.reversed() { NetworkPair.delete(namespace: ns) }
    }

    deinit { teardown() }

    @discardableResult
    private func ip(_ args: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10))
    }
}
