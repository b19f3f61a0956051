import Foundation
import Testing
import VPNProvTestHarness

/// What `vpnprov accounts` does to live sessions and logins: disabling, device limits, stale sessions, import,
/// a restarted node, set-password, and the one log line of each refusal.
extension RadiusScenario {
    /// A disabled account is refused; disabling one with a live tunnel ends it (a Disconnect-Request).
    func disableSteps() {
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
    }

    /// A device limit of 1 refuses a second device; a session whose Stop was lost counts only while fresh.
    func deviceLimitAndStaleSteps() {
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
    }

    /// `accounts import` (a password and an NT hash); a node's charon killed and started again; `set-password`.
    func importAndPasswordSteps() {
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
    }

    /// Every refusal is one 'Login incorrect (reason)' line of the RADIUS log, an accepted login one 'Login OK'.
    func refusalLogSteps() {
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
    }
}
