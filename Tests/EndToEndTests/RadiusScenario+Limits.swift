import Foundation
import Testing
import VPNProvSupport
import VPNProvTestHarness

/// Concurrency and forgery: two devices side by side, parallel logins against a limit, colliding account
/// names, accounting forged by another node.
extension RadiusScenario {
    /// Device limit 2, parallel logins, identity collisions, forged accounting.
    func concurrencySteps() {
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
    }

    /// gina (device limit 2) on client 0, then on client 1: client 1's INITIAL_CONTACT must not end client 0's
    /// tunnel (`unique = never` on RADIUS connections), and traffic flows through both.
    func twoDevicesCoexist() throws -> String {
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
    func parallelLoginsHoldTheLimit() throws -> String {
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
        let collected = Locked<[Int: Bool]>([:])
        let child = inputs.clientChild
        let marks = try radiusMarks()
        DispatchQueue.concurrentPerform(iterations: clients.count) { i in
            let ok = (try? clients[i].initiate(child: child, ike: ike, timeout: Self.timeout))?.succeeded ?? false
            collected.withLock { $0[others[i]] = ok }
        }
        let results = collected.withLock { $0 }
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
    func identityCollisionsAreRefused() throws -> String {
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
    func forgedAccountingIsDropped() throws -> String {
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
        func send(_ attributes: String, tries: Int = 1) throws -> ProgramResult {
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
        let results = Locked<[Int: Result<ProgramResult, any Error>]>([:])
        let packets = forged.map(\.1)
        let lab = self.lab
        let namespace = try lab.node(pro.name).namespace
        let arguments = ["-r", "1", "-t", "2", "-S", secretFile.path, "\(server.address):1813", "acct"]
        DispatchQueue.concurrentPerform(iterations: packets.count) { i in
            let result = Result { try lab.radclient(inNamespace: namespace, arguments: arguments, input: packets[i]) }
            results.withLock { $0[i] = result }
        }
        let sent = results.withLock { $0 }
        for (i, (what, _)) in forged.enumerated() {
            guard let outcome = sent[i] else { throw HarnessError("\(what) was not sent") }
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
}
