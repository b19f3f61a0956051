import Foundation
import Testing
import VPNProvTestHarness

/// Logins: an account over EAP and XAuth with its accounting rows, a '+' in a name, the node PSK alone refused,
/// the seed app's code path, the tier policy and tier changes.
extension RadiusScenario {
    /// An account reaches the host behind the free node over IKEv2 EAP-MSCHAPv2 and IKEv1 XAuth; its accounting
    /// Start and Stop rows; a '+' in an account name.
    func loginSteps() {
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
    }

    /// The node PSK alone opens no tunnel; the seed app's four-field setups reach the host behind.
    func pskAndSeedAppSteps() {
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
    }

    /// The pro node refuses a free account (RADIUS's policy, and its own `groups`); `set-tier` up and down.
    func tierSteps() {
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
    }
}
