import Foundation
import Testing
import VPNProvTestSupport

/// Central accounts, end to end: VPN nodes whose password services (IKEv2 EAP-MSCHAPv2, IKEv1 XAuth) go to RADIUS
/// (strongSwan's eap-radius), two FreeRADIUS 3.2 servers, one PostgreSQL with the accounts, real strongSwan
/// clients, a host behind each node (`RadiusLab`). One lab per strongSwan version of the nodes runs the whole
/// scenario — the steps share it to keep the run short — and every step is reported on its own:
/// - RADIUS between node and RADIUS server travels in the generated IPsec connection: a capture of the link while
///   an account logs in holds only ESP, no account name, no client address, no RADIUS; a request in clear is
///   dropped by the server's generated rule (and its answer by the node's), and answered once both are gone;
/// - a tunnel client's UDP to a RADIUS server is refused by the node's table; without that rule it arrives at the
///   server through the node's IPsec, as the node;
/// - a free account reaches a host behind the free node over IKEv2 and IKEv1 XAuth; accounting Start and Stop
///   rows name the node (NAS-Identifier) and the tier (Class);
/// - the pro node refuses it (RADIUS's tier policy), and refuses it by itself (`groups`) when RADIUS is mis-set
///   to accept it; after its tier becomes pro it connects there;
/// - a disabled account is refused; disabling one with a live tunnel ends the tunnel within seconds
///   (Disconnect-Request to the node), and it cannot come back;
/// - a device limit of 1 refuses a second device while the first is up, and admits it once the first is gone;
/// - a node whose accounting Stop never arrives (its RADIUS relay killed as its tunnel ends): the open row counts while
///   it is fresh, and no longer once stale (aged by the window in the database); `accounts catalogue` shows the node with
///   the session and alive, then not alive;
/// - a node's charon killed with a session open and started again: the account logs in there at once, its old
///   row closed (NAS-Reboot) by the new charon's first request;
/// - a device limit of 2: two devices up at once, both passing traffic; parallel logins never exceed it (charon
///   logins at once, and a burst of Access-Requests at the RADIUS server);
/// - account names that collide (in case, or with an inventory identity) are refused by `accounts add`, and by the
///   RADIUS policy when a backend wrote them;
/// - accounting forged with one node's secret for another node is dropped and logged, radacct unchanged;
/// - a wrong per-node secret (in the node's RADIUS relay) is refused: the RADIUS server's log names the node and
///   "Shared secret is incorrect", the node only sees the request time out (FreeRADIUS drops such a request
///   without an answer);
/// - the preferred RADIUS server stopped, or silent like a dead host: the other one answers the first attempt
///   (the node's relay gives the silent server up and charon's retransmission goes to the other);
/// - on strongSwan 5.9, the faults (`RadiusAccountingFaultSteps.swift`): PostgreSQL killed while sessions end, the
///   preferred RADIUS server killed as a session ends, and both servers stopped while sessions end lose no Stop and
///   double none; a login while the preferred server is dead succeeds at the first attempt;
/// - no account password in any log or in radpostauth, no node secret in any log.
@Suite(.serialized, .strongSwan, .radius)
struct RadiusAccountsTests {
    @Test("Central accounts via RADIUS, nodes on strongSwan 5.9")
    func accountsOnStrongSwan59() async throws {
        try RadiusEnvironment.require()
        try StrongSwanBuild.host.requireEAPRadius()
        let report = try await Command.onOwnThread { try RadiusScenario.run(build: .host) }
        report.record()
    }

    @Test("Central accounts via RADIUS, nodes on strongSwan 6.0", .strongSwan6)
    func accountsOnStrongSwan60() async throws {
        try RadiusEnvironment.require()
        try StrongSwanBuild.trixie.requireEAPRadius()
        let report = try await Command.onOwnThread { try RadiusScenario.run(build: .trixie) }
        report.record()
    }
}

/// An app's user, as an account of the central accounts, on a node whose certificate comes from ACME (Pebble): a
/// lab of its own, beside the accounts scenario rather than after it. Its node, free-1, reaches the RADIUS servers
/// from a second address (`radius_address`, a private network between them), not from the address clients dial.
@Suite(.strongSwan, .radius)
struct RadiusACMETests {
    /// An app's user, as an account of the central accounts, on a node whose certificate comes from ACME
    /// (Pebble): the seed app's code path on a device that trusts only Pebble's root reaches the host behind the
    /// node over IKEv2 EAP, its login checked by the RADIUS servers; then a Linux desktop (the real NetworkManager
    /// and charon-nm, trusting only Pebble's root) with the same account, set up from the catalogue as
    /// docs/accounts.md says. The node's RADIUS, accounting and Disconnect-Requests all take its `radius_address`.
    @Test(
        "A RADIUS account on an ACME node reached from its radius_address: the seed app's code path and a NetworkManager desktop with only Pebble's root reach the host behind",
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"),
        arguments: StrongSwanBuild.all)
    func accountOnAnACMENode(_ build: StrongSwanBuild) async throws {
        try RadiusEnvironment.require()
        try build.require()
        try build.requireEAPRadius()
        try NetworkManagerDesktop.require()
        let detail = try await Command.onOwnThread { () throws -> String in
            // Client 0: the seed app's code path (a charon); client 1: a NetworkManager desktop; the last: Pebble.
            let (lab, inputs, pebble) = try RadiusGeneratedInputs.startACMELab(build: build, clients: 3, desktops: [1])
            defer {
                pebble.stop()
                lab.teardown()
                for host in lab.clients.dropFirst() { PrivateView.remove(for: host.namespace) }
            }
            try inputs.migrate()
            let password = RadiusGeneratedInputs.random()
            try inputs.addAccount("ann", password: password, tier: "free", devices: 1, lab: lab)
            let root = try pebble.issuingRoot()
            let nas = try #require(RadiusGeneratedInputs.nodes.first { $0.name == "free-1" }).address
            /// ann's open accounting rows on free-1 that name the address clients dial (not the RADIUS path's).
            func openRows() throws -> Int {
                let postgres = try #require(lab.postgres)
                return Int(
                    try postgres.psql(
                        "SELECT count(*) FROM radacct WHERE username = 'ann' AND acctstoptime IS NULL "
                            + "AND nasidentifier = 'free-1' AND nasipaddress = '\(nas)'")) ?? -1
            }
            func wait(_ what: String, _ condition: () throws -> Bool) throws {
                let deadline = ContinuousClock.now + .seconds(15)
                while try !condition() {
                    if ContinuousClock.now > deadline {
                        let log = try inputs.radiusServers.map { try lab.radius($0.name).log(since: 0) }.joined()
                        throw HarnessError("timeout waiting for \(what)\n--- RADIUS ---\n\(log.suffix(3000))")
                    }
                    usleep(50_000)
                }
            }

            // The seed app's code path.
            let setups = try inputs.seedAppSetups(
                node: "free-1", user: "ann", password: password, trust: Data(root.utf8))
            guard let eap = setups.first(where: { $0.label == "ikev2-eap" })?.setup else {
                throw HarnessError("free-1's ikev2-eap entry is not for the four-field code: \(setups.map(\.label))")
            }
            let client = try lab.client(0)
            try client.loadAllCleanly(confFile: try eap.write(label: "seed-acme").confFile, clear: true)
            let up = try client.initiate(child: eap.childName, ike: eap.connectionName, timeout: .seconds(15))
            guard up.succeeded else {
                throw HarnessError("initiate: \(up)\n\(try lab.nodeDaemon("free-1").log.suffix(3000))")
            }
            guard let vip = try client.virtualIPs(ike: eap.connectionName).first(where: { !$0.contains(":") }) else {
                throw HarnessError("no IPv4 virtual IP")
            }
            let ping = try lab.pingHostBehind(fromClient: 0, source: vip)
            guard ping.succeeded else { throw HarnessError("ping from \(vip) to the host behind free-1: \(ping)") }
            let received = client.logLines(containing: "received end entity cert").joined(separator: " / ")
            guard received.contains("CN=\(RadiusGeneratedInputs.acmeDomain)") else {
                throw HarnessError("the client was not served the ACME certificate: \(received)")
            }
            // The RADIUS servers know free-1 only by its radius_address: they answered its login, and took its
            // accounting (sent from there, naming the address clients dial), Start and Stop.
            try wait("ann's accounting Start from free-1's radius_address") { try openRows() == 1 }
            _ = try client.terminate(ike: eap.connectionName)
            try wait("ann's accounting Stop") { try openRows() == 0 }

            // A Linux desktop with the same account, from the catalogue's ikev2-eap entry of free-1.
            let catalog = try JSONSerialization.jsonObject(
                with: Data(contentsOf: inputs.deployment.out.appendingPathComponent("catalog/servers.json")))
            let entry = try #require(
                ((catalog as? [String: Any])?["servers"] as? [[String: Any]] ?? []).first {
                    $0["node"] as? String == "free-1" && $0["service"] as? String == "ikev2-eap"
                })
            let scratch = try Scratch.makeDirectory("nm-account")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let trust = scratch.appendingPathComponent("ca-dir")
            try FileManager.default.createDirectory(at: trust, withIntermediateDirectories: true)
            try root.write(to: trust.appendingPathComponent("pebble-root.pem"), atomically: true, encoding: .utf8)
            let keyfile = scratch.appendingPathComponent("app-free-1.nmconnection")
            try AccountKeyfileTranslator.keyfile(
                id: "app free-1", entry: entry, account: "ann", password: password, caFile: nil
            ).write(to: keyfile, atomically: true, encoding: .utf8)
            let host = lab.clients[1]
            let desktop = try NetworkManagerDesktop.start(
                on: .init(namespace: host.namespace, interfaceName: "eth0", address: host.address, ipv6: nil),
                caDirectory: trust.path)
            defer { desktop.stop() }
            try desktop.load(connectionFile: keyfile)
            let nmUp = try desktop.up("app free-1")
            guard nmUp.succeeded else {
                throw HarnessError(
                    "nmcli connection up: \(nmUp)\n--- charon-nm ---\n\(desktop.charonLog.suffix(3000))"
                        + "\n--- node ---\n\(try lab.nodeDaemon("free-1").log.suffix(3000))")
            }
            let desktopPing = try lab.pingHostBehind(fromClient: 1)
            guard desktopPing.succeeded else { throw HarnessError("desktop ping to the host behind: \(desktopPing)") }
            guard desktop.charonLog.contains("CN=\(RadiusGeneratedInputs.acmeDomain)") else {
                throw HarnessError("charon-nm was not served the ACME certificate")
            }
            try wait("the desktop's accounting Start") { try openRows() == 1 }
            // Disabling the account ends the desktop's tunnel: the Disconnect-Request goes to free-1's radius_address.
            let disabled = try inputs.disable("ann", lab: lab)
            guard disabled.contains("free-1: disconnected") else {
                throw HarnessError("disable did not disconnect free-1: \(disabled)")
            }
            try wait("the desktop's VPN to go down") {
                !(try desktop.nmcli(["-t", "-f", "TYPE", "connection", "show", "--active"], timeout: .seconds(5)))
                    .stdout.split(separator: "\n").contains("vpn")
            }
            return "virtual IP \(vip), served \(received); desktop connected and pinged, then disconnected by disable"
        }
        print("e2e radius acme \(build.version): \(detail)")
    }
}

/// The results of one scenario run: each step passed or failed with its detail, and how long it took.
struct ScenarioReport: Sendable {
    struct Step: Sendable {
        var name: String
        var failure: String?
        var detail: String
        var milliseconds: Int
    }
    var title: String
    var steps: [Step] = []
    var setupMilliseconds = 0
    var totalMilliseconds = 0

    /// Records every failed step as a test issue and prints the summary (on the test's own task).
    func record() {
        for step in steps {
            if let failure = step.failure { Issue.record(Comment(rawValue: "\(title): \(step.name): \(failure)")) }
        }
        for step in steps {
            print(
                "e2e radius \(title): \(step.failure == nil ? "PASS" : "FAIL") \(step.name) (\(step.milliseconds) ms)"
                    + (step.detail.isEmpty ? "" : " -- \(step.detail)"))
        }
        let passed = steps.filter { $0.failure == nil }.count
        print(
            "e2e radius \(title): \(passed)/\(steps.count) steps passed; setup \(setupMilliseconds) ms, "
                + "whole scenario \(totalMilliseconds) ms")
    }
}

/// One run of the accounts scenario against nodes of one strongSwan build (clients of the same build).
final class RadiusScenario: @unchecked Sendable {
    let build: StrongSwanBuild
    let inputs: any RadiusFleetInputs
    let lab: RadiusLab
    var report: ScenarioReport
    /// Account passwords (random per run; never printed).
    var passwords: [String: String] = [:]
    /// The client conf each client charon holds, so it is loaded only when the user changes.
    private var loadedConf: [Int: String] = [:]
    /// How long a login took just before the fault steps killed the preferred server (its cost is measured
    /// against it).
    var loginBeforeTheKill: Int?

    static let timeout: Duration = .seconds(15)

    private init(build: StrongSwanBuild, inputs: any RadiusFleetInputs, lab: RadiusLab) {
        self.build = build
        self.inputs = inputs
        self.lab = lab
        report = ScenarioReport(title: build.version)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let d = ContinuousClock.now - start
        return Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }

    static func run(build: StrongSwanBuild) throws -> ScenarioReport {
        let start = ContinuousClock.now
        let (lab, inputs) = try RadiusGeneratedInputs.startLab(build: build, clients: 4)
        defer { lab.teardown() }
        let scenario = RadiusScenario(build: build, inputs: inputs, lab: lab)
        try scenario.setUp()
        scenario.report.setupMilliseconds = milliseconds(since: start)
        scenario.runSteps()
        scenario.report.totalMilliseconds = milliseconds(since: start)
        return scenario.report
    }

    private func setUp() throws {
        for (user, devices) in [
            ("alice", 2), ("bob", 1), ("carol", 1), ("dave", 1), ("erin", 1), ("alice+vpn@example.com", 1),
            ("frank", 1), ("gina", 2), ("ivy", 1),
        ] + Self.faultAccounts.map({ ($0, 1) }) {
            passwords[user] = RadiusGeneratedInputs.random()
            try inputs.addAccount(user, password: passwords[user]!, tier: "free", devices: devices, lab: lab)
        }
    }

    // MARK: step machinery

    /// Runs one step; a thrown error is its failure (the next steps still run). Returns whether it passed.
    @discardableResult
    func step(_ name: String, _ body: () throws -> String) -> Bool {
        let start = ContinuousClock.now
        var result = ScenarioReport.Step(name: name, failure: nil, detail: "", milliseconds: 0)
        do {
            result.detail = try body()
        } catch {
            result.failure = "\(error)"
        }
        result.milliseconds = Self.milliseconds(since: start)
        report.steps.append(result)
        return result.failure == nil
    }

    func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw HarnessError(message()) }
    }

    /// Polls `condition` until it holds or `timeout` passes.
    func wait(_ what: String, timeout: Duration = .seconds(10), _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            if ContinuousClock.now > deadline { throw HarnessError("timed out waiting for: \(what)") }
            usleep(50_000)
        }
    }

    var free: RadiusNodeSpec { inputs.nodes[0] }
    var pro: RadiusNodeSpec { inputs.nodes[1] }
    var preferred: String { inputs.radiusServers[0].name }
    var fallback: String { inputs.radiusServers[1].name }

    func sql(_ query: String) throws -> String {
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        return try postgres.psql(query)
    }

    func openSessions(_ user: String) throws -> Int {
        Int(try sql("SELECT count(*) FROM radacct WHERE username = '\(user)' AND acctstoptime IS NULL")) ?? -1
    }

    /// Both RADIUS servers' log positions, for `radiusLog(since:)`.
    func radiusMarks() throws -> [String: Int] {
        var marks: [String: Int] = [:]
        for server in inputs.radiusServers { marks[server.name] = try lab.radius(server.name).logMark }
        return marks
    }

    func radiusLog(since marks: [String: Int]) throws -> String {
        try inputs.radiusServers.map { try lab.radius($0.name).log(since: marks[$0.name] ?? 0) }.joined()
    }

    func lines(_ text: String, containing needle: String) -> String {
        text.split(separator: "\n").filter { $0.contains(needle) }.prefix(3).joined(separator: " | ")
    }

    // MARK: client actions

    struct Attempt {
        var result: CommandResult
        var virtualIP: String?
        var milliseconds: Int
        var succeeded: Bool { result.succeeded && virtualIP != nil }
    }

    /// Client `index` (holding `user`'s account) initiates to `node` with IKE version `version`.
    func connect(_ index: Int, _ user: String, to node: RadiusNodeSpec, ikeVersion version: Int) throws -> Attempt {
        let client = try lab.client(index)
        if loadedConf[index] != user {
            try client.loadAllCleanly(confFile: try inputs.clientConf(user: user, password: passwords[user]!))
            loadedConf[index] = user
        }
        let ike = inputs.clientConnection(node: node.name, ikeVersion: version)
        let start = ContinuousClock.now
        let result = try client.initiate(child: inputs.clientChild, ike: ike, timeout: Self.timeout)
        let ms = Self.milliseconds(since: start)
        let vip = result.succeeded ? try client.virtualIPs(ike: ike).first { !$0.contains(":") } : nil
        if !result.succeeded { _ = try? client.terminate(ike: ike, timeout: .seconds(3)) }
        return Attempt(result: result, virtualIP: vip, milliseconds: ms)
    }

    /// Connects and pings the host behind the node from the virtual IP; throws with the node's log otherwise.
    func connectAndReachHostBehind(_ index: Int, _ user: String, to node: RadiusNodeSpec, ikeVersion: Int) throws
        -> Attempt
    {
        let mark = try lab.nodeDaemon(node.name).log.utf8.count
        let attempt = try connect(index, user, to: node, ikeVersion: ikeVersion)
        guard attempt.succeeded, let vip = attempt.virtualIP else {
            throw HarnessError(
                "\(user) → \(node.name) IKEv\(ikeVersion) failed: \(attempt.result)\n--- node log ---\n"
                    + NodeUnderTest.since(mark, try lab.nodeDaemon(node.name).log).suffix(3000))
        }
        let ping = try lab.pingHostBehind(fromClient: index, source: vip)
        try check(ping.succeeded, "ping from \(vip) to the host behind \(node.name): \(ping)")
        return attempt
    }

    func disconnect(_ index: Int, from node: RadiusNodeSpec, ikeVersion: Int) throws {
        _ = try lab.client(index).terminate(ike: inputs.clientConnection(node: node.name, ikeVersion: ikeVersion))
    }

    func hasTunnel(_ index: Int, to node: RadiusNodeSpec, ikeVersion: Int) throws -> Bool {
        let ike = inputs.clientConnection(node: node.name, ikeVersion: ikeVersion)
        return try lab.client(index).securityAssociations().contains { $0.name == ike && $0.state == "ESTABLISHED" }
    }

    /// Expects the attempt to be refused; returns the node's log lines of it.
    func expectRefused(_ index: Int, _ user: String, to node: RadiusNodeSpec, ikeVersion: Int) throws -> String {
        let daemon = try lab.nodeDaemon(node.name)
        let mark = daemon.log.utf8.count
        let attempt = try connect(index, user, to: node, ikeVersion: ikeVersion)
        if attempt.succeeded {
            try? disconnect(index, from: node, ikeVersion: ikeVersion)
            throw HarnessError("\(user) → \(node.name) IKEv\(ikeVersion) connected but must be refused")
        }
        return NodeUnderTest.since(mark, daemon.log)
    }

    /// The NT hash of `password` (MD4 of its UTF-16LE form) as the openssl CLI computes it: what another RADIUS
    /// server or Samba would export.
    static func ntHash(_ password: String) throws -> String {
        let file = try Scratch.makeDirectory("nthash").appendingPathComponent("utf16le")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(password.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }).write(to: file)
        let result = try Command.check(
            StrongSwanEnvironment.openSSLPath,
            ["dgst", "-md4", "-provider", "legacy", "-provider", "default", "-r", file.path])
        guard let hex = result.stdout.split(separator: " ").first, hex.count == 32 else {
            throw HarnessError("openssl dgst -md4: \(result)")
        }
        return String(hex)
    }

    /// `vpnprov accounts catalogue`: per entry of `node` (one per service), its `sessions` and `alive`, in order.
    func liveCatalogue(_ node: String) throws -> (sessions: [Int], alive: [Bool]) {
        let text = try inputs.accountsOutput(["catalogue"])
        let document = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        // --format json carries the same catalogue under "catalogue"
        let json = try inputs.accountsOutput(["catalogue", "--format", "json"])
        let wrapped = (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["catalogue"]
        try check(
            NSDictionary(dictionary: document ?? [:]).isEqual(to: wrapped as? [String: Any] ?? ["": 0]),
            "--format json: \(json.prefix(2000))")
        let entries = ((document?["servers"] as? [[String: Any]]) ?? []).filter { $0["node"] as? String == node }
        let sessions = entries.compactMap { $0["sessions"] as? Int }
        let alive = entries.compactMap { $0["alive"] as? Bool }
        // one value per entry, all equal (they describe the node)
        try check(
            !entries.isEmpty && sessions.count == entries.count && alive.count == entries.count, "catalogue: \(text)")
        return (Array(Set(sessions)).sorted(), Array(Set(alive)).sorted { !$0 && $1 })
    }

    /// The free node's charon is killed (SIGKILL: no Stop reaches RADIUS) while erin (device limit 1) has a tunnel
    /// there, and started again as the rollout's service would start it. Nobody touches the database: erin's
    /// next login to that node is admitted at once, since its Acct-Session-Id carries the new charon's start
    /// time, and her old row is closed with Acct-Terminate-Cause NAS-Reboot.
    func restartedNodeClosesItsSessions() throws -> String {
        _ = try connectAndReachHostBehind(0, "erin", to: free, ikeVersion: 2)
        try wait("erin's open radacct row") { try openSessions("erin") == 1 }
        try lab.nodeDaemon(free.name).crash()
        let restarted = try lab.startNode(
            free.name, build: build, settingsIncludes: try inputs.nodeSettingsIncludes(free.name),
            confFile: try inputs.nodeConfFile(free.name))
        do {
            try wait("the restarted node's IPsec to its RADIUS servers", timeout: .seconds(20)) {
                let up = try restarted.securityAssociations().filter { $0.state == "ESTABLISHED" }.map(\.name)
                return inputs.radiusServers.allSatisfy { up.contains("radius-\($0.name)") }
            }
        } catch {
            throw HarnessError(
                "\(error): \(try restarted.securityAssociations().map { "\($0.name) \($0.state)" })\n"
                    + (try restarted.swanctl(["--list-sas", "--raw"]).stdout.prefix(3000)))
        }
        try check(try openSessions("erin") == 1, "erin's row was closed before any login")
        // client 0 still holds its tunnel to the dead charon: drop it without asking the node
        let ike = inputs.clientConnection(node: free.name, ikeVersion: 2)
        _ = try lab.client(0).swanctl(["--terminate", "--ike", ike, "--force", "--timeout", "1"])
        let attempt = try connectAndReachHostBehind(1, "erin", to: free, ikeVersion: 2)
        let cause = try sql(
            "SELECT acctterminatecause FROM radacct WHERE username = 'erin' AND acctstoptime IS NOT NULL "
                + "ORDER BY radacctid DESC LIMIT 1")
        try check(cause == "NAS-Reboot", "erin's old row: \(cause)")
        try disconnect(1, from: free, ikeVersion: 2)
        try wait("erin's session closed") { try openSessions("erin") == 0 }
        return "admitted in \(attempt.milliseconds) ms; the old row closed as \(cause)"
    }

    /// A new random password for `user`, which the next (re)loaded client configuration uses; returns it.
    func newPassword(_ user: String) -> String {
        let password = RadiusGeneratedInputs.random()
        passwords[user] = password
        return password
    }

    /// strongSwan sends no Accounting-On/Off: a node that crashes or loses its accounting leaves its sessions open.
    /// Here the free node's RADIUS relay is killed while erin's tunnel there ends (its accounting Stop finds
    /// nothing to take it, as for a node that went away): the open row keeps erin (device limit 1) out while it is
    /// fresh. The row is then aged by the RADIUS servers' window (two accounting intervals and a
    /// minute: the minutes of a real outage, which the lab does not wait for): erin's next login is admitted
    /// and reaches the host behind, and `vpnprov accounts` marks the row stale and counts it no more.
    func staleSessionsStopCounting() throws -> String {
        _ = try connectAndReachHostBehind(0, "erin", to: free, ikeVersion: 2)
        try wait("erin's open radacct row") { try openSessions("erin") == 1 }
        let daemon = try lab.nodeDaemon(free.name)
        let mark = daemon.log.utf8.count
        let relay = try lab.relay(free.name)
        relay.kill()
        defer { if !relay.isRunning { try? relay.start() } }
        try disconnect(0, from: free, ikeVersion: 2)
        do {
            try wait("the node's accounting Stop lost", timeout: .seconds(20)) {
                let log = NodeUnderTest.since(mark, daemon.log)
                return log.contains("Accounting-Request timed out") || log.contains("receiving RADIUS message failed")
            }
        } catch {
            throw HarnessError(
                "\(error); erin's open rows: \(try openSessions("erin")); node log:\n"
                    + NodeUnderTest.since(mark, daemon.log).suffix(3000))
        }
        try relay.start()
        try check(try openSessions("erin") == 1, "the Stop reached the database")
        let marks = try radiusMarks()
        _ = try expectRefused(1, "erin", to: free, ikeVersion: 2)
        let log = try radiusLog(since: marks)
        try check(log.contains("Multiple logins"), "a fresh open row must count:\n\(log)")
        // The live catalogue: the node carries erin's session and is up as far as accounting can tell.
        let loaded = try liveCatalogue(free.name)
        try check(loaded.sessions == [1] && loaded.alive == [true], "live catalogue with the fresh row: \(loaded)")
        // docs/accounts.md: stale after two accounting intervals and a minute without an update.
        let window = 2 * inputs.accountingInterval + 60
        _ = try sql(
            "UPDATE radacct SET acctstarttime = acctstarttime - interval '\(window + 1) seconds', "
                + "acctupdatetime = acctupdatetime - interval '\(window + 1) seconds' "
                + "WHERE username = 'erin' AND acctstoptime IS NULL")
        // Its accounting stopped: the node is shown as not alive, with no session; the pro node as it was.
        let stopped = try liveCatalogue(free.name)
        try check(stopped.sessions == [0] && stopped.alive == [false], "live catalogue, accounting stopped: \(stopped)")
        let other = try liveCatalogue(pro.name)
        try check(other.alive == [true], "live catalogue, \(pro.name): \(other)")
        _ = try connectAndReachHostBehind(1, "erin", to: free, ikeVersion: 2)
        try wait("erin's new session") { try openSessions("erin") == 2 }
        try disconnect(1, from: free, ikeVersion: 2)
        try wait("erin's new session closed") { try openSessions("erin") == 1 }
        // What the operator sees: the stale row, marked so, and not counted as a device.
        let sessions = try inputs.accountsOutput(["sessions", "erin"])
        try check(sessions.contains(" stale "), "accounts sessions does not mark the stale row:\n\(sessions)")
        let list = try inputs.accountsOutput(["list", "--format", "json"])
        let document = try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any]
        let erin = (document?["accounts"] as? [[String: Any]])?.first { $0["username"] as? String == "erin" }
        try check(erin?["openSessions"] as? Int == 0, "accounts list counts the stale row: \(list)")
        _ = try sql("UPDATE radacct SET acctstoptime = now() WHERE username = 'erin' AND acctstoptime IS NULL")
        return
            "window \(window) s; refused while fresh (\(lines(log, containing: "Multiple logins"))), admitted once stale"
    }

    /// Closes every tunnel of both clients and waits until no accounting session is open.
    func resetSessions() throws {
        for index in 0..<lab.clients.count {
            for sa in try lab.client(index).securityAssociations() { _ = try lab.client(index).terminate(ike: sa.name) }
        }
        try wait("no open accounting session") {
            try sql("SELECT count(*) FROM radacct WHERE acctstoptime IS NULL") == "0"
        }
    }

    /// The node's RADIUS relay stopped and started again: every RADIUS server counts as alive to it (a server that
    /// came back is otherwise alive again at its next Status-Server answer, up to 8 s later). Its buffer is kept.
    func resetRelay(_ node: RadiusNodeSpec) throws {
        let relay = try lab.relay(node.name)
        relay.stop()
        try relay.start()
    }

    // MARK: the node-RADIUS path (accounts.protection: ipsec)

    /// A capture of RADIUS server `preferred`'s link while an account logs in through the free node (IKEv2
    /// EAP-MSCHAPv2, then IKEv1 XAuth) sees ESP between the two, and no RADIUS in clear: not the account's name,
    /// not the client's address (Calling-Station-Id), no EAP-MSCHAPv2. Then a RADIUS request the free node sends
    /// in clear (its IPsec to `preferred` removed) is dropped: unanswered and unseen by FreeRADIUS, and answered
    /// once the two generated firewall rules are gone (so it is they that drop it).
    private func pathSteps() {
        let node = free
        let connection = "radius-\(preferred)"
        step("node↔RADIUS link captured during EAP-MSCHAPv2 and XAuth logins: only ESP, no account name, no RADIUS") {
            let capture = try lab.capture(atRadius: preferred, peer: node.address)
            let marks = try radiusMarks()
            _ = try connectAndReachHostBehind(0, "alice", to: node, ikeVersion: 2)
            try disconnect(0, from: node, ikeVersion: 2)
            _ = try connectAndReachHostBehind(0, "alice", to: node, ikeVersion: 1)
            try disconnect(0, from: node, ikeVersion: 1)
            try wait("alice's sessions closed") { try openSessions("alice") == 0 }
            let bytes = try capture.finish()
            let log = try radiusLog(since: marks)
            try check(
                log.contains("Login OK: [alice") && log.contains("from client \(node.name)"),
                "\(preferred) did not decide alice's logins: \(log.suffix(1500))")
            let all = try capture.read()
            let packets = all.split(separator: "\n").filter { !$0.hasPrefix(" ") && !$0.hasPrefix("\t") }
            // with -v, a packet's second line is its transport: "… UDP-encap: ESP(spi=…,seq=…)"
            let esp = all.split(separator: "\n").filter { $0.contains("ESP(spi=") }.count
            let radius = try capture.read(["udp", "port", "1812", "or", "udp", "port", "1813"])
            let client = lab.clients[0].address
            try check(bytes.range(of: Data("alice".utf8)) == nil, "the account name is in the capture")
            try check(
                bytes.range(of: Data(client.utf8)) == nil, "the client's address (Calling-Station-Id) is in the capture"
            )
            try check(radius.isEmpty, "RADIUS in clear on the link:\n\(radius.prefix(2000))")
            try check(
                !all.contains("RADIUS") && !all.contains("EAP"), "RADIUS decoded on the link:\n\(all.prefix(2000))")
            try check(
                esp > 0,
                "no ESP between \(node.name) and \(preferred): \(all.prefix(2000)) (\(bytes.count) bytes; tcpdump: \(capture.log))"
            )
            return "\(packets.count) packets, \(esp) ESP, none RADIUS, \(bytes.count) bytes without the account name"
        }
        step(
            "a RADIUS request in clear from \(node.name) to \(preferred) is dropped; answered without the generated rules"
        ) {
            let nodeCharon = try lab.nodeDaemon(node.name)
            let server = try lab.radiusCharon(preferred)
            let serverNamespace = try lab.radiusMember(preferred).namespace
            let nodeNamespace = try lab.node(node.name).namespace
            // No IPsec between the two any more: the node's request, and the server's answer, leave in clear.
            for charon in [nodeCharon, server] {
                let peer = charon === server ? "radius-\(node.name)" : connection
                _ = try charon.swanctl(["--uninstall", "--child", peer])
                _ = try charon.swanctl(["--terminate", "--ike", peer])
            }
            defer {
                // As loaded: the server's trap policy, the node's connection up.
                _ = try? server.swanctl(["--install", "--child", "radius-\(node.name)"])
                _ = try? nodeCharon.initiate(child: connection, ike: connection, timeout: .seconds(10))
            }
            let file = try Scratch.makeDirectory("cleartext").appendingPathComponent("secret")
            try (try inputs.radiusSecret(node.name) + "\n").write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o600)
            // Message-Authenticator: the servers' clients require it (radclient computes it)
            let request =
                "User-Name = mallory\nUser-Password = \"not-a-password\"\nNAS-Identifier = \(node.name)\n"
                + "Message-Authenticator = 0x00\n"
            func send() throws -> (answered: Bool, seen: Bool, output: String) {
                let mark = try lab.radius(preferred).logMark
                let result = try lab.radclient(
                    inNamespace: nodeNamespace,
                    arguments: [
                        "-r", "1", "-t", "2", "-S", file.path, "\(inputs.radiusServers[0].address):1812", "auth",
                    ],
                    input: request)
                let seen = try lab.radius(preferred).log(since: mark).contains("[mallory")
                return (
                    result.output.contains("Access-Reject") || result.output.contains("Access-Accept"), seen,
                    "\(result)"
                )
            }
            let protected = try send()
            try check(!protected.answered && !protected.seen, "a request in clear was answered or seen: \(protected)")
            guard let serverRules = try inputs.radiusIPsec(preferred)?.firewall,
                let nodeRules = try inputs.nodeFirewall(node.name)
            else { throw HarnessError("no generated firewall") }
            defer {
                try? NetworkPair.loadNftables(serverRules, in: serverNamespace)
                try? NetworkPair.loadNftables(nodeRules, in: nodeNamespace)
            }
            try NetworkPair.loadNftables("delete table inet vpnprov-radius\n", in: serverNamespace)
            let serverOpen = try send()
            try check(
                serverOpen.seen && !serverOpen.answered,
                "without the server's rule: \(serverOpen) (the node's rule must drop the answer)")
            try NetworkPair.loadNftables("delete table inet vpnprov\n", in: nodeNamespace)
            let open = try send()
            try check(open.seen && open.answered, "without both rules the request in clear was not answered: \(open)")
            return "dropped by \(preferred); its answer in clear dropped by \(node.name); answered without the rules"
        }
        step(
            "a tunnel client's UDP to a RADIUS server is refused by the node; without the node's rule it reaches the server through the node's IPsec, as the node"
        ) {
            try clientUDPToRadiusServerIsRefused(node: node)
        }
        step("the node's RADIUS relay listens on loopback only; its proxy sockets are bound to the node's address") {
            try relayListensOnLoopback(node: node)
        }
        try? resetSessions()
    }

    /// The relay's UDP sockets in the node's namespace (`ss`, its process's): charon's two ports on 127.0.0.1, and
    /// the sockets it sends to the RADIUS servers from, on the node's own address; none on every address.
    private func relayListensOnLoopback(node: RadiusNodeSpec) throws -> String {
        let relay = try lab.relay(node.name)
        let result = try Command.check(
            StrongSwanEnvironment.ipPath, ["netns", "exec", try lab.node(node.name).namespace, "ss", "-H", "-lunp"])
        let sockets = result.stdout.split(separator: "\n").filter { $0.contains("pid=\(relay.pid),") }.map {
            String($0.split(separator: " ", omittingEmptySubsequences: true)[3])
        }.sorted()
        try check(
            sockets.contains("127.0.0.1:11812") && sockets.contains("127.0.0.1:11813"),
            "the relay's sockets: \(sockets)\n\(result.stdout)")
        let others = sockets.filter { !$0.hasPrefix("127.0.0.1:") }
        try check(others.allSatisfy { $0.hasPrefix(node.address + ":") }, "the relay's sockets: \(sockets)")
        return sockets.joined(separator: ", ")
    }

    /// The node↔server IPsec carries every UDP packet between the two hosts, and the node masquerades its clients to
    /// its own address: a client's UDP to the server would enter that IPsec and arrive as the node, with only the
    /// node's RADIUS secret between it and every UDP service of the RADIUS host. The node's table refuses it (its
    /// rule's counter takes the datagram, so it went no further); with that rule taken out of the live table the
    /// same datagram is counted at the server, decrypted from the IPsec TUN device with the node's address.
    private func clientUDPToRadiusServerIsRefused(node: RadiusNodeSpec) throws -> String {
        let server = try lab.radiusMember(preferred)
        let nodeNamespace = try lab.node(node.name).namespace
        let port = 9999
        try NetworkPair.loadNftables(
            """
            table inet vpnprov-probe {
                counter arrived {}
                chain input {
                    type filter hook input priority -300; policy accept;
                    iifname "ipsec*" ip saddr \(node.address) udp dport \(port) counter name arrived
                }
            }

            """, in: server.namespace)
        defer { try? NetworkPair.loadNftables("delete table inet vpnprov-probe\n", in: server.namespace) }
        func arrived() throws -> Int {
            let out = try Command.check(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", server.namespace, "nft", "list", "counter", "inet", "vpnprov-probe", "arrived"]
            ).stdout
            guard let range = out.range(of: "packets ") else { throw HarnessError("no counter in: \(out)") }
            return Int(out[range.upperBound...].prefix { $0.isNumber }) ?? -1
        }
        // The app's own setup (the seed app's code path with the catalogue's ikev2-eap entry): a full tunnel, so the
        // server's address, somewhere on the internet in production, is reached through the node.
        let client = try lab.client(0)
        let serverAddress = inputs.radiusServers[0].address
        guard
            let setup = try inputs.seedAppSetups(node: node.name, user: "alice", password: passwords["alice"]!)
                .first(where: { $0.label == "ikev2-eap" })?.setup
        else { throw HarnessError("no ikev2-eap entry of \(node.name) in the catalogue") }
        try client.loadAllCleanly(confFile: try setup.write(label: "seed-radius-udp").confFile)
        loadedConf[0] = nil
        let up = try client.initiate(child: setup.childName, ike: setup.connectionName, timeout: Self.timeout)
        defer { _ = try? client.terminate(ike: setup.connectionName, timeout: .seconds(3)) }
        guard up.succeeded,
            let vip = try client.virtualIPs(ike: setup.connectionName).first(where: { !$0.contains(":") })
        else { throw HarnessError("alice → \(node.name) (the app's setup): \(up)") }
        // One datagram from the client's virtual IP to the server.
        func send() throws {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((sys.argv[1], 0))
                s.sendto(b"probe from a tunnel client", (sys.argv[2], int(sys.argv[3])))
                """
            let result = try Command.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", lab.clients[0].namespace, "/usr/bin/python3", "-c", script, vip, serverAddress,
                    String(port),
                ], timeout: .seconds(10))
            guard result.succeeded else { throw HarnessError("sending the datagram: \(result)") }
        }
        // The node's rule about this server: its counter and handle.
        func nodeRule() throws -> (packets: Int, handle: String)? {
            let chain = try Command.check(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", nodeNamespace, "nft", "-a", "list", "chain", "inet", "vpnprov", "client_to_world"]
            ).stdout
            return chain.split(separator: "\n").filter {
                $0.contains("RADIUS servers") && $0.contains("daddr \(serverAddress) ")
            }.compactMap { line -> (packets: Int, handle: String)? in
                guard let packets = line.range(of: "counter packets "), let handle = line.range(of: "# handle ")
                else { return nil }
                return (
                    Int(line[packets.upperBound...].prefix { $0.isNumber }) ?? -1, String(line[handle.upperBound...])
                )
            }.first
        }
        guard let rule = try nodeRule(), rule.packets == 0 else {
            throw HarnessError("no unused rule about \(serverAddress) in \(node.name)'s table")
        }
        try send()
        try wait("the node's rule refusing the client's datagram") { try nodeRule()?.packets == 1 }
        try check(try arrived() == 0, "the client's datagram reached \(preferred)")
        // The same datagram with the node's rule taken out of its live table.
        guard let rules = try inputs.nodeFirewall(node.name) else { throw HarnessError("no generated firewall") }
        defer { try? NetworkPair.loadNftables(rules, in: nodeNamespace) }
        try Command.check(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", nodeNamespace, "nft", "delete", "rule", "inet", "vpnprov", "client_to_world", "handle",
                rule.handle,
            ])
        try send()
        try wait("the client's datagram at \(preferred) without the node's rule") { try arrived() == 1 }
        return
            "refused by \(node.name)'s rule; without it the datagram arrived at \(preferred) through IPsec from \(node.address)"
    }

    // MARK: the scenario

    private func runSteps() {
        pathSteps()
        step("free account → free node, IKEv2 EAP-MSCHAPv2 via RADIUS, host behind the node reached") {
            let attempt = try connectAndReachHostBehind(0, "alice", to: free, ikeVersion: 2)
            return "\(attempt.milliseconds) ms to the CHILD_SA"
        }
        step("accounting Start row names the node and the tier") {
            try wait("alice's open radacct row") { try openSessions("alice") == 1 }
            let row = try sql(
                "SELECT nasidentifier, class, host(nasipaddress) FROM radacct WHERE username = 'alice' AND acctstoptime IS NULL"
            )
            try check(row == "\(free.name)|free|\(free.address)", "radacct row: \(row)")
            return row
        }
        step("accounting Stop row when the client disconnects") {
            try disconnect(0, from: free, ikeVersion: 2)
            try wait("alice's session closed") { try openSessions("alice") == 0 }
            let row = try sql(
                "SELECT nasidentifier, acctterminatecause FROM radacct WHERE username = 'alice' ORDER BY radacctid DESC LIMIT 1"
            )
            try check(row.hasPrefix("\(free.name)|"), "radacct stop row: \(row)")
            return row
        }
        step("free account → free node, IKEv1 XAuth via RADIUS, host behind the node reached") {
            let attempt = try connectAndReachHostBehind(0, "alice", to: free, ikeVersion: 1)
            try disconnect(0, from: free, ikeVersion: 1)
            return "\(attempt.milliseconds) ms to the CHILD_SA"
        }
        step("an account named alice+vpn@example.com ('+' in the name) logs in, IKEv2 and IKEv1 XAuth") {
            let user = "alice+vpn@example.com"
            let v2 = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2)
            try wait("the account's open radacct row") { try openSessions(user) == 1 }
            try disconnect(0, from: free, ikeVersion: 2)
            let v1 = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 1)
            try disconnect(0, from: free, ikeVersion: 1)
            try wait("the account's sessions closed") { try openSessions(user) == 0 }
            return "IKEv2 \(v2.milliseconds) ms, IKEv1 \(v1.milliseconds) ms"
        }
        step("the node PSK alone opens no tunnel (IKEv2 PSK, IKEv1 without XAuth), not even as an account's identity") {
            // Every account of the node's ipsec-xauth-psk service holds its PSK. A client that offers only the
            // PSK, with an account's name as its identity, must get nothing: no tunnel, no accounting row, and
            // alice's live tunnel (client 0) must not be ended by the attempt's INITIAL_CONTACT.
            _ = try connectAndReachHostBehind(0, "alice", to: free, ikeVersion: 2)
            try wait("alice's open radacct row") { try openSessions("alice") == 1 }
            let live = try lab.nodeDaemon(free.name).securityAssociations().map(\.uniqueID)
            try check(live.count >= 3, "the node's SAs (two to the RADIUS servers, alice's): \(live)")
            let client = try lab.client(1)
            try client.loadAllCleanly(confFile: try inputs.pskOnlyClientConf(node: free.name, identity: "alice"))
            loadedConf[1] = nil
            let daemon = try lab.nodeDaemon(free.name)
            var refusals: [String] = []
            for (version, serverAuth) in [(2, "pubkey"), (2, "psk"), (1, "psk")] {
                let ike = "\(free.name)-psk-ikev\(version)-\(serverAuth)"
                let mark = daemon.log.utf8.count
                let result = try client.initiate(child: inputs.clientChild, ike: ike, timeout: .seconds(8))
                let up = result.succeeded
                _ = try? client.terminate(ike: ike, timeout: .seconds(3))
                let log = NodeUnderTest.since(mark, daemon.log)
                try check(!up, "a PSK-only client got a tunnel (\(ike)):\n\(log.suffix(2000))")
                let why = ["failed", "XAuth", "deleting"].lazy.map { self.lines(log, containing: $0) }.first {
                    !$0.isEmpty
                }
                refusals.append("IKEv\(version), node by \(serverAuth): " + (why ?? "no tunnel"))
            }
            try check(try openSessions("alice") == 1, "an accounting row was opened or closed for alice")
            for sa in try client.securityAssociations() { _ = try client.terminate(ike: sa.name) }
            try check(
                try lab.nodeDaemon(free.name).securityAssociations().map(\.uniqueID) == live,
                "the PSK-only attempts as alice ended alice's tunnel")
            try check(try hasTunnel(0, to: free, ikeVersion: 2), "alice's client lost its tunnel")
            try disconnect(0, from: free, ikeVersion: 2)
            try wait("alice's session closed") { try openSessions("alice") == 0 }
            return refusals.joined(separator: " / ") + "; alice's live tunnel kept"
        }
        var seedSetups: [(label: String, setup: ClientSetup)] = []
        step("the seed app's setups for the free node") {
            seedSetups = try inputs.seedAppSetups(node: free.name, user: "alice", password: passwords["alice"]!)
            return seedSetups.map(\.label).joined(separator: ", ")
        }
        for (label, setup) in seedSetups {
            step("the seed app's code path (\(label), four fields) with a RADIUS account reaches the host behind") {
                let client = try lab.client(0)
                try client.loadAllCleanly(confFile: try setup.write(label: "seed-\(label)").confFile)
                loadedConf[0] = nil
                defer { _ = try? client.terminate(ike: setup.connectionName) }
                let up = try client.initiate(child: setup.childName, ike: setup.connectionName, timeout: Self.timeout)
                let nodeLog = try lab.nodeDaemon(free.name).log
                try check(up.succeeded, "initiate: \(up)\n\(nodeLog.suffix(2000))")
                guard let vip = try client.virtualIPs(ike: setup.connectionName).first(where: { !$0.contains(":") })
                else { throw HarnessError("no IPv4 virtual IP") }
                let ping = try lab.pingHostBehind(fromClient: 0, source: vip)
                try check(ping.succeeded, "ping from \(vip) to the host behind \(free.name): \(ping)")
                return "virtual IP \(vip)"
            }
        }
        for version in [2, 1] {
            step("free account refused by the pro node (RADIUS tier policy), IKEv\(version)") {
                let marks = try radiusMarks()
                _ = try expectRefused(0, "alice", to: pro, ikeVersion: version)
                let log = try radiusLog(since: marks)
                let reject = lines(log, containing: "Login incorrect")
                try check(reject.contains("[alice]"), "no reject of alice in the RADIUS log:\n\(log)")
                return reject
            }
        }
        for version in [2, 1] {
            step("pro node refuses a free account RADIUS wrongly accepts (groups), IKEv\(version)") {
                try inputs.setRadiusTier(of: pro.name, to: "free", lab: lab)
                defer { try? inputs.setRadiusTier(of: pro.name, to: nil, lab: lab) }
                let marks = try radiusMarks()
                let nodeLog = try expectRefused(0, "alice", to: pro, ikeVersion: version)
                let log = try radiusLog(since: marks)
                try check(log.contains("Login OK: [alice]"), "RADIUS did not accept (so nothing proven):\n\(log)")
                let why = "constraint check failed: group membership to 'pro' required"
                try check(nodeLog.contains(why), "node log lacks \"\(why)\":\n\(nodeLog)")
                return lines(nodeLog, containing: "group membership")
            }
        }
        step("tier changed to pro → the account connects to the pro node, IKEv2 and IKEv1 XAuth") {
            // The two logins the pro node refused after RADIUS accepted them each hold one of alice's two devices
            // until their claim lapses (no accounting Start ever consumes it).
            try wait("alice's claims of the logins refused by the node lapse", timeout: .seconds(15)) {
                try sql(
                    "SELECT count(*) FROM vpn_devices_in_use('alice') WHERE acctsessionid LIKE 'claim-%'") == "0"
            }
            try inputs.setTier("alice", "pro", lab: lab)
            let v2 = try connectAndReachHostBehind(0, "alice", to: pro, ikeVersion: 2)
            try disconnect(0, from: pro, ikeVersion: 2)
            let v1 = try connectAndReachHostBehind(0, "alice", to: pro, ikeVersion: 1)
            try disconnect(0, from: pro, ikeVersion: 1)
            try wait("alice's pro sessions closed") { try openSessions("alice") == 0 }
            let classes = try sql(
                "SELECT string_agg(DISTINCT class, ',') FROM radacct WHERE username = 'alice' AND nasidentifier = '\(pro.name)'"
            )
            try check(classes == "pro", "radacct class of the pro sessions: \(classes)")
            return "IKEv2 \(v2.milliseconds) ms, IKEv1 \(v1.milliseconds) ms, class \(classes)"
        }
        step("tier lowered to free with a live tunnel on the pro node → the tunnel ends; refused there after") {
            try inputs.setTier("carol", "pro", lab: lab)
            _ = try connectAndReachHostBehind(0, "carol", to: pro, ikeVersion: 2)
            try wait("carol's open radacct row") { try openSessions("carol") == 1 }
            let start = ContinuousClock.now
            try inputs.setTier("carol", "free", lab: lab)
            try wait("carol's tunnel gone", timeout: .seconds(10)) { try !hasTunnel(0, to: pro, ikeVersion: 2) }
            let gone = Self.milliseconds(since: start)
            try wait("carol's session closed") { try openSessions("carol") == 0 }
            _ = try expectRefused(0, "carol", to: pro, ikeVersion: 2)
            return "tunnel gone \(gone) ms after set-tier"
        }
        step("disabled account refused") {
            _ = try inputs.disable("bob", lab: lab)
            let marks = try radiusMarks()
            _ = try expectRefused(0, "bob", to: free, ikeVersion: 2)
            let reject = lines(try radiusLog(since: marks), containing: "Login incorrect")
            try check(reject.contains("[bob]"), "no reject of bob in the RADIUS log")
            return reject
        }
        step(
            "disabling an account with a live tunnel ends the tunnel within seconds (a Disconnect-Request from outside disconnect_from does not); it cannot reconnect"
        ) {
            _ = try connectAndReachHostBehind(0, "dave", to: free, ikeVersion: 2)
            try wait("dave's open radacct row") { try openSessions("dave") == 1 }
            if try inputs.nodeFirewall(free.name) != nil {
                // Signed with the right secret but sent from a client's address, outside disconnect_from: the
                // node's firewall drops it, no answer, the tunnel stays.
                let file = try Scratch.makeDirectory("dae").appendingPathComponent("secret")
                try (try inputs.daeSecret(free.name) + "\n").write(to: file, atomically: true, encoding: .utf8)
                let outsider = try lab.radclient(
                    inNamespace: lab.clients[1].namespace,
                    arguments: ["-r", "1", "-t", "1", "-S", file.path, "\(free.address):3799", "disconnect"],
                    input: "User-Name = dave\n")
                try check(
                    !outsider.output.contains("Disconnect-ACK") && !outsider.output.contains("Disconnect-NAK"),
                    "a Disconnect-Request from outside disconnect_from was answered: \(outsider)")
                try check(try hasTunnel(0, to: free, ikeVersion: 2), "the tunnel went down")
            }
            let start = ContinuousClock.now
            let did = try inputs.disable("dave", lab: lab)
            try wait("dave's tunnel gone", timeout: .seconds(10)) { try !hasTunnel(0, to: free, ikeVersion: 2) }
            let gone = Self.milliseconds(since: start)
            try wait("dave's session closed") { try openSessions("dave") == 0 }
            _ = try expectRefused(0, "dave", to: free, ikeVersion: 2)
            return "\(did); tunnel gone \(gone) ms after disabling"
        }
        step("device limit 1: a second device is refused while the first is up, admitted after") {
            _ = try connectAndReachHostBehind(0, "erin", to: free, ikeVersion: 2)
            try wait("erin's open radacct row") { try openSessions("erin") == 1 }
            let marks = try radiusMarks()
            _ = try expectRefused(1, "erin", to: free, ikeVersion: 2)
            let log = try radiusLog(since: marks)
            try check(log.contains("Multiple logins"), "RADIUS log does not name the device limit:\n\(log)")
            try disconnect(0, from: free, ikeVersion: 2)
            try wait("erin's first session closed") { try openSessions("erin") == 0 }
            _ = try connectAndReachHostBehind(1, "erin", to: free, ikeVersion: 2)
            try disconnect(1, from: free, ikeVersion: 2)
            return lines(log, containing: "Multiple logins")
        }
        step(
            "a node whose accounting Stop is lost (its RADIUS relay killed): its session counts while fresh, no longer once stale; the live catalogue shows the node loaded, then not alive"
        ) {
            try staleSessionsStopCounting()
        }
        step("accounts import: an account with a password and one with an NT hash log in, IKEv2 and IKEv1 XAuth") {
            passwords["jill"] = RadiusGeneratedInputs.random()
            passwords["kim"] = RadiusGeneratedInputs.random()
            let did = try inputs.importAccounts([
                #"{"username": "jill", "tier": "free", "devices": 1, "password": "\#(passwords["jill"]!)"}"#,
                #"{"username": "kim", "tier": "free", "devices": 1, "nt_hash": "\#(try Self.ntHash(passwords["kim"]!))"}"#,
            ])
            try check(did == "imported 2 accounts (free 2)", "import printed: \(did)")
            for user in ["jill", "kim"] {
                for version in [2, 1] {
                    _ = try connectAndReachHostBehind(0, user, to: free, ikeVersion: version)
                    try disconnect(0, from: free, ikeVersion: version)
                    try wait("\(user)'s session closed") { try openSessions(user) == 0 }
                }
            }
            return did
        }
        try? resetSessions()
        step("a node's charon killed with a session open and started again: the account logs in there at once") {
            try restartedNodeClosesItsSessions()
        }
        step("set-password: the live tunnel ends, the old password is refused, the new one reaches the host behind") {
            _ = try connectAndReachHostBehind(0, "ivy", to: free, ikeVersion: 2)
            try wait("ivy's open radacct row") { try openSessions("ivy") == 1 }
            let did = try inputs.setPassword("ivy", password: newPassword("ivy"))
            try wait("ivy's tunnel ended") { try !hasTunnel(0, to: free, ikeVersion: 2) }
            try wait("ivy's session closed") { try openSessions("ivy") == 0 }
            // client 0 still holds the old password
            _ = try expectRefused(0, "ivy", to: free, ikeVersion: 2)
            loadedConf[0] = nil
            _ = try connectAndReachHostBehind(0, "ivy", to: free, ikeVersion: 2)
            try disconnect(0, from: free, ikeVersion: 2)
            try wait("ivy's session closed") { try openSessions("ivy") == 0 }
            return did.replacingOccurrences(of: "\n", with: " ")
        }
        step("every refusal is one 'Login incorrect (reason)' line of the RADIUS log, over EAP and over XAuth") {
            // A wrong password, the device limit and a disabled account, each over IKEv2 (EAP) and IKEv1 (XAuth):
            // each attempt leaves exactly one line about the account in the log of the server that decided,
            // and it names the reason.
            var seen: [String] = []
            func refusal(
                _ what: String, _ index: Int, _ user: String, ikeVersion: Int, reason: String, password: String? = nil
            ) throws {
                let marks = try radiusMarks()
                if let password {
                    try lab.client(index).loadAllCleanly(
                        confFile: try inputs.clientConf(user: user, password: password))
                    loadedConf[index] = nil
                    let ike = inputs.clientConnection(node: free.name, ikeVersion: ikeVersion)
                    let result = try lab.client(index).initiate(
                        child: inputs.clientChild, ike: ike, timeout: Self.timeout)
                    _ = try? lab.client(index).terminate(ike: ike, timeout: .seconds(3))
                    try check(!result.succeeded, "\(what): connected")
                } else {
                    _ = try expectRefused(index, user, to: free, ikeVersion: ikeVersion)
                }
                let log = try radiusLog(since: marks)
                let about = log.split(separator: "\n").filter {
                    $0.contains("[\(user)]") || $0.contains("Error") || $0.contains("ERROR")
                }
                try check(
                    about.count == 1 && about[0].contains("Login incorrect (") && about[0].contains(reason),
                    "\(what), IKEv\(ikeVersion): not one 'Login incorrect (…\(reason)…)' line:\n\(about.joined(separator: "\n"))"
                )
                seen.append("\(what) IKEv\(ikeVersion): \(about[0].split(separator: "Auth: ").last ?? "")")
            }
            for (version, reason) in [(2, "mschap: "), (1, "pap: ")] {
                try refusal(
                    "wrong password", 1, "frank", ikeVersion: version, reason: reason,
                    password: RadiusGeneratedInputs.random())
            }
            _ = try connectAndReachHostBehind(0, "frank", to: free, ikeVersion: 2)
            try wait("frank's open radacct row") { try openSessions("frank") == 1 }
            for version in [2, 1] {
                try refusal("device limit", 1, "frank", ikeVersion: version, reason: "Multiple logins, device limit 1")
            }
            try disconnect(0, from: free, ikeVersion: 2)
            for version in [2, 1] { try refusal("disabled", 1, "bob", ikeVersion: version, reason: "account disabled") }
            // and an accepted login is one "Login OK" line
            let marks = try radiusMarks()
            _ = try connectAndReachHostBehind(0, "frank", to: free, ikeVersion: 1)
            try disconnect(0, from: free, ikeVersion: 1)
            let ok = try radiusLog(since: marks).split(separator: "\n").filter { $0.contains("[frank]") }
            try check(ok.count == 1 && ok[0].contains("Login OK: [frank]"), "accepted: \(ok)")
            return seen.joined(separator: " // ")
        }
        try? resetSessions()
        step(
            "a drained node (accounts drain) refuses a new login ('node draining') and the live catalogue says draining; undrain admits it again"
        ) {
            let json = try inputs.accountsOutput(["drain", free.name, "--grace", "60", "--format", "json"])
            let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let drain = document?["drain"] as? [String: Any]
            try check(
                drain?["node"] as? String == free.name && (drain?["graceUntil"] as? String)?.hasSuffix("Z") == true
                    && (document?["next"] as? String)?.contains("deploy/drain.yml --limit \(free.name)") == true,
                "accounts drain --format json: \(json)")
            func states() throws -> Set<String> {
                let text = try inputs.accountsOutput(["catalogue"])
                let top = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                let entries = (top?["servers"] as? [[String: Any]] ?? []).filter { $0["node"] as? String == free.name }
                return Set(entries.map { $0["state"] as? String ?? "active" })
            }
            let draining = try states()
            try check(draining == ["draining"], "live catalogue while draining: \(draining)")
            let marks = try radiusMarks()
            _ = try expectRefused(0, "alice", to: free, ikeVersion: 2)
            let refused = lines(try radiusLog(since: marks), containing: "[alice]")
            try check(refused.contains("Login incorrect (node draining): [alice]"), "radius log: \(refused)")
            _ = try inputs.accountsOutput(["undrain", free.name])
            let active = try states()
            try check(active == ["active"], "live catalogue after undrain: \(active)")
            let attempt = try connectAndReachHostBehind(0, "alice", to: free, ikeVersion: 2)
            try disconnect(0, from: free, ikeVersion: 2)
            return
                "\(refused.trimmingCharacters(in: .whitespacesAndNewlines)); after undrain \(attempt.milliseconds) ms"
        }
        try? resetSessions()
        step("device limit 2: a second device of the account is up beside the first, both reach the host behind") {
            try twoDevicesCoexist()
        }
        try? resetSessions()
        step(
            "device limit 2 under parallel logins: one session and three logins at once give two tunnels; of six Access-Requests at once one is accepted"
        ) {
            try parallelLoginsHoldTheLimit()
        }
        try? resetSessions()
        step(
            "account names: one equal but for case, or equal to a node's identity, is refused; RADIUS refuses the latter written by a backend"
        ) {
            try identityCollisionsAreRefused()
        }
        try? resetSessions()
        step(
            "accounting only from the node it names: forged with \(pro.name)'s secret naming \(free.name) is dropped and logged, radacct unchanged"
        ) {
            try forgedAccountingIsDropped()
        }
        try? resetSessions()
        step(
            "wrong per-node secret in the node's relay: refused; RADIUS names the node and the secret, the node sees a timeout"
        ) {
            try inputs.setNodeSecret(free.name, correct: false, lab: lab)
            let marks = try radiusMarks()
            // charon's Access-Request as the relay gets it (radclient with the relay's secret, on the node): a login
            // by charon ends the same way, after its three attempts (8.7 s).
            let file = try Scratch.makeDirectory("relay-secret").appendingPathComponent("secret")
            try (try inputs.relaySecret(free.name) + "\n").write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o600)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try lab.radclient(
                inNamespace: try lab.node(free.name).namespace,
                arguments: ["-r", "1", "-t", "3", "-S", file.path, "127.0.0.1:11812", "auth"],
                input: "User-Name = alice\nUser-Password = \"\(passwords["alice"]!)\"\nNAS-Identifier = \(free.name)\n"
                    + "NAS-IP-Address = \(free.address)\nMessage-Authenticator = 0x00\n")
            let log = try radiusLog(since: marks)
            let secretLine = log.split(separator: "\n").first {
                $0.contains("Shared secret is incorrect") && $0.contains(free.name)
            }
            try check(secretLine != nil, "no \"Shared secret is incorrect\" line naming \(free.name):\n\(log)")
            try check(
                !result.output.contains("Access-Accept") && !result.output.contains("Access-Reject"),
                "the relay answered: \(result)")
            return "no answer at the node; " + (secretLine.map(String.init) ?? "")
        }
        step("right secret restored → connects at the first attempt") {
            try inputs.setNodeSecret(free.name, correct: true, lab: lab)
            return try failoverAttempts("restored")
        }
        try? resetSessions()
        step("the node's metrics collector: both RADIUS servers answer its Status-Server; a stopped one does not") {
            try collectorRadiusStatus()
        }
        step("\(preferred) stopped → \(fallback) answers the first attempt") {
            try resetRelay(free)
            let rad = try lab.radius(preferred)
            rad.stop()
            defer {
                try? rad.start()
                try? resetRelay(free)
            }
            return try failoverAttempts("stopped")
        }
        try? resetSessions()
        step("\(preferred) silent (packets dropped) → \(fallback) answers the first attempt") {
            try resetRelay(free)
            let rad = try lab.radius(preferred)
            try rad.silence()
            defer {
                try? rad.unsilence()
                try? resetRelay(free)
            }
            return try failoverAttempts("silent", firstAttemptWithin: .seconds(6))
        }
        try? resetSessions()
        // The faults' effects are FreeRADIUS's and eap-radius's, the same code on strongSwan 5.9.8 and 6.0.1
        // (docs/testing.md): proven once, on 5.9.
        if build == .host { accountingFaultSteps() }
        step("no password in radpostauth, no password or node secret in any log") {
            let rows = try sql("SELECT count(*) FROM radpostauth")
            let leaked = try sql("SELECT count(*) FROM radpostauth WHERE coalesce(pass, '') <> ''")
            try check(leaked == "0", "\(leaked) of \(rows) radpostauth rows hold a password")
            var logs = [
                "postgres": (lab.postgres).flatMap { try? String(contentsOfFile: $0.logPath, encoding: .utf8) } ?? ""
            ]
            for (name, server) in lab.radiusServers { logs["radius \(name)"] = server.allOutput }
            for (name, charon) in lab.nodeDaemons { logs["node \(name)"] = charon.log }
            for (name, charon) in lab.clientDaemons { logs[name] = charon.log }
            let secrets = Array(passwords.values) + inputs.secrets
            let found = logs.compactMap { name, text in
                let lines = text.split(separator: "\n").filter { line in secrets.contains { line.contains($0) } }
                // the line with the secret blanked out, so the message says where without leaking it
                return lines.isEmpty
                    ? nil
                    : "\(name): "
                        + lines.prefix(2).map { line in
                            secrets.reduce(String(line)) { $0.replacingOccurrences(of: $1, with: "<secret>") }
                        }.joined(separator: " | ")
            }.sorted()
            try check(found.isEmpty, "a password or secret appears in the logs of: \(found)")
            return "\(rows) radpostauth rows, \(logs.count) logs checked"
        }
    }

    /// The vpnprov_node role's metrics collector (docs/monitoring.md), run in the free node's namespace with the
    /// RADIUS servers of the node's relay (its generated proxy.conf) as the role installs them: `vpnprov_radius_up` is 1 for each server
    /// (RFC 5997 Status-Server, answered by FreeRADIUS through the node's IPsec to it), and 0 for the preferred
    /// one while it is stopped.
    private func collectorRadiusStatus() throws -> String {
        guard let relay = try inputs.nodeRelayDirectory(free.name) else {
            return "skipped: the inputs have no generated RADIUS relay"
        }
        let settings = relay + "/proxy.conf"
        let dir = try Scratch.makeDirectory("collector")
        let config = dir.appendingPathComponent("monitoring.json")
        let servers = inputs.radiusServers.map {
            ["name": $0.name, "address": $0.address, "port": 1812] as [String: Any]
        }
        try JSONSerialization.data(withJSONObject: ["services": [:] as [String: String], "radius": servers])
            .write(to: config)
        let output = dir.appendingPathComponent("vpnprov.prom")
        let role = AnsibleTools.packageRoot.appendingPathComponent("templates/deploy/roles/vpnprov_node")
        let script = role.appendingPathComponent("files/vpnprov-strongswan-metrics")
        func status() throws -> String {
            // The role installs the collector's vici client beside it; here Python finds it in the role.
            let result = try Command.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", try lab.node(free.name).namespace, "/usr/bin/env",
                    "PYTHONPATH=" + role.appendingPathComponent("module_utils").path, "/usr/bin/python3", script.path,
                    "--config",
                    config.path, "--output", output.path, "--socket", try lab.nodeDaemon(free.name).socketPath,
                    "--radius-settings", settings,
                ], timeout: .seconds(30))
            try check(result.succeeded, "collector: \(result)")
            let text = try String(contentsOf: output, encoding: .utf8)
            return text.split(separator: "\n").filter {
                $0.hasPrefix("vpnprov_radius_up{") || $0.hasPrefix("strongswan_up ")
                    || $0.hasPrefix("vpnprov_certificate_not_after_seconds{kind=\"node\"")
            }
            .joined(separator: ", ")
        }
        let both = try status()
        try check(
            both.contains("vpnprov_radius_up{server=\"\(preferred)\"} 1")
                && both.contains("vpnprov_radius_up{server=\"\(fallback)\"} 1") && both.contains("strongswan_up 1"),
            "both servers up: \(both)")
        // charon's own certificate, found by its key, on 5.9 and 6.0 alike (vici's has_privkey).
        try check(
            both.components(separatedBy: "vpnprov_certificate_not_after_seconds{kind=\"node\"").count == 2,
            "one node certificate: \(both)")
        let rad = try lab.radius(preferred)
        rad.stop()
        defer { try? rad.start() }
        let one = try status()
        try check(
            one.contains("vpnprov_radius_up{server=\"\(preferred)\"} 0")
                && one.contains("vpnprov_radius_up{server=\"\(fallback)\"} 1"), "\(preferred) stopped: \(one)")
        return "\(both) | \(preferred) stopped: \(one)"
    }

    /// gina (device limit 2) on client 0, then on client 1: client 1's INITIAL_CONTACT must not end client 0's
    /// tunnel (`unique = never` on RADIUS connections), and traffic flows through both.
    private func twoDevicesCoexist() throws -> String {
        let first = try connectAndReachHostBehind(0, "gina", to: free, ikeVersion: 2)
        try wait("gina's first session") { try openSessions("gina") == 1 }
        let second = try connectAndReachHostBehind(1, "gina", to: free, ikeVersion: 2)
        try wait("gina's two sessions") { try openSessions("gina") == 2 }
        for (index, attempt) in [(0, first), (1, second)] {
            let ping = try lab.pingHostBehind(fromClient: index, source: attempt.virtualIP!)
            try check(ping.succeeded, "device \(index + 1) of gina no longer reaches the host behind: \(ping)")
        }
        try check(first.virtualIP != second.virtualIP, "both devices got \(first.virtualIP ?? "-")")
        return "virtual IPs \(first.virtualIP!) and \(second.virtualIP!)"
    }

    /// gina (device limit 2) up on client 0; clients 1, 2 and 3 log in as gina at the same moment: two tunnels, two
    /// open sessions. Then the race itself, at the RADIUS servers: six Access-Requests for gina at once (PAP, as
    /// XAuth sends them), signed with the free node's secret from its address. The servers decide one login of an
    /// account at a time (vpn_device_claim), so exactly one is accepted. (The charon logins alone rarely lose the race
    /// in the lab, where a Start follows its Accept within milliseconds; FreeRADIUS's own count of open radacct rows
    /// accepted all six requests, since no Start follows them.)
    private func parallelLoginsHoldTheLimit() throws -> String {
        _ = try connectAndReachHostBehind(0, "gina", to: free, ikeVersion: 2)
        try wait("gina's first session") { try openSessions("gina") == 1 }
        let ike = inputs.clientConnection(node: free.name, ikeVersion: 2)
        let conf = try inputs.clientConf(user: "gina", password: passwords["gina"]!)
        let others = [1, 2, 3]
        for index in others where loadedConf[index] != "gina" {
            try lab.client(index).loadAllCleanly(confFile: conf)
            loadedConf[index] = "gina"
        }
        let clients = try others.map { try lab.client($0) }
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var byClient: [Int: Bool] = [:]
            func set(_ index: Int, _ ok: Bool) { lock.withLock { byClient[index] = ok } }
        }
        let collected = Results()
        let child = inputs.clientChild
        let marks = try radiusMarks()
        DispatchQueue.concurrentPerform(iterations: clients.count) { i in
            let ok = (try? clients[i].initiate(child: child, ike: ike, timeout: Self.timeout))?.succeeded ?? false
            collected.set(others[i], ok)
        }
        let results = collected.byClient
        // settles within the bound; if it does not, the check below reports what there is
        try? wait("the accounting of the admitted logins", timeout: .seconds(5)) {
            try openSessions("gina") == 1 + results.values.filter { $0 }.count
        }
        let tunnels = try (0...3).filter { try hasTunnel($0, to: free, ikeVersion: 2) }
        let sessions = try openSessions("gina")
        try check(
            tunnels.count == 2 && sessions == 2,
            "limit 2: \(tunnels.count) tunnels (clients \(tunnels)), \(sessions) open sessions; logins at once: \(results)"
        )
        let log = try radiusLog(since: marks)
        try check(log.contains("Multiple logins"), "no device-limit refusal in the RADIUS log:\n\(log)")

        // The burst: one of gina's two devices is up (close the second tunnel first).
        for index in tunnels where index != 0 { try disconnect(index, from: free, ikeVersion: 2) }
        try wait("gina down to one session") { try openSessions("gina") == 1 }
        let secretFile = try Scratch.makeDirectory("burst").appendingPathComponent("secret")
        try (try inputs.radiusSecret(free.name) + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let requests = (1...6).map { port in
            "User-Name = \"gina\"\nUser-Password = \"\(passwords["gina"]!)\"\nNAS-Identifier = \"\(free.name)\"\n"
                + "NAS-IP-Address = \(free.address)\nNAS-Port = \(100 + port)\nMessage-Authenticator = 0x00\n"
        }.joined(separator: "\n")
        let burst = try lab.radclient(
            inNamespace: try lab.node(free.name).namespace,
            arguments: [
                "-p", "6", "-r", "1", "-t", "5", "-S", secretFile.path,
                "\(try lab.radiusMember(preferred).address):1812", "auth",
            ],
            input: requests)
        // radclient prints "Received Access-Accept ..." per answer (and "Expected Access-Accept got Access-Reject")
        let accepts = burst.output.components(separatedBy: "Received Access-Accept").count - 1
        let rejects = burst.output.components(separatedBy: "Received Access-Reject").count - 1
        try check(
            accepts == 1 && rejects == 5,
            "six requests at once with one device of two in use: \(accepts) accepted, \(rejects) refused: \(burst)")
        return "tunnels on clients \(tunnels); burst of 6: \(accepts) accepted, \(rejects) refused"
    }

    /// `accounts add BOB` beside bob, `accounts add <the free node's address>` (its IKE identity) and `accounts add
    /// PSK-EAP.acct` (the IKEv2 PSK+EAP clients' identity, psk-eap.acct, in other case): all refused. The last,
    /// written by a backend (no inventory to check against), cannot log in: the RADIUS policy refuses it.
    private func identityCollisionsAreRefused() throws -> String {
        var refusals: [String] = []
        let name = "PSK-EAP.acct"
        for (account, why) in [
            ("BOB", "collides with account 'bob'"), (free.address, "in the inventory"), (name, "in the inventory"),
        ] {
            do {
                try inputs.addAccount(
                    account, password: RadiusGeneratedInputs.random(), tier: "free", devices: 1, lab: lab)
                throw HarnessError("accounts add \(account) succeeded")
            } catch let error as HarnessError where "\(error)".contains(why) {
                refusals.append("\(account): \(why)")
            }
        }
        passwords[name] = RadiusGeneratedInputs.random()
        try inputs.addAccountBypassingInventory(name, password: passwords[name]!, tier: "free", devices: 1)
        let marks = try radiusMarks()
        _ = try expectRefused(0, name, to: free, ikeVersion: 2)
        let log = try radiusLog(since: marks)
        let reason = "account name is an identity of the inventory"
        try check(log.contains(reason), "the RADIUS log does not say \"\(reason)\":\n\(log)")
        return refusals.joined(separator: "; ") + "; " + lines(log, containing: reason)
    }

    /// With a live session of alice on the free node, the pro node's own secret (sent from the pro node's address)
    /// forges accounting for the free node: a Start for another account "on" it, an Accounting-On naming its address
    /// (which would close every session of that address), an Accounting-On of its own, a Start with its own name but
    /// the free node's address. Each is dropped (no Accounting-Response) and logged, radacct stays as it was and
    /// alice's tunnel stays up. A genuine Start and Stop of the pro node itself, sent the same way, are answered:
    /// the refusals are the policy's, not a wrong secret.
    private func forgedAccountingIsDropped() throws -> String {
        _ = try connectAndReachHostBehind(0, "alice", to: free, ikeVersion: 2)
        try wait("alice's open radacct row") { try openSessions("alice") == 1 }
        let rows =
            "SELECT radacctid, username, nasidentifier, coalesce(acctstoptime::text, 'open') FROM radacct ORDER BY 1"
        let before = try sql(rows)
        let secretFile = try Scratch.makeDirectory("forge").appendingPathComponent("secret")
        try (try inputs.radiusSecret(pro.name) + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let server = try lab.radiusMember(preferred)
        let radius = try lab.radius(preferred)
        let policyMark = radius.policyLog.utf8.count
        func send(_ attributes: String, tries: Int = 1) throws -> CommandResult {
            try lab.radclient(
                inNamespace: try lab.node(pro.name).namespace,
                arguments: ["-r", String(tries), "-t", "2", "-S", secretFile.path, "\(server.address):1813", "acct"],
                input: attributes)
        }
        func start(_ status: String, user: String, nas: String, address: String, session: String) -> String {
            "Acct-Status-Type = \(status)\nUser-Name = \"\(user)\"\nAcct-Session-Id = \"\(session)\"\n"
                + "NAS-Identifier = \"\(nas)\"\nNAS-IP-Address = \(address)\nNAS-Port = 7\n"
        }
        let forged = [
            (
                "a Start for hank naming \(free.name)",
                start("Start", user: "hank", nas: free.name, address: free.address, session: "f-1")
            ),
            (
                "an Accounting-On naming \(free.name)",
                "Acct-Status-Type = Accounting-On\nNAS-Identifier = \"\(free.name)\"\nNAS-IP-Address = \(free.address)\n"
            ),
            (
                "an Accounting-On of its own",
                "Acct-Status-Type = Accounting-On\nNAS-Identifier = \"\(pro.name)\"\nNAS-IP-Address = \(pro.address)\n"
            ),
            (
                "a Start with its name and \(free.name)'s address",
                start("Start", user: "hank", nas: pro.name, address: free.address, session: "f-2")
            ),
        ]
        // All four at once: each waits out its unanswered request.
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var byIndex: [Int: Result<CommandResult, any Error>] = [:]
        }
        let results = Results()
        let packets = forged.map(\.1)
        let lab = self.lab
        let namespace = try lab.node(pro.name).namespace
        let arguments = ["-r", "1", "-t", "2", "-S", secretFile.path, "\(server.address):1813", "acct"]
        DispatchQueue.concurrentPerform(iterations: packets.count) { i in
            let result = Result { try lab.radclient(inNamespace: namespace, arguments: arguments, input: packets[i]) }
            results.lock.withLock { results.byIndex[i] = result }
        }
        for (i, (what, _)) in forged.enumerated() {
            guard let outcome = results.byIndex[i] else { throw HarnessError("\(what) was not sent") }
            let result = try outcome.get()
            try check(!result.output.contains("Accounting-Response"), "\(what) was answered: \(result)")
        }
        let after = try sql(rows)
        try check(after == before, "radacct changed:\nbefore:\n\(before)\nafter:\n\(after)")
        try check(try hasTunnel(0, to: free, ikeVersion: 2), "alice's tunnel on \(free.name) went down")
        let refusedLines = NodeUnderTest.since(policyMark, radius.policyLog).split(separator: "\n")
            .filter { $0.contains("Accounting refused") && $0.contains("from client \(pro.name)") }
        try check(
            refusedLines.count == forged.count,
            "\(refusedLines.count) \"Accounting refused\" lines for \(forged.count) forged packets:\n\(radius.policyLog)"
        )
        // The control: the pro node's genuine accounting, the same way, is answered and recorded.
        let genuine = try send(
            start("Start", user: "hank", nas: pro.name, address: pro.address, session: "g-1"), tries: 3)
        try check(genuine.output.contains("Accounting-Response"), "the genuine Start was not answered: \(genuine)")
        let stop = try send(start("Stop", user: "hank", nas: pro.name, address: pro.address, session: "g-1"), tries: 3)
        try check(stop.output.contains("Accounting-Response"), "the genuine Stop was not answered: \(stop)")
        let hank = try sql("SELECT nasidentifier, acctstoptime IS NOT NULL FROM radacct WHERE username = 'hank'")
        try check(hank == "\(pro.name)|t", "hank's rows: \(hank)")
        try disconnect(0, from: free, ikeVersion: 2)
        return refusedLines.map { line in line.split(separator: ":", maxSplits: 3).last.map(String.init) ?? "" }
            .prefix(2).joined(separator: " | ")
    }

    /// alice → free node over IKEv2: the first attempt must connect (the node's relay moves a login its server does
    /// not answer to the next server) and reach the host behind; the fallback server must have answered it.
    /// `firstAttemptWithin`: what a silent server may cost the login at most.
    private func failoverAttempts(_ what: String, firstAttemptWithin limit: Duration? = nil) throws -> String {
        let marks = try radiusMarks()
        let daemon = try lab.nodeDaemon(free.name)
        let mark = daemon.log.utf8.count
        let first = try connect(0, "alice", to: free, ikeVersion: 2)
        let nodeLog = NodeUnderTest.since(mark, daemon.log)
        try check(
            first.succeeded,
            "\(what): the first attempt failed (\(first.milliseconds) ms): \(first.result)\nnode:\n\(nodeLog.suffix(2000))"
        )
        if let limit {
            let ms = Int(limit.components.seconds) * 1000
            try check(
                first.milliseconds < ms, "\(what): the first attempt took \(first.milliseconds) ms (limit \(ms) ms)")
        }
        let ping = try lab.pingHostBehind(fromClient: 0, source: first.virtualIP!)
        try check(ping.succeeded, "\(what): host behind unreachable: \(ping)")
        try disconnect(0, from: free, ikeVersion: 2)
        let fallbackLog = try lab.radius(fallback).log(since: marks[fallback] ?? 0)
        if what != "restored" {
            try check(
                fallbackLog.contains("Login OK: [alice]"), "\(what): \(fallback) did not accept alice:\n\(fallbackLog)")
        }
        return "first attempt connected (\(first.milliseconds) ms, "
            + "\(nodeLog.components(separatedBy: "retransmit ").count - 1) RADIUS retransmissions to the relay)"
    }
}
