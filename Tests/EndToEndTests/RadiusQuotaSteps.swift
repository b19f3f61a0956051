import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestHarness

/// The accounts scenario's data-quota step (docs/accounts.md, "Data quotas"), in the scenario's lab:
/// - an account with its own quota of 4 MB (`accounts set-quota`) logs in to the free node, whose RADIUS server gives
///   it a 30 s Interim-Update interval (little is left), which the node schedules;
/// - real traffic (pings of 1400 bytes from its virtual IP to the host behind the node) uses the quota up; the node
///   reports it at the next Interim-Update, the RADIUS server sends the node a Disconnect-Request, and the tunnel is
///   gone within the stated bound: one Interim-Update interval and the Disconnect-Request's delivery after the
///   traffic crossed the quota;
/// - the next login is refused with the quota's own reason in the RADIUS log ("data quota reached: used N of
///   4000000 bytes until <reset>"), and the database contract's `vpn_usage` says `over`, as `accounts usage` does;
/// - the month's reset (the account's usage moved into the previous month) lets it in again, and so does a larger
///   quota of its own once the usage is back in this month; the tiers' quotas came from the inventory.
extension RadiusScenario {
    /// The account the quota step uses (device limit 1); `RadiusScenario.setUp` creates it.
    static let quotaAccount = "quinn"

    func dataQuotaSteps() {
        step(
            "data quota: traffic through the free node uses up a 4 MB quota, the session ends within the Interim-Update interval and a Disconnect-Request, the next login is refused for the quota; the month's reset and a larger quota let it in"
        ) {
            try quotaEndsTheSession()
        }
    }

    private func quotaEndsTheSession() throws -> String {
        let user = Self.quotaAccount
        let quota = 4_000_000
        // the tiers' quotas come from the inventory (accounts.quotas), written by `accounts migrate`
        try check(
            try sql("SELECT name || '=' || coalesce(data_quota::text, 'none') FROM vpn_tier ORDER BY rank")
                == "free=none\npro=1000000000000", "vpn_tier quotas")
        try check(
            try inputs.accountsOutput(["set-quota", user, "4MB"])
                == "account '\(user)': data quota 4 MB (4000000 bytes) per month\n", "set-quota")
        let marks = try radiusMarks()
        let daemon = try lab.nodeDaemon(free.name)
        let nodeMark = daemon.log.utf8.count
        let attempt = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2)
        guard let vip = attempt.virtualIP else { throw HarnessError("no virtual IP") }
        try wait("the node schedules Interim-Updates by the Access-Accept's interval") {
            NodeUnderTest.since(nodeMark, daemon.log).contains("scheduling RADIUS Interim-Updates every 30s")
        }
        // 2000 pings of 1400 bytes each way: about 5.7 MB of IP through the tunnel, more than the quota
        let client = try lab.client(0)
        let flood = try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", client.namespace, StrongSwanEnvironment.pingPath, "-n", "-q", "-f", "-c", "2000",
                "-s", "1400", "-w", "25", "-I", vip, RadiusLab.lanHostAddress,
            ], timeout: .seconds(30))
        let crossed = ContinuousClock.now
        try check(flood.stdout.contains("2000 received"), "the flood through the tunnel: \(flood)")
        // Bound: the session's Interim-Update interval (30 s) and the Disconnect-Request's delivery (5 s margin).
        try wait("the tunnel ended by the quota", timeout: .seconds(35)) {
            !(try hasTunnel(0, to: free, ikeVersion: 2))
        }
        let ended = Self.milliseconds(since: crossed)
        let log = try radiusLog(since: marks)
        try check(
            log.contains("Disconnect (data quota reached): [\(user)]"),
            "no quota Disconnect in the RADIUS log: \(log.suffix(1500))")
        try check(
            NodeUnderTest.since(nodeMark, daemon.log).contains("received RADIUS DAE Disconnect-Request for \(user)"),
            "the node got no Disconnect-Request")
        try wait("the session's Stop") { try openSessions(user) == 0 }
        let used = Int(try sql("SELECT octets_in + octets_out FROM vpn_usage('\(user)')")) ?? 0
        try check(used >= quota, "vpn_usage counts \(used) bytes")
        try check(try sql("SELECT over FROM vpn_usage('\(user)')") == "t", "vpn_usage says over")
        let usage = try inputs.accountsOutput(["usage", user, "--format", "json"])
        let row =
            ((try JSONSerialization.jsonObject(with: Data(usage.utf8)) as? [String: Any])?["usage"] as? [[String: Any]])?
            .first
        try check(
            row?["over"] as? Bool == true && row?["remaining"] as? Int == 0 && row?["quota"] as? Int == quota
                && row?["quotaSource"] as? String == "account", "accounts usage: \(usage)")

        // The next login: refused with the quota's reason (the client sees only an authentication failure).
        let refusedMarks = try radiusMarks()
        let refused = try expectRefused(0, user, to: free, ikeVersion: 2)
        let reason = lines(try radiusLog(since: refusedMarks), containing: "Login incorrect")
        try check(
            reason.contains("Login incorrect (data quota reached: used \(used) of \(quota) bytes until ")
                && reason.contains("[\(user)]"), "the refusal's reason: \(reason)")
        try check(refused.contains("Access-Reject"), "the node's view: \(refused.suffix(800))")

        // The month's reset: the usage moved into the previous month.
        let lastMonth = "(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 day')::date"
        _ = try sql("UPDATE vpn_usage_day SET day = \(lastMonth) WHERE username = '\(user)'")
        _ = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2)
        try disconnect(0, from: free, ikeVersion: 2)
        try wait("the session's Stop") { try openSessions(user) == 0 }
        // The quota's worth used again this month: refused again; a larger quota of its own lets it in.
        _ = try sql(
            "INSERT INTO vpn_usage_day AS u (username, day, octets_in) VALUES ('\(user)', "
                + "(now() AT TIME ZONE 'UTC')::date, \(quota)) ON CONFLICT (username, day) "
                + "DO UPDATE SET octets_in = u.octets_in + EXCLUDED.octets_in")
        _ = try expectRefused(0, user, to: free, ikeVersion: 2)
        _ = try inputs.accountsOutput(["set-quota", user, "1GB"])
        _ = try connectAndReachHostBehind(0, user, to: free, ikeVersion: 2)
        try disconnect(0, from: free, ikeVersion: 2)
        return "session ended \(ended) ms after the traffic crossed the quota (bound 30 s + delivery); \(used) bytes "
            + "counted of \(quota); refused: \(reason.prefix(160))"
    }
}
