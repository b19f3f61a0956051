import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestHarness

/// The accounts scenario's fault steps (docs/accounts.md, "When the database or a RADIUS server is away"), in the
/// scenario's lab, where every node runs its RADIUS relay as generated:
/// - PostgreSQL killed (SIGKILL of its postmaster) while sessions end: each Stop is answered by the RADIUS server
///   that holds it in its buffer, and written to `radacct` once PostgreSQL is back (stop time, octets), one row per
///   session; the buffer replayed a second time (as after a restart in the middle of a file) changes no row; a
///   login in the meantime is refused as "accounts database unavailable", not as a wrong password;
/// - a record the database refuses while it answers is set aside, and the records behind it are written;
/// - the preferred RADIUS server killed (SIGKILL) and a session ends right after, its Stop the first message that
///   finds the server gone: the Stop reaches `radacct` through the other server, with the time the session ended
///   and its octets, once;
/// - a login while the preferred server is dead (killed just before it) succeeds at the first attempt, through the
///   other server, and what that costs is measured against a login before the kill;
/// - both RADIUS servers stopped while two sessions end, then started: both Stops reach `radacct`, with their
///   times, once each.
extension RadiusScenario {
    /// The accounts the fault steps use (device limit 1 each); `RadiusScenario.setUp` creates them.
    static let faultAccounts = ["lea", "max", "noa"]

    func accountingFaultSteps() {
        step(
            "PostgreSQL killed while sessions end: the Stops are buffered by the RADIUS server and in radacct once it is back, none doubled; a login meanwhile is refused as 'accounts database unavailable'"
        ) {
            try stopsSurviveADatabaseOutage()
        }
        step(
            "accounting the database refuses while it answers is set aside, and the records behind it are written"
        ) {
            try aRefusedRecordIsSetAside()
        }
        try? resetSessions()
        step(
            "\(preferred) killed and a session ends right after: its Stop, the first message after the kill, is in radacct through \(fallback) with its stop time and octets, once"
        ) {
            try aStopSurvivesAKilledServer()
        }
        try? resetSessions()
        step("a login while \(preferred) is dead succeeds at the first attempt, through \(fallback)") {
            try aLoginSucceedsWhileTheServerIsDead()
        }
        try? resetSessions()
        step("both RADIUS servers stopped while sessions end, then started: every Stop is in radacct, none doubled") {
            try stopsSurviveBothServersStopped()
        }
        try? resetSessions()
    }

    /// The users' rows as the outage left them: one line per row, its times as epoch seconds.
    private func accountingRows(_ users: [String]) throws -> String {
        let list = users.map { "'\($0)'" }.joined(separator: ", ")
        return try sql(
            "SELECT username, acctuniqueid, extract(epoch FROM acctstarttime)::bigint, "
                + "coalesce(extract(epoch FROM acctstoptime)::bigint, -1), coalesce(acctsessiontime, -1), "
                + "acctinputoctets, acctoutputoctets, coalesce(acctterminatecause, '') FROM radacct "
                + "WHERE username IN (\(list)) ORDER BY username, radacctid")
    }

    /// Clients 0 and 1 hold sessions of two accounts on the free node (IKEv2 EAP and IKEv1 XAuth), each having
    /// passed traffic; PostgreSQL is killed; both tunnels end, and a third account logs in. Then PostgreSQL starts
    /// again. Checked in order of weight: both Stops reach `radacct` by themselves, with the time the sessions ended
    /// (not the time of the replay), their octets, session time and cause, each session one row; the node had an
    /// Accounting-Response for each (so it kept nothing to lose); the login was refused as "accounts database
    /// unavailable", in the log and in the RADIUS answer (Reply-Message); the buffer replayed once more (as a
    /// FreeRADIUS restart in the middle of a file does) changes no row.
    func stopsSurviveADatabaseOutage() throws -> String {
        let users = Array(Self.faultAccounts.prefix(2))
        let versions = [2, 1]
        // Both servers alive again for the node's relay (earlier steps stopped the preferred one): its accounting
        // goes to the preferred server, whose buffer is looked at below.
        try resetRelay(free)
        for (index, user) in users.enumerated() {
            _ = try connectAndReachHostBehind(index, user, to: free, ikeVersion: versions[index])
            try wait("\(user)'s open radacct row") { try openSessions(user) == 1 }
        }
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        let radius = try lab.radius(preferred)
        let buffer = radius.stateDirectory.appendingPathComponent("accounting")
        let daemon = try lab.nodeDaemon(free.name)
        let nodeMark = daemon.log.utf8.count
        let policyMark = radius.policyLog.utf8.count
        postgres.crash()
        var restarted = false
        defer { if !restarted { try? postgres.restart() } }
        let outage = ContinuousClock.now
        let stoppedBefore = Date().timeIntervalSince1970
        for (index, _) in users.enumerated() { try disconnect(index, from: free, ikeVersion: versions[index]) }
        // Each Stop ends in an Accounting-Response or a timeout at the node (strongSwan sends it to one server).
        func outcomes() -> (answered: Int, lost: Int) {
            let log = NodeUnderTest.since(nodeMark, daemon.log)
            return (
                log.components(separatedBy: "received RADIUS Accounting-Response").count - 1,
                log.components(separatedBy: "Accounting-Request timed out").count - 1
                    + log.components(separatedBy: "receiving RADIUS message failed").count - 1
            )
        }
        try wait("the node's Stops answered or timed out", timeout: .seconds(15)) {
            let o = outcomes()
            return o.answered + o.lost >= users.count
        }
        let stopped = outcomes()

        // A login now, and the RADIUS answer itself as the node gets it (radclient with the node's secret, from
        // the node, so through its IPsec).
        let login = Self.faultAccounts[2]
        let refusalMarks = try radiusMarks()
        let clientMark = try lab.client(2).log.utf8.count
        let nodeLog = try expectRefused(2, login, to: free, ikeVersion: 2)
        let refusal = try radiusLog(since: refusalMarks)
        let clientSaw = NodeUnderTest.since(clientMark, try lab.client(2).log)
        let secretFile = try Scratch.makeDirectory("outage").appendingPathComponent("secret")
        try (try inputs.radiusSecret(free.name) + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let answer = try lab.radclient(
            inNamespace: try lab.node(free.name).namespace,
            arguments: [
                "-x", "-r", "2", "-t", "3", "-S", secretFile.path, "\(try lab.radiusMember(preferred).address):1812",
                "auth",
            ],
            input: "User-Name = \"\(login)\"\nUser-Password = \"\(passwords[login]!)\"\n"
                + "NAS-Identifier = \"\(free.name)\"\nMessage-Authenticator = 0x00\n")
        // What the buffer holds now (the reader has taken the file as its work file and retries its first
        // record), for the second replay below.
        let saved = try ((try? FileManager.default.contentsOfDirectory(atPath: buffer.path)) ?? []).sorted()
            .filter { $0.hasPrefix("detail") }
            .map { try String(contentsOf: buffer.appendingPathComponent($0), encoding: .utf8) }.joined()

        // PostgreSQL comes back: the buffer empties by itself.
        let back = ContinuousClock.now
        let backAt = Date().timeIntervalSince1970
        try postgres.restart()
        restarted = true
        let outageMs = Self.milliseconds(since: outage)
        let list = users.map { "'\($0)'" }.joined(separator: ", ")
        do {
            try wait("both Stops in radacct after the outage", timeout: .seconds(20)) {
                try sql("SELECT count(*) FROM radacct WHERE username IN (\(list)) AND acctstoptime IS NOT NULL")
                    == String(users.count)
            }
        } catch {
            throw HarnessError(
                "\(error): \(stopped.lost) of \(users.count) Stops got no Accounting-Response while the database was "
                    + "away; radacct:\n\(try accountingRows(users))")
        }
        let replayMs = Self.milliseconds(since: back)
        let rows = try accountingRows(users)
        let fields = rows.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false) }
        try check(fields.count == users.count, "one row per session expected:\n\(rows)")
        for row in fields {
            let stop = Double(row[3]) ?? -1
            try check(
                stop >= stoppedBefore - 1 && stop <= backAt + 1,
                "the Stop's time is not when the session ended (\(stoppedBefore)...\(backAt)):\n\(rows)")
            try check(
                (Int(row[5]) ?? 0) > 0 && (Int(row[6]) ?? 0) > 0 && (Int(row[4]) ?? -1) >= 0
                    && row[7] == "User-Request",
                "a Stop without its octets, session time or cause:\n\(rows)")
        }
        try check(
            stopped.lost == 0, "\(stopped.lost) of \(users.count) Stops got no Accounting-Response at the node")
        let policy = NodeUnderTest.since(policyMark, radius.policyLog)
        let buffered =
            policy.components(separatedBy: "Accounting buffered (not taken by the accounts database)").count - 1
        try check(buffered == users.count, "\(buffered) 'Accounting buffered' lines:\n\(policy.suffix(1500))")
        try check(
            refusal.contains("Login incorrect (accounts database unavailable): [\(login)]"),
            "the login during the outage is not refused as 'accounts database unavailable':\n\(refusal.suffix(1500))")
        try check(
            answer.output.contains("Access-Reject") && answer.output.contains("accounts database unavailable"),
            "the RADIUS answer during the outage: \(answer)")

        // The same records replayed again: no row changes, none is added.
        let replay = try replayAgain(saved, into: buffer)
        let after = try accountingRows(users)
        try check(after == rows, "a second replay changed radacct:\nbefore:\n\(rows)\nafter:\n\(after)")
        // What the client saw of the refusal: strongSwan's EAP failure, as for any refusal (docs/accounts.md).
        let seen = clientSaw.split(separator: "\n").filter {
            $0.contains("parsed IKE_AUTH response") || $0.contains("EAP_FAILURE") || $0.contains("N(AUTH_FAILED)")
        }.map { $0.split(separator: "]", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
        return "outage \(outageMs) ms; \(buffered) Stops buffered and answered, in radacct \(replayMs) ms after "
            + "PostgreSQL was back; replayed again (\(replay)): radacct unchanged; the login meanwhile: "
            + lines(refusal, containing: "Login incorrect").split(separator: "Auth: ").last.map(String.init)!
            + "; node: " + lines(nodeLog, containing: "RADIUS authentication")
            + "; client: " + seen.joined(separator: " / ")
    }

    /// Three accounting records from the free node (its secret, from its namespace, through its IPsec), with the
    /// database up: a Start that radacct refuses (a CHECK constraint the test adds, as an operator's own schema
    /// change or a failing trigger would), then another session's Start and Stop. The first is answered (buffered:
    /// the database did not take it), the replay sets it aside in `refused/` with one log line, and the two behind
    /// it reach radacct: one record the database will never take does not hold the buffer back.
    func aRefusedRecordIsSetAside() throws -> String {
        let radius = try lab.radius(preferred)
        let buffer = radius.stateDirectory.appendingPathComponent("accounting")
        let policyMark = radius.policyLog.utf8.count
        let secretFile = try Scratch.makeDirectory("refused").appendingPathComponent("secret")
        try (try inputs.radiusSecret(free.name) + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        func record(_ status: String, user: String, session: String) -> String {
            "Acct-Status-Type = \(status)\nUser-Name = \(user)\nAcct-Session-Id = \"\(session)\"\n"
                + "NAS-Identifier = \"\(free.name)\"\nNAS-IP-Address = \(free.address)\nNAS-Port = 9\n"
        }
        _ = try sql("ALTER TABLE radacct ADD CONSTRAINT vpnp_test_refuses CHECK (username <> 'refused') NOT VALID")
        defer { _ = try? sql("ALTER TABLE radacct DROP CONSTRAINT vpnp_test_refuses") }
        var answered = 0
        for request in [
            record("Start", user: "\"refused\"", session: "refused-1"),
            record("Start", user: "\"oskar\"", session: "r-2"),
            record("Stop", user: "\"oskar\"", session: "r-2"),
        ] {
            let result = try lab.radclient(
                inNamespace: try lab.node(free.name).namespace,
                arguments: [
                    "-r", "2", "-t", "3", "-S", secretFile.path, "\(try lab.radiusMember(preferred).address):1813",
                    "acct",
                ],
                input: request)
            if result.output.contains("Accounting-Response") { answered += 1 }
        }
        try check(answered == 3, "\(answered) of 3 records answered:\n\(radius.log.suffix(2500))")
        try wait("oskar's Stop in radacct", timeout: .seconds(15)) {
            try sql("SELECT count(*) FROM radacct WHERE username = 'oskar' AND acctstoptime IS NOT NULL") == "1"
        }
        let refused = buffer.appendingPathComponent("refused")
        func kept() -> String {
            ((try? FileManager.default.contentsOfDirectory(atPath: refused.path)) ?? []).compactMap {
                try? String(contentsOf: refused.appendingPathComponent($0), encoding: .utf8)
            }.joined()
        }
        do {
            try wait("the refused record set aside", timeout: .seconds(15)) {
                try kept().contains("refused-1")
                    && FileManager.default.contentsOfDirectory(atPath: buffer.path).allSatisfy {
                        !$0.hasPrefix("detail")
                    }
            }
        } catch {
            throw HarnessError("\(error): refused/ holds:\n\(kept())\nlog:\n\(radius.log.suffix(2000))")
        }
        let policy = NodeUnderTest.since(policyMark, radius.policyLog)
        let line = lines(policy, containing: "set aside")
        try check(!line.isEmpty, "no 'set aside' line:\n\(policy.suffix(1500))")
        try check(
            try sql("SELECT count(*) FROM radacct WHERE acctsessionid = 'refused-1'") == "0",
            "the refused record has a row")
        _ = try sql("DELETE FROM radacct WHERE username = 'oskar'")
        return line.split(separator: "Acct: ").last.map(String.init) ?? line
    }

    /// Writes `saved` (the buffer's records as the outage left them, before any was marked done) into the
    /// buffer as a new file, as a FreeRADIUS restart in the middle of a file leaves records to be replayed
    /// again, and waits until the replay has consumed it; returns how many records and how long.
    private func replayAgain(_ saved: String, into buffer: URL) throws -> String {
        let records = saved.components(separatedBy: "Acct-Status-Type").count - 1
        try check(records > 0, "the buffer held no record")
        let file = buffer.appendingPathComponent("detail-19700101:00")
        try saved.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, 0o600)
        let start = ContinuousClock.now
        try wait("the second replay", timeout: .seconds(20)) {
            try FileManager.default.contentsOfDirectory(atPath: buffer.path).allSatisfy { !$0.hasPrefix("detail") }
        }
        return "\(records) records, \(Self.milliseconds(since: start)) ms"
    }

    /// The newest radacct row id: the rows a step makes are those above it.
    private func lastRow() throws -> Int { Int(try sql("SELECT coalesce(max(radacctid), 0) FROM radacct")) ?? 0 }

    /// The rows after `row` of `users`, as `accountingRows` shows them, and checked: one per session, each closed
    /// with its octets, session time and cause, at a time between `from` and `to` (Unix seconds): when the session
    /// ended, not when its Stop reached the database.
    private func checkStops(after row: Int, of users: [String], endedBetween from: Double, and to: Double) throws
        -> String
    {
        let list = users.map { "'\($0)'" }.joined(separator: ", ")
        let rows = try sql(
            "SELECT username, acctuniqueid, extract(epoch FROM acctstarttime)::bigint, "
                + "coalesce(extract(epoch FROM acctstoptime)::bigint, -1), coalesce(acctsessiontime, -1), "
                + "acctinputoctets, acctoutputoctets, coalesce(acctterminatecause, '') FROM radacct "
                + "WHERE radacctid > \(row) AND username IN (\(list)) ORDER BY username, radacctid")
        let fields = rows.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false) }
        try check(fields.count == users.count, "one row per session expected:\n\(rows)")
        try check(Set(fields.map { $0[1] }).count == users.count, "a session has two rows:\n\(rows)")
        for row in fields {
            let stop = Double(row[3]) ?? -1
            try check(
                stop >= from - 1 && stop <= to + 1,
                "the Stop's time is not when the session ended (\(Int(from))...\(Int(to))):\n\(rows)")
            try check(
                (Int(row[5]) ?? 0) > 0 && (Int(row[6]) ?? 0) > 0 && (Int(row[4]) ?? -1) >= 0
                    && row[7] == "User-Request",
                "a Stop without its octets, session time or cause:\n\(rows)")
        }
        return rows
    }

    /// noa's session on the free node is up (its Start in radacct, so nothing waits in the node's relay); the
    /// preferred server is killed (SIGKILL: no answer, no goodbye) and the session ends at once: its Stop is the
    /// first message after the kill. The node's charon gets its answer from its relay at once; the relay sends the
    /// Stop to the dead server, gets no answer, and sends it again to the other one. The Stop must be in radacct
    /// with the time the session ended (not when it arrived) and its octets, and the session must have one row.
    func aStopSurvivesAKilledServer() throws -> String {
        let user = Self.faultAccounts[2]
        try resetRelay(free)
        let first = try lastRow()
        loginBeforeTheKill = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2).milliseconds
        try wait("\(user)'s open radacct row") { try openSessions(user) == 1 }
        let daemon = try lab.nodeDaemon(free.name)
        let relay = try lab.relay(free.name)
        let mark = daemon.log.utf8.count
        let relayMark = relay.logMark
        let rad = try lab.radius(preferred)
        rad.kill()
        let endedAt = Date().timeIntervalSince1970
        let killed = ContinuousClock.now
        try disconnect(0, from: free, ikeVersion: 2)
        let since = { NodeUnderTest.since(mark, daemon.log) }
        try wait("the relay's answer to the Stop", timeout: .seconds(10)) {
            since().contains("received RADIUS Accounting-Response from server 'relay'")
        }
        let answeredMs = Self.milliseconds(since: killed)
        do {
            try wait("\(user)'s Stop in radacct", timeout: .seconds(25)) { try openSessions(user) == 0 }
        } catch {
            throw HarnessError("\(error); relay log:\n\(relay.log(since: relayMark).suffix(3000))")
        }
        let landedMs = Self.milliseconds(since: killed)
        let rows = try checkStops(after: first, of: [user], endedBetween: endedAt, and: endedAt + 1)
        try check(
            !since().contains("timed out") && !since().contains("RADIUS message failed"),
            "the node saw a RADIUS timeout:\n\(lines(since(), containing: "RADIUS"))")
        let stop = rows.split(separator: "|").dropFirst(3).prefix(4).joined(separator: "|")
        return "the node's Stop answered by its relay \(answeredMs) ms after the kill, in radacct after "
            + "\(landedMs) ms with its stop time and octets (\(stop)); relay: "
            + lines(relay.log(since: relayMark), containing: "zombie")
    }

    /// Right after the previous step (the preferred server killed, only accounting sent since: the relay has not
    /// asked the dead server about a login yet), an account logs in on the free node: the relay's first request goes
    /// to the dead server, which it gives up on after its response window; charon's retransmission goes to the
    /// other server. The login must succeed at the first attempt and reach the host behind; what it took beyond a
    /// login with both servers up (the previous step's, or one made here first) is what the dead server cost.
    func aLoginSucceedsWhileTheServerIsDead() throws -> String {
        let rad = try lab.radius(preferred)
        defer {
            try? rad.start()
            try? resetRelay(free)
        }
        let user = Self.faultAccounts[2]
        if rad.isRunning || loginBeforeTheKill == nil {
            // the previous step did not get as far as its kill
            if !rad.isRunning { try rad.start() }
            try resetRelay(free)
            loginBeforeTheKill = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2).milliseconds
            try disconnect(0, from: free, ikeVersion: 2)
            rad.kill()
        }
        let before = loginBeforeTheKill ?? 0
        let marks = try radiusMarks()
        let daemon = try lab.nodeDaemon(free.name)
        let mark = daemon.log.utf8.count
        let dead = try connect(0, user, to: free, ikeVersion: 2)
        let nodeLog = NodeUnderTest.since(mark, daemon.log)
        try check(
            dead.succeeded, "the first attempt after the kill failed: \(dead.result)\nnode:\n\(nodeLog.suffix(2000))")
        let ping = try lab.pingHostBehind(fromClient: 0, source: dead.virtualIP!)
        try check(ping.succeeded, "the host behind \(free.name) is unreachable: \(ping)")
        let fallbackLog = try lab.radius(fallback).log(since: marks[fallback] ?? 0)
        try check(fallbackLog.contains("Login OK: [\(user)]"), "\(fallback) did not accept \(user):\n\(fallbackLog)")
        try disconnect(0, from: free, ikeVersion: 2)
        let retransmits = nodeLog.components(separatedBy: "retransmit ").count - 1
        return "first attempt connected in \(dead.milliseconds) ms (charon sent \(retransmits) RADIUS retransmissions "
            + "to its relay); with both servers up \(before) ms: the dead server cost \(dead.milliseconds - before) ms"
    }

    /// lea (IKEv2) and max (IKEv1 XAuth) have sessions on the free node; both RADIUS servers are stopped, both
    /// sessions end (charon gets its answers from its relay), the relay finds no server for the Stops and keeps them
    /// in its buffer on the node's disk; then both servers start again. Both Stops must reach radacct by themselves, with the times the sessions ended, once
    /// each.
    func stopsSurviveBothServersStopped() throws -> String {
        let users = Array(Self.faultAccounts.prefix(2))
        let versions = [2, 1]
        try resetRelay(free)
        let first = try lastRow()
        for (index, user) in users.enumerated() {
            _ = try connectAndReachHostBehind(index, user, to: free, ikeVersion: versions[index])
            try wait("\(user)'s open radacct row") { try openSessions(user) == 1 }
        }
        let servers = try inputs.radiusServers.map { try lab.radius($0.name) }
        let relay = try lab.relay(free.name)
        let relayMark = relay.logMark
        let daemon = try lab.nodeDaemon(free.name)
        let mark = daemon.log.utf8.count
        DispatchQueue.concurrentPerform(iterations: servers.count) { servers[$0].stop() }
        var started = false
        defer { if !started { for server in servers { try? server.start() } } }
        let outage = ContinuousClock.now
        let endedFrom = Date().timeIntervalSince1970
        for (index, _) in users.enumerated() { try disconnect(index, from: free, ikeVersion: versions[index]) }
        let endedTo = Date().timeIntervalSince1970
        try wait("the relay's answers to both Stops", timeout: .seconds(10)) {
            NodeUnderTest.since(mark, daemon.log).components(
                separatedBy: "received RADIUS Accounting-Response from server 'relay'"
            ).count - 1 >= users.count
        }
        // Both Stops are on the node's disk: no server answered them.
        let buffer = relay.stateDirectory.appendingPathComponent("accounting")
        func buffered() -> String {
            ((try? FileManager.default.contentsOfDirectory(atPath: buffer.path)) ?? []).filter {
                $0.hasPrefix("detail")
            }.compactMap { try? String(contentsOf: buffer.appendingPathComponent($0), encoding: .utf8) }.joined()
        }
        do {
            try wait("both Stops in the relay's buffer", timeout: .seconds(10)) {
                buffered().components(separatedBy: "Acct-Status-Type = Stop").count - 1 >= users.count
            }
        } catch {
            throw HarnessError("\(error); relay log:\n\(relay.log(since: relayMark).suffix(3000))")
        }
        let saved = buffered()
        let list = users.map { "'\($0)'" }.joined(separator: ", ")
        let during = try sql("SELECT count(*) FROM radacct WHERE username IN (\(list)) AND acctstoptime IS NULL")
        try check(during == String(users.count), "open sessions while both servers were down: \(during)")
        let outageMs = Self.milliseconds(since: outage)
        let back = ContinuousClock.now
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: servers.count) { i in
            do { try servers[i].start() } catch { failures.withLock { $0.append("\(error)") } }
        }
        started = true
        if let failure = failures.withLock({ $0.first }) { throw HarnessError(failure) }
        do {
            try wait("both Stops in radacct after the outage", timeout: .seconds(30)) {
                try sql("SELECT count(*) FROM radacct WHERE username IN (\(list)) AND acctstoptime IS NULL") == "0"
            }
        } catch {
            throw HarnessError("\(error); relay log:\n\(relay.log(since: relayMark).suffix(3000))")
        }
        let landedMs = Self.milliseconds(since: back)
        let rows = try checkStops(after: first, of: users, endedBetween: endedFrom, and: endedTo)
        // The same records sent on once more, as after a relay that stopped between a server's answer and marking
        // them done: no row changes, none is added.
        let replay = try replayAgain(saved, into: buffer)
        let after = try checkStops(after: first, of: users, endedBetween: endedFrom, and: endedTo)
        try check(after == rows, "sending the records again changed radacct:\nbefore:\n\(rows)\nafter:\n\(after)")
        return "both servers down \(outageMs) ms; both Stops answered by the relay and kept in its buffer, in radacct "
            + "\(landedMs) ms after the servers started, with their stop times, one row each; sent again (\(replay)): "
            + "radacct unchanged"
    }
}
