import Foundation
import Testing
import VPNProvTestHarness

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
final class RadiusScenario {
    let build: StrongSwanBuild
    let inputs: any RadiusFleetInputs
    let lab: RadiusLab
    var report: ScenarioReport
    /// Account passwords (random per run; never printed).
    var passwords: [String: String] = [:]
    /// The client conf each client charon holds, so it is loaded only when the user changes.
    var loadedConf: [Int: String] = [:]
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

    func setUp() throws {
        for (user, devices) in [
            ("alice", 2), ("bob", 1), ("carol", 1), ("dave", 1), ("erin", 1), ("alice+vpn@example.com", 1),
            ("frank", 1), ("gina", 2), ("ivy", 1), (Self.quotaAccount, 1),
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
        var result: ProgramResult
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
        let result = try Subprocess.check(
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

    // MARK: the scenario

    /// The steps, in the order they run: a step may rely on what the ones before left (an account disabled, a
    /// tier changed), and a group resets the sessions it leaves open. The groups are in RadiusScenario+*.swift.
    func runSteps() {
        pathSteps()
        loginSteps()
        pskAndSeedAppSteps()
        tierSteps()
        disableSteps()
        deviceLimitAndStaleSteps()
        importAndPasswordSteps()
        refusalLogSteps()
        if build == .host {
            try? resetSessions()
            drainSteps()
        }
        concurrencySteps()
        failoverSteps()
        // The faults' effects are FreeRADIUS's and eap-radius's, the same code on strongSwan 5.9.8 and 6.0.1
        // (docs/testing.md): proven once, on 5.9.
        if build == .host { accountingFaultSteps() }
        // The quota's enforcement is FreeRADIUS's and eap-radius's Interim-Update and Disconnect-Request handling,
        // the same code on both builds (docs/testing.md): proven once, on 5.9.
        if build == .host {
            try? resetSessions()
            dataQuotaSteps()
        }
        leakSteps()
    }
}
