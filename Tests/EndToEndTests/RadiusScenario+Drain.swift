import Foundation
import VPNProvTestHarness

extension RadiusScenario {
    /// A drained node (`vpnprov accounts drain`, docs/operations.md "Draining a node"): the RADIUS policy refuses
    /// a new login there with its own reason, the live catalogue marks its entries, and `undrain` admits the
    /// login again. The policy is the same on both builds: proven on 5.9.
    func drainSteps() {
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
    }
}
