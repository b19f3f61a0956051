import Foundation
import Glibc
import Testing
import VPNProvTestFixtures

/// The accounts database as a pg_auto_failover cluster with the files vpnprov generated (docs/accounts.md, "A
/// replicated accounts database"): Debian's PostgreSQL 15 and pg_autoctl 2.0, a monitor and two data nodes in
/// network namespaces, certificate logins only. `vpnprov accounts` connects with the string it builds from the
/// inventory (every data node, read-write, the operator's certificate). The primary's postmaster is SIGKILLed
/// right after a batch of acknowledged account changes: the next `accounts add` waits out the failover and
/// succeeds on the new primary, `disable` works while the old primary is gone, the old primary comes back as a
/// standby by itself, and every change that was acknowledged is there.
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
        let lab = DatabaseClusterLab(dir: dir)
        defer { lab.teardown() }
        try lab.setUp()
        let inventory = dir.path + "/inventory.yaml"
        try lab.inventory.write(toFile: inventory, atomically: true, encoding: .utf8)
        let generated = try VPNProvBinary.run(["generate", inventory, "--quiet"])
        try #require(generated.succeeded, "\(generated)")
        let out = dir.path + "/out"
        let hostVars = try String(contentsOfFile: out + "/deploy/host_vars/db-a.yml", encoding: .utf8)
        let monitorURI = try #require(
            hostVars.split(separator: "\n").first { $0.hasPrefix("vpnprov_accounts_db_monitor_uri: ") }
                .map {
                    String($0.dropFirst("vpnprov_accounts_db_monitor_uri: ".count)).replacingOccurrences(
                        of: "\"", with: "")
                })

        let clock = ContinuousClock()
        let started = clock.now
        let monitor = lab.host("db-mon")
        let a = lab.host("db-a")
        let b = lab.host("db-b")
        for host in [monitor, a] { try lab.initialize(host, generated: out + "/accounts-db") }
        try FileManager.default.createDirectory(atPath: lab.pgdata(b), withIntermediateDirectories: true)
        try Command.check("/bin/chown", ["postgres:postgres", lab.pgdata(b)])
        try Command.check("/bin/chmod", ["0700", lab.pgdata(b)])
        try lab.start(monitor, monitorURI: monitorURI)
        try lab.wait(for: "the monitor", timeout: .seconds(60)) {
            lab.log(monitor).contains("Contacting the monitor to LISTEN")
        }
        try lab.start(a, monitorURI: monitorURI)
        try lab.wait(for: "db-a single", timeout: .seconds(60)) { try lab.states()["db-a"] == "single/single" }
        try lab.start(b, monitorURI: monitorURI)
        try lab.wait(for: "db-b secondary", timeout: .seconds(90)) {
            let s = try lab.states()
            return s["db-a"] == "primary/primary" && s["db-b"] == "secondary/secondary"
        }
        print("accounts cluster: up in \(clock.now - started)")
        // What the role does on the primary: the certificate logins' roles, the operator owning the database.
        let roles = try lab.psql(
            a, database: "accounts",
            "CREATE ROLE vpnprov LOGIN CREATEROLE; CREATE ROLE radius LOGIN; ALTER DATABASE accounts OWNER TO vpnprov; "
                + "ALTER SCHEMA public OWNER TO vpnprov")
        try #require(roles.succeeded, "\(roles)")

        guard let binary = VPNProvBinary.path else { throw HarnessError("no vpnprov binary") }
        func accounts(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
            try Command.run(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", lab.operatorNamespace, binary, "accounts"] + arguments + [
                    "--inventory", inventory,
                ], timeout: timeout)
        }
        let password = dir.path + "/password"
        try "correct horse battery\n".write(toFile: password, atomically: true, encoding: .utf8)
        let migrated = try accounts(["migrate"])
        try #require(migrated.succeeded, "\(migrated)")
        var acknowledged: [String] = []
        for i in 1...5 {
            let added = try accounts(["add", "user\(i)", "--tier", "free", "--password-file", password])
            #expect(added.succeeded, "\(added)")
            if added.succeeded { acknowledged.append("user\(i)") }
        }

        // SIGKILL of the primary's postmaster: pg_auto_failover fails over to db-b.
        let postmaster = try #require(lab.postmasterPid(a))
        let killed = clock.now
        Glibc.kill(postmaster, SIGKILL)
        let during = try accounts(["add", "during", "--tier", "free", "--password-file", password])
        #expect(during.succeeded, "\(during)")
        if during.succeeded { acknowledged.append("during") }
        let writable = clock.now - killed
        print("accounts cluster: 'accounts add' acknowledged \(writable) after the primary's postmaster was killed")
        #expect(writable < .seconds(30))
        #expect(
            try lab.states()["db-b"]?.hasPrefix("primary/") == true
                || lab.states()["db-b"]?.hasPrefix("wait_primary/") == true)
        // While the old primary is still away (it is being rewound, or not yet told): disable works.
        let disabled = try accounts(["disable", "user1"])
        #expect(disabled.succeeded, "\(disabled)")

        // The old primary comes back as a standby by itself (its keeper restarts PostgreSQL, rewound).
        try lab.wait(for: "db-a back as a standby", timeout: .seconds(120)) {
            let s = try lab.states()
            return s["db-a"] == "secondary/secondary" && s["db-b"] == "primary/primary"
        }
        print("accounts cluster: db-a secondary again \(clock.now - killed) after the kill")

        // Every acknowledged change is on the new primary, and on the old one now a standby.
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
                host, database: "accounts", "SELECT username FROM radcheck WHERE attribute = 'Auth-Type'")
            #expect(marks.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "user1", "\(host.name): \(marks)")
        }
    }
}
