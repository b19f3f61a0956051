import Foundation
import Testing
import VPNProvSupport
import VPNProvTestHarness

/// How many password logins per second one node with `accounts: radius` takes through FreeRADIUS and PostgreSQL
/// on this machine: a benchmark that prints figures (`bench radius: …`) and asserts only that every login
/// succeeded, never a speed (docs/benchmarks.md, "Central accounts (RADIUS)").
///
/// Not part of `swift test` or CI: it is skipped unless `VPNPROV_BENCHMARK=1`. Run it with
///
///     VPNPROV_BENCHMARK=1 VPNPROV_REQUIRE_E2E=1 swift test --skip-build --filter RadiusAuthBenchmark
///
/// The lab is the accounts scenario's (`RadiusGeneratedInputs.startLab`: generated output, two RADIUS servers,
/// one PostgreSQL), nodes and clients on strongSwan 5.9 (the host's) and 6.0. `accounts` accounts are added with
/// `vpnprov accounts add`; every client charon holds an IKEv2 EAP-MSCHAPv2 connection per account to the free
/// node. Serial: each account in turn initiates (returns once the CHILD_SA is up) and terminates. Concurrent: every
/// account initiates at once (one `swanctl --initiate` each), timed until the last CHILD_SA is up, first all from
/// one client address, then spread over 8 (5 accounts each): strongSwan ignores an IKE_SA_INIT from an address
/// that already has 5 half-open IKE_SAs (`charon.block_threshold`), so from one address the batch measures the
/// clients' retransmission timers rather than the node.
@Suite(.serialized, .strongSwan, .radius)
struct RadiusAuthBenchmark {
    static let isEnabled = ProcessInfo.processInfo.environment["VPNPROV_BENCHMARK"] == "1"
    static let accounts = 40

    static let howToRun =
        "a benchmark: VPNPROV_BENCHMARK=1 VPNPROV_REQUIRE_E2E=1 swift test --skip-build --filter RadiusAuthBenchmark"

    @Test(
        "RADIUS logins per second through one node (strongSwan 5.9)",
        .enabled(if: isEnabled, Comment(rawValue: howToRun)))
    func loginsPerSecond59() async throws {
        try await Self.run(.host)
    }

    @Test(
        "RADIUS logins per second through one node (strongSwan 6.0)",
        .enabled(if: isEnabled, Comment(rawValue: howToRun)),
        .strongSwan6)
    func loginsPerSecond60() async throws {
        try await Self.run(.trixie)
    }

    static func run(_ build: StrongSwanBuild) async throws {
        try RadiusEnvironment.require()
        try build.requireEAPRadius()
        try await Subprocess.onOwnThread { try RadiusAuthRun.run(build: build, accounts: accounts) }
    }
}

/// One benchmark run; throws when a login fails.
private final class RadiusAuthRun: Sendable {
    let lab: RadiusLab
    let inputs: RadiusGeneratedInputs
    let users: [String]

    private init(lab: RadiusLab, inputs: RadiusGeneratedInputs, users: [String]) {
        self.lab = lab
        self.inputs = inputs
        self.users = users
    }

    /// The client charon takes one of its threads for every `swanctl --initiate` waiting on it (vici holds the
    /// request until the CHILD_SA is up); with its default 16, forty at once starve the IKE work they wait for.
    static let clientSettings = "charon {\n  threads = 128\n}\n"

    /// Client charons (addresses) for the spread-out concurrent batch: no more than 5 accounts behind one address.
    static let clients = 8

    static func run(build: StrongSwanBuild, accounts: Int) throws {
        let setupStart = ContinuousClock.now
        let (lab, inputs) = try RadiusGeneratedInputs.startLab(
            build: build, clients: clients, clientSettings: clientSettings)
        defer { lab.teardown() }
        let run = RadiusAuthRun(
            lab: lab, inputs: inputs, users: (1...accounts).map { "bench\(String(format: "%03d", $0))" })
        report("\(build.version); lab up in \(seconds(since: setupStart)) s")
        try run.measure()
    }

    static func seconds(since start: ContinuousClock.Instant) -> String {
        String(format: "%.2f", Self.seconds(ContinuousClock.now - start))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Printed as it is measured, so a failing run still shows the figures before it.
    static func report(_ line: String) { print("bench radius: \(line)") }

    var node: RadiusNodeSpec { inputs.nodes[0] }

    func connection(_ user: String) -> String { inputs.clientConnection(node: node.name, ikeVersion: 2) + "-" + user }

    func openSessions() throws -> Int {
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        // the benchmark's own accounts' (the filled sessions stay open)
        return Int(
            try postgres.psql("SELECT count(*) FROM radacct WHERE acctstoptime IS NULL AND username LIKE 'bench%'"))
            ?? -1
    }

    func waitForOpenSessions(_ count: Int) throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try openSessions() != count {
            if ContinuousClock.now > deadline { throw HarnessError("timed out waiting for \(count) open sessions") }
            usleep(50_000)
        }
    }

    /// Lines of `charon`'s log since `mark` containing `text` (eap-radius logs each Access-Request at level 1 of
    /// `cfg`; both daemons log their retransmissions).
    func count(_ text: String, in charon: Charon, since mark: Int) -> Int {
        NodeUnderTest.since(mark, charon.log).split(separator: "\n").filter { $0.contains(text) }.count
    }

    /// Access-Requests per login, the retransmissions and the IKE_SA_INITs the node ignored (its per-address
    /// limit of half-open IKE_SAs, strongSwan's `block_threshold`), from the node's log since `nodeMark`.
    func exchanges(node nodeMark: Int, clientRetransmissions: Int) -> String {
        guard let nodeDaemon = try? lab.nodeDaemon(node.name) else { return "" }
        let requests = count("sending RADIUS Access-Request", in: nodeDaemon, since: nodeMark)
        let radiusRetransmissions = count("of RADIUS", in: nodeDaemon, since: nodeMark)
        return String(
            format: "%.1f RADIUS Access-Requests per login, %d RADIUS retransmissions, IKE retransmissions %d by "
                + "the clients and %d by the node, %d IKE_SA_INITs ignored by the node (half-open limit per address)",
            Double(requests) / Double(users.count), radiusRetransmissions, clientRetransmissions,
            count("retransmit", in: nodeDaemon, since: nodeMark) - radiusRetransmissions,
            count("half-open IKE_SA limit", in: nodeDaemon, since: nodeMark))
    }

    static func milliseconds(_ times: [Double]) -> String {
        let sorted = times.sorted()
        return String(
            format: "median %.0f ms (min %.0f, max %.0f)", sorted[sorted.count / 2] * 1000, sorted[0] * 1000,
            sorted[sorted.count - 1] * 1000)
    }

    private func measure() throws {
        var passwords: [(user: String, password: String)] = []
        let addStart = ContinuousClock.now
        for user in users {
            let password = RadiusGeneratedInputs.random()
            try inputs.addAccount(user, password: password, tier: "free", devices: 3, lab: lab)
            passwords.append((user, password))
        }
        Self.report("\(users.count) accounts added with `vpnprov accounts add` in \(Self.seconds(since: addStart)) s")
        let conf = try inputs.clientConf(accounts: passwords)
        for index in lab.clients.indices { try lab.client(index).loadAllCleanly(confFile: conf) }
        let client = try lab.client(0)
        let nodeDaemon = try lab.nodeDaemon(node.name)

        // (a) serial: initiate, CHILD_SA up, terminate; one account after the other
        let empty = try serialLogins("serial", client: client, node: nodeDaemon)
        // (a') the same with a large account base in the database (VPNPROV_BENCHMARK_FILL=N: N more accounts, and
        // N/10 open sessions of theirs on other nodes)
        if let fill = Int(ProcessInfo.processInfo.environment["VPNPROV_BENCHMARK_FILL"] ?? ""), fill > 0 {
            let fillStart = ContinuousClock.now
            try fillDatabase(fill)
            Self.report(
                "database filled with \(fill) accounts (accounts import) and \(fill / 10) open sessions in "
                    + "\(Self.seconds(since: fillStart)) s")
            let full = try serialLogins("serial, \(fill) accounts", client: client, node: nodeDaemon)
            Self.report(
                String(
                    format: "median login with %d accounts: %.0f%% of the median on the small database", fill,
                    100 * Self.median(full) / Self.median(empty)))
        }

        // (b) concurrent: every account initiates at once, from one client address, then from several
        try concurrent("from one address") { _ in 0 }
        try concurrent("from \(lab.clients.count) addresses") { $0 % self.lab.clients.count }
    }

    /// Every account logs in and out in turn; returns each login's time to its CHILD_SA (seconds).
    private func serialLogins(_ label: String, client: Charon, node nodeDaemon: Charon) throws -> [Double] {
        let marks = (node: nodeDaemon.log.utf8.count, client: client.log.utf8.count)
        var upTimes: [Double] = []
        let serialStart = ContinuousClock.now
        for user in users {
            let start = ContinuousClock.now
            let up = try client.initiate(child: inputs.clientChild, ike: connection(user), timeout: .seconds(15))
            guard up.succeeded else { throw HarnessError("serial login of \(user) failed: \(up)") }
            upTimes.append(Self.seconds(ContinuousClock.now - start))
            let down = try client.terminate(ike: connection(user))
            guard down.succeeded else { throw HarnessError("terminate \(user): \(down)") }
        }
        let serial = Self.seconds(ContinuousClock.now - serialStart)
        Self.report(
            String(
                format:
                    "%@: %d logins (initiate, CHILD_SA up, terminate) in %.2f s = %.1f logins/s; to the CHILD_SA ",
                label, users.count, serial, Double(users.count) / serial) + Self.milliseconds(upTimes) + "; "
                + exchanges(
                    node: marks.node, clientRetransmissions: count("retransmit", in: client, since: marks.client)))
        try waitForOpenSessions(0)
        return upTimes
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// `count` more accounts through `vpnprov accounts import` (NT hashes), and open sessions of a tenth of
    /// them on other nodes, updated now (so they count), then ANALYZE as autovacuum would.
    private func fillDatabase(_ count: Int) throws {
        var lines: [String] = []
        lines.reserveCapacity(count)
        for i in 0..<count {
            let hash = (0..<4).map { _ in String(format: "%08x", UInt32.random(in: 0...UInt32.max)) }.joined()
            lines.append(#"{"username": "fill\#(i)", "tier": "free", "nt_hash": "\#(hash)"}"#)
        }
        _ = try inputs.importAccounts(lines)
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        _ = try postgres.psql(
            "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, acctupdatetime, "
                + "nasidentifier, class) SELECT '1-' || i, 'fill-' || i, 'fill' || (i * 10), "
                + "('198.51.100.' || (i % 200 + 1))::inet, now() - interval '1 hour', now(), 'other-' || (i % 200), "
                + "'free' FROM generate_series(0, \(count / 10 - 1)) AS i; ANALYZE")
    }

    /// Every account initiates at once, account `i` from client `client(i)`; then all are terminated.
    private func concurrent(_ label: String, client: (Int) -> Int) throws {
        let nodeDaemon = try lab.nodeDaemon(node.name)
        let clients = try users.indices.map { try lab.client(client($0)) }
        let used = Set(users.indices.map(client)).sorted()
        let clientMarks = try used.map { try lab.client($0).log.utf8.count }
        let nodeMark = nodeDaemon.log.utf8.count
        let outcomes = Outcomes()
        let group = DispatchGroup()
        let batchStart = ContinuousClock.now
        for (index, user) in users.enumerated() {
            group.enter()
            let (charon, ike, child) = (clients[index], connection(user), inputs.clientChild)
            Thread {
                let up = Result { try charon.initiate(child: child, ike: ike, timeout: .seconds(60)) }
                outcomes.set(user, up, seconds: Self.seconds(ContinuousClock.now - batchStart))
                group.leave()
            }.start()
        }
        group.wait()
        let batch = Self.seconds(ContinuousClock.now - batchStart)
        let established = try used.map { try lab.client($0).securityAssociations().count }.reduce(0, +)
        let clientRetransmissions = try zip(used, clientMarks).map {
            count("retransmit", in: try lab.client($0), since: $1)
        }.reduce(0, +)
        Self.report(
            String(
                format: "concurrent %@: %d logins initiated at once, all CHILD_SAs up in %.2f s = %.1f logins/s; "
                    + "%d IKE_SAs up; each to its CHILD_SA ",
                label, users.count, batch, Double(users.count) / batch, established)
                + Self.milliseconds(outcomes.times) + "; "
                + exchanges(node: nodeMark, clientRetransmissions: clientRetransmissions))
        let failed = outcomes.failures
        if let (user, why) = failed.min(by: { $0.key < $1.key }) {
            throw HarnessError("\(failed.count) concurrent logins failed, e.g. \(user): \(why)")
        }
        try waitForOpenSessions(users.count)
        for (index, user) in users.enumerated() { _ = try clients[index].terminate(ike: connection(user)) }
        try waitForOpenSessions(0)
    }
}

/// The concurrent logins' outcomes, filled in from their threads: failures by account, and every login's time.
private final class Outcomes: Sendable {
    private let state = Locked((failed: [String: String](), seconds: [Double]()))

    func set(_ user: String, _ up: Result<ProgramResult, any Error>, seconds: Double) {
        let why: String?
        switch up {
        case .success(let result): why = result.succeeded ? nil : "\(result)"
        case .failure(let error): why = "\(error)"
        }
        state.withLock {
            $0.failed[user] = why
            $0.seconds.append(seconds)
        }
    }

    var failures: [String: String] { state.withLock { $0.failed } }
    var times: [Double] { state.withLock { $0.seconds } }
}
