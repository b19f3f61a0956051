import Foundation
import Glibc
import Testing
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestHarness

/// The accounts database as a pg_auto_failover cluster with the files vpnprov generated (docs/accounts.md, "A
/// replicated accounts database"): Debian's PostgreSQL 15 and pg_autoctl 2.0, a monitor and two data nodes in
/// network namespaces, certificate logins only. `vpnprov accounts` connects with the string it builds from the
/// inventory (every data node, read-write, the operator's certificate). Both RADIUS servers of the inventory run
/// their generated configuration (rad-a in the node's region, rad-b in the other), and the node runs as rolled out:
/// its charon (strongSwan 5.9, kernel-libipsec) with the generated eap-radius settings, its RADIUS relay (rad-a
/// first), its IPsec to both servers and its firewall; two Linux clients set up from the node's `ikev2-eap` entry
/// of the generated catalogue log in with EAP-MSCHAPv2 and reach a host behind the node.
///
/// The primary's postmaster is SIGKILLed while one client's tunnel is up and right after a batch of acknowledged
/// account changes: the tunnel stays (traffic to the host behind), the next `accounts add` waits out the failover
/// and succeeds (retried by the test as an app would, only after a failure that vpnprov reported). Once the monitor
/// has promoted the standby, the old primary's pg_autoctl is stopped (a host that is down) while an account is
/// added and logs in through the node, and `disable` of the logged-in account ends its tunnel on the node (a
/// Disconnect-Request) and refuses its next login; that session's accounting Stop lands exactly once. Then the old
/// primary's pg_autoctl runs again and the cluster settles by itself (the old primary rewound into a standby, or kept when its keeper
/// restarted it before the monitor acted), and every change that was acknowledged is on both data nodes.
@Suite struct AccountsClusterFailoverTests {
    @Test func theAccountsFollowThePrimaryThroughAFailoverAndLoseNothingAcknowledged() throws {
        for dependency in DatabaseClusterLab.dependencies
        where !FileManager.default.isExecutableFile(atPath: dependency) {
            throw HarnessError(
                "\(dependency) is missing (scripts/install-test-deps installs postgresql-15-auto-failover and pg-auto-failover-cli)"
            )
        }
        let dir = try Scratch.makeDirectory("accounts-cluster")
        defer { try? FileManager.default.removeItem(at: dir) }
        let lab = DatabaseClusterLab(dir: dir, radiusServers: 2, clients: 2)
        defer { lab.teardown() }
        try lab.setUp()
        let clock = ContinuousClock()
        let (inventory, out) = try lab.bringUp()
        func accounts(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> ProgramResult {
            try lab.accounts(arguments, inventory: inventory, timeout: timeout)
        }
        let a = lab.host("db-a")
        let b = lab.host("db-b")
        let password = dir.path + "/password"
        try "correct horse battery\n".write(toFile: password, atomically: true, encoding: .utf8)
        var acknowledged: [String] = []
        for i in 1...5 {
            let added = try accounts(["add", "user\(i)", "--tier", "free", "--password-file", password])
            #expect(added.succeeded, "\(added)")
            if added.succeeded { acknowledged.append("user\(i)") }
        }

        // The RADIUS servers with their generated configuration (their sql module names both data nodes,
        // read-write), the node and its clients. carol and solo (radclient) and tom (a client) may use one device
        // each; each logs in and its session's Start is accounted.
        let radiusStarted = clock.now
        try lab.startRadius(generated: out)
        try lab.startRelay(generated: out)
        try lab.startNode(generated: out)
        print("accounts cluster: RADIUS servers, relay, node and clients up in \(clock.now - radiusStarted)")
        for user in ["carol", "solo", "tom"] {
            let added = try accounts(["add", user, "--tier", "free", "--devices", "1", "--password-file", password])
            try #require(added.succeeded, "\(added)")
            acknowledged.append(user)
        }
        // A Linux client of an account: the node's ikev2-eap entry of the generated catalogue, as a swanctl.conf
        // (the device holds the deployment's CA, which the entry asks for).
        let catalogue =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: out + "/catalog/servers.json"))) as? [String: Any]
        let entry = try #require(
            (catalogue?["servers"] as? [[String: Any]])?.first { $0["id"] as? String == "node-a-ikev2-eap" })
        let ca = try Data(contentsOf: URL(fileURLWithPath: out + "/servers/node-a/swanctl/x509ca/ca.pem"))
        let tunnel = AccountKeyfileTranslator.connectionName
        /// Client `index` logs in as `account` (password `correct horse battery`); its virtual IP, or nil.
        func logIn(_ index: Int, _ account: String) throws -> (result: ProgramResult, virtualIP: String?) {
            let client = lab.clients[index]
            let setup = try AccountKeyfileTranslator.swanctl(
                entry: entry, account: account, password: "correct horse battery", caPEM: ca)
            _ = try client.loadAllCleanly(confFile: try setup.write(label: "account-\(account)").confFile)
            let result = try client.initiate(child: tunnel, ike: tunnel, timeout: .seconds(15))
            let vip = result.succeeded ? try client.virtualIPs(ike: tunnel).first { !$0.contains(":") } : nil
            if vip == nil { _ = try? client.terminate(ike: tunnel, timeout: .seconds(3)) }
            return (result, vip)
        }
        func reachesTheHostBehind(_ index: Int, from vip: String) throws -> Bool {
            try RadiusLab.pingHostBehind(from: lab.clientNamespaces[index], source: vip).succeeded
        }
        let radA = try #require(lab.radiusServers["rad-a"])
        let radB = try #require(lab.radiusServers["rad-b"])
        /// What a failed login left in both RADIUS servers' logs since `marks`, and in the node's.
        func why(_ marks: (a: Int, b: Int)) -> Comment {
            Comment(
                rawValue: "--- RADIUS:\n" + (radA.log(since: marks.a) + radB.log(since: marks.b)).suffix(2000)
                    + "\n--- node:\n" + (lab.node?.log.suffix(2000) ?? ""))
        }
        let marks = (a: radA.logMark, b: radB.logMark)
        let tom = try logIn(0, "tom")
        let tomVIP = try #require(tom.virtualIP, "tom's login through the node: \(tom.result)\n\(why(marks))")
        #expect(try reachesTheHostBehind(0, from: tomVIP), "tom's tunnel does not reach the host behind the node")
        // The node's relay asks the server of its own region.
        #expect(radA.log(since: marks.a).contains("Login OK: [tom]"), "rad-a did not accept tom")
        #expect(!radB.log(since: marks.b).contains("[tom]"), "rad-b was asked about tom")
        @Sendable func login(_ user: String, port: Int, timeout: Int = 3) throws -> ProgramResult {
            try lab.radclient(
                "auth",
                "User-Name = \"\(user)\"\nUser-Password = \"correct horse battery\"\nNAS-Identifier = \"node-a\"\n"
                    + "NAS-IP-Address = \(DatabaseClusterLab.nodeAddress)\nNAS-Port = \(port)\n"
                    + "Calling-Station-Id = \"device-\(port)\"\nMessage-Authenticator = 0x00\n",
                generated: out, timeout: timeout)
        }
        @Sendable func refused(_ r: ProgramResult) -> Bool { r.output.contains("Received Access-Reject") }
        @Sendable func accepted(_ r: ProgramResult) -> Bool { r.output.contains("Received Access-Accept") }
        func accounting(_ status: String, _ user: String, port: Int) throws -> ProgramResult {
            var record =
                "Acct-Status-Type = \(status)\nUser-Name = \"\(user)\"\nAcct-Session-Id = \"\(user)-1\"\n"
                + "NAS-Identifier = \"node-a\"\nNAS-IP-Address = \(DatabaseClusterLab.nodeAddress)\nNAS-Port = \(port)\n"
                + "Framed-IP-Address = 10.27.1.\(port)\nClass = \"free\"\n"
            if status == "Stop" { record += "Acct-Session-Time = 60\nAcct-Terminate-Cause = User-Request\n" }
            return try lab.radclient("acct", record, generated: out, timeout: 5)
        }
        func sessions(_ user: String) throws -> String {
            try lab.psql(
                lab.primary() ?? a, database: "accounts",
                "SELECT count(*) || '/' || count(acctstoptime) FROM radacct WHERE username = '\(user)'"
            ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for (user, port) in [("carol", 1), ("solo", 2)] {
            let first = try login(user, port: port)
            #expect(accepted(first), "\(user): \(first)")
            let start = try accounting("Start", user, port: port)
            #expect(start.output.contains("Received Accounting-Response"), "\(start)")
        }
        try lab.wait(for: "the three Starts in radacct", timeout: .seconds(10)) {
            try sessions("carol") == "1/0" && sessions("solo") == "1/0" && sessions("tom") == "1/0"
        }
        // A refusal for the device limit (the policy logs it), not for any other reason.
        func refusedForTheLimit(_ user: String, port: Int) throws -> Bool {
            guard let radius = lab.radius else { throw HarnessError("rad-a is not running") }
            let mark = radius.logMark
            let r = try login(user, port: port)
            let log = radius.log(since: mark)
            return refused(r) && log.contains("Multiple logins")
        }
        #expect(try refusedForTheLimit("solo", port: 12), "solo's second device before the failover")

        // SIGKILL of the primary's postmaster, tom's tunnel up: pg_auto_failover fails over to db-b.
        let postmaster = try #require(lab.postmasterPid(a))
        let killed = clock.now
        let radiusSinceTheKill = try #require(lab.radius).logMark
        Glibc.kill(postmaster, SIGKILL)
        #expect(try reachesTheHostBehind(0, from: tomVIP), "tom's tunnel lost its traffic when the primary died")
        // carol's session ends while the database is failing over: rad-a answers and buffers the Stop if it cannot
        // write it.
        let stop = try accounting("Stop", "carol", port: 1)
        #expect(stop.output.contains("Received Accounting-Response"), "carol's Stop: \(stop)")
        let buffer = try #require(lab.radius).stateDirectory.appendingPathComponent("accounting").path
        let buffered = ((try? FileManager.default.contentsOfDirectory(atPath: buffer)) ?? []).contains {
            $0.hasPrefix("detail")
        }
        // Logins meanwhile, as the node's retries would come: the gap until the first one accepted again.
        struct Logins {
            var refused = 0
            var unanswered = 0
            var backAfter: Duration?
            var stop = false
        }
        let logins = Locked(Logins())
        // The probe ends at its first accepted login, after 40 s, or when the test ends early.
        defer { logins.withLock { $0.stop = true } }
        let loginProbe = Thread {
            while clock.now - killed < .seconds(40), !logins.withLock({ $0.stop }) {
                let attempt = try? login("user2", port: 20, timeout: 2)
                let at = clock.now - killed
                let ok = attempt.map(accepted) ?? false
                let no = attempt.map(refused) ?? false
                logins.withLock { logins in
                    if ok { logins.backAfter = at } else if no { logins.refused += 1 } else { logins.unanswered += 1 }
                }
                if ok { return }
                usleep(200_000)  // a login every 0.2 s, not a busy loop
            }
        }
        loginProbe.start()
        // The app's retry: an attempt that fails (exit 3) was not acknowledged. Seen: the old primary's keeper
        // restarts its PostgreSQL before the monitor demotes it, `accounts add` commits there, the commit waits for
        // the standby being promoted and is then terminated ("committed locally, but might not have been
        // replicated"): vpnprov reports the failure, never a success, and the row is rewound away.
        var attempts: [ProgramResult] = []
        while clock.now - killed < .seconds(30) {
            let attempt = try accounts(["add", "during", "--tier", "free", "--password-file", password])
            attempts.append(attempt)
            if attempt.succeeded {
                acknowledged.append("during")
                break
            }
            #expect(attempt.exitCode == 3, "\(attempt.stderr)")
            if attempt.exitCode != 3 { break }
        }
        #expect(attempts.last?.succeeded == true, "\(attempts.map(\.stderr))")
        // vpnprov waits out the failover itself: only an attempt whose commit the failover cut off needs another.
        #expect(attempts.count <= 2, "\(attempts.map(\.stderr))")
        let writable = clock.now - killed
        print(
            "accounts cluster: 'accounts add' acknowledged \(writable) after the primary's postmaster was killed, "
                + "attempt \(attempts.count)")
        #expect(writable < .seconds(30))
        // The old primary kept away: once the monitor has promoted db-b (its goal wait_primary or primary), db-a's
        // pg_autoctl is stopped (it stops its PostgreSQL: a host that is down) until the account changes below are
        // done, so none of them can reach it. If the monitor kept db-a instead (its keeper had PostgreSQL running
        // again before the monitor's health check failed), there is no old primary to keep away.
        let promotionDeadline = clock.now + .seconds(20)
        var promoted = false
        while !promoted && clock.now < promotionDeadline {
            let goal = ((try? lab.states()) ?? [:])["db-b"]?.split(separator: "/").last
            promoted = goal == "wait_primary" || goal == "primary"
            if !promoted { Thread.sleep(forTimeInterval: 0.1) }
        }
        if promoted { lab.stop(a) }
        print(
            "accounts cluster: "
                + (promoted ? "db-b promoted, db-a stopped" : "db-a kept as the primary, nothing stopped")
                + " \(clock.now - killed) after the kill")
        // While the old primary is away: disable works.
        let disabled = try accounts(["disable", "user1"])
        #expect(disabled.succeeded, "\(disabled)")

        // RADIUS across the failover.
        try lab.wait(for: "a login accepted again", timeout: .seconds(45)) {
            logins.withLock { $0.backAfter != nil } || !loginProbe.isExecuting && loginProbe.isFinished
        }
        let tally = logins.withLock { "\($0.refused) refused, \($0.unanswered) unanswered within 2 s" }
        let radiusLog: String = lab.radius.map { String($0.log(since: radiusSinceTheKill).suffix(6000)) } ?? "(none)"
        let back = try #require(
            logins.withLock { $0.backAfter },
            "no login accepted within 40 s (\(tally)); rad-a's log since the kill:\n\(radiusLog)")
        print(
            "accounts cluster: logins accepted again \(back) after the kill "
                + "(before: \(logins.withLock { $0.refused }) refused, "
                + "\(logins.withLock { $0.unanswered }) unanswered within 2 s; a login every 0.2 s)")
        #expect(back < .seconds(30))
        // While the old primary is away, once logins are answered again: an account added now logs in through the
        // node and reaches the host behind it; tom's tunnel still carries traffic; disabling tom ends his tunnel on
        // the node (vpnprov's Disconnect-Request, through the node's IPsec from rad-a's host) and refuses his next
        // login.
        let newbie = try accounts(["add", "newbie", "--tier", "free", "--devices", "1", "--password-file", password])
        #expect(newbie.succeeded, "\(newbie)")
        if newbie.succeeded { acknowledged.append("newbie") }
        let newbieMarks = (a: radA.logMark, b: radB.logMark)
        let newbieAdded = clock.now
        let newbieLogin = try logIn(1, "newbie")
        let newbieLoginTook = clock.now - newbieAdded
        let newbieVIP = try #require(
            newbieLogin.virtualIP,
            "the new account's login through the node: \(newbieLogin.result)\n\(why(newbieMarks))")
        #expect(try reachesTheHostBehind(1, from: newbieVIP), "the new account does not reach the host behind")
        #expect(try reachesTheHostBehind(0, from: tomVIP), "tom's tunnel lost its traffic across the failover")
        #expect(
            try lab.nodeSessions(of: "tom").map(\.state) == ["ESTABLISHED"],
            "tom's IKE_SA on the node before the disable")
        let tomDisabled = try accounts(["disable", "tom"])
        #expect(tomDisabled.succeeded, "\(tomDisabled)")
        let disabledAt = clock.now
        try lab.wait(for: "tom's tunnel gone from the node", timeout: .seconds(10)) {
            try lab.nodeSessions(of: "tom").isEmpty
        }
        print(
            "accounts cluster: an account added \(newbieAdded - killed) after the kill logged in through the node in "
                + "\(newbieLoginTook); tom disabled \(disabledAt - killed) after the kill, his tunnel gone from the "
                + "node \(clock.now - disabledAt) after 'accounts disable'")
        let refusalMarks = (a: radA.logMark, b: radB.logMark)
        let tomAgain = try logIn(0, "tom")
        #expect(tomAgain.virtualIP == nil, "tom logged in again after being disabled: \(tomAgain.result)")
        let refusal = radA.log(since: refusalMarks.a) + radB.log(since: refusalMarks.b)
        #expect(
            refusal.contains("Login incorrect (account disabled): [tom]"),
            "the RADIUS servers' log of tom's refusal: \(refusal.suffix(1500))")
        // user1 had no session: the disable is seen by the next login, through the new primary.
        let afterDisable = try login("user1", port: 21)
        #expect(refused(afterDisable), "user1 disabled: \(afterDisable)")
        #expect(try refusedForTheLimit("solo", port: 12), "solo's second device after the failover")
        // The old primary comes back.
        var lifted: Duration?
        if promoted {
            try lab.restart(a)
            lifted = clock.now - killed
        }
        // carol's Stop lands exactly once (written at once or replayed from rad-a's buffer), then carol may log in.
        // Exactly once: one row, closed, counted after rad-a's buffer is empty (a replayed duplicate of a Stop that
        // was also written would have come by then).
        func bufferedFiles(in directory: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("detail") }
        }
        do {
            try lab.wait(for: "carol's Stop in radacct and rad-a's buffer empty", timeout: .seconds(30)) {
                try bufferedFiles(in: buffer).isEmpty && sessions("carol") == "1/1"
            }
        } catch {
            // What the accounting path did since the kill, to tell a Stop lost from a slow replay.
            let rows = (try? sessions("carol")) ?? "unknown"
            let log = try #require(lab.radius).log(since: radiusSinceTheKill).suffix(4000)
            Issue.record(
                "carol's rows (all/closed) \(rows), rad-a's buffer \(bufferedFiles(in: buffer)); rad-a since the kill:\n\(log)"
            )
            throw error
        }
        #expect(try sessions("carol") == "1/1")
        print(
            "accounts cluster: carol's Stop "
                + (buffered ? "was buffered on rad-a and replayed" : "was written at once"))
        // tom's Stop (his tunnel ended by the disable) lands exactly once: one row, closed, counted after the
        // node's relay and rad-a have nothing buffered.
        let relayBuffer = try #require(lab.relay).stateDirectory.appendingPathComponent("accounting").path
        try lab.wait(for: "tom's Stop in radacct, nothing buffered", timeout: .seconds(30)) {
            try [buffer, relayBuffer].flatMap(bufferedFiles).isEmpty && sessions("tom") == "1/1"
        }
        #expect(try sessions("tom") == "1/1")
        let carolAgain = try login("carol", port: 3)
        #expect(accepted(carolAgain), "carol after her Stop: \(carolAgain)")
        print("accounts cluster: the RADIUS half took \(clock.now - radiusStarted) in all")

        // The cluster settles by itself: pg_auto_failover either promoted db-b and rewound db-a into a standby, or
        // (seen when db-a's keeper had PostgreSQL running again before the monitor's health check failed) kept
        // db-a as the primary. Either way one primary and one synchronous standby, nothing done by hand.
        var settled: [String: String] = [:]
        try lab.wait(for: "one primary and one standby again", timeout: .seconds(90)) {
            settled = try lab.states()
            return Set(settled.values) == ["primary/primary", "secondary/secondary"]
        }
        print(
            "accounts cluster: settled \(clock.now - killed) after the kill"
                + (lifted.map { " (db-a stopped until \($0) after it)" } ?? "") + ", "
                + (settled["db-a"] == "secondary/secondary"
                    ? "db-b promoted, db-a a standby" : "db-a still the primary"))
        // Every acknowledged change is on the primary and on the standby.
        let list = try accounts(["list", "--format", "json"])
        try #require(list.succeeded, "\(list)")
        for user in acknowledged { #expect(list.stdout.contains("\"\(user)\""), "\(user) lost: \(list.stdout)") }
        for host in [a, b] {
            let rows = try lab.psql(
                host, database: "accounts",
                "SELECT string_agg(username, ',' ORDER BY username) FROM radusergroup")
            #expect(
                rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                    == acknowledged.sorted().joined(separator: ","),
                "\(host.name): \(rows)")
            let marks = try lab.psql(
                host, database: "accounts",
                "SELECT string_agg(username, ',' ORDER BY username) FROM radcheck WHERE attribute = 'Auth-Type'")
            #expect(
                marks.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "tom,user1", "\(host.name): \(marks)")
        }
    }
}
