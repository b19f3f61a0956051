import Foundation
import Glibc
import VPNProvTestSupport

/// The accounts scenario's fault steps (docs/accounts.md, "When the database or a RADIUS server is away"), in the
/// scenario's lab:
/// - PostgreSQL killed (SIGKILL of its postmaster) while sessions end: each Stop is answered by the RADIUS server
///   that holds it in its buffer, and written to `radacct` once PostgreSQL is back (stop time, octets), one row per
///   session; the buffer replayed a second time (as after a restart in the middle of a file) changes no row; a
///   login in the meantime is refused as "accounts database unavailable", not as a wrong password;
/// - a record the database refuses while it answers is set aside, and the records behind it are written;
/// - the preferred RADIUS server stopped while a session is up: the node's accounting moves to the other server
///   (the first message that finds it silent is an Interim-Update, whose timeout no longer ends the user's
///   tunnel), and the session's Stop is recorded.
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
            "\(preferred) stopped while a session is up: its accounting moves to \(fallback), the tunnel stays up, its Stop is recorded"
        ) {
            try accountingFailsOverToTheOtherServer()
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
        // Both servers reachable again for the node (earlier steps stopped the preferred one): its accounting
        // goes to the preferred server, whose buffer is looked at below.
        try reloadSettings(free)
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

    /// `rad-1` (the preferred server) stopped while noa's session on the free node is up. noa's Access-Accept carries
    /// an Acct-Interim-Interval of 2 s (a `radreply` row, as a backend may write one), so the node soon sends an
    /// Interim-Update to the stopped server: it finds no answer, and the node counts the server as unreachable and
    /// sends what follows to the other one. The tunnel must stay up through that (strongSwan ends it by default,
    /// `accounting_close_on_timeout`), the next Interim-Update must be answered by the other server, and the session's
    /// Stop must be in radacct.
    func accountingFailsOverToTheOtherServer() throws -> String {
        let user = Self.faultAccounts[2]
        _ = try sql(
            "INSERT INTO radreply (username, attribute, op, value) VALUES ('\(user)', 'Acct-Interim-Interval', ':=', '2')"
        )
        defer { _ = try? sql("DELETE FROM radreply WHERE username = '\(user)'") }
        try reloadSettings(free)
        var attempt = try connect(0, user, to: free, ikeVersion: 2)
        // The RADIUS servers' database connections come back within a second of the database (the pool's
        // retry_delay); the login is tried again until then.
        let deadline = ContinuousClock.now + .seconds(10)
        while !attempt.succeeded && ContinuousClock.now < deadline {
            usleep(500_000)
            attempt = try connect(0, user, to: free, ikeVersion: 2)
        }
        try check(attempt.succeeded, "\(user) → \(free.name): \(attempt.result)")
        let first = try lab.pingHostBehind(fromClient: 0, source: attempt.virtualIP!)
        try check(first.succeeded, "ping to the host behind \(free.name): \(first)")
        try wait("\(user)'s open radacct row") { try openSessions(user) == 1 }
        let daemon = try lab.nodeDaemon(free.name)
        let rad = try lab.radius(preferred)
        let mark = daemon.log.utf8.count
        rad.stop()
        defer { try? rad.start() }
        let stoppedAt = ContinuousClock.now
        let since = { NodeUnderTest.since(mark, daemon.log) }
        // strongSwan names the servers by their sections (server1 = the preferred one).
        let silent = ["Accounting-Request timed out", "receiving RADIUS message failed"]
        do {
            try wait("an Interim-Update to \(preferred) without an answer", timeout: .seconds(15)) {
                let log = since()
                return silent.contains { log.contains($0) }
            }
            try wait("an Interim-Update answered by \(fallback)", timeout: .seconds(10)) {
                let log = since()
                guard let lost = silent.compactMap({ log.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound })
                else { return false }
                return log[lost.upperBound...].contains("received RADIUS Accounting-Response from server 'server2'")
            }
        } catch {
            throw HarnessError("\(error); node log:\n\(since().suffix(3000))")
        }
        let movedMs = Self.milliseconds(since: stoppedAt)
        try check(
            try hasTunnel(0, to: free, ikeVersion: 2),
            "the tunnel ended when an Interim-Update found no server:\n\(lines(since(), containing: "RADIUS timeout"))")
        let ping = try lab.pingHostBehind(fromClient: 0, source: attempt.virtualIP!)
        try check(ping.succeeded, "the tunnel no longer carries traffic: \(ping)")
        try disconnect(0, from: free, ikeVersion: 2)
        try wait("\(user)'s Stop in radacct") { try openSessions(user) == 0 }
        let row = try sql(
            "SELECT acctinputoctets > 0 AND acctoutputoctets > 0, acctterminatecause FROM radacct "
                + "WHERE username = '\(user)' ORDER BY radacctid DESC LIMIT 1")
        try check(row == "t|User-Request", "the Stop's row: \(row)")
        return "the first Interim-Update after the stop lost, the next answered by \(fallback) \(movedMs) ms after "
            + "it; tunnel up and passing traffic; Stop recorded (\(row)); node: "
            + lines(since(), containing: "timed out")
    }
}
