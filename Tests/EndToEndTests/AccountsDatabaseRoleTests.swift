import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// The generated `deploy/accounts-db.yml` and its role `vpnprov_accounts_db` (docs/accounts.md, "A replicated
/// accounts database") run by a real `ansible-playbook` over SSH to three hosts (`AccountsDatabaseRoleLab`: a
/// monitor and two data nodes, each with its own /etc/postgresql, /var/lib/postgresql and /run/postgresql, its
/// pg_autoctl unit started by the stand-in systemctl as postgres):
/// - `--check` on the fresh hosts succeeds and creates nothing; with a packaged cluster 15/main on the data nodes
///   it would drop one that holds only postgres and the templates, and stops at one with a database of its own;
/// - the real run forms the cluster: the monitor has one primary and one secondary, the standby replicates over
///   TLS with its certificate (pg_stat_ssl on the primary), and `vpnprov accounts` with the connection string
///   vpnprov builds (every data node, the operator's certificate) migrates and adds an account that is then on
///   both data nodes;
/// - a second run changes nothing;
/// - a pg_hba.conf change made through the inventory (where `vpnprov accounts` may connect from), rolled out to
///   the data nodes, is put live by a reload: every postmaster keeps its pid and the old network is refused at
///   once.
@Suite struct AccountsDatabaseRoleTests {
    @Test(.ansible) func theRoleFormsTheClusterOverSSHAndKeepsIt() async throws {
        try AnsibleTools.require()
        try await Subprocess.onOwnExecutor { try await scenario() }
    }

    func scenario() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let lab = try AccountsDatabaseRoleLab.start()
        defer { lab.teardown() }
        let monitor = try lab.node("db-mon")
        let a = try lab.node("db-a")
        let b = try lab.node("db-b")
        let out = try lab.generate("out")
        func recap(_ result: ProgramResult) -> [String: PlayRecap] { PlayRecap.parse(result.stdout) }
        func run(_ label: String, _ out: String, check: Bool = false, limit: String = "vpnprov_accounts_db")
            async throws -> ProgramResult
        {
            let result = try await lab.playbook(out, check: check, limit: limit)
            try #require(
                result.succeeded && recap(result).count == (limit == "vpnprov_accounts_db" ? 3 : 2),
                "\(label): \(result.stdout.suffix(6000)) \(result.stderr.suffix(3000))")
            return result
        }

        // 1. Check mode on the fresh hosts: it reports what it would do and creates nothing.
        let check = try await run("check mode", out, check: true)
        for node in [monitor, a, b] {
            #expect(
                (recap(check)[node.name]?.changed ?? 0) > 0,
                "\(node.name) would change: \(String(describing: recap(check)[node.name]))")
            #expect(!FileManager.default.fileExists(atPath: try lab.varLib(node, AccountsDatabaseRoleLab.pgdata)))
            #expect(!FileManager.default.fileExists(atPath: node.etc + "/vpnprov/postgresql"))
            #expect(
                !FileManager.default.fileExists(atPath: node.etc + "/systemd/system/" + AccountsDatabaseRoleLab.unit))
            #expect(lab.servicePid(node) == 0, "\(node.name): check mode started the service")
        }
        // A packaged cluster 15/main on each data node, which holds the port: db-a's holds only postgres and the
        // templates and would be dropped; db-b's holds a database of its own, and the run stops there, nothing
        // dropped.
        try lab.placeMainCluster(a, databases: 0)
        try lab.placeMainCluster(b, databases: 1)
        let guarded = try await lab.playbook(out, check: true, limit: "db-a,db-b")
        #expect(
            !guarded.succeeded && recap(guarded)["db-a"]?.failed == 0 && recap(guarded)["db-b"]?.failed == 1
                && guarded.stdout.contains("holds 1 database(s) besides postgres and the templates"),
            "\(guarded.stdout.suffix(3000))")
        let dropTask = playbookOutput(
            ofTask: "vpnprov_accounts_db : Drop the package's own cluster 15/main, which holds the port",
            in: guarded.stdout)
        #expect(
            dropTask?.contains("changed: [db-a]") == true && dropTask?.contains("[db-b]") == false,
            "\(dropTask ?? String(guarded.stdout.suffix(3000)))")
        for node in [a, b] { try lab.removeMainCluster(node) }
        let checked = clock.now

        // 2. The real run: the cluster forms.
        let first = try await run("first run", out)
        let formed = clock.now
        var states: [String: String] = [:]
        let deadline = clock.now + .seconds(60)
        while clock.now < deadline {
            states = (try? lab.states()) ?? [:]
            if states["db-a"] == "primary/primary" && states["db-b"] == "secondary/secondary" { break }
            usleep(100_000)
        }
        #expect(
            states == ["db-a": "primary/primary", "db-b": "secondary/secondary"],
            "states \(states)\n\(lab.serviceLog(a).suffix(2000))\n\(lab.serviceLog(b).suffix(2000))")
        for node in [monitor, a, b] {
            #expect(recap(first)[node.name]?.failed == 0)
            let pid = lab.servicePid(node)
            #expect(pid > 0 && Scratch.processExists(pid), "\(node.name): pg_autoctl is not running")
            // Started once: the handler for the new unit does not restart what this run just started.
            let calls = (try? String(contentsOfFile: lab.lab.serviceState(node) + "/calls", encoding: .utf8)) ?? ""
            #expect(
                calls.split(separator: "\n").filter { $0.hasPrefix("restart") }.isEmpty, "\(node.name): \(calls)")
            // Its pid file is in PostgreSQL's runtime directory (the host's own /run), not in the machine's /tmp.
            let pidFile =
                try #require(PrivateView.path(of: "/run", for: node.namespace))
                + "/postgresql/pg_autoctl" + AccountsDatabaseRoleLab.pgdata + "/pg_autoctl.pid"
            #expect(FileManager.default.fileExists(atPath: pidFile), "\(node.name): no \(pidFile)")
        }
        // The standby streams from the primary, synchronously (a commit waits for it), over TLS, logged in with its
        // own certificate.
        let replication = try lab.psql(
            a, database: "postgres",
            "SELECT r.state || ' ' || r.sync_state || ' ' || s.ssl || ' ' || s.version || ' ' || s.client_dn "
                + "FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)")
        #expect(
            replication.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "streaming quorum true TLSv1.3 /CN=db-b", "\(replication)")
        // The monitor runs with vpnprov's failover timers.
        let timer = try lab.psql(monitor, database: "postgres", "SHOW pgautofailover.node_considered_unhealthy_timeout")
        #expect(timer.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "5s", "\(timer)")
        // vpnprov's settings are live on both data nodes (the standby has them by its base backup).
        for node in [a, b] {
            let setting = try lab.psql(node, database: "postgres", "SHOW wal_sender_timeout")
            #expect(setting.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "5s", "\(node.name): \(setting)")
        }

        // The operator's `vpnprov accounts`, with the string vpnprov builds from the inventory.
        let migrated = try lab.accounts(["migrate"])
        try #require(migrated.succeeded, "\(migrated)")
        let password = lab.dir.path + "/password"
        try "correct horse battery\n".write(toFile: password, atomically: true, encoding: .utf8)
        let added = try lab.accounts(["add", "ann", "--tier", "free", "--password-file", password])
        try #require(added.succeeded, "\(added)")
        for node in [a, b] {
            var rows = ""
            let until = clock.now + .seconds(20)
            repeat {
                rows = try lab.psql(node, database: "accounts", "SELECT username FROM radusergroup").stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                if rows == "ann" { break }
                usleep(100_000)
            } while clock.now < until
            #expect(rows == "ann", "\(node.name) has \(rows)")
        }

        // 3. A second run changes nothing.
        let second = try await run("second run", out)
        for node in [monitor, a, b] {
            #expect(recap(second)[node.name]?.changed == 0, "\(node.name): \(second.stdout.suffix(6000))")
        }
        let kept = clock.now

        // 4. Where `vpnprov accounts` may connect from moves away from the controller: pg_hba.conf changes on the
        // data nodes and is put live by a reload, the postmasters keep running.
        for node in [a, b] {
            let login = try lab.operatorLogin(node)
            #expect(login.succeeded, "\(node.name) before the change: \(login)")
        }
        let postmasters = [a, b].map { lab.postmasterPid($0) }
        #expect(postmasters.allSatisfy { $0 != nil }, "\(postmasters)")
        let moved = try lab.generate("out", disconnectFrom: "192.0.2.250")
        let third = try await run("the run with the new pg_hba.conf", moved, limit: "vpnprov_accounts_db_data")
        for node in [a, b] {
            #expect((recap(third)[node.name]?.changed ?? 0) > 0, "\(node.name): \(recap(third))")
        }
        #expect([a, b].map { lab.postmasterPid($0) } == postmasters, "a postmaster restarted")
        let refused = try lab.accounts(["list"])
        #expect(
            !refused.succeeded && refused.stderr.contains("no pg_hba.conf entry for host \"192.0.2.254\""),
            "\(refused)")
        // Each data node alone (libpq stops at the first host that refuses a login): the standby reloaded too.
        for node in [a, b] {
            let login = try lab.operatorLogin(node)
            #expect(
                !login.succeeded && login.stderr.contains("no pg_hba.conf entry for host \"192.0.2.254\""),
                "\(node.name) after the change: \(login)")
        }
        let total = clock.now - started
        print(
            "accounts-db role: lab and check mode \(checked - started), first run \(formed - checked), "
                + "cluster, accounts and second run \(kept - formed), in all \(total)")
    }
}
