import Foundation
import Glibc
import VPNProvTestFixtures
import VPNProvTestHarness

/// pg_auto_failover's monitor's view of its nodes, as `psql` prints it: node name → "reportedstate/goalstate".
enum MonitorView {
    static let query = "SELECT nodename || '=' || reportedstate || '/' || goalstate FROM pgautofailover.node"

    static func states(_ psqlOutput: String) -> [String: String] {
        var states: [String: String] = [:]
        for line in psqlOutput.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { states[String(parts[0])] = String(parts[1]) }
        }
        return states
    }
}

/// The operator's CA of an accounts database cluster (docs/accounts.md, "Topology"), made with the openssl CLI as
/// an operator's CA would make them: per host a key and a certificate with CN its name, SAN its address, serverAuth
/// and clientAuth; the `radius` and `vpnprov` client certificates. EC P-256, valid one day, keys 0600.
enum AccountsDatabaseCertificates {
    static func make(in tls: String, hosts: [(name: String, address: String)]) throws {
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        var script = """
            set -e
            cd '\(tls)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=accounts-db-ca 2>/dev/null
            issue() {
              openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
              printf 'basicConstraints=CA:FALSE\\nkeyUsage=digitalSignature\\nextendedKeyUsage=serverAuth,clientAuth\\n%s\\n' "$2" > "$1.ext"
              openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
              chmod 0600 "$1.key"; rm -f "$1.csr" "$1.ext"
            }

            """
        for host in hosts { script += "issue \(host.name) 'subjectAltName=IP:\(host.address)'\n" }
        script += "issue radius ''\nissue vpnprov ''\n"
        let made = try Subprocess.run("/bin/sh", ["-c", script])
        guard made.succeeded else { throw HarnessError("certificates: \(made)") }
    }
}

/// Three database hosts of an accounts cluster managed over SSH (`AnsibleLab`): `db-mon` (192.0.2.1, the
/// monitor), `db-a` (192.0.2.2) and `db-b` (192.0.2.3), data nodes. Each host has Debian's PostgreSQL 15 and
/// pg_auto_failover as the machine has them, and its own `/etc/postgresql` (empty: no packaged cluster),
/// `/etc/vpnprov`, `/etc/systemd/system`, `/var/lib/postgresql` and `/run/postgresql` (`PrivateView`s in the
/// scratch directory, owned by postgres as the package leaves them), so the machine's own cluster 15/main and
/// its directories are never touched. The stand-in `systemctl` runs the role's pg_autoctl unit as its `User=`
/// (postgres) with its environment. The controller (the hub, 192.0.2.254) is where the operator's
/// `vpnprov accounts` runs: the inventory's RADIUS server is at that address, which pg_hba.conf lets in.
final class AccountsDatabaseRoleLab {
    static let hosts = [
        (name: "db-mon", address: "192.0.2.1"), (name: "db-a", address: "192.0.2.2"),
        (name: "db-b", address: "192.0.2.3"),
    ]
    static let pgdata = "/var/lib/postgresql/vpnprov-accounts"
    static let unit = "vpnprov-pgautofailover.service"
    static let dependencies = [
        "/usr/bin/pg_autoctl", "/usr/lib/postgresql/15/bin/initdb", "/usr/bin/openssl", "/usr/bin/setpriv",
        "/usr/bin/psql",
    ]

    let lab: AnsibleLab
    let dir: URL
    let inventory: String
    let state: String
    private var tornDown = false

    private init(lab: AnsibleLab, dir: URL) {
        self.lab = lab
        self.dir = dir
        inventory = dir.path + "/inventory.yaml"
        state = dir.path + "/state"
    }

    static func start() throws -> AccountsDatabaseRoleLab {
        for dependency in dependencies where !FileManager.default.isExecutableFile(atPath: dependency) {
            throw HarnessError(
                "\(dependency) is missing (scripts/install-test-deps installs postgresql-15-auto-failover and pg-auto-failover-cli)"
            )
        }
        let lab = try AnsibleLab.start(
            nodes: hosts.map(\.name), views: ["/var/lib": ["postgresql"]], etc: ["postgresql"], services: [:],
            run: ["postgresql"], charon: false, serviceUsers: true)
        let dir: URL
        do {
            dir = try Scratch.makeDirectory("accounts-db-role")
            // The package leaves both to postgres: its home (pg_autoctl's configuration and state go below it) and
            // PostgreSQL's socket directory.
            for node in lab.nodes {
                for (host, entry, mode) in [("/var/lib", "postgresql", "0755"), ("/run", "postgresql", "2775")] {
                    guard let view = PrivateView.path(of: host, for: node.namespace) else {
                        throw HarnessError("\(node.name) has no view of \(host)")
                    }
                    try Subprocess.check("/bin/chown", ["postgres:postgres", view + "/" + entry])
                    try Subprocess.check("/bin/chmod", [mode, view + "/" + entry])
                }
                try StandInSudo.install(bin: node.run.path + "/bin")
            }
            try AccountsDatabaseCertificates.make(in: dir.path + "/tls", hosts: hosts)
        } catch {
            lab.teardown()
            throw error
        }
        return AccountsDatabaseRoleLab(lab: lab, dir: dir)
    }

    /// The cluster's inventory: the RADIUS server (and so `vpnprov accounts`'s network) at the controller's address;
    /// `disconnectFrom`: where `vpnprov accounts` may connect from instead.
    func inventoryText(disconnectFrom: String? = nil) -> String {
        """
        vpnprov: 1
        name: dbrole
        accounts:
          servers:
            rad-a: { address: 192.0.2.254, region: a }
        \(disconnectFrom.map { "  disconnect_from: [\($0)]\n" } ?? "")\
          cluster:
            tls_dir: \(dir.path)/tls
            hosts:
              db-a: { address: 192.0.2.2, region: a }
              db-b: { address: 192.0.2.3, region: b }
              db-mon: { address: 192.0.2.1, region: c, role: monitor }
        nodes:
          node-a:
            address: 192.0.2.50
            region: a
            tier: free
            pool: 10.27.1.0/24
            services: [ikev2-eap]
            accounts: radius

        """
    }

    /// `vpnprov generate` of `inventoryText(disconnectFrom:)` into `<dir>/<label>` (one state for every tree).
    func generate(_ label: String, disconnectFrom: String? = nil) throws -> String {
        try inventoryText(disconnectFrom: disconnectFrom).write(toFile: inventory, atomically: true, encoding: .utf8)
        let out = dir.path + "/" + label
        let result = try VPNProvBinary.run(["generate", inventory, "--out", out, "--state", state, "--quiet"])
        guard result.succeeded else { throw HarnessError("vpnprov generate: \(result)") }
        return out
    }

    /// `ansible-playbook deploy/accounts-db.yml` of the tree `out` over SSH to the hosts of `limit` as root, without the
    /// packages (the machine has them). The role's tasks become postgres with sudo (`StandInSudo`).
    func playbook(_ out: String, check: Bool = false, limit: String = "vpnprov_accounts_db") async throws
        -> ProgramResult
    {
        try await lab.playbook(
            [
                "-i", out + "/deploy/inventory.yml", out + "/deploy/accounts-db.yml", "--limit", limit,
                "-u", "root", "-e", "ansible_python_interpreter=/usr/bin/python3",
                "-e", "vpnprov_accounts_db_install_packages=false",
            ] + (check ? ["--check", "--diff"] : []),
            // Modules run as postgres keep their temporary files in its home, as on a real host (the lab's
            // directory for them is root's).
            environment: ["ANSIBLE_REMOTE_TEMP": "~/.ansible/tmp"], timeout: .seconds(300))
    }

    func node(_ name: String) throws -> AnsibleLab.Node { try lab.node(name) }

    /// What `host` has at `path` below its own `/var/lib` (`path` starts with /var/lib/), seen from the test.
    func varLib(_ node: AnsibleLab.Node, _ path: String) throws -> String {
        guard let view = PrivateView.path(of: "/var/lib", for: node.namespace) else {
            throw HarnessError("\(node.name) has no view of /var/lib")
        }
        return view + path.dropFirst("/var/lib".count)
    }

    /// The files of a packaged cluster 15/main on `node`, as `pg_lsclusters` reads them (no server runs): its
    /// configuration naming its data directory, whose `base/` has a directory per database: postgres and the two
    /// templates (1, 4, 5, as `pg_createcluster` leaves them) and `databases` more.
    func placeMainCluster(_ node: AnsibleLab.Node, databases: Int) throws {
        let fm = FileManager.default
        let conf = node.etc + "/postgresql/15/main"
        try fm.createDirectory(atPath: conf, withIntermediateDirectories: true)
        try "data_directory = '/var/lib/postgresql/15/main'\nport = 5432\n".write(
            toFile: conf + "/postgresql.conf", atomically: true, encoding: .utf8)
        let base = try varLib(node, "/var/lib/postgresql/15/main/base")
        for oid in [1, 4, 5] + (0..<databases).map({ 16384 + $0 }) {
            try fm.createDirectory(atPath: base + "/\(oid)", withIntermediateDirectories: true)
        }
    }

    /// Takes `placeMainCluster`'s files away again.
    func removeMainCluster(_ node: AnsibleLab.Node) throws {
        try FileManager.default.removeItem(atPath: node.etc + "/postgresql/15")
        try FileManager.default.removeItem(atPath: try varLib(node, "/var/lib/postgresql/15"))
    }

    /// The pid of the host's postmaster (postmaster.pid's first line), if it has one.
    func postmasterPid(_ node: AnsibleLab.Node) -> Int32? {
        guard let file = try? varLib(node, Self.pgdata + "/postmaster.pid"),
            let text = try? String(contentsOfFile: file, encoding: .utf8)
        else { return nil }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// SQL as postgres on the host's socket (its own /run/postgresql).
    func psql(_ node: AnsibleLab.Node, database: String, _ sql: String) throws -> ProgramResult {
        try lab.run(
            node,
            [
                "/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "/usr/bin/psql", "-X",
                "-At", "-h", "/run/postgresql", "-d", database, "-c", sql,
            ])
    }

    /// The monitor's view: node name → reported state/goal state.
    func states() throws -> [String: String] {
        MonitorView.states(try psql(try node("db-mon"), database: "pg_auto_failover", MonitorView.query).stdout)
    }

    /// `vpnprov accounts ARGUMENTS --inventory …` on the controller (the hub namespace: 192.0.2.254).
    func accounts(_ arguments: [String]) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", lab.hub, VPNProvBinary.path, "accounts"] + arguments + ["--inventory", inventory],
            timeout: .seconds(90))
    }

    /// `psql` on the controller to the data node `node` alone as the operator (`vpnprov`, its certificate): the
    /// login pg_hba.conf allows or refuses.
    func operatorLogin(_ node: AnsibleLab.Node) throws -> ProgramResult {
        let tls = dir.path + "/tls"
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", lab.hub, "/usr/bin/psql", "-X", "-At",
                "host=\(node.address) dbname=accounts user=vpnprov sslmode=verify-full sslrootcert=\(tls)/ca.crt "
                    + "sslcert=\(tls)/vpnprov.crt sslkey=\(tls)/vpnprov.key connect_timeout=5",
                "-c", "SELECT 1",
            ], timeout: .seconds(30))
    }

    /// The log the stand-in systemctl kept of the host's pg_autoctl unit.
    func serviceLog(_ node: AnsibleLab.Node) -> String {
        let file = lab.serviceState(node) + "/logs/" + Self.unit + ".log"
        return (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    }

    /// The pid the stand-in started the host's pg_autoctl with (0: none).
    func servicePid(_ node: AnsibleLab.Node) -> Int32 { StandInSystemctl.pid(Self.unit, state: lab.serviceState(node)) }

    /// Stops each host's pg_autoctl by its pid (SIGINT: it stops its PostgreSQL with a fast shutdown; SIGTERM's
    /// smart one waits for every session to end), all at once (each takes about 2 s), then the lab. Safe to call
    /// twice.
    func teardown() {
        if tornDown { return }
        tornDown = true
        let pids = lab.nodes.map { servicePid($0) }.filter { $0 > 0 && Scratch.processExists($0) }
        for pid in pids { kill(pid, SIGINT) }
        let deadline = ContinuousClock.now + .seconds(15)
        while pids.contains(where: Scratch.processExists) && ContinuousClock.now < deadline { usleep(20_000) }
        // What did not stop: the whole session (pg_autoctl and its PostgreSQL share it).
        for pid in pids where Scratch.processExists(pid) { kill(-pid, SIGKILL) }
        lab.teardown()
        try? FileManager.default.removeItem(at: dir)
    }

    deinit { teardown() }
}
