import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvTemplates
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvAccounts
@testable import VPNProvCLI

/// The `vpnprov accounts` binary against a real PostgreSQL: the query plans, imports, and no password printed.
extension AccountsDatabaseTests {
    struct Run {
        var status: Int32
        var out: String
        var err: String
    }

    /// Runs the built vpnprov with `stdin` as its standard input.
    func binary(_ arguments: [String], in dir: String, environment: [String: String], stdin: String? = nil) throws
        -> Run
    {
        // Only PATH and `environment`: nothing of the test process's own reaches it.
        let result = try Subprocess.run(
            VPNProvBinary.path, arguments, environment: environment, inheriting: ["PATH": "/usr/bin:/bin"],
            directory: dir, input: Array((stdin ?? "").utf8), timeout: .seconds(120))
        try #require(!result.timedOut, "vpnprov \(arguments.joined(separator: " ")) ran past its deadline")
        return Run(status: result.exitCode, out: result.stdout, err: result.stderr)
    }

    /// Every query FreeRADIUS runs per login and per accounting packet on a table that grows with the accounts
    /// or sessions finds its rows through an index (with sequential scans priced out, a query without one
    /// still plans a Seq Scan): a million accounts cost a login what ten do (docs/benchmarks.md).
    @Test func perLoginQueriesUseIndexes() throws {
        try withMigratedStore { cluster, _ in
            let queries = [
                "SELECT id, UserName, Attribute, Value, Op FROM radcheck WHERE Username = 'a' ORDER BY id",
                "SELECT id, UserName, Attribute, Value, Op FROM radreply WHERE Username = 'a' ORDER BY id",
                "SELECT GroupName FROM radusergroup WHERE UserName = 'a' ORDER BY priority",
                "SELECT * FROM vpn_devices_in_use('a', '660')",
                "SELECT vpn_check('a', 'free')",
                "UPDATE radacct SET AcctUpdateTime = now() WHERE AcctUniqueId = 'u1' AND AcctStopTime IS NULL",
                "UPDATE radacct SET AcctStopTime = now() WHERE AcctUniqueId = 'u1'",
                // what vpn_devices_in_use and vpn_check run inside (EXPLAIN shows a function call as one node)
                """
                SELECT a.radacctid FROM radacct AS a LEFT JOIN nasreload AS n USING (nasipaddress) \
                WHERE lower(a.username COLLATE "C") = lower('a' COLLATE "C") AND a.acctstoptime IS NULL \
                AND (a.acctstarttime > n.reloadtime OR n.reloadtime IS NULL)
                """,
                """
                SELECT c.id FROM vpn_device_claim AS c WHERE lower(c.username COLLATE "C") = lower('a' COLLATE "C") \
                AND c.claimed_at > clock_timestamp() - interval '10 seconds'
                """,
                """
                SELECT t.name FROM radusergroup AS g JOIN vpn_tier AS t ON t.name = g.groupname \
                WHERE g.username = 'a' ORDER BY t.rank DESC LIMIT 1
                """,
            ]
            for query in queries {
                let plan = try cluster.psql("SET enable_seqscan = off; EXPLAIN (COSTS OFF) " + query)
                let grown = ["radcheck", "radreply", "radusergroup", "radacct", "vpn_device_claim"]
                let scans = plan.split(separator: "\n").filter { line in
                    line.contains("Seq Scan") && grown.contains { line.contains(" on \($0)") }
                }
                #expect(scans.isEmpty, "\(query):\n\(plan)")
            }
        }
    }

    /// `accounts import FILE`: JSON Lines with a password or an NT hash per account, all created in one
    /// transaction; each refusal names its line, imports nothing and never shows a password.
    @Test func importCreatesEveryAccountOfAFileOrNone() throws {
        try withCluster { cluster in
            let dir = try temporaryDirectory("import")
            let environment = ["VPN_ACCOUNTS_DB": cluster.conninfo()]
            let db = ["--database", "env:VPN_ACCOUNTS_DB"]
            func run(_ arguments: [String]) throws -> Run {
                try binary(["accounts"] + arguments + db, in: dir, environment: environment)
            }
            func file(_ name: String, _ lines: [String]) throws -> String {
                try lines.map { $0 + "\n" }.joined().write(toFile: dir + "/" + name, atomically: true, encoding: .utf8)
                return name
            }
            #expect(try run(["migrate"]).status == 0)
            let password = "Imported-Pw-1729"
            let hashed = try NTHash.hex(password: "Hashed-Pw-4104")
            let good = try file(
                "good.jsonl",
                [
                    "# exported from the old RADIUS server", "",
                    #"{"username": "imp1", "tier": "free", "password": "\#(password)"}"#,
                    #"{"username": "imp2", "tier": "pro", "devices": 2, "nt_hash": "\#(hashed.lowercased())"}"#,
                    #"{"username": "imp3", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                ])
            let imported = try run(["import", good])
            #expect(imported.status == 0, "\(imported.err)")
            #expect(imported.out == "imported 3 accounts (free 2, pro 1)\n")
            #expect(
                try cluster.psql(
                    "SELECT c.username, c.value, d.value, g.groupname FROM radcheck c "
                        + "JOIN radcheck d ON d.username = c.username AND d.attribute = 'Simultaneous-Use' "
                        + "JOIN radusergroup g ON g.username = c.username WHERE c.attribute = 'NT-Password' ORDER BY 1")
                    == "imp1|\(try NTHash.hex(password: password))|3|free\nimp2|\(hashed)|2|pro\nimp3|\(hashed)|3|free")
            let before = try cluster.psql("SELECT count(*) FROM radcheck")

            let refused: [(lines: [String], message: String)] = [
                (
                    [#"{"username": "x1", "tier": "free", "password": "short"}"#],
                    "line 1: account 'x1': the password is shorter"
                ),
                ([#"{"username": "x1", "tier": "free", "pass": "x"}"#], "line 1: unknown key 'pass'"),
                (
                    [#"{"username": "x1", "tier": "free", "password": "\#(password)", "nt_hash": "\#(hashed)"}"#],
                    "not both"
                ),
                ([#"{"username": "x1", "tier": "free", "devices": true, "nt_hash": "\#(hashed)"}"#], "whole number"),
                ([#"{"username": "x1", "tier": "free", "nt_hash": "abc"}"#], "32 hex digits"),
                ([#"{"username": "x 1", "tier": "free", "nt_hash": "\#(hashed)"}"#], "line 1: invalid account name"),
                (["username,tier,password"], "line 1: not a JSON object"),
                (
                    [
                        #"{"username": "Dup", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                        #"{"username": "dup", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                    ], "line 2: account 'dup' is already on line 1"
                ),
                (
                    [
                        #"{"username": "new1", "tier": "free", "password": "\#(password)"}"#,
                        #"{"username": "IMP1", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                    ], "line 2: account name 'IMP1' collides with account 'imp1'"
                ),
                (
                    [
                        #"{"username": "new1", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                        #"{"username": "new2", "tier": "gold", "nt_hash": "\#(hashed)"}"#,
                    ], "line 2: unknown tier 'gold'"
                ),
            ]
            for (n, case_) in refused.enumerated() {
                let result = try run(["import", try file("bad-\(n).jsonl", case_.lines)])
                #expect(result.status == 2 && result.err.contains(case_.message), "\(case_.message): \(result.err)")
                #expect(!result.out.contains(password) && !result.err.contains(password))
                // A refusal is its reason alone: the command line was right, so no usage text.
                #expect(!result.err.contains("Usage:"), "\(result.err)")
            }
            #expect(try cluster.psql("SELECT count(*) FROM radcheck") == before, "a refused import wrote rows")
            #expect(try run(["import", "missing.jsonl"]).err.contains("cannot read import file missing.jsonl"))
            let misused = try run(["import", good, "--tier", "free"])
            #expect(
                misused.err.contains("not an option of 'import'") && misused.err.contains("Usage: vpnprov accounts"))
            #expect(try run(["import", try file("empty.jsonl", ["# nothing"])]).out == "imported 0 accounts\n")

            // An NT hash known to be of a password 'add' refuses: the empty one, and every one of 1 or 2 printable
            // ASCII characters. The message says which kind, never the password.
            for (n, weak) in ["", "x", "a1", "~ "].enumerated() {
                let result = try run([
                    "import",
                    try file(
                        "weak-\(n).jsonl",
                        [
                            #"{"username": "fine\#(n)", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                            #"{"username": "weak\#(n)", "tier": "free", "nt_hash": "\#(try NTHash.hex(password: weak).lowercased())"}"#,
                        ]),
                ])
                let kind = weak.isEmpty ? "the empty password" : "a password of \(weak.count) character"
                #expect(result.status == 2, "\(result.err)")
                #expect(
                    result.err.contains("line 2: account 'weak\(n)': 'nt_hash' is the NT hash of \(kind)"),
                    "\(result.err)")
            }
            #expect(try cluster.psql("SELECT count(*) FROM radcheck") == before, "an import of a weak hash wrote rows")

            // Every name 'add' takes, 'import' takes: 'null' in any case is an account, not SQL's NULL, in both
            // statements (the collision check and the rows).
            let nulls = try run([
                "import",
                try file(
                    "null.jsonl",
                    [
                        #"{"username": "null", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                        #"{"username": "NULL.x", "tier": "pro", "devices": 2, "nt_hash": "\#(hashed)"}"#,
                    ]),
            ])
            #expect(nulls.status == 0 && nulls.out == "imported 2 accounts (free 1, pro 1)\n", "\(nulls.err)")
            #expect(
                try cluster.psql(
                    "SELECT username, groupname FROM radusergroup WHERE lower(username) LIKE 'null%' ORDER BY 1")
                    == "NULL.x|pro\nnull|free")
            let again = try run([
                "import",
                try file("null-again.jsonl", [#"{"username": "NULL", "tier": "free", "nt_hash": "\#(hashed)"}"#]),
            ])
            #expect(
                again.status == 2 && again.err.contains("line 1: account name 'NULL' collides with account 'null'"),
                "\(again.err)")

            // A refusal that only the database knows (a constraint its administrator added) names the line it
            // comes from; nothing of the file is imported.
            _ = try cluster.psql("ALTER TABLE radusergroup ADD CONSTRAINT no_zed CHECK (username <> 'zed')")
            let rows = try cluster.psql("SELECT count(*) FROM radcheck")
            let constrained = try run([
                "import",
                try file(
                    "zed.jsonl",
                    [
                        "# two accounts", #"{"username": "yan", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                        #"{"username": "zed", "tier": "free", "nt_hash": "\#(hashed)"}"#,
                    ]),
            ])
            #expect(constrained.status == 2, "\(constrained.err)")
            #expect(
                constrained.err.contains("line 3: account 'zed': ") && constrained.err.contains("no_zed"),
                "\(constrained.err)")
            #expect(!constrained.err.contains("Usage:"))
            #expect(try cluster.psql("SELECT count(*) FROM radcheck") == rows, "a refused import wrote rows")
        }
    }

    @Test func theCommandNeverPrintsAPassword() throws {
        try withCluster { cluster in
            let dir = try temporaryDirectory("work")
            let dbPassword = "Db-Secret-9x7Q"
            let environment = ["VPN_ACCOUNTS_DB": cluster.conninfo() + " password=\(dbPassword)"]
            let db = ["--database", "env:VPN_ACCOUNTS_DB"]
            var all: [Run] = []
            func run(_ arguments: [String], stdin: String? = nil) throws -> Run {
                let result = try binary(["accounts"] + arguments + db, in: dir, environment: environment, stdin: stdin)
                all.append(result)
                return result
            }
            let migrate = try run(["migrate"])
            #expect(migrate.status == 0, "\(migrate.err)")
            let newest = Self.migrations.map(\.version).max() ?? 0
            #expect(
                migrate.out
                    == "accounts database: applied \(Self.migrations.map(\.fileName).joined(separator: ", ")) "
                    + "(migration 0 -> \(newest))\n")
            #expect(try run(["migrate"]).out == "accounts database: up to date (migration \(newest))\n")

            let alicePassword = "Alice-Pw-3141"
            let bobPassword = "Bob-Pw-2718-ü"
            try "\(alicePassword)\n".write(toFile: dir + "/alice.pw", atomically: true, encoding: .utf8)
            let add = try run(["add", "alice", "--tier", "free", "--password-file", "alice.pw"])
            #expect(add.status == 0, "\(add.err)")
            #expect(add.out == "added account 'alice' (tier free, 3 devices)\n")
            let addBob = try run(
                ["add", "bob", "--tier", "pro", "--devices", "2", "--password-stdin"], stdin: bobPassword + "\n")
            #expect(addBob.status == 0, "\(addBob.err)")
            // Without OpenSSL's legacy provider there is no MD4: a clear error, and no account.
            let noLegacy = try binary(
                ["accounts", "add", "dora", "--tier", "free", "--password-stdin"] + db, in: dir,
                environment: environment.merging(["OPENSSL_MODULES": dir + "/no-such-modules"]) { $1 },
                stdin: "Dora-Pw-5772\n")
            all.append(noLegacy)
            #expect(noLegacy.status == 3)
            #expect(noLegacy.err.contains("legacy provider"), "\(noLegacy.err)")
            #expect(try cluster.psql("SELECT count(*) FROM radcheck WHERE username = 'dora'") == "0")
            #expect(
                try cluster.psql("SELECT value FROM radcheck WHERE username = 'bob' AND attribute = 'NT-Password'")
                    == (try NTHash.hex(password: bobPassword)))

            // A password as an argument is refused before anything happens; so is a short one.
            let argv = try run(["add", "carol", "Carol-Pw-1618", "--tier", "free"])
            #expect(argv.status == 2)
            #expect(argv.err.contains("takes no password argument"))
            let short = try run(["add", "carol", "--tier", "free", "--password-stdin"], stdin: "short\n")
            #expect(short.status == 2)
            #expect(short.err.contains("shorter than 8"))
            #expect(try cluster.psql("SELECT count(*) FROM radcheck WHERE username = 'carol'") == "0")

            // set-password replaces the NT hash, reads the password like add, and refuses what add refuses.
            let newAlicePassword = "Alice-New-Pw-1414"
            let changed = try run(["set-password", "alice", "--password-stdin"], stdin: newAlicePassword + "\n")
            #expect(changed.status == 0, "\(changed.err)")
            #expect(changed.out == "account 'alice': password changed\naccount 'alice': no open session\n")
            #expect(
                try cluster.psql("SELECT value FROM radcheck WHERE username = 'alice' AND attribute = 'NT-Password'")
                    == (try NTHash.hex(password: newAlicePassword)))
            let kept = try run(
                ["set-password", "alice", "--password-file", "alice.pw", "--keep-sessions"])
            #expect(kept.out == "account 'alice': password changed\n", "\(kept.err)")
            #expect(
                try cluster.psql("SELECT value FROM radcheck WHERE username = 'alice' AND attribute = 'NT-Password'")
                    == (try NTHash.hex(password: alicePassword)))
            #expect(try run(["set-password", "alice", newAlicePassword]).err.contains("takes no password argument"))
            #expect(try run(["set-password", "alice"]).err.contains("exactly one of --password-file"))
            #expect(try run(["set-password", "alice", "--password-stdin"], stdin: "short\n").status == 2)
            let ghost = try run(["set-password", "ghost", "--password-stdin"], stdin: newAlicePassword + "\n")
            #expect(ghost.status == 2 && ghost.err.contains("no account 'ghost'"), "\(ghost.err)")
            // The database's refusal is the reason alone; the usage text is for a wrong command line.
            #expect(ghost.err == "vpnprov: error: no account 'ghost'\n", "\(ghost.err)")
            #expect(
                try run(["add", "carol", "--tier", "free", "--keep-sessions"]).err.contains("not an option of 'add'"))

            #expect(try run(["set-tier", "alice", "pro"]).status == 0)
            #expect(try run(["set-devices", "alice", "5"]).status == 0)
            #expect(try run(["set-devices", "alice", "500"]).status == 2)
            #expect(try run(["disable", "bob"]).status == 0)
            let list = try run(["list"])
            #expect(
                list.out == """
                    ACCOUNT  TIER  DEVICES  STATUS    SESSIONS
                    alice    pro   5        active    0
                    bob      pro   2        disabled  0

                    """)
            // Data quotas: an account's own, refused when it is not a size; usage as text and JSON.
            #expect(
                try run(["set-quota", "alice", "5MB"]).out
                    == "account 'alice': data quota 5 MB (5000000 bytes) per month\n")
            let badQuota = try run(["set-quota", "alice", "5 MBs"])
            #expect(
                badQuota.status == 2 && badQuota.err.contains("invalid quota '5 MBs': unknown unit 'MBs'"),
                "\(badQuota.err)")
            #expect(try run(["set-quota", "ghost", "5MB"]).err == "vpnprov: error: no account 'ghost'\n")
            #expect(try run(["set-quota", "bob", "none"]).out == "account 'bob': data quota unlimited per month\n")
            let usage = try run(["usage"])
            let reset = try cluster.psql(
                "SELECT to_char((date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month'), "
                    + "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
            #expect(
                usage.out == """
                    ACCOUNT  TIER  IN   OUT  QUOTA      LEFT  STATE  RESETS
                    alice    pro   0 B  0 B  5 MB       5 MB  ok     \(reset)
                    bob      pro   0 B  0 B  unlimited  -     ok     \(reset)

                    """, "\(usage.err)")
            let usageJSON = try JSONSerialization.jsonObject(
                with: Data(try run(["usage", "alice", "--format", "json"]).out.utf8))
            let aliceUsage = ((usageJSON as? [String: Any])?["usage"] as? [[String: Any]])?.first
            #expect(aliceUsage?["quota"] as? Int == 5_000_000 && aliceUsage?["remaining"] as? Int == 5_000_000)
            #expect(aliceUsage?["quotaSource"] as? String == "account" && aliceUsage?["periodEnd"] as? String == reset)
            #expect(
                try run(["set-quota", "alice", "tier"]).out
                    == "account 'alice': data quota unlimited per month, its tier's\n")
            let json = try run(["list", "--format", "json"])
            let document = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
            let accounts = document?["accounts"] as? [[String: Any]]
            #expect(accounts?.map { $0["username"] as? String } == ["alice", "bob"])
            // Every action's JSON document matches docs/json-output.schema.json.
            // carol is added whether or not the schema check runs (the list below counts her).
            let carolPassword = "Carol-Pw-1618"
            let carol = try run(
                ["add", "carol", "--tier", "free", "--password-stdin", "--format", "json"], stdin: carolPassword)
            #expect(carol.status == 0, "\(carol.err)")
            #expect(!carol.out.contains(carolPassword) && !carol.err.contains(carolPassword))
            if TestDependency.schemaPython.isPresent {
                var files: [String] = []
                for (n, arguments) in [
                    ["migrate"], ["list"], ["sessions"], ["sessions", "bob"], ["disconnect", "bob"], ["usage"],
                    ["set-quota", "bob", "1GB"],
                ]
                .enumerated() {
                    let result = try run(arguments + ["--format", "json"])
                    #expect(result.status == 0, "\(arguments): \(result.err)")
                    files.append(dir + "/doc-\(n).json")
                    try result.out.write(toFile: files.last!, atomically: true, encoding: .utf8)
                }
                files.append(dir + "/doc-add.json")
                try carol.out.write(toFile: files.last!, atomically: true, encoding: .utf8)
                let check = try runTool(
                    [TestDependency.schemaPython.path, Repository.root + "/scripts/check-output", "json"]
                        + files)
                #expect(check.status == 0, "\(check.output)")
            }
            #expect(try run(["sessions"]).out == "no open sessions\n")
            #expect(try run(["enable", "bob"]).out == "account 'bob': enabled\n")

            // An open session (an accounting Start row): listed, counted, and `disable` asks its node to end
            // it; this node has no DAE target here, which is reported and fails the command.
            try cluster.psql(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                    + "acctupdatetime, framedipaddress, class, nasidentifier) VALUES ('s1', 'u1', 'alice', '192.0.2.1', "
                    + "TO_TIMESTAMP(1700000000), TO_TIMESTAMP(1700000300), '10.27.1.5', 'pro', 'fra-1')")
            #expect(
                try run(["sessions", "alice"]).out == """
                    ACCOUNT  NODE   ADDRESS    STARTED               UPDATED               STATE  TIER  SESSION
                    alice    fra-1  10.27.1.5  2023-11-14T22:13:20Z  2023-11-14T22:18:20Z  stale  pro   s1

                    """)
            let disable = try run(["disable", "alice"])
            #expect(disable.status == 1)
            #expect(disable.out.contains("account 'alice': disabled"))
            #expect(disable.out.contains("  fra-1: unknown-node"), "\(disable.out)")
            #expect(try run(["delete", "bob"]).out == "deleted account 'bob'\naccount 'bob': no open session\n")
            #expect(
                try run(["list"]).out.components(separatedBy: "\n").map { $0.prefix(5) } == [
                    "ACCOU", "alice", "carol", "",
                ])
            #expect(try run(["set-tier", "ghost", "pro"]).status == 2)
            #expect(try run(["frobnicate"]).err.contains("unknown action"))

            for result in all {
                for secret in [alicePassword, bobPassword, dbPassword, newAlicePassword] {
                    #expect(!result.out.contains(secret) && !result.err.contains(secret), "a password was printed")
                }
            }
            // The database's own log never saw them either (parameters are not logged as text).
            let log = (try? String(contentsOfFile: cluster.logPath, encoding: .utf8)) ?? ""
            #expect(!log.contains(alicePassword) && !log.contains(bobPassword) && !log.contains(newAlicePassword))
        }
    }
}
