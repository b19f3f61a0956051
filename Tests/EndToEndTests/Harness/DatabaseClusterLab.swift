import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// The accounts database as a pg_auto_failover cluster (docs/accounts.md, "A replicated accounts database") in
/// network namespaces: Debian's PostgreSQL 15 and pg_autoctl 2.0, a monitor and two data nodes, each host with
/// the files vpnprov generated for it (`accounts-db/<host>/`: pg_hba.conf, pg_ident.conf, vpnprov.conf) and a
/// certificate of the test's CA (made with the openssl CLI, as an operator's CA would make them), and an
/// operator namespace where `vpnprov accounts` runs.
///
///     bridge     namespace <base>-br
///     db-mon     <base>-m    198.18.56.10   pg_auto_failover's monitor
///     db-a       <base>-a    198.18.56.11   data node (region a)
///     db-b       <base>-b    198.18.56.12   data node (region b)
///     ops        <base>-o    198.18.56.21   RADIUS server rad-a (the generated radius/rad-a/), where `vpnprov accounts` runs
///     node-a     <base>-n    192.0.2.1      the node's address: where its RADIUS requests come from (radclient,
///                                           or its generated relay), and with `startNode` its charon
///     rad-b      <base>-r    198.18.56.22   a second RADIUS server, region b (only with `radiusServers: 2`)
///     client i   <base>-c<i> 192.0.2.(101+i) a client charon (only with `clients:`)
///     LAN host   <base>-l    198.51.100.10  behind the node (its `lan0`), as in `RadiusLab` (only with `clients:`)
///
/// Each database host runs in a mount namespace of its own with a tmpfs on /run (PostgreSQL's socket directory,
/// one per host) and its TLS files at /etc/vpnprov/postgresql (a `PrivateView` of /etc): the same path on every
/// host, as the role installs them. Nothing is written outside the scratch directory. `teardown()` stops every
/// daemon by pid (clients, the node, its relay, the RADIUS servers' charons and FreeRADIUS, then every pg_autoctl,
/// each stopping its PostgreSQL) and deletes the namespaces.
final class DatabaseClusterLab: @unchecked Sendable {
    struct Host: Sendable {
        var name: String
        var namespace: String
        var address: String
    }

    static let monitor = (name: "db-mon", address: "198.18.56.10")
    static let dataNodes = [(name: "db-a", address: "198.18.56.11"), (name: "db-b", address: "198.18.56.12")]
    static let operatorAddress = "198.18.56.21"
    static let nodeAddress = "192.0.2.1"
    static let secondRadiusAddress = "198.18.56.22"
    static let pgBin = "/usr/lib/postgresql/15/bin"
    static let tlsDirectory = "/etc/vpnprov/postgresql"
    static let pgautoctl = "/usr/bin/pg_autoctl"

    static let dependencies = [
        pgautoctl, pgBin + "/initdb", "/usr/bin/openssl", "/usr/bin/setpriv", "/usr/bin/nsenter",
    ]

    let dir: URL
    let base: String
    let hosts: [Host]
    let operatorNamespace: String
    let nodeNamespace: String
    private let bridge: String
    private var namespaces: [String] = []
    private var daemons: [String: Daemon] = [:]
    /// The monitor's URI from the generated host_vars (what each data node's keeper is created with).
    private var monitorURI = ""
    private var tornDown = false
    /// The RADIUS servers by name (rad-a, and rad-b with `radiusServers: 2`), once `startRadius` ran.
    private(set) var radiusServers: [String: FreeRADIUSServer] = [:]
    var radius: FreeRADIUSServer? { radiusServers["rad-a"] }
    /// The node's generated RADIUS relay, once `startRelay` ran.
    private(set) var relay: FreeRADIUSServer?
    /// The node's charon, once `startNode` ran.
    private(set) var node: Charon?
    /// The RADIUS servers' charons (their end of the node's IPsec), by server name, once `startNode` ran.
    private(set) var radiusCharons: [String: Charon] = [:]
    /// The client charons, once `startNode` ran.
    private(set) var clients: [Charon] = []
    /// The client namespaces (192.0.2.101, …) and the namespace of the host behind the node.
    let clientNamespaces: [String]
    let lanNamespace: String
    /// The RADIUS servers' names, namespaces and addresses.
    let radiusHosts: [Host]

    /// The inventory the lab's hosts match: a RADIUS server at the operator's address (so `disconnect_from`, where
    /// `vpnprov accounts` may run, is that address) and the cluster with the lab's TLS directory.
    var inventory: String {
        """
        vpnprov: 1
        name: cluster
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        accounts:
          servers:
            rad-a: { address: \(Self.operatorAddress), region: a }\(radiusHosts.count > 1 ? "\n    rad-b: { address: \(Self.secondRadiusAddress), region: b }" : "")
          cluster:
            tls_dir: \(dir.path)/tls
            hosts:
              db-a: { address: \(Self.dataNodes[0].address), region: a }
              db-b: { address: \(Self.dataNodes[1].address), region: b }
              db-mon: { address: \(Self.monitor.address), region: c, role: monitor }
        nodes:
          node-a:
            address: \(Self.nodeAddress)
            region: a
            tier: free
            pool: 10.27.1.0/24
            services: [ikev2-eap]
            accounts: radius

        """
    }

    /// `clients`: client namespaces on the node's link, and a host behind the node.
    init(dir: URL, radiusServers: Int = 1, clients: Int = 0) {
        self.dir = dir
        let base = "\(Scratch.prefix)-\(Scratch.pid)-\(Scratch.next())"
        self.base = base
        bridge = base + "-br"
        operatorNamespace = base + "-o"
        nodeNamespace = base + "-n"
        clientNamespaces = (0..<clients).map { base + "-c\($0)" }
        lanNamespace = base + "-l"
        radiusHosts =
            [Host(name: "rad-a", namespace: base + "-o", address: Self.operatorAddress)]
            + (radiusServers > 1
                ? [Host(name: "rad-b", namespace: base + "-r", address: Self.secondRadiusAddress)] : [])
        hosts =
            [Host(name: Self.monitor.name, namespace: base + "-m", address: Self.monitor.address)]
            + Self.dataNodes.enumerated().map { i, n in
                Host(name: n.name, namespace: base + (i == 0 ? "-a" : "-b"), address: n.address)
            }
    }

    func host(_ name: String) -> Host { hosts.first { $0.name == name }! }

    // MARK: set-up

    /// Namespaces, links and the certificates.
    func setUp() throws {
        NetworkPair.removeStale()
        try ip(["netns", "add", bridge])
        namespaces.append(bridge)
        try ip(["-n", bridge, "link", "add", "br0", "type", "bridge"])
        try ip(["-n", bridge, "link", "set", "br0", "up"])
        let members =
            hosts.map { ($0.namespace, $0.address) } + [
                (operatorNamespace, Self.operatorAddress), (nodeNamespace, Self.nodeAddress),
            ] + radiusHosts.dropFirst().map { ($0.namespace, $0.address) }
            + clientNamespaces.enumerated().map { ($1, "192.0.2.\(101 + $0)") }
        for (index, (ns, address)) in members.enumerated() {
            try ip(["netns", "add", ns])
            namespaces.append(ns)
            try ip(["-n", ns, "link", "set", "lo", "up"])
            try ip(["link", "add", "p\(index)", "netns", bridge, "type", "veth", "peer", "name", "eth0", "netns", ns])
            try ip(["-n", bridge, "link", "set", "p\(index)", "master", "br0", "up"])
            try ip(["-n", ns, "addr", "add", "\(address)/24", "dev", "eth0"])
            try ip(["-n", ns, "link", "set", "eth0", "up"])
        }
        // The node's network and the lab's share the bridge: each reaches the other on the link.
        try ip(["-n", nodeNamespace, "route", "add", "198.18.56.0/24", "dev", "eth0"])
        for server in radiusHosts {
            try ip(["-n", server.namespace, "route", "add", "\(Self.nodeAddress)/32", "dev", "eth0"])
        }
        if !clientNamespaces.isEmpty {
            try ip(["netns", "add", lanNamespace])
            namespaces.append(lanNamespace)
            try ip(["-n", lanNamespace, "link", "set", "lo", "up"])
            try RadiusLab.addLAN(behind: nodeNamespace, host: lanNamespace)
        }
        // The operator's CA and its certificates (docs/accounts.md, "Topology").
        try AccountsDatabaseCertificates.make(
            in: dir.path + "/tls", hosts: hosts.map { (name: $0.name, address: $0.address) })
        for host in hosts {
            let view = try PrivateView.create(
                of: "/etc", for: host.namespace, own: ["vpnprov"], directories: ["vpnprov"])
            let tls = view + "/vpnprov/postgresql"
            try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
            let source = dir.path + "/tls/"
            for (from, to) in [
                ("ca.crt", "ca.crt"), ("\(host.name).crt", "server.crt"), ("\(host.name).key", "server.key"),
            ] {
                try FileManager.default.copyItem(atPath: source + from, toPath: tls + "/" + to)
            }
            let home = dir.path + "/\(host.name)"
            // pg_autoctl keeps its pid file in XDG_RUNTIME_DIR, and falls back to the machine's /tmp without it.
            try FileManager.default.createDirectory(atPath: home + "/home/run", withIntermediateDirectories: true)
            try Subprocess.check("/bin/chown", ["-R", "postgres:postgres", tls, home])
            try Subprocess.check("/bin/chmod", ["0600", tls + "/server.key"])
            try Subprocess.check("/bin/chmod", ["0711", dir.path])
        }
    }

    // MARK: the cluster

    /// Writes the lab's inventory, runs `vpnprov generate`, starts the monitor and the data nodes with the files
    /// it generated (db-a first: the primary, db-b its synchronous standby), creates the roles as the role does on
    /// the primary and runs `vpnprov accounts migrate`. Returns the inventory's and the generated tree's paths.
    func bringUp() throws -> (inventory: String, out: String) {
        let inventory = dir.path + "/inventory.yaml"
        try self.inventory.write(toFile: inventory, atomically: true, encoding: .utf8)
        let generated = try VPNProvBinary.run(["generate", inventory, "--quiet"])
        guard generated.succeeded else { throw HarnessError("vpnprov generate: \(generated)") }
        let out = dir.path + "/out"
        let key = "vpnprov_accounts_db_monitor_uri: "
        let hostVars = try String(contentsOfFile: out + "/deploy/host_vars/db-a.yml", encoding: .utf8)
        guard let line = hostVars.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else {
            throw HarnessError("no \(key) in host_vars/db-a.yml")
        }
        monitorURI = String(line.dropFirst(key.count)).replacingOccurrences(of: "\"", with: "")

        let clock = ContinuousClock()
        let started = clock.now
        let monitor = host(Self.monitor.name)
        let a = host("db-a")
        let b = host("db-b")
        for host in [monitor, a] { try initialize(host, generated: out + "/accounts-db") }
        try FileManager.default.createDirectory(atPath: pgdata(b), withIntermediateDirectories: true)
        try Subprocess.check("/bin/chown", ["postgres:postgres", pgdata(b)])
        try Subprocess.check("/bin/chmod", ["0700", pgdata(b)])
        try start(monitor, monitorURI: monitorURI)
        try wait(for: "the monitor", timeout: .seconds(60)) {
            log(monitor).contains("Contacting the monitor to LISTEN")
        }
        try start(a, monitorURI: monitorURI)
        try wait(for: "db-a single", timeout: .seconds(60)) { try states()["db-a"] == "single/single" }
        try start(b, monitorURI: monitorURI)
        try wait(for: "db-b secondary", timeout: .seconds(90)) {
            let s = try states()
            return s["db-a"] == "primary/primary" && s["db-b"] == "secondary/secondary"
        }
        print("accounts cluster: up in \(clock.now - started)")
        // What the role does on the primary: the certificate logins' roles, the operator owning the database.
        let roles = try psql(
            a, database: "accounts",
            "CREATE ROLE vpnprov LOGIN CREATEROLE; CREATE ROLE radius LOGIN; ALTER DATABASE accounts OWNER TO vpnprov; "
                + "ALTER SCHEMA public OWNER TO vpnprov")
        guard roles.succeeded else { throw HarnessError("roles: \(roles)") }
        let migrated = try accounts(["migrate"], inventory: inventory)
        guard migrated.succeeded else { throw HarnessError("accounts migrate: \(migrated)") }
        return (inventory, out)
    }

    /// `vpnprov accounts ARGUMENTS --inventory INVENTORY` in the operator's namespace.
    func accounts(_ arguments: [String], inventory: String, timeout: Duration = .seconds(60)) throws
        -> ProgramResult
    {
        let binary = VPNProvBinary.path
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", operatorNamespace, binary, "accounts"] + arguments + ["--inventory", inventory],
            timeout: timeout)
    }

    // MARK: the RADIUS server

    /// FreeRADIUS with the generated `radius/<server>/` in each RADIUS server's namespace (rad-a: the operator's),
    /// its client certificate at the path the generated sql module names (/etc/vpnprov/postgresql, a `PrivateView`
    /// of /etc, as the RADIUS role installs it). Until `startNode` runs the node's IPsec to them, requests come from
    /// the node's address in the clear.
    func startRadius(generated: String) throws {
        for server in radiusHosts {
            let view = try PrivateView.create(
                of: "/etc", for: server.namespace, own: ["vpnprov"], directories: ["vpnprov/postgresql"])
            for name in ["ca.crt", "radius.crt", "radius.key"] {
                try FileManager.default.copyItem(
                    atPath: dir.path + "/tls/" + name, toPath: view + "/vpnprov/postgresql/" + name)
            }
            radiusServers[server.name] = try FreeRADIUSServer.start(
                in: server.namespace, label: server.name, configDirectory: generated + "/radius/" + server.name,
                withViews: true)
        }
    }

    /// The node's generated RADIUS relay (`servers/node-a/radius-relay/`) in the node's namespace: what charon
    /// asks on 127.0.0.1, sending to the RADIUS servers in the node's preferred order.
    func startRelay(generated: String) throws {
        relay = try FreeRADIUSServer.start(
            in: nodeNamespace, label: "relay-node-a", kind: .relay,
            configDirectory: generated + "/servers/node-a/radius-relay")
    }

    // MARK: the node and its clients

    /// The node as its rollout leaves it, from the generated `servers/node-a/` (strongSwan 5.9, kernel-libipsec): each
    /// RADIUS server's charon with its generated `radius/<server>/ipsec/` (swanctl.conf and firewall table), the
    /// node's charon with its strongswan.d and swanctl.conf (eap-radius asks the relay, `startRelay`), its firewall;
    /// waits until its IPsec to every RADIUS server is up, then starts a client charon in each client namespace.
    /// From then on RADIUS between the node's namespace and the servers travels in that IPsec.
    func startNode(generated: String) throws {
        for server in radiusHosts {
            let ipsec = generated + "/radius/\(server.name)/ipsec"
            radiusCharons[server.name] = try RadiusLab.startRadiusIPsec(
                in: server.namespace, label: "radius-\(server.name)", build: .host,
                confFile: ipsec + "/swanctl.conf",
                firewall: try String(contentsOfFile: ipsec + "/vpnprov-radius.nft", encoding: .utf8))
        }
        let tree = generated + "/servers/node-a"
        let includes = try FileManager.default.contentsOfDirectory(atPath: tree + "/strongswan.d").sorted()
            .filter { $0.hasSuffix(".conf") }.map { tree + "/strongswan.d/" + $0 }
        let node = try RadiusLab.startNode(
            in: nodeNamespace, label: "node-a", build: .host, settingsIncludes: includes,
            confFile: tree + "/swanctl/swanctl.conf")
        self.node = node
        try NetworkPair.loadNftables(
            try String(contentsOfFile: tree + "/network/vpnprov.nft", encoding: .utf8), in: nodeNamespace)
        try wait(for: "the node's IPsec to every RADIUS server", timeout: .seconds(20)) {
            let up = try node.securityAssociations().filter { $0.state == "ESTABLISHED" }.map(\.name)
            return radiusHosts.allSatisfy { up.contains("radius-\($0.name)") }
        }
        for (index, namespace) in clientNamespaces.enumerated() {
            clients.append(try Charon.start(in: namespace, label: "client\(index + 1)"))
        }
    }

    /// The node's IKE_SAs of `account`, established or not: its EAP identity (vici names `remote-eap-id` only when
    /// it differs from the IKE identity, `remote-id`).
    func nodeSessions(of account: String) throws -> [IKESA] {
        guard let node else { throw HarnessError("the node is not running") }
        return try node.securityAssociations().filter { ($0.remoteEAPID ?? $0.remoteID) == account }
    }

    /// `radclient` from the node's namespace to rad-a (`kind`: auth or acct) with the node's secret from the
    /// generated clients.conf; one try, `timeout` seconds.
    /// `viaRelay`: to the node's relay on 127.0.0.1 with the relay's secret, as the node's charon asks it; `tries`
    /// sends, each waiting `timeout` seconds.
    func radclient(
        _ kind: String, _ request: String, generated: String, timeout: Int = 3, viaRelay: Bool = false,
        tries: Int = 1
    ) throws -> ProgramResult {
        let clients = try String(
            contentsOfFile: generated
                + (viaRelay ? "/servers/node-a/radius-relay/clients.conf" : "/radius/rad-a/clients.conf"),
            encoding: .utf8)
        // The client section's secret (a RADIUS server's clients.conf also has each node's Disconnect home server,
        // with the node's Disconnect-Request secret, before it).
        let client = clients.components(separatedBy: "\nclient ").dropFirst().first ?? clients
        guard
            let line = client.split(separator: "\n").first(where: {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("secret = ")
            })
        else { throw HarnessError("no secret in the generated clients.conf") }
        let secret = line.split(separator: "\"")[1]
        let scratch = try Scratch.makeDirectory("radclient")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try "\(secret)\n".write(to: scratch.appendingPathComponent("secret"), atomically: true, encoding: .utf8)
        try request.write(to: scratch.appendingPathComponent("request"), atomically: true, encoding: .utf8)
        let port = (kind == "auth" ? 1812 : 1813) + (viaRelay ? 10000 : 0)
        let to = viaRelay ? "127.0.0.1" : Self.operatorAddress
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", nodeNamespace, RadiusEnvironment.radclientPath, "-f",
                scratch.appendingPathComponent("request").path, "-r", "\(tries)", "-t", "\(timeout)", "-S",
                scratch.appendingPathComponent("secret").path, "\(to):\(port)", kind,
            ], timeout: .seconds(tries * timeout + 10))
    }

    // MARK: the hosts

    /// A shell that runs `command` in `host`'s namespaces as postgres, with its own /run and /etc view and its
    /// keeper's client certificate.
    private func asPostgres(_ host: Host, _ command: String) -> [String] {
        let home = dir.path + "/\(host.name)/home"
        let script =
            PrivateView.mountScript(for: host.namespace)
                + """
                mount -t tmpfs -o size=4m,mode=0755 vpnprov-lab /run
                mkdir -m 2775 /run/postgresql && chown postgres:postgres /run/postgresql
                exec setpriv --reuid=postgres --regid=postgres --init-groups env -i PATH=\(Self.pgBin):/usr/bin:/bin \
                LANG=C.UTF-8 HOME=\(home) XDG_CONFIG_HOME=\(home)/.config XDG_DATA_HOME=\(home)/.local/share \
                XDG_RUNTIME_DIR=\(home)/run PGSSLCERT=\(Self.tlsDirectory)/server.crt \
                PGSSLKEY=\(Self.tlsDirectory)/server.key PGSSLROOTCERT=\(Self.tlsDirectory)/ca.crt \(command)
                """
        return ["netns", "exec", host.namespace, "/bin/sh", "-c", script]
    }

    func pgdata(_ host: Host) -> String { dir.path + "/\(host.name)/data" }

    /// A fast data directory (no fsync) with the generated pg_hba.conf, pg_ident.conf and vpnprov.conf included
    /// last, as the role puts them; `pg_autoctl create` takes an existing data directory as it is.
    func initialize(_ host: Host, generated: String) throws {
        let data = pgdata(host)
        let made = try Subprocess.run(
            "/usr/bin/setpriv",
            [
                "--reuid=postgres", "--regid=postgres", "--init-groups", Self.pgBin + "/initdb", "-D", data, "-A",
                "trust",
                "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync",
            ], timeout: .seconds(60))
        guard made.succeeded else { throw HarnessError("initdb \(host.name): \(made)") }
        for file in ["pg_hba.conf", "pg_ident.conf", "vpnprov.conf"] {
            try? FileManager.default.removeItem(atPath: data + "/" + file)
            try FileManager.default.copyItem(atPath: generated + "/\(host.name)/" + file, toPath: data + "/" + file)
        }
        let conf = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        conf.seekToEndOfFile()
        conf.write(Data("include_if_exists = 'vpnprov.conf'\n".utf8))
        try conf.close()
        // The lab's machine is small and shared: little memory, no fsync, checkpoints at once (pg_autoctl's base
        // backup waits for one). postgresql.auto.conf is read after vpnprov.conf.
        let auto = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.auto.conf"))
        auto.seekToEndOfFile()
        auto.write(
            Data(
                "shared_buffers = '32MB'\neffective_cache_size = '128MB'\nmaintenance_work_mem = '16MB'\nfsync = off\ncheckpoint_completion_target = 0\nwal_keep_size = '64MB'\n"
                    .utf8))
        try auto.close()
        try Subprocess.check("/bin/chown", ["-R", "postgres:postgres", data])
    }

    /// `pg_autoctl create … --run` (or `run` when created), as the role's commands and unit do.
    func start(_ host: Host, monitorURI: String) throws {
        let ssl =
            "--skip-pg-hba --ssl-ca-file \(Self.tlsDirectory)/ca.crt --server-cert \(Self.tlsDirectory)/server.crt "
            + "--server-key \(Self.tlsDirectory)/server.key --ssl-mode verify-full"
        let data = pgdata(host)
        let command: String
        if FileManager.default.fileExists(atPath: data + "/postgresql-auto-failover.conf") {
            command = "pg_autoctl run --pgdata \(data)"
        } else if host.name == Self.monitor.name {
            command = "pg_autoctl create monitor --pgdata \(data) --pgport 5432 --hostname \(host.address) \(ssl) --run"
        } else {
            command =
                "pg_autoctl create postgres --pgdata \(data) --pgport 5432 --name \(host.name) --hostname \(host.address) "
                + "--dbname accounts --monitor '\(monitorURI)' \(ssl) --run"
        }
        daemons[host.name] = try Daemon.start(
            "/usr/bin/setsid", [StrongSwanEnvironment.ipPath] + asPostgres(host, command),
            outputPath: dir.path + "/\(host.name)/run.log")
    }

    /// Stops `host`'s pg_autoctl (SIGTERM: it stops its PostgreSQL first), as a stopped service or a host that is
    /// down; `restart(_:)` runs it again.
    func stop(_ host: Host) {
        daemons[host.name]?.stop(timeout: .seconds(10))
    }

    /// `pg_autoctl run` on `host`'s data directory again, as its unit starts it.
    func restart(_ host: Host) throws {
        try start(host, monitorURI: monitorURI)
    }

    func log(_ host: Host) -> String {
        (try? String(contentsOfFile: dir.path + "/\(host.name)/run.log", encoding: .utf8)) ?? ""
    }

    /// The pid of `host`'s postmaster (the first line of postmaster.pid).
    func postmasterPid(_ host: Host) -> Int32? {
        guard let text = try? String(contentsOfFile: pgdata(host) + "/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// SQL run as postgres in `host`'s own mount namespace (its socket), through its pg_autoctl process.
    func psql(_ host: Host, database: String, _ sql: String) throws -> ProgramResult {
        // The postmaster runs in the host's network and mount namespaces.
        guard let pid = postmasterPid(host) else { throw HarnessError("\(host.name): no postmaster") }
        return try Subprocess.run(
            "/usr/bin/nsenter",
            [
                "-t", "\(pid)", "-m", "-n", "/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                "/usr/bin/psql", "-X", "-At", "-h", "/run/postgresql", "-d", database, "-c", sql,
            ])
    }

    /// The monitor's view: node name → (reported state, goal state).
    func states() throws -> [String: String] {
        MonitorView.states(try psql(host(Self.monitor.name), database: "pg_auto_failover", MonitorView.query).stdout)
    }

    /// Cuts `host` off the network as a lost link does: its namespace drops every packet but loopback's.
    func cutNetwork(of host: Host) throws {
        try NetworkPair.loadNftables(
            """
            table inet vpnprov_cut {
              chain in { type filter hook input priority -100; policy drop; iif "lo" accept; }
              chain out { type filter hook output priority -100; policy drop; oif "lo" accept; }
            }

            """, in: host.namespace)
    }

    /// Undoes `cutNetwork(of:)`.
    func restoreNetwork(of host: Host) throws {
        try NetworkPair.loadNftables("delete table inet vpnprov_cut\n", in: host.namespace)
    }

    /// The data node the monitor has as the primary, if any.
    func primary() throws -> Host? {
        guard let name = try states().first(where: { $0.value == "primary/primary" })?.key else { return nil }
        return host(name)
    }

    /// Polls until `condition` holds, up to `timeout`.
    func wait(for what: String, timeout: Duration, _ condition: () throws -> Bool) throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if (try? condition()) == true { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let logs = hosts.map { "--- \($0.name):\n" + String(log($0).suffix(1500)) }.joined(separator: "\n")
        throw HarnessError("\(what) not within \(timeout); states \((try? states()) ?? [:])\n\(logs)")
    }

    func teardown() {
        if tornDown { return }
        tornDown = true
        for client in clients { client.stop() }
        node?.stop()
        relay?.stop()
        for charon in radiusCharons.values { charon.stop() }
        for server in radiusServers.values { server.stop() }
        for server in radiusHosts { PrivateView.remove(for: server.namespace) }
        for name in [Self.dataNodes[1].name, Self.dataNodes[0].name, Self.monitor.name] {
            daemons[name]?.stop(timeout: .seconds(10))
        }
        // What a killed keeper left (its postmaster runs in its own session's process group).
        for host in hosts {
            if let pid = postmasterPid(host), Scratch.processExists(pid) { Glibc.kill(pid, SIGKILL) }
            PrivateView.remove(for: host.namespace)
        }
        for ns in namespaces.reversed() { NetworkPair.delete(namespace: ns) }
    }

    deinit { teardown() }

    @discardableResult
    private func ip(_ args: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10))
    }
}
