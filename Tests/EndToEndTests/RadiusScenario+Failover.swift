import Foundation
import Testing
import VPNProvTestHarness

/// The node's relay and the RADIUS servers: a wrong relay secret, the metrics collector, a stopped and a
/// silent server; and no password or secret in any log.
extension RadiusScenario {
    /// A wrong per-node secret in the relay, restored; the collector's Status-Server; the preferred server
    /// stopped, then silent.
    func failoverSteps() {
        step(
            "wrong per-node secret in the node's relay: refused; RADIUS names the node and the secret, the node sees a timeout"
        ) {
            try inputs.setNodeSecret(free.name, correct: false, lab: lab)
            let marks = try radiusMarks()
            // charon's Access-Request as the relay gets it (radclient with the relay's secret, on the node): a login
            // by charon ends the same way, after its three attempts (8.7 s).
            let file = try Scratch.makeDirectory("relay-secret").appendingPathComponent("secret")
            try (try inputs.relaySecret(free.name) + "\n").write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o600)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try lab.radclient(
                inNamespace: try lab.node(free.name).namespace,
                arguments: ["-r", "1", "-t", "3", "-S", file.path, "127.0.0.1:11812", "auth"],
                input: "User-Name = alice\nUser-Password = \"\(passwords["alice"]!)\"\nNAS-Identifier = \(free.name)\n"
                    + "NAS-IP-Address = \(free.address)\nMessage-Authenticator = 0x00\n")
            let log = try radiusLog(since: marks)
            let secretLine = log.split(separator: "\n").first {
                $0.contains("Shared secret is incorrect") && $0.contains(free.name)
            }
            try check(secretLine != nil, "no \"Shared secret is incorrect\" line naming \(free.name):\n\(log)")
            try check(
                !result.output.contains("Access-Accept") && !result.output.contains("Access-Reject"),
                "the relay answered: \(result)")
            return "no answer at the node; " + (secretLine.map(String.init) ?? "")
        }
        step("right secret restored → connects at the first attempt") {
            try inputs.setNodeSecret(free.name, correct: true, lab: lab)
            return try failoverAttempts("restored")
        }
        try? resetSessions()
        step("the node's metrics collector: both RADIUS servers answer its Status-Server; a stopped one does not") {
            try collectorRadiusStatus()
        }
        step("\(preferred) stopped → \(fallback) answers the first attempt") {
            try resetRelay(free)
            let rad = try lab.radius(preferred)
            rad.stop()
            defer {
                try? rad.start()
                try? resetRelay(free)
            }
            return try failoverAttempts("stopped")
        }
        try? resetSessions()
        step("\(preferred) silent (packets dropped) → \(fallback) answers the first attempt") {
            try resetRelay(free)
            let rad = try lab.radius(preferred)
            try rad.silence()
            defer {
                try? rad.unsilence()
                try? resetRelay(free)
            }
            return try failoverAttempts("silent", firstAttemptWithin: .seconds(6))
        }
        try? resetSessions()
    }

    /// No password in radpostauth, no password or node secret in any log.
    func leakSteps() {
        step("no password in radpostauth, no password or node secret in any log") {
            let rows = try sql("SELECT count(*) FROM radpostauth")
            let leaked = try sql("SELECT count(*) FROM radpostauth WHERE coalesce(pass, '') <> ''")
            try check(leaked == "0", "\(leaked) of \(rows) radpostauth rows hold a password")
            var logs = [
                "postgres": (lab.postgres).flatMap { try? String(contentsOfFile: $0.logPath, encoding: .utf8) } ?? ""
            ]
            for (name, server) in lab.radiusServers { logs["radius \(name)"] = server.allOutput }
            for (name, charon) in lab.nodeDaemons { logs["node \(name)"] = charon.log }
            for (name, charon) in lab.clientDaemons { logs[name] = charon.log }
            let secrets = Array(passwords.values) + inputs.secrets
            let found = logs.compactMap { name, text in
                let lines = text.split(separator: "\n").filter { line in secrets.contains { line.contains($0) } }
                // the line with the secret blanked out, so the message says where without leaking it
                return lines.isEmpty
                    ? nil
                    : "\(name): "
                        + lines.prefix(2).map { line in
                            secrets.reduce(String(line)) { $0.replacingOccurrences(of: $1, with: "<secret>") }
                        }.joined(separator: " | ")
            }.sorted()
            try check(found.isEmpty, "a password or secret appears in the logs of: \(found)")
            return "\(rows) radpostauth rows, \(logs.count) logs checked"
        }
    }

    /// The vpnprov_node role's metrics collector (docs/monitoring.md), run in the free node's namespace with the
    /// RADIUS servers of the node's relay (its generated proxy.conf) as the role installs them: `vpnprov_radius_up` is 1 for each server
    /// (RFC 5997 Status-Server, answered by FreeRADIUS through the node's IPsec to it), and 0 for the preferred
    /// one while it is stopped.
    func collectorRadiusStatus() throws -> String {
        guard let relay = try inputs.nodeRelayDirectory(free.name) else {
            return "skipped: the inputs have no generated RADIUS relay"
        }
        let settings = relay + "/proxy.conf"
        let dir = try Scratch.makeDirectory("collector")
        let config = dir.appendingPathComponent("monitoring.json")
        let servers = inputs.radiusServers.map {
            ["name": $0.name, "address": $0.address, "port": 1812] as [String: Any]
        }
        try JSONSerialization.data(withJSONObject: ["services": [:] as [String: String], "radius": servers])
            .write(to: config)
        let output = dir.appendingPathComponent("vpnprov.prom")
        let role = AnsibleTools.packageRoot.appendingPathComponent("templates/deploy/roles/vpnprov_node")
        let script = role.appendingPathComponent("files/vpnprov-strongswan-metrics")
        func status() throws -> String {
            // The role installs the collector's vici client beside it; here Python finds it in the role.
            let result = try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", try lab.node(free.name).namespace, "/usr/bin/env",
                    "PYTHONPATH=" + role.appendingPathComponent("module_utils").path, "/usr/bin/python3", script.path,
                    "--config",
                    config.path, "--output", output.path, "--socket", try lab.nodeDaemon(free.name).socketPath,
                    "--radius-settings", settings,
                ], timeout: .seconds(30))
            try check(result.succeeded, "collector: \(result)")
            let text = try String(contentsOf: output, encoding: .utf8)
            return text.split(separator: "\n").filter {
                $0.hasPrefix("vpnprov_radius_up{") || $0.hasPrefix("strongswan_up ")
                    || $0.hasPrefix("vpnprov_certificate_not_after_seconds{kind=\"node\"")
            }
            .joined(separator: ", ")
        }
        let both = try status()
        try check(
            both.contains("vpnprov_radius_up{server=\"\(preferred)\"} 1")
                && both.contains("vpnprov_radius_up{server=\"\(fallback)\"} 1") && both.contains("strongswan_up 1"),
            "both servers up: \(both)")
        // charon's own certificate, found by its key, on 5.9 and 6.0 alike (vici's has_privkey).
        try check(
            both.components(separatedBy: "vpnprov_certificate_not_after_seconds{kind=\"node\"").count == 2,
            "one node certificate: \(both)")
        let rad = try lab.radius(preferred)
        rad.stop()
        defer { try? rad.start() }
        let one = try status()
        try check(
            one.contains("vpnprov_radius_up{server=\"\(preferred)\"} 0")
                && one.contains("vpnprov_radius_up{server=\"\(fallback)\"} 1"), "\(preferred) stopped: \(one)")
        return "\(both) | \(preferred) stopped: \(one)"
    }

    /// alice → free node over IKEv2: the first attempt must connect (the node's relay moves a login its server does
    /// not answer to the next server) and reach the host behind; the fallback server must have answered it.
    /// `firstAttemptWithin`: what a silent server may cost the login at most.
    func failoverAttempts(_ what: String, firstAttemptWithin limit: Duration? = nil) throws -> String {
        let marks = try radiusMarks()
        let daemon = try lab.nodeDaemon(free.name)
        let mark = daemon.log.utf8.count
        let first = try connect(0, "alice", to: free, ikeVersion: 2)
        let nodeLog = NodeUnderTest.since(mark, daemon.log)
        try check(
            first.succeeded,
            "\(what): the first attempt failed (\(first.milliseconds) ms): \(first.result)\nnode:\n\(nodeLog.suffix(2000))"
        )
        if let limit {
            let ms = Int(limit.components.seconds) * 1000
            try check(
                first.milliseconds < ms, "\(what): the first attempt took \(first.milliseconds) ms (limit \(ms) ms)")
        }
        let ping = try lab.pingHostBehind(fromClient: 0, source: first.virtualIP!)
        try check(ping.succeeded, "\(what): host behind unreachable: \(ping)")
        try disconnect(0, from: free, ikeVersion: 2)
        let fallbackLog = try lab.radius(fallback).log(since: marks[fallback] ?? 0)
        if what != "restored" {
            try check(
                fallbackLog.contains("Login OK: [alice]"), "\(what): \(fallback) did not accept alice:\n\(fallbackLog)")
        }
        return "first attempt connected (\(first.milliseconds) ms, "
            + "\(nodeLog.components(separatedBy: "retransmit ").count - 1) RADIUS retransmissions to the relay)"
    }
}
