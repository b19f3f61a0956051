import Foundation
import Glibc
import Testing

/// A VPN node of the accounts scenario.
struct RadiusNodeSpec: Sendable {
    var name: String
    var address: String
    /// "free" or "pro".
    var tier: String
}

/// What the accounts scenario runs: the nodes' strongSwan files, the RADIUS servers' configuration directories,
/// the database schema and the account operations. `RadiusHandWrittenInputs` provides them from hand-written
/// files until `vpnprov generate` (servers/<node>/, radius/<server>/) and `vpnprov accounts` do.
protocol RadiusFleetInputs: AnyObject {
    /// The nodes, the free one first, then the pro one.
    var nodes: [RadiusNodeSpec] { get }
    /// The RADIUS servers in the nodes' order of preference.
    var radiusServers: [(name: String, address: String)] { get }
    /// Where PostgreSQL listens (TCP, in its own namespace) and the database FreeRADIUS uses.
    var databaseAddress: String { get }
    var databaseName: String { get }
    /// pg_hba method for the RADIUS servers' TCP connections ("trust", "scram-sha-256").
    var databaseHostAuthentication: String { get }

    /// Creates the schema in the empty database (as the superuser).
    func migrate(_ postgres: ScratchPostgres) throws
    /// A RADIUS server's configuration directory and the environment it reads.
    func radiusConfiguration(_ server: String) throws -> (directory: String, environment: [String: String])
    /// A node's strongswan.conf snippets (absolute paths) and its swanctl.conf (credentials beside it).
    func nodeSettingsIncludes(_ node: String) throws -> [String]
    func nodeConfFile(_ node: String) throws -> String
    /// Puts the node's right RADIUS shared secret, or a wrong one, into its settings (the caller reloads them).
    func setNodeSecret(_ node: String, correct: Bool) throws
    /// Makes RADIUS treat `node` as a node of `tier` (a mis-set RADIUS), or (nil) as it is.
    func setRadiusTier(of node: String, to tier: String?, lab: RadiusLab) throws
    /// A client swanctl.conf (credentials beside it) holding `user`'s account, with connections
    /// `clientConnection(node:ikeVersion:)`, each with the child `clientChild`.
    func clientConf(user: String, password: String) throws -> String
    func clientConnection(node: String, ikeVersion: Int) -> String
    var clientChild: String { get }

    /// The seed app's code path for `node` (its catalogue entries' four fields → `SeedAppTranslator`), one client
    /// setup per entry the seed's model can use, labelled by service.
    func seedAppSetups(node: String, user: String, password: String) throws -> [(label: String, setup: ClientSetup)]

    /// Account operations, as the app backend (or `vpnprov accounts`) performs them.
    func addAccount(_ user: String, password: String, tier: String, devices: Int, lab: RadiusLab) throws
    func setTier(_ user: String, _ tier: String, lab: RadiusLab) throws
    /// Disables the account and ends its live sessions (Disconnect-Request to every node it has one on);
    /// returns a description of what it did, for messages.
    func disable(_ user: String, lab: RadiusLab) throws -> String

    /// Secrets that must appear in no log (node RADIUS/DAE secrets, PSKs); account passwords are the test's.
    var secrets: [String] { get }
}

/// The scenario's inputs from hand-written files in the directory `VPNPROV_RADIUS_INPUTS` names:
/// `raddb/` (a FreeRADIUS configuration directory reading per-instance values from `$ENV{…}`), `sql/*.sql`
/// (applied after the FreeRADIUS package's PostgreSQL schema), `strongswan/node-eap-radius.conf.in` and
/// `strongswan/node-swanctl.conf.in` (node templates with `@NODE@`, `@SECRET@`, `@DAE_SECRET@`, `@NODE_ADDR@`,
/// `@INTERIM@`, `@TIER@`, `@POOL@`, `@PSK@`, `@GROUPS@`). Node names `nfree`, `npro` at 192.0.2.1 and .3, RADIUS
/// servers `rad1`, `rad2` at 192.0.2.11 and .12 (what those files name). Account operations use FreeRADIUS's own
/// tables (radcheck, radusergroup) and `radclient` for the Disconnect-Request.
///
/// Temporary: the generated files and `vpnprov accounts` replace this class.
final class RadiusHandWrittenInputs: RadiusFleetInputs, @unchecked Sendable {
    static let environmentVariable = "VPNPROV_RADIUS_INPUTS"

    let source: URL
    let directory: URL
    let pki: TestPKI
    let nodes = [
        RadiusNodeSpec(name: "nfree", address: "192.0.2.1", tier: "free"),
        RadiusNodeSpec(name: "npro", address: "192.0.2.3", tier: "pro"),
    ]
    let radiusServers = [(name: "rad1", address: "192.0.2.11"), (name: "rad2", address: "192.0.2.12")]
    let databaseAddress = "192.0.2.20"
    let databaseName = "radius"
    let databaseHostAuthentication = "trust"
    let clientChild = "net"
    private var radiusSecrets: [String: String] = [:]
    private var daeSecrets: [String: String] = [:]
    private var psks: [String: String] = [:]

    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    static var isConfigured: Bool { !(ProcessInfo.processInfo.environment[environmentVariable] ?? "").isEmpty }

    init() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.environmentVariable], !path.isEmpty else {
            throw HarnessError(
                "\(Self.environmentVariable) is not set: the accounts scenario has no node/RADIUS inputs yet "
                    + "(a directory with raddb/, sql/, strongswan/)")
        }
        source = URL(fileURLWithPath: path)
        directory = try Scratch.makeDirectory("radius-inputs")
        pki = try TestPKI.make(name: "accounts e2e CA")
        for node in nodes {
            radiusSecrets[node.name] = Self.random()
            daeSecrets[node.name] = Self.random()
            psks[node.name] = Self.random()
            let dir = directory.appendingPathComponent(node.name)
            for sub in ["strongswan.d", "swanctl/x509", "swanctl/x509ca", "swanctl/private"] {
                try FileManager.default.createDirectory(
                    at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            let issued = try pki.issue(name: node.name, sans: ["\(node.name).lab"], flags: ["serverAuth"])
            try FileManager.default.copyItem(
                atPath: issued.cert, toPath: dir.appendingPathComponent("swanctl/x509/\(node.name).pem").path)
            try FileManager.default.copyItem(
                atPath: issued.key, toPath: dir.appendingPathComponent("swanctl/private/\(node.name).key").path)
            try FileManager.default.copyItem(
                atPath: pki.caCert, toPath: dir.appendingPathComponent("swanctl/x509ca/ca.pem").path)
            try setNodeSecret(node.name, correct: true)
            let groups = node.tier == "pro" ? "         groups = \"pro\"" : ""
            let pool = node.tier == "pro" ? "10.27.3.0/24" : "10.27.1.0/24"
            try render(
                "strongswan/node-swanctl.conf.in", to: dir.appendingPathComponent("swanctl/swanctl.conf"),
                ["NODE": node.name, "TIER": node.tier, "POOL": pool, "PSK": psks[node.name]!, "GROUPS": groups])
        }
    }

    private func render(_ template: String, to url: URL, _ values: [String: String]) throws {
        var text = try String(contentsOf: source.appendingPathComponent(template), encoding: .utf8)
        for (key, value) in values { text = text.replacingOccurrences(of: "@\(key)@", with: value) }
        try text.write(to: url, atomically: true, encoding: .utf8)
        chmod(url.path, 0o600)
    }

    func migrate(_ postgres: ScratchPostgres) throws {
        // The package's schema is not readable by `postgres` in place; psql (as root) reads it.
        try postgres.apply(file: RadiusEnvironment.sqlModuleConfig + "/schema.sql")
        let sqlDir = source.appendingPathComponent("sql")
        for name in try FileManager.default.contentsOfDirectory(atPath: sqlDir.path).sorted()
        where name.hasSuffix(".sql") {
            try postgres.apply(file: sqlDir.appendingPathComponent(name).path)
        }
        let rows = nodes.map { "('\($0.name)', '\($0.tier)')" }.joined(separator: ", ")
        try postgres.psql("INSERT INTO vpn_node (nas_identifier, tier) VALUES \(rows)")
    }

    func radiusConfiguration(_ server: String) throws -> (directory: String, environment: [String: String]) {
        guard let address = radiusServers.first(where: { $0.name == server })?.address else {
            throw HarnessError("no RADIUS server \(server)")
        }
        let run = directory.appendingPathComponent("run-\(server)")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        let raddb = source.appendingPathComponent("raddb").path
        var environment = [
            "LAB_RADDB": raddb, "LAB_RUN": run.path, "LAB_RADIUS_ADDR": address, "LAB_PGSOCK": databaseAddress,
        ]
        for node in nodes { environment["LAB_SECRET_\(node.name.uppercased())"] = radiusSecrets[node.name] }
        return (raddb, environment)
    }

    func nodeSettingsIncludes(_ node: String) throws -> [String] {
        [directory.appendingPathComponent("\(node)/strongswan.d/eap-radius.conf").path]
    }

    func nodeConfFile(_ node: String) throws -> String {
        directory.appendingPathComponent("\(node)/swanctl/swanctl.conf").path
    }

    func setNodeSecret(_ node: String, correct: Bool) throws {
        guard let spec = nodes.first(where: { $0.name == node }) else { throw HarnessError("no node \(node)") }
        try render(
            "strongswan/node-eap-radius.conf.in",
            to: directory.appendingPathComponent("\(node)/strongswan.d/eap-radius.conf"),
            [
                "NODE": node, "SECRET": correct ? radiusSecrets[node]! : Self.random(), "NODE_ADDR": spec.address,
                "DAE_SECRET": daeSecrets[node]!, "INTERIM": "60s",
            ])
    }

    func setRadiusTier(of node: String, to tier: String?, lab: RadiusLab) throws {
        guard let spec = nodes.first(where: { $0.name == node }), let postgres = lab.postgres else {
            throw HarnessError("no node \(node) or no database")
        }
        try postgres.psql("UPDATE vpn_node SET tier = '\(tier ?? spec.tier)' WHERE nas_identifier = '\(node)'")
    }

    func clientConnection(node: String, ikeVersion: Int) -> String { "\(node)-ikev\(ikeVersion)" }

    func clientConf(user: String, password: String) throws -> String {
        let text = try RadiusClientConf.text(
            user: user, password: password, child: clientChild,
            nodes: nodes.map {
                RadiusClientConf.Node(
                    ikev2: clientConnection(node: $0.name, ikeVersion: 2),
                    ikev1: clientConnection(node: $0.name, ikeVersion: 1), address: $0.address, id: "\($0.name).lab",
                    psk: psks[$0.name]!)
            })
        return try SwanctlDirectory.make(
            label: "radius-client-\(user)", conf: text,
            files: ["x509ca/ca.pem": try SwanctlDirectory.contents(of: pki.caCert)]
        ).confFile
    }

    /// Hand-made catalogue entries as the seed app reads them: IKEv2 EAP (server certificate) and IKEv1 Main Mode
    /// PSK + XAuth (an empty local ID keeps Apple's client out of Aggressive Mode, which the node does not offer).
    func seedAppSetups(node: String, user: String, password: String) throws -> [(label: String, setup: ClientSetup)] {
        guard let spec = nodes.first(where: { $0.name == node }) else { throw HarnessError("no node \(node)") }
        let credentials = SeedAppTranslator.Credentials(
            username: user, password: password, psk: psks[node], caPEM: try SwanctlDirectory.contents(of: pki.caCert))
        return try [("IKEv2", false), ("IPSec", true)].map { proto, psk in
            let entry: [String: Any] = [
                "protocol": proto, "remoteID": "\(node).lab", "localID": "", "pskEnabled": psk, "host": spec.address,
            ]
            return (proto, try SeedAppTranslator.translate(entry: entry, credentials: credentials))
        }
    }

    // MARK: accounts (FreeRADIUS's tables, as the app backend writes them)

    /// The NT hash (MD4 of the UTF-16LE password) by FreeRADIUS's own `smbencrypt` (the password is a random
    /// test value, so its presence on a command line does not matter).
    private func ntHash(_ password: String) throws -> String {
        let result = try Command.check(RadiusEnvironment.smbencryptPath, [password])
        guard let line = result.stdout.split(separator: "\n").last,
            let hash = line.split(whereSeparator: \.isWhitespace).last, hash.count == 32
        else { throw HarnessError("smbencrypt gave no NT hash") }
        return String(hash)
    }

    private func db(_ lab: RadiusLab) throws -> ScratchPostgres {
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        return postgres
    }

    func addAccount(_ user: String, password: String, tier: String, devices: Int, lab: RadiusLab) throws {
        try db(lab).psql(
            """
            BEGIN;
            INSERT INTO radcheck (username, attribute, op, value) VALUES ('\(user)', 'NT-Password', ':=', '\(try ntHash(password))');
            INSERT INTO radcheck (username, attribute, op, value) VALUES ('\(user)', 'Simultaneous-Use', ':=', '\(devices)');
            INSERT INTO radusergroup (username, groupname, priority) VALUES ('\(user)', '\(tier)', 1);
            COMMIT;
            """)
    }

    func setTier(_ user: String, _ tier: String, lab: RadiusLab) throws {
        try db(lab).psql("UPDATE radusergroup SET groupname = '\(tier)' WHERE username = '\(user)'")
    }

    func disable(_ user: String, lab: RadiusLab) throws -> String {
        let postgres = try db(lab)
        try postgres.psql(
            "INSERT INTO radcheck (username, attribute, op, value) VALUES ('\(user)', 'Auth-Type', ':=', 'Reject')")
        let open = try postgres.psql(
            "SELECT DISTINCT nasidentifier FROM radacct WHERE username = '\(user)' AND acctstoptime IS NULL"
        ).split(separator: "\n").map(String.init)
        var done: [String] = []
        for nodeName in open {
            let node = try lab.node(nodeName)
            let secretFile = directory.appendingPathComponent("dae-\(nodeName).secret")
            try (daeSecrets[nodeName]! + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
            chmod(secretFile.path, 0o600)
            let reply = try lab.radclient(
                from: radiusServers[0].name,
                arguments: ["-r", "1", "-t", "3", "-S", secretFile.path, "\(node.address):3799", "disconnect"],
                input: "User-Name = \(user)\n")
            guard reply.output.contains("Disconnect-ACK") else {
                throw HarnessError("Disconnect-Request to \(nodeName) not acknowledged: \(reply)")
            }
            done.append("\(nodeName): Disconnect-ACK")
        }
        return done.joined(separator: ", ")
    }

    var secrets: [String] { Array(radiusSecrets.values) + Array(daeSecrets.values) + Array(psks.values) }
}

/// A strongSwan client holding one account: per node an IKEv2 EAP-MSCHAPv2 connection (server certificate) and
/// an IKEv1 Main Mode PSK + XAuth connection, each with one child for the LAN behind the node.
enum RadiusClientConf {
    struct Node {
        var ikev2: String
        var ikev1: String
        var address: String
        /// The node's identity (its certificate's and its PSK's).
        var id: String
        var psk: String
    }

    static func text(user: String, password: String, child: String, nodes: [Node]) throws -> String {
        var w = SwanctlWriter()
        try w.section("connections") { w in
            for node in nodes {
                for version in [2, 1] {
                    try w.section(version == 2 ? node.ikev2 : node.ikev1) { w in
                        w.raw("version", "\(version)")
                        try w.set("remote_addrs", node.address)
                        w.raw("vips", "0.0.0.0")
                        w.raw("proposals", version == 2 ? "aes256gcm16-prfsha256-ecp256" : "aes256-sha256-ecp256")
                        if version == 2 {
                            try w.section("local") { w in
                                w.raw("auth", "eap-mschapv2")
                                try w.set("id", user)
                                try w.set("eap_id", user)
                            }
                        } else {
                            w.section("local") { w in w.raw("auth", "psk") }
                            try w.section("local-xauth") { w in
                                w.raw("auth", "xauth")
                                try w.set("xauth_id", user)
                            }
                        }
                        try w.section("remote") { w in
                            w.raw("auth", version == 2 ? "pubkey" : "psk")
                            try w.set("id", node.id)
                        }
                        w.section("children") { w in
                            w.section(child) { w in
                                w.raw("remote_ts", RadiusLab.lanPrefix)
                                w.raw("esp_proposals", version == 2 ? "aes256gcm16-ecp256-modpnone" : "aes256gcm16")
                            }
                        }
                    }
                }
            }
        }
        try w.section("secrets") { w in
            try w.section("eap-user") { w in
                try w.set("id", user)
                w.raw("secret", SwanctlWriter.secret(password))
            }
            try w.section("xauth-user") { w in
                try w.set("id", user)
                w.raw("secret", SwanctlWriter.secret(password))
            }
            for (index, node) in nodes.enumerated() {
                try w.section("ike-\(index + 1)") { w in
                    try w.set("id", node.id)
                    w.raw("secret", SwanctlWriter.secret(node.psk))
                }
            }
        }
        return w.text
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the accounts scenario when its inputs are configured (`VPNPROV_RADIUS_INPUTS`), or when
    /// `VPNPROV_REQUIRE_E2E=1` (then the missing inputs fail it).
    static var radiusInputs: Self {
        .enabled(
            if: RadiusHandWrittenInputs.isConfigured || StrongSwanEnvironment.isRequired,
            Comment(
                rawValue: "\(RadiusHandWrittenInputs.environmentVariable) is not set: no node/RADIUS inputs for the "
                    + "accounts scenario (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"))
    }
}
