import Foundation
import Glibc
import Testing
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// The accounts scenario's inputs as vpnprov makes them: `vpnprov generate` on an inventory with `accounts:` (two
/// RADIUS servers, a free and a pro node with `accounts: radius`) renders the nodes' `servers/<node>/` trees (with
/// `strongswan.d/vpnprov-radius.conf` and `vpnprov-radius-dae.conf`) and the RADIUS servers' `radius/<server>/`
/// directories, used as written; `vpnprov accounts` migrates the database and manages the accounts.
///
/// The RADIUS servers log in to PostgreSQL as the role `radius` with a password, which their conninfo
/// (`accounts.radius_database`, rendered into `mods-enabled/sql`) does not hold: it names a libpq password file
/// (`passfile=`), as docs/accounts.md tells operators to (FreeRADIUS logs the conninfo). `vpnprov accounts`
/// connects as the superuser. Both through the cluster's unix socket.
final class RadiusGeneratedInputs: RadiusFleetInputs, Sendable {
    static let nodes = [
        RadiusNodeSpec(name: "free-1", address: "192.0.2.1", tier: "free"),
        RadiusNodeSpec(name: "pro-1", address: "192.0.2.3", tier: "pro"),
    ]
    static let radiusServers = [(name: "rad-1", address: "192.0.2.11"), (name: "rad-2", address: "192.0.2.12")]
    var nodes: [RadiusNodeSpec] { Self.nodes }
    var radiusServers: [(name: String, address: String)] { Self.radiusServers }
    let clientChild = "net"
    let postgres: PostgresCluster
    /// Where `vpnprov accounts` runs (the first RADIUS server's network namespace).
    let operatorNamespace: String
    /// The `radius` role's libpq password file (0600).
    let passfile: String

    let deployment: GeneratedDeployment
    private let radiusPassword = RadiusGeneratedInputs.random()
    private let psks: [String: String]
    /// What the lab learns as it starts: the node relays' proxy.conf as generated (to restore after writing a
    /// wrong secret into them), the RADIUS servers' clients.conf as generated (to restore after mis-setting a
    /// node's tier), and the environment `vpnprov accounts` runs with.
    private let learnt = Locked<(proxies: [String: String], clients: [String: String], accounts: [String: String])>(
        ([:], [:], [:]))
    private var accountsEnvironment: [String: String] { learnt.withLock { $0.accounts } }

    /// 32 hex digits from the system's random generator: passwords, PSKs and wrong secrets of a run.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The ACME variant's name for free-1 (its identity and the name its certificate is for).
    static let acmeDomain = "free-1.vpn.test"
    /// The ACME variant's free-1 reaches the RADIUS servers from this address (`radius_address`), not from the
    /// address clients dial: a private network between node and servers (`RadiusLab.addRadiusPath`).
    static let acmeRadiusAddress = "203.0.113.1"

    /// The accounts inventory; with `acmeDirectory`, free-1's certificate comes from that ACME directory.
    static func inventory(acmeDirectory: String? = nil) -> String {
        let text = plainInventory()
        guard let acmeDirectory else { return text }
        return text.replacingOccurrences(
            of: "defaults:\n", with: "acme:\n  email: ops@vpn.test\n  directory: \(acmeDirectory)\ndefaults:\n"
        ).replacingOccurrences(
            of: "    address: 192.0.2.1\n",
            with:
                "    address: 192.0.2.1\n    id: \(acmeDomain)\n    certificate: acme\n    radius_address: \(acmeRadiusAddress)\n"
        )
    }

    private static func plainInventory() -> String {
        """
        vpnprov: 1
        name: acct
        defaults:
          network:
            ipsec: libipsec
        accounts:
          database: env:VPN_ACCOUNTS_DB
          radius_database: env:VPN_RADIUS_DB
          secret: gen
          accounting_interval: \(Self.accountingInterval)
          device_limit: 3
          servers:
            rad-1: { address: 192.0.2.11 }
            rad-2: { address: 192.0.2.12 }
          quotas: { pro: 1TB }
        nodes:
          free-1:
            address: 192.0.2.1
            tier: free
            pool: 10.27.1.0/24
            services: [ikev2-eap, ipsec-xauth-psk]
            psk: env:VPN_PSK_FREE
            accounts: radius
          pro-1:
            address: 192.0.2.3
            tier: pro
            pool: 10.27.3.0/24
            services: [ikev2-eap, ipsec-xauth-psk]
            psk: env:VPN_PSK_PRO
            accounts: radius

        """
    }

    /// A lab running this deployment, every daemon started (`RadiusLab.start`), with `clients` client charons and
    /// no accounts yet (`clientSettings`: strongswan.conf text for the clients). The caller tears the lab down; a failure here tears it down before it is thrown.
    static func startLab(build: StrongSwanBuild, clients: Int, clientSettings: String = "") throws -> (
        lab: RadiusLab, inputs: RadiusGeneratedInputs
    ) {
        let lab = try RadiusLab.create(
            nodes: nodes.map { ($0.name, $0.address) }, clients: clients, radius: radiusServers)
        do {
            let inputs = try RadiusGeneratedInputs(
                database: try lab.startPostgres(in: try Scratch.makeDirectory("accounts-db").path),
                operatorNamespace: lab.radiusMembers[0].namespace)
            try lab.start(inputs, build: build, clientSettings: clientSettings)
            return (lab, inputs)
        } catch {
            lab.teardown()
            throw error
        }
    }

    /// The lab with free-1 certified by Pebble: Pebble runs on the last client's host, which resolves
    /// free-1's name to it; lego in free-1's namespace obtains the certificate before the nodes start. The caller
    /// stops Pebble and tears the lab down (`PrivateView.remove` for the Pebble host).
    /// free-1 reaches the RADIUS servers from `acmeRadiusAddress`. `desktops`: client namespaces without a charon,
    /// for NetworkManager desktops.
    static func startACMELab(build: StrongSwanBuild, clients: Int, desktops: Set<Int> = []) throws -> (
        lab: RadiusLab, inputs: RadiusGeneratedInputs, pebble: PebbleServer
    ) {
        let lab = try RadiusLab.create(
            nodes: nodes.map { ($0.name, $0.address) }, clients: clients, radius: radiusServers)
        lab.clientsWithoutCharon = desktops
        var pebble: PebbleServer?
        do {
            try lab.addRadiusPath(node: "free-1", address: acmeRadiusAddress)
            let host = try #require(lab.clients.last)
            let free = try lab.node("free-1")
            let etc = try PrivateView.create(of: "/etc", for: host.namespace, own: ["hosts"])
            try "127.0.0.1 localhost\n\(free.address) \(acmeDomain)\n".write(
                toFile: etc + "/hosts", atomically: true, encoding: .utf8)
            let server = try PebbleServer.start(namespace: host.namespace, address: host.address)
            pebble = server
            let inputs = try RadiusGeneratedInputs(
                database: try lab.startPostgres(in: try Scratch.makeDirectory("accounts-db").path),
                operatorNamespace: lab.radiusMembers[0].namespace, acmeDirectory: server.directoryURL)
            try server.issue(
                domain: acmeDomain, inNamespace: free.namespace,
                swanctlDirectory: inputs.deployment.out.appendingPathComponent("servers/free-1/swanctl"))
            try lab.start(inputs, build: build)
            return (lab, inputs, server)
        } catch {
            pebble?.stop()
            lab.teardown()
            throw error
        }
    }

    /// Generates the deployment for the accounts database `postgres` (already running: its socket is part of
    /// the RADIUS servers' conninfo).
    init(database postgres: PostgresCluster, operatorNamespace: String, acmeDirectory: String? = nil) throws {
        self.postgres = postgres
        self.operatorNamespace = operatorNamespace
        psks = ["free-1": Self.random(), "pro-1": Self.random()]
        let scratch = try Scratch.makeDirectory("inv-accounts")
        let passfile = scratch.appendingPathComponent("pgpass").path
        self.passfile = passfile
        // host:port:database:user:password; "*" matches the socket directory given as host
        try "*:*:\(PostgresCluster.database):radius:\(radiusPassword)\n".write(
            toFile: passfile, atomically: true, encoding: .utf8)
        chmod(passfile, 0o600)
        let path = scratch.appendingPathComponent("inventory.yaml").path
        try Self.inventory(acmeDirectory: acmeDirectory).write(toFile: path, atomically: true, encoding: .utf8)
        deployment = try GeneratedDeployment.generate(
            inventory: path, label: "accounts",
            environment: [
                "VPN_RADIUS_DB":
                    "host=\(postgres.directory) dbname=\(PostgresCluster.database) user=radius passfile=\(passfile)",
                "VPN_PSK_FREE": psks["free-1"]!, "VPN_PSK_PRO": psks["pro-1"]!,
            ])
        for node in nodes {
            let proxy = try String(contentsOfFile: proxyPath(node.name), encoding: .utf8)
            learnt.withLock { $0.proxies[node.name] = proxy }
        }
        for server in radiusServers {
            let clients = try String(contentsOfFile: clientsPath(server.name), encoding: .utf8)
            learnt.withLock { $0.clients[server.name] = clients }
        }
    }

    private func proxyPath(_ node: String) -> String {
        deployment.out.appendingPathComponent("servers/\(node)/radius-relay/proxy.conf").path
    }

    private func clientsPath(_ server: String) -> String {
        deployment.out.appendingPathComponent("radius/\(server)/clients.conf").path
    }

    private func state(_ table: String) throws -> [String: String] {
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: deployment.state.appendingPathComponent("secrets.json")))
        return ((json as? [String: Any])?[table] as? [String: String]) ?? [:]
    }

    // MARK: database and accounts (`vpnprov accounts`)

    /// `vpnprov accounts …` as the operator runs it: on a host next to the RADIUS servers (inside the first one's
    /// network namespace, from which the nodes' Disconnect-Request listeners are reachable and which a node's
    /// firewall admits by default), on the generated deployment's inventory and state (the database's conninfo
    /// is `accounts.database`, in the environment; a unix socket works from any namespace).
    private func runAccounts(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> ProgramResult {
        let binary = VPNProvBinary.path
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", operatorNamespace, binary, "accounts"] + arguments + [
                "--inventory", deployment.inventory, "--state", deployment.state.path,
            ],
            environment: accountsEnvironment, timeout: timeout)
    }

    /// The inventory's `accounts.accounting_interval`.
    static let accountingInterval = 60
    var accountingInterval: Int { Self.accountingInterval }

    func accountsOutput(_ arguments: [String]) throws -> String { try accounts(arguments).stdout }

    @discardableResult
    private func accounts(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> ProgramResult {
        let result = try runAccounts(arguments, timeout: timeout)
        guard result.succeeded else { throw HarnessError("vpnprov accounts \(arguments.first ?? ""): \(result)") }
        return result
    }

    func migrate() throws {
        let conninfo = postgres.conninfo()
        learnt.withLock { $0.accounts["VPN_ACCOUNTS_DB"] = conninfo }
        try accounts(["migrate"])
        // What the DBA does once (the migration creates the role NOLOGIN), and a cluster that asks the role
        // for its password (the test cluster trusts every local connection).
        try postgres.psql("ALTER ROLE radius LOGIN PASSWORD '\(radiusPassword)'")
        let hba = postgres.dataDirectory + "/data/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        try ("local all radius scram-sha-256\n" + rules).write(toFile: hba, atomically: true, encoding: .utf8)
        try postgres.psql("SELECT pg_reload_conf()")
        // Without the password file the role is refused: the RADIUS servers' logins prove the file is used.
        let bare = try Subprocess.run(
            PostgresCluster.psqlPath,
            ["-X", "-w", "-h", postgres.directory, "-U", "radius", "-d", PostgresCluster.database, "-c", "SELECT 1"],
            environment: ["PGPASSFILE": "/dev/null"])
        guard !bare.succeeded, bare.output.contains("password") else {
            throw HarnessError("the radius role logs in without its password: \(bare)")
        }
    }

    func addAccount(_ user: String, password: String, tier: String, devices: Int, lab: RadiusLab) throws {
        _ = try withPasswordFile(password) { file in
            try accounts(["add", user, "--tier", tier, "--devices", String(devices), "--password-file", file])
        }
    }

    func importAccounts(_ lines: [String]) throws -> String {
        // The file holds passwords: private, and gone afterwards, like a password file.
        try withPasswordFile(lines.joined(separator: "\n")) { file in
            // a benchmark imports a million accounts (about a minute)
            try accounts(["import", file], timeout: .seconds(600)).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
    }

    func setPassword(_ user: String, password: String) throws -> String {
        try withPasswordFile(password) { file in
            try accounts(["set-password", user, "--password-file", file]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// Runs `body` with the path of a private file holding `password`, removed afterwards.
    private func withPasswordFile<T>(_ password: String, _ body: (String) throws -> T) throws -> T {
        let file = try Scratch.makeDirectory("password").appendingPathComponent("password")
        try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        defer { try? FileManager.default.removeItem(at: file) }
        return try body(file.path)
    }

    func addAccountBypassingInventory(_ user: String, password: String, tier: String, devices: Int) throws {
        let binary = VPNProvBinary.path
        let file = try Scratch.makeDirectory("password").appendingPathComponent("password")
        try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", operatorNamespace, binary, "accounts", "add", user, "--tier", tier, "--devices",
                String(devices), "--password-file", file.path, "--database", "env:VPN_ACCOUNTS_DB",
            ],
            environment: accountsEnvironment, timeout: .seconds(60))
        guard result.succeeded else { throw HarnessError("vpnprov accounts add --database: \(result)") }
    }

    func setTier(_ user: String, _ tier: String, lab: RadiusLab) throws {
        try accounts(["set-tier", user, tier])
    }

    /// `vpnprov accounts disable`, which also sends the Disconnect-Requests to every node with an open session of
    /// the account (their addresses from the inventory, their secrets from the state); it exits 0 only when every
    /// node acknowledged. The returned text is what it printed.
    func disable(_ user: String, lab: RadiusLab) throws -> String {
        let result = try accounts(["disable", user])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: RADIUS servers and nodes

    func radiusConfiguration(_ server: String) throws -> (directory: String, environment: [String: String]) {
        (deployment.out.appendingPathComponent("radius/\(server)").path, [:])
    }

    func radiusIPsec(_ server: String) throws -> (confFile: String, firewall: String)? {
        let dir = deployment.out.appendingPathComponent("radius/\(server)/ipsec")
        let conf = dir.appendingPathComponent("swanctl.conf").path
        guard FileManager.default.fileExists(atPath: conf) else { return nil }
        return (conf, try String(contentsOf: dir.appendingPathComponent("vpnprov-radius.nft"), encoding: .utf8))
    }

    func nodeSettingsIncludes(_ node: String) throws -> [String] {
        let dir = deployment.out.appendingPathComponent("servers/\(node)/strongswan.d")
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().filter { $0.hasSuffix(".conf") }
            .map { dir.appendingPathComponent($0).path }
    }

    func nodeConfFile(_ node: String) throws -> String { try deployment.node(node).confFile }

    func nodeRelayDirectory(_ node: String) throws -> String? {
        let dir = deployment.out.appendingPathComponent("servers/\(node)/radius-relay")
        return FileManager.default.fileExists(atPath: dir.appendingPathComponent("radiusd.conf").path) ? dir.path : nil
    }

    func nodeFirewall(_ node: String) throws -> String? {
        try String(
            contentsOf: deployment.out.appendingPathComponent("servers/\(node)/network/vpnprov.nft"), encoding: .utf8)
    }

    func radiusSecret(_ node: String) throws -> String {
        guard let secret = try state("radiusSecrets")[node] else { throw HarnessError("no RADIUS secret of \(node)") }
        return secret
    }

    func relaySecret(_ node: String) throws -> String {
        guard let secret = try state("radiusRelaySecrets")[node] else {
            throw HarnessError("no RADIUS relay secret of \(node)")
        }
        return secret
    }

    func daeSecret(_ node: String) throws -> String {
        guard let secret = try state("daeSecrets")[node] else { throw HarnessError("no DAE secret of \(node)") }
        return secret
    }

    func setNodeSecret(_ node: String, correct: Bool, lab: RadiusLab) throws {
        guard var text = learnt.withLock({ $0.proxies[node] }) else {
            throw HarnessError("no relay proxy.conf of \(node)")
        }
        if !correct {
            let secret = try state("radiusSecrets")[node] ?? ""
            guard !secret.isEmpty, text.contains(secret) else {
                throw HarnessError("the node's RADIUS secret is not in its relay's proxy.conf")
            }
            text = text.replacingOccurrences(of: secret, with: Self.random())
        }
        try text.write(toFile: proxyPath(node), atomically: true, encoding: .utf8)
        chmod(proxyPath(node), 0o600)
        let relay = try lab.relay(node)
        relay.stop()
        try relay.start()
    }

    /// Rewrites the node's `vpn_tier` in every RADIUS server's clients.conf and restarts the servers (FreeRADIUS
    /// reads its clients only when it starts).
    func setRadiusTier(of node: String, to tier: String?, lab: RadiusLab) throws {
        guard nodes.contains(where: { $0.name == node }) else { throw HarnessError("no node \(node)") }
        for server in radiusServers {
            guard var text = learnt.withLock({ $0.clients[server.name] }) else { throw HarnessError("no clients.conf") }
            if let tier {
                // `client "<node>" {` (or unquoted), then its `vpn_tier = …` line
                guard
                    let start = text.range(of: "client \"\(node)\" {") ?? text.range(of: "client \(node) {"),
                    let key = text.range(of: "vpn_tier = ", range: start.upperBound..<text.endIndex),
                    let end = text.range(of: "\n", range: key.upperBound..<text.endIndex)
                else { throw HarnessError("\(server.name): no vpn_tier for \(node) in clients.conf") }
                text.replaceSubrange(key.upperBound..<end.lowerBound, with: "\"\(tier)\"")
            }
            try text.write(toFile: clientsPath(server.name), atomically: true, encoding: .utf8)
            chmod(clientsPath(server.name), 0o600)
            let radius = try lab.radius(server.name)
            radius.stop()
            try radius.start()
        }
    }

    // MARK: clients

    func clientConnection(node: String, ikeVersion: Int) -> String { "\(node)-ikev\(ikeVersion)" }

    /// The node's identity (its `local.id`) from its generated swanctl.conf.
    private func nodeID(_ node: String) throws -> String {
        let conf = try String(contentsOfFile: try nodeConfFile(node), encoding: .utf8)
        guard let id = GeneratedDeployment.values(of: "id", in: conf).first(where: { $0 != "%any" }) else {
            throw HarnessError("no local id in \(node)'s swanctl.conf")
        }
        return id
    }

    private func caPEM(_ node: String) throws -> Data {
        try SwanctlDirectory.contents(
            of: deployment.out.appendingPathComponent("servers/\(node)/swanctl/x509ca/ca.pem").path)
    }

    func clientConf(user: String, password: String) throws -> String {
        try clientConf(accounts: [RadiusClientConf.Account(user: user, password: password)], label: user)
    }

    func pskOnlyClientConf(node: String, identity: String) throws -> String {
        guard let spec = nodes.first(where: { $0.name == node }), let psk = psks[node] else {
            throw HarnessError("no node \(node)")
        }
        let id = try nodeID(node)
        var w = SwanctlWriter()
        try w.section("connections") { w in
            for (version, serverAuth) in [(2, "pubkey"), (2, "psk"), (1, "psk")] {
                try w.section("\(node)-psk-ikev\(version)-\(serverAuth)") { w in
                    w.raw("version", "\(version)")
                    try w.set("remote_addrs", spec.address)
                    w.raw("vips", "0.0.0.0")
                    w.raw("proposals", version == 2 ? "aes256gcm16-prfsha256-ecp256" : "aes256-sha256-ecp256")
                    try w.section("local") { w in
                        w.raw("auth", "psk")
                        try w.set("id", identity)
                    }
                    try w.section("remote") { w in
                        // The node proves itself with its certificate (as its EAP connection does) or with
                        // the PSK (as an ikev2-psk or IKEv1 connection would).
                        w.raw("auth", serverAuth)
                        try w.set("id", id)
                    }
                    w.section("children") { w in
                        w.section(clientChild) { w in
                            w.raw("remote_ts", RadiusLab.lanPrefix)
                            w.raw("esp_proposals", version == 2 ? "aes256gcm16-ecp256-modpnone" : "aes256gcm16")
                        }
                    }
                }
            }
        }
        try w.section("secrets") { w in
            try w.section("ike-node") { w in
                try w.set("id-1", id)
                try w.set("id-2", identity)
                w.raw("secret", SwanctlWriter.secret(psk))
            }
        }
        return try SwanctlDirectory.make(
            label: "radius-psk-only", conf: w.text, files: ["x509ca/ca.pem": try caPEM(nodes[0].name)]
        ).confFile
    }

    /// A client holding several accounts: account `user`'s connections are `clientConnection(…)` + "-" + user.
    func clientConf(accounts: [(user: String, password: String)]) throws -> String {
        try clientConf(
            accounts: accounts.map {
                RadiusClientConf.Account(user: $0.user, password: $0.password, suffix: "-\($0.user)")
            },
            label: "\(accounts.count)-accounts")
    }

    private func clientConf(accounts: [RadiusClientConf.Account], label: String) throws -> String {
        let text = try RadiusClientConf.text(
            accounts: accounts, child: clientChild,
            nodes: nodes.map {
                RadiusClientConf.Node(
                    ikev2: clientConnection(node: $0.name, ikeVersion: 2),
                    ikev1: clientConnection(node: $0.name, ikeVersion: 1), address: $0.address,
                    id: try nodeID($0.name), psk: psks[$0.name]!)
            })
        // One CA signs every node of a deployment.
        return try SwanctlDirectory.make(
            label: "radius-client-\(label)", conf: text, files: ["x509ca/ca.pem": try caPEM(nodes[0].name)]
        ).confFile
    }

    /// The node's catalogue entries the seed's four-field model can use, as the app reads them, on a device that holds
    /// the deployment CA (`SeedAppTests.usableWithTheCA`).
    func seedAppSetups(node: String, user: String, password: String) throws -> [(label: String, setup: ClientSetup)] {
        try seedAppSetups(node: node, user: user, password: password, trust: nil)
    }

    /// `trust`: the device's own trust store instead (a public root, for an ACME node).
    func seedAppSetups(node: String, user: String, password: String, trust: Data?) throws -> [(
        label: String, setup: ClientSetup
    )] {
        let catalog = try JSONSerialization.jsonObject(
            with: Data(contentsOf: deployment.out.appendingPathComponent("catalog/servers.json")))
        let entries = ((catalog as? [String: Any])?["servers"] as? [[String: Any]] ?? []).filter {
            $0["node"] as? String == node && SeedAppTests.usableWithTheCA($0)
        }
        let credentials = SeedAppTranslator.Credentials(
            username: user, password: password, psk: psks[node], caPEM: try trust ?? caPEM(node))
        return try entries.map { entry in
            (
                entry["service"] as? String ?? "?",
                try SeedAppTranslator.translate(entry: entry, credentials: credentials)
            )
        }
    }

    var secrets: [String] {
        let tables = ["radiusSecrets", "daeSecrets", "radiusRelaySecrets"].compactMap { try? state($0) }
        return tables.flatMap(\.values) + Array(psks.values) + [radiusPassword]
    }
}
