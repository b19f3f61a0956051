import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvTemplates
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvAccounts
@testable import VPNProvCLI

/// The accounts database against a real PostgreSQL server (a cluster per test, in the test's
/// directory, unix socket only): the migrations, the account rows of the contract, the queries
/// FreeRADIUS runs (as the role `radius`, with the values it would substitute), the tier decision,
/// and the `vpnprov accounts` binary, whose output never holds a password.
@Suite(.temporaries, .needs(.postgres, .psql)) struct AccountsDatabaseTests {
    /// Runs `body` with a fresh server; the server is stopped however `body` ends.
    func withCluster(_ body: (PostgresCluster) throws -> Void) throws {
        try TestDependency.postgres.require()
        try TestDependency.psql.require()
        let cluster = try PostgresCluster.start(in: try temporaryDirectory("pg"))
        defer { cluster.stop() }
        try body(cluster)
    }

    /// Runs `body` with a fresh server whose test database is migrated, and a store on it.
    func withMigratedStore(_ body: (PostgresCluster, AccountStore) throws -> Void) throws {
        try withCluster { cluster in
            let db = try DatabaseConnection(conninfo: cluster.conninfo())
            _ = try Migrator.migrate(db, Self.migrations)
            try body(cluster, AccountStore(db))
        }
    }

    static var migrations: [Migration] { AccountsCommand.migrations }

    @Test func theEmbeddedMigrationsAreTheFilesAndRecordThemselves() throws {
        let dir = Repository.root + "/templates/accounts/migrations"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files == BuiltinMigrations.files.map(\.name), "run scripts/embed-templates")
        for (name, sql) in BuiltinMigrations.files {
            #expect(
                try String(contentsOfFile: dir + "/" + name, encoding: .utf8) == sql,
                "\(name): run scripts/embed-templates")
        }
        // Numbered in order, each once; a number may be left out (migrations developed side by side).
        let versions = Self.migrations.map(\.version)
        #expect(versions.first == 1 && versions == versions.sorted() && Set(versions).count == versions.count)
        for migration in Self.migrations {
            #expect(
                migration.sql.contains(
                    "INSERT INTO vpnprov_migrations (version, name) VALUES (\(migration.version), '\(migration.name)');"
                ),
                "\(migration.fileName) does not record itself")
        }
    }

    @Test func migrateAppliesOnceAndRefusesANewerOrForeignDatabase() throws {
        try withCluster { cluster in
            let db = try DatabaseConnection(conninfo: cluster.conninfo())
            let newest = Self.migrations.map(\.version).max() ?? 0
            let first = try Migrator.migrate(db, Self.migrations)
            #expect(first == MigrationReport(from: 0, to: newest, applied: Self.migrations.map(\.fileName)))
            let again = try Migrator.migrate(db, Self.migrations)
            #expect(again == MigrationReport(from: newest, to: newest, applied: []))
            #expect(
                try cluster.psql("SELECT version, name FROM vpnprov_migrations ORDER BY version")
                    == Self.migrations.map { "\($0.version)|\($0.name)" }.joined(separator: "\n"))
            #expect(try cluster.psql("SELECT name, rank FROM vpn_tier ORDER BY rank") == "free|0\npro|10")
            // The role exists and cannot log in until the DBA says so.
            #expect(try cluster.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'radius'") == "f")

            // Refused: a database newer than this vpnprov, and one with FreeRADIUS tables vpnprov did not create.
            try cluster.psql(
                "INSERT INTO vpnprov_migrations (version, name) VALUES (\(newest + 1), 'from-the-future')")
            try cluster.psql("CREATE DATABASE adopted", database: "postgres")
            try cluster.psql("CREATE TABLE radcheck (id serial PRIMARY KEY)", database: "adopted")
            for (conninfo, reason) in [
                (cluster.conninfo(), "at migration \(newest + 1), but this vpnprov knows migrations up to \(newest)"),
                (cluster.conninfo(database: "adopted"), "no vpnprov_migrations table"),
            ] {
                #expect {
                    try Migrator.migrate(DatabaseConnection(conninfo: conninfo), Self.migrations)
                } throws: { error in
                    "\(error)".contains(reason)
                }
            }
        }
    }

    /// Account names are unique as strongSwan compares identities (ASCII case folded): `add` refuses a name that
    /// differs from an account's only in case, and so does the database for a backend that writes the rows itself
    /// (migration 2's indexes). Migration 2 refuses a database that already holds such a pair, naming both.
    @Test func accountNamesAreUniqueAsStrongSwanComparesIdentities() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "bob", password: "password1", tier: "free", devices: 1)
            #expect {
                try store.add(username: "BOB", password: "password2", tier: "free", devices: 1)
            } throws: { error in
                "\(error)".contains("'BOB' collides with account 'bob'")
            }
            #expect {
                try store.add(username: "bob", password: "password2", tier: "free", devices: 1)
            } throws: { error in
                "\(error)" == "account 'bob' already exists"
            }
            for insert in [
                "INSERT INTO radusergroup (username, groupname, priority) VALUES ('Bob', 'free', 1)",
                "INSERT INTO radcheck (username, attribute, op, value) VALUES ('bOb', 'NT-Password', ':=', '00')",
            ] {
                #expect(throws: (any Error).self, "\(insert)") { try cluster.psql(insert) }
            }
            #expect(try cluster.psql("SELECT count(*) FROM radcheck WHERE lower(username) = 'bob'") == "2")
        }
        try withCluster { cluster in
            let db = try DatabaseConnection(conninfo: cluster.conninfo())
            _ = try Migrator.migrate(db, Self.migrations.filter { $0.version == 1 })
            try cluster.psql(
                "INSERT INTO radusergroup (username, groupname) VALUES ('carol', 'free'), ('Carol', 'free'), ('dave', 'free')"
            )
            #expect {
                try Migrator.migrate(db, Self.migrations)
            } throws: { error in
                "\(error)".contains("differ only in case") && "\(error)".contains("Carol, carol")
            }
            #expect(try Migrator.currentVersion(db) == 1)
        }
    }

    /// The device decision the RADIUS servers ask (`simul_count_query` = vpn_device_claim, `simul_verify_query` =
    /// vpn_devices_in_use), as the role `radius`: a login below the limit is admitted with a claim, which counts until
    /// the session's radacct row consumes it; logins of one account at once are decided one at a time (six at once,
    /// limit 1: one admitted, one claim).
    @Test func theDeviceDecisionCountsClaimsAndIsAtomic() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "alice", password: "password1", tier: "free", devices: 2)
            try store.add(username: "bob", password: "password2", tier: "free", devices: 1)
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            let claim = "SELECT vpn_device_claim('alice', '2', 'fra-1', '192.0.2.1')"
            #expect(try asRadius(claim) == "0")
            #expect(try asRadius(claim) == "1")
            #expect(try asRadius(claim) == "2", "the limit is reached: no third claim")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('ALICE')") == "2")
            // alice's first session starts on fra-1: its row consumes one claim, the count stays 2
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, nasidentifier) "
                    + "VALUES ('s1', 'u1', 'alice', '192.0.2.1', now(), 'fra-1')")
            #expect(
                try asRadius("SELECT acctsessionid LIKE 'claim-%' FROM vpn_devices_in_use('alice') ORDER BY 1")
                    == "f\nt")
            #expect(try asRadius(claim) == "2")
            // the radius role changes claims only through the functions
            #expect(throws: (any Error).self) { try asRadius("DELETE FROM vpn_device_claim") }

            let decisions = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                let answer = (try? cluster.psql("SET ROLE radius; SELECT vpn_device_claim('bob', '1', 'fra-1', '')"))
                decisions.withLock { $0.append(answer ?? "error") }
            }
            #expect(decisions.withLock { $0.sorted() } == ["0", "1", "1", "1", "1", "1"])
            #expect(try cluster.psql("SELECT count(*) FROM vpn_device_claim WHERE username = 'bob'") == "1")
        }
    }

    /// Sessions of a node that stopped without sending Stops (strongSwan sends no Accounting-On/Off): an
    /// open row without an accounting update for the RADIUS servers' window (the fifth argument, from
    /// mods-enabled/sql) no longer counts as a device, so its account can log in again; an update makes it
    /// count again. The functions of migration 3, which RADIUS servers not yet rolled out ask, count every
    /// open row as before. `accounts list` counts live sessions; `accounts sessions` marks the stale one.
    @Test func sessionsOfANodeThatStoppedWithoutStopsStopCounting() throws {
        try withMigratedStore { cluster, _ in
            let window = AccountsSettings.staleAfter(accountingInterval: 300)
            #expect(window == 660)
            let store = AccountStore(try DatabaseConnection(conninfo: cluster.conninfo()), staleAfter: window)
            try store.add(username: "alice", password: "password1", tier: "free", devices: 1)
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            let claim = "SELECT vpn_device_claim('alice', '1', 'fra-2', '192.0.2.2', '\(window)')"
            // alice's session on fra-1 started 11 minutes ago and was updated (Interim-Update) a minute ago.
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                    + "acctupdatetime, nasidentifier) VALUES ('s1', 'u1', 'alice', '192.0.2.1', "
                    + "now() - interval '11 minutes', now() - interval '1 minute', 'fra-1')")
            #expect(try asRadius(claim) == "1", "a live session counts: the limit is reached")
            #expect(try store.list().first?.openSessions == 1)
            #expect(try store.sessions().map(\.stale) == [false])
            // fra-1 crashed: no Interim-Update for 11 minutes (more than 2 intervals and a minute).
            try cluster.psql("UPDATE radacct SET acctupdatetime = now() - interval '11 minutes'")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', '\(window)')") == "0")
            // Servers rolled out before migration 4 ask the functions without a window: the row counts there.
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice')") == "1")
            #expect(try store.list().first?.openSessions == 0)
            #expect(try store.sessions().map(\.stale) == [true])
            #expect(
                try AccountStore(try DatabaseConnection(conninfo: cluster.conninfo())).list().first?.openSessions == 1)
            #expect(try asRadius(claim) == "0", "the stale session still counts")
            // A row with a Start and no update yet is judged by its start; a window that is not a number
            // counts every open row.
            try cluster.psql("DELETE FROM vpn_device_claim")
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                    + "nasidentifier) VALUES ('s2', 'u2', 'alice', '192.0.2.3', now() - interval '12 minutes', 'fra-3')"
            )
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', '\(window)')") == "0")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', 'x')") == "2")
            // fra-1 comes back (a partition, not a crash): its next Interim-Update makes the session count again.
            try cluster.psql("UPDATE radacct SET acctupdatetime = now() WHERE acctuniqueid = 'u1'")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', '\(window)')") == "1")
            #expect(try store.sessions().map(\.stale) == [true, false])
        }
    }

    /// A draining node (`vpn_node_state`, migration 6): the RADIUS servers' `vpn_node_draining` says so for that node
    /// only, its sessions and claims stop counting against device limits (a redirected client logs in at a sibling
    /// while its old session is open), and `undrain` ends both; a second `drain` keeps the start and moves the end.
    @Test func aDrainingNodeTakesNoLoginAndItsSessionsDoNotCount() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "alice", password: "password1", tier: "free", devices: 1)
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                    + "acctupdatetime, nasidentifier) VALUES ('s1', 'u1', 'alice', '192.0.2.1', now(), now(), 'fra-1')")
            let claim = "SELECT vpn_device_claim('alice', '1', 'fra-2', '192.0.2.2', '660')"
            #expect(try asRadius(claim) == "1", "the limit is reached")
            #expect(try asRadius("SELECT vpn_node_draining('fra-1')") == "f")
            let drain = try store.drain(node: "fra-1", grace: 600)
            #expect(drain.node == "fra-1" && drain.since < drain.graceUntil)
            #expect(try asRadius("SELECT vpn_node_draining('fra-1')") == "t")
            #expect(try asRadius("SELECT vpn_node_draining('fra-2')") == "f")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', '660')") == "0")
            #expect(try asRadius(claim) == "0", "the session on the draining node does not count")
            // The claim just recorded is fra-2's and counts.
            #expect(try asRadius(claim) == "1")
            let again = try store.drain(node: "fra-1", grace: 0)
            #expect(again.since == drain.since && again.graceUntil <= drain.graceUntil)
            #expect(try store.drains().keys.sorted() == ["fra-1"])
            #expect(throws: AccountError.self) { try store.drain(node: "fra-1", grace: -1) }
            #expect(try store.undrain(node: "fra-1"))
            #expect(try !store.undrain(node: "fra-1"))
            #expect(try asRadius("SELECT vpn_node_draining('fra-1')") == "f")
            #expect(try asRadius("SELECT count(*) FROM vpn_devices_in_use('alice', '660')") == "2")
            #expect(try store.drains().isEmpty)
        }
    }

    /// strongSwan's Acct-Session-Id is "<charon start time>-<IKE_SA number>", in Access-Requests and accounting
    /// alike: the first request of a node under a later start time closes its open sessions of earlier starts
    /// (NAS-Reboot), so an account whose node was restarted logs in again at once; older or foreign session ids,
    /// and other nodes' sessions, change nothing.
    @Test func aNodeThatStartedAgainClosesItsEarlierSessions() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "alice", password: "password1", tier: "free", devices: 1)
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            func start(_ session: String, node: String, user: String = "alice") throws {
                try asRadius(
                    "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                        + "acctupdatetime, nasidentifier) VALUES ('\(session)', 'u-\(node)-\(session)', '\(user)', "
                        + "'192.0.2.1', now(), now(), '\(node)')")
            }
            try start("1700000000-7", node: "fra-1")
            try start("1700000000-8", node: "ams-1", user: "bob")
            #expect(
                try cluster.psql("SELECT nasidentifier, started FROM vpn_node_start ORDER BY 1")
                    == "ams-1|1700000000\nfra-1|1700000000")
            func claim(_ session: String) throws -> String {
                try asRadius("SELECT vpn_device_claim('alice', '1', 'fra-1', '192.0.2.1', '660', '\(session)')")
            }
            #expect(try claim("1700000000-9") == "1", "the same start: alice's session counts")
            #expect(try claim("1690000000-1") == "1", "an earlier start changes nothing")
            #expect(try claim("x-1") == "1", "not strongSwan's form: ignored")
            #expect(try claim("1700000500-1") == "0", "fra-1 started again: alice's old session is closed")
            #expect(
                try cluster.psql("SELECT acctterminatecause FROM radacct WHERE acctsessionid = '1700000000-7'")
                    == "NAS-Reboot")
            #expect(
                try cluster.psql("SELECT count(*) FROM radacct WHERE nasidentifier = 'ams-1' AND acctstoptime IS NULL")
                    == "1")
            #expect(
                try cluster.psql("SELECT started FROM vpn_node_start WHERE nasidentifier = 'fra-1'") == "1700000500")
            // an accounting Start of a later start closes the node's earlier sessions too
            try start("1700000000-9", node: "ams-1")
            try start("1700000900-1", node: "ams-1", user: "carol")
            #expect(
                try cluster.psql("SELECT count(*) FROM radacct WHERE nasidentifier = 'ams-1' AND acctstoptime IS NULL")
                    == "1")
            // the radius role cannot call it directly
            #expect(throws: (any Error).self) { try asRadius("SELECT vpn_node_started('fra-1', '1800000000-1')") }
        }
    }

    /// The queries of Debian's FreeRADIUS 3.2 queries.conf that our RADIUS configuration runs,
    /// with the values FreeRADIUS would substitute and the class hook's two extra columns, run as
    /// the role `radius`: they work, and that role can do nothing else.
    @Test func freeRADIUSQueriesWorkAsTheRadiusRole() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "alice", password: "correct horse", tier: "free", devices: 2)
            try cluster.psql(
                "INSERT INTO radgroupreply (groupname, attribute, op, value) VALUES ('free', 'Session-Timeout', ':=', '3600')"
            )
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }

            #expect(
                try asRadius(
                    "SELECT id, UserName, Attribute, Value, Op FROM radcheck WHERE Username = 'alice' ORDER BY id")
                    == "1|alice|NT-Password|\(try NTHash.hex(password: "correct horse"))|:=\n2|alice|Simultaneous-Use|2|:="
            )
            #expect(
                try asRadius(
                    "SELECT id, UserName, Attribute, Value, Op FROM radreply WHERE Username = 'alice' ORDER BY id")
                    == "")
            #expect(
                try asRadius("SELECT GroupName FROM radusergroup WHERE UserName='alice' ORDER BY priority") == "free")
            #expect(
                try asRadius(
                    "SELECT id, GroupName, Attribute, Value, op FROM radgroupcheck WHERE GroupName = 'free' ORDER BY id"
                ) == "")
            #expect(
                try asRadius(
                    "SELECT id, GroupName, Attribute, Value, op FROM radgroupreply WHERE GroupName = 'free' ORDER BY id"
                )
                    == "1|free|Session-Timeout|3600|:=")
            #expect(try asRadius("SELECT vpn_check('alice', 'free')") == "free")

            let simulCount = """
                SELECT COUNT(RadAcctId) FROM radacct a LEFT OUTER JOIN nasreload n USING (NASIPAddress) \
                WHERE UserName='alice' AND AcctStopTime IS NULL AND (a.AcctStartTime > n.ReloadTime OR n.ReloadTime IS NULL)
                """
            #expect(try asRadius(simulCount) == "0")

            // Accounting Start, with the class hook's ", Class, NASIdentifier".
            let columns = """
                AcctSessionId, AcctUniqueId, UserName, Realm, NASIPAddress, NASPortId, NASPortType, AcctStartTime, \
                AcctUpdateTime, AcctStopTime, AcctSessionTime, AcctAuthentic, ConnectInfo_start, ConnectInfo_Stop, \
                AcctInputOctets, AcctOutputOctets, CalledStationId, CallingStationId, AcctTerminateCause, ServiceType, \
                FramedProtocol, FramedIpAddress, FramedIpv6Address, FramedIpv6Prefix, FramedInterfaceId, \
                DelegatedIpv6Prefix, Class, NASIdentifier
                """
            try asRadius(
                """
                INSERT INTO radacct (\(columns)) VALUES('5f2a000000000001', 'u1', 'alice', NULLIF('', ''), '192.0.2.1', \
                NULLIF('1', ''), 'Virtual', TO_TIMESTAMP(1700000000), TO_TIMESTAMP(1700000000), NULL, 0, 'RADIUS', '', NULL, \
                0, 0, '192.0.2.1[4500]', '198.51.100.7[4500]', NULL, 'Framed-User', '', NULLIF('10.27.1.1', '')::inet, \
                NULLIF('', '')::inet, NULLIF('', '')::inet, NULLIF('', ''), NULLIF('', '')::inet , 'free', 'fra-1') \
                ON CONFLICT (AcctUniqueId) DO UPDATE SET AcctStartTime = TO_TIMESTAMP(1700000000), \
                AcctUpdateTime = TO_TIMESTAMP(1700000000), ConnectInfo_start = '' \
                WHERE radacct.AcctUniqueId = 'u1' AND radacct.AcctStopTime IS NULL
                """)
            #expect(try asRadius(simulCount) == "1")
            #expect(
                try asRadius(
                    """
                    SELECT RadAcctId, AcctSessionId, UserName, NASIPAddress, NASPortId, FramedIPAddress, CallingStationId, \
                    FramedProtocol FROM radacct a LEFT OUTER JOIN nasreload n USING (nasipaddress) WHERE UserName='alice' \
                    AND AcctStopTime IS NULL AND (a.AcctStartTime > n.reloadtime OR n.reloadtime IS NULL)
                    """) == "1|5f2a000000000001|alice|192.0.2.1|1|10.27.1.1|198.51.100.7[4500]|")
            let sessions = try store.sessions(of: "alice")
            #expect(
                sessions == [
                    OpenSession(
                        username: "alice", node: "fra-1", nasAddress: "192.0.2.1", framedAddress: "10.27.1.1",
                        started: "2023-11-14T22:13:20Z", updated: "2023-11-14T22:13:20Z", sessionID: "5f2a000000000001",
                        tier: "free")
                ])
            #expect(try store.list().first?.openSessions == 1)

            // Interim-Update, then Stop.
            try asRadius(
                """
                UPDATE radacct SET FramedIPAddress = NULLIF('10.27.1.1', '')::inet, FramedIPv6Address = NULLIF('', '')::inet, \
                FramedIPv6Prefix = NULLIF('', '')::inet, FramedInterfaceId = NULLIF('', ''), \
                DelegatedIPv6Prefix = NULLIF('', '')::inet, AcctSessionTime = 300, \
                AcctInterval = (1700000300 - EXTRACT(EPOCH FROM (COALESCE(AcctUpdateTime, AcctStartTime)))), \
                AcctUpdateTime = TO_TIMESTAMP(1700000300), AcctInputOctets = (('0'::bigint << 32) + '1000'::bigint), \
                AcctOutputOctets = (('0'::bigint << 32) + '2000'::bigint) WHERE AcctUniqueId = 'u1' AND AcctStopTime IS NULL
                """)
            #expect(try cluster.psql("SELECT acctinterval, acctinputoctets FROM radacct") == "300|1000")
            try asRadius(
                """
                UPDATE radacct SET AcctStopTime = TO_TIMESTAMP(1700000400), AcctUpdateTime = TO_TIMESTAMP(1700000400), \
                AcctSessionTime = COALESCE(400, (1700000400 - EXTRACT(EPOCH FROM(AcctStartTime)))), \
                AcctInputOctets = (('0'::bigint << 32) + '1500'::bigint), AcctOutputOctets = (('0'::bigint << 32) + '2500'::bigint), \
                AcctTerminateCause = 'User-Request', FramedIPAddress = NULLIF('10.27.1.1', '')::inet, \
                FramedIPv6Address = NULLIF('', '')::inet, FramedIPv6Prefix = NULLIF('', '')::inet, \
                FramedInterfaceId = NULLIF('', ''), DelegatedIPv6Prefix = NULLIF('', '')::inet, ConnectInfo_stop = '' \
                WHERE AcctUniqueId = 'u1'
                """)
            #expect(try asRadius(simulCount) == "0")
            #expect(try store.sessions().isEmpty)

            // Post-auth with the class hook (User-Password removed by the policy: empty pass).
            try asRadius(
                """
                INSERT INTO radpostauth (username, pass, reply, authdate , Class, NASIdentifier) \
                VALUES('alice', '', 'Access-Accept', '2026-12-01 10:00:00.123' , 'free', 'fra-1')
                """)
            #expect(try cluster.psql("SELECT username, class, nasidentifier FROM radpostauth") == "alice|free|fra-1")

            // Least privilege: the role reads accounts, never writes them, and reads no post-auth rows.
            for forbidden in [
                "INSERT INTO radcheck (username, attribute, op, value) VALUES ('mallory', 'NT-Password', ':=', 'x')",
                "UPDATE radusergroup SET groupname = 'pro'", "DELETE FROM radacct", "SELECT * FROM radpostauth",
                "INSERT INTO vpn_tier VALUES ('gold', 20)",
            ] {
                #expect(throws: (any Error).self, "radius may: \(forbidden)") { try asRadius(forbidden) }
            }
        }
    }

    /// Migration 5: the usage ledger counts what each accounting record adds (not whole rows), on the UTC day of
    /// the event that reported it, so a session that spans the 1st of a month counts in the new month only with the
    /// bytes reported in it; a replayed older record lowers nothing and counts nothing twice. The quota decisions
    /// FreeRADIUS asks (as the role `radius`): refused with the reason and reset time when used up, a shorter
    /// Interim-Update interval when little is left; an account's own quota beats its tier's.
    @Test func theUsageLedgerAndTheQuotaDecisions() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "alice", password: "password1", tier: "free", devices: 2)
            try store.add(username: "bob", password: "password2", tier: "pro", devices: 1)
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            // A session started last month (2 MB reported there), with Interim-Updates this month, as FreeRADIUS's
            // queries write them: the row holds the session's totals.
            let lastMonth = "date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 hour'"
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, acctupdatetime, "
                    + "acctinputoctets, acctoutputoctets, nasidentifier) VALUES ('1-1', 'u1', 'Alice', '192.0.2.1', "
                    + "\(lastMonth) - interval '3 days', \(lastMonth), 1500000, 500000, 'fra-1')")
            func interim(_ unique: String, _ input: Int, _ output: Int, at time: String = "now()") throws {
                try asRadius(
                    "UPDATE radacct SET acctupdatetime = \(time), acctinputoctets = \(input), acctoutputoctets = \(output) "
                        + "WHERE acctuniqueid = '\(unique)' AND acctstoptime IS NULL")
            }
            try interim("u1", 2_000_000, 1_000_000)
            func usage(_ user: String) throws -> String {
                try cluster.psql("SELECT octets_in, octets_out, data_quota, remaining, over FROM vpn_usage('\(user)')")
            }
            // this month: what the Interim-Update added (0.5 + 0.5 MB), not the row's 3 MB
            let first = try usage("alice")
            #expect(first == "500000|500000|||f", "no quota: unlimited")
            #expect(try cluster.psql("SELECT sum(acctinputoctets + acctoutputoctets) FROM radacct") == "3000000")
            // an older record replayed after the newer one changes nothing, and the next one counts only its growth
            try interim("u1", 1_800_000, 900_000)
            #expect(try cluster.psql("SELECT acctinputoctets, acctoutputoctets FROM radacct") == "2000000|1000000")
            try interim("u1", 2_100_000, 1_000_000)
            #expect(try usage("alice") == "600000|500000|||f")
            #expect(try usage("ALICE") == "600000|500000|||f", "names fold as strongSwan compares identities")
            // the Stop adds its own growth; the ledger has a row last month and one this month
            try asRadius(
                "UPDATE radacct SET acctstoptime = now(), acctinputoctets = 2200000, acctoutputoctets = 1100000 "
                    + "WHERE acctuniqueid = 'u1'")
            #expect(try usage("alice") == "700000|600000|||f")
            #expect(
                try cluster.psql(
                    "SELECT username, day < date_trunc('month', now() AT TIME ZONE 'UTC')::date, octets_in, octets_out "
                        + "FROM vpn_usage_day ORDER BY day")
                    == "alice|t|1500000|500000\nalice|f|700000|600000")
            // The tier's quota (as `accounts migrate` writes it), then the decisions.
            #expect(try store.setTierQuotas(["free": 1_400_000]) == ["free"])
            #expect(try store.setTierQuotas(["free": 1_400_000]) == [], "unchanged: nothing written")
            #expect(try usage("alice") == "700000|600000|1400000|100000|f")
            let check = "SELECT vpn_quota_check('alice', '60'), vpn_quota_exceeded('alice')"
            #expect(try asRadius(check) == "30|no", "little left: Interim-Updates every 30 s")
            #expect(try asRadius("SELECT vpn_quota_check('bob', '60'), vpn_quota_exceeded('bob')") == "|no")
            try asRadius(
                "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                    + "acctinputoctets, acctoutputoctets, nasidentifier) VALUES ('1-2', 'u2', 'alice', '192.0.2.1', "
                    + "now(), 0, 0, 'fra-1')")
            try interim("u2", 50000, 50000)
            let reset = try cluster.psql(
                "SELECT to_char((date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month'), "
                    + "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
            #expect(
                try asRadius(check) == "!data quota reached: used 1400000 of 1400000 bytes until \(reset)|yes",
                "at the quota: refused")
            let row = try #require(try store.usage(of: "alice").first)
            #expect(row.octetsIn == 750_000 && row.octetsOut == 650_000 && row.quota == 1_400_000)
            #expect(row.remaining == 0 && row.over && row.quotaSource == "tier" && row.periodEnd == reset)
            // the account's own quota wins; "tier" gives the tier's back; an unlimited override
            #expect(try store.setQuota("alice", bytes: 10_000_000, tier: false) == 10_000_000)
            #expect(try asRadius(check) == "30|no", "8.6 MB left: less than a minute at 12.5 MB/s")
            #expect(try store.setQuota("alice", bytes: 1_000_000_000, tier: false) == 1_000_000_000)
            #expect(try asRadius(check) == "|no", "998.6 MB left: more than a minute at 12.5 MB/s")
            #expect(try asRadius("SELECT vpn_quota_check('alice', '300')") == "79", "less than 5 minutes")
            #expect(try store.setQuota("alice", bytes: nil, tier: false) == nil)
            #expect(try store.usage(of: "alice").first?.quotaSource == "account")
            #expect(try asRadius(check) == "|no")
            #expect(try store.setQuota("alice", bytes: nil, tier: true) == 1_400_000)
            #expect(try asRadius(check).hasPrefix("!data quota reached"))
            // the month's reset: the ledger's rows of this month moved to the last
            try cluster.psql("UPDATE vpn_usage_day SET day = day - 40")
            #expect(try asRadius(check) == "30|no")
            #expect(try usage("alice") == "0|0|1400000|1400000|f")
            #expect(try store.usage().map(\.username) == ["alice", "bob"])
            #expect(throws: AccountError.self) { try store.usage(of: "nobody") }
            #expect(throws: AccountError.self) { try store.setQuota("nobody", bytes: 1, tier: false) }
            try store.delete("alice")
            #expect(try cluster.psql("SELECT count(*) FROM vpn_account_quota") == "0")
            #expect(try cluster.psql("SELECT count(*) FROM vpn_usage_day WHERE username = 'alice'") == "2")
        }
    }

    /// Migration 7: a Stop written once is final (a second copy, a second later, changes nothing), except
    /// after vpnprov closed the session itself for its node's restart (the node's own Stop knows better).
    @Test func aRecordedStopIsFinal() throws {
        try withMigratedStore { cluster, _ in
            @discardableResult func asRadius(_ sql: String) throws -> String {
                try cluster.psql("SET ROLE radius; " + sql)
            }
            for (unique, cause) in [("u1", "User-Request"), ("u2", "NAS-Reboot")] {
                try asRadius(
                    "INSERT INTO radacct (acctsessionid, acctuniqueid, username, nasipaddress, acctstarttime, "
                        + "acctupdatetime, nasidentifier) VALUES ('\(unique)', '\(unique)', 'alice', '192.0.2.1', "
                        + "'2026-12-07 10:00:00+00', '2026-12-07 10:00:00+00', 'fra-1')")
                try asRadius(
                    "UPDATE radacct SET acctstoptime = '2026-12-07 10:00:10+00', acctsessiontime = 10, "
                        + "acctterminatecause = '\(cause)' WHERE acctuniqueid = '\(unique)'")
                try asRadius(
                    "UPDATE radacct SET acctstoptime = '2026-12-07 10:00:11+00', acctsessiontime = 11, "
                        + "acctterminatecause = 'Idle-Timeout' WHERE acctuniqueid = '\(unique)'")
            }
            let rows = try cluster.psql(
                "SELECT acctuniqueid, extract(epoch FROM acctstoptime)::bigint - extract(epoch FROM acctstarttime)::bigint, "
                    + "acctsessiontime, acctterminatecause FROM radacct ORDER BY acctuniqueid")
            #expect(rows == "u1|10|10|User-Request\nu2|11|11|Idle-Timeout", "\(rows)")
        }
    }

    /// vpn_check for every account tier against every node tier, and its reasons.
    @Test func theTierDecision() throws {
        try withMigratedStore { cluster, store in
            try store.add(username: "f", password: "password1", tier: "free", devices: 1)
            try store.add(username: "p", password: "password2", tier: "pro", devices: 1)
            let answers = try cluster.psql(
                """
                SELECT vpn_check('f', 'free'), vpn_check('f', 'pro'), vpn_check('p', 'free'), vpn_check('p', 'pro'), \
                vpn_check('nobody', 'free'), vpn_check('f', 'gold'), vpn_check('f', NULL)
                """)
            #expect(
                answers
                    == "free|!tier free may not use a pro node|pro|pro|!account has no tier|!unknown node tier gold|!unknown node tier (none)"
            )
            try store.setTier("f", "pro")
            #expect(try cluster.psql("SELECT vpn_check('f', 'pro')") == "pro")
        }
    }

    /// The account rows exactly as the contract says, and how each action changes them.
    @Test func accountRowsFollowTheContract() throws {
        try withMigratedStore { cluster, store in
            func rows() throws -> String {
                try cluster.psql(
                    "SELECT username, attribute, op, value FROM radcheck ORDER BY username, attribute; "
                        + "SELECT username, groupname, priority FROM radusergroup ORDER BY username")
            }
            try store.add(
                username: "dave.o'neil@example.com".replacingOccurrences(of: "'", with: ""), password: "password",
                tier: "free", devices: 3)
            #expect(
                try rows()
                    == """
                    dave.oneil@example.com|NT-Password|:=|8846F7EAEE8FB117AD06BDD830B7586C
                    dave.oneil@example.com|Simultaneous-Use|:=|3
                    dave.oneil@example.com|free|1
                    """)
            let user = "dave.oneil@example.com"
            #expect(throws: AccountError("account '\(user)' already exists")) {
                try store.add(username: user, password: "password", tier: "free", devices: 3)
            }
            #expect(throws: AccountError.self) {
                try store.add(username: "eve", password: "password", tier: "gold", devices: 1)
            }
            #expect(throws: AccountError.self) {
                try store.add(username: "eve", password: "short", tier: "free", devices: 1)
            }
            #expect(throws: AccountError.self) {
                try store.add(username: "eve", password: "password", tier: "free", devices: 0)
            }
            for bad in ["", "a b", "x'; DROP TABLE radcheck; --", String(repeating: "a", count: 65), "ünï"] {
                #expect(throws: AccountError.self) {
                    try store.add(username: bad, password: "password", tier: "free", devices: 1)
                }
            }
            // The database enforces the name rule for writers other than vpnprov too.
            #expect(throws: (any Error).self) {
                try cluster.psql("INSERT INTO radcheck (username, attribute, op, value) VALUES ('a b', 'x', ':=', 'y')")
            }

            #expect(try store.setTier(user, "pro") == "free")
            #expect(try store.isDowngrade(from: "pro", to: "free"))
            #expect(try !store.isDowngrade(from: "free", to: "pro"))
            try store.setDevices(user, 1)
            #expect(try store.disable(user))
            #expect(try !store.disable(user))
            #expect(
                try rows()
                    == """
                    \(user)|Auth-Type|:=|Reject
                    \(user)|NT-Password|:=|8846F7EAEE8FB117AD06BDD830B7586C
                    \(user)|Simultaneous-Use|:=|1
                    \(user)|pro|1
                    """)
            #expect(
                try store.list() == [
                    AccountSummary(username: user, tier: "pro", devices: 1, disabled: true, openSessions: 0)
                ])
            #expect(try store.enable(user))
            #expect(try !store.enable(user))
            #expect(try store.list().first?.disabled == false)
            #expect(throws: AccountError("no account 'ghost'")) { try store.setDevices("ghost", 2) }
            #expect(throws: AccountError("no account 'ghost'")) { try store.disable("ghost") }
            try store.delete(user)
            #expect(try rows() == "")
            #expect(throws: AccountError("no account '\(user)'")) { try store.delete(user) }
        }
    }

    /// A statement over the timeout is cancelled and reported as such; a transaction whose body
    /// throws leaves nothing behind; values travel as parameters, never as SQL text.
    @Test func timeoutsTransactionsAndParameters() throws {
        try withMigratedStore { cluster, store in
            let db = try DatabaseConnection(conninfo: cluster.conninfo(), statementTimeoutMilliseconds: 200)
            #expect {
                try db.query("SELECT pg_sleep(5)")
            } throws: { error in
                (error as? DatabaseError)?.kind == .timeout
            }
            struct Stop: Error {}
            #expect(throws: Stop.self) {
                try db.transaction {
                    try db.execute("INSERT INTO vpn_tier (name, rank) VALUES ($1, $2)", ["gold", "20"])
                    throw Stop()
                }
            }
            #expect(try cluster.psql("SELECT count(*) FROM vpn_tier WHERE name = 'gold'") == "0")
            let hostile = "x'); DROP TABLE radcheck; --"
            #expect(try db.query("SELECT $1::text, $2::text", [hostile, nil]) == [[hostile, nil]])
            #expect(try cluster.psql("SELECT to_regclass('radcheck') IS NOT NULL") == "t")
            _ = store
        }
    }

    /// The conninfo's own connect timeout is the one used (a cluster's string says 2 s: what a data node that does
    /// not answer may cost before the next is tried); vpnprov's 10 s only when the conninfo names none.
    @Test func theConninfosConnectTimeoutIsKept() throws {
        try withMigratedStore { cluster, _ in
            let given = try DatabaseConnection(conninfo: cluster.conninfo() + " connect_timeout=2")
            let unsaid = try DatabaseConnection(conninfo: cluster.conninfo())
            #expect(given.option("connect_timeout") == "2")
            #expect(unsaid.option("connect_timeout") == "10")
            #expect(unsaid.option("target_session_attrs") == "read-write")
        }
    }

    /// libpq's errors reach the operator without the conninfo's password.
    @Test func connectionErrorsHideThePassword() throws {
        let dir = try temporaryDirectory("nosocket")
        let password = "Db-Passw0rd-never-shown"
        for conninfo in [
            "host=\(dir) user=operator password=\(password) dbname=accounts",
            "postgresql://operator:\(password)@127.0.0.1:1/accounts",
        ] {
            #expect {
                try DatabaseConnection(conninfo: conninfo)
            } throws: { error in
                let text = "\(error)"
                return text.contains("cannot connect to the accounts database") && !text.contains(password)
                    && !text.contains(conninfo)
            }
        }
        #expect(
            DatabaseConnection.scrub("bad password Db-Passw0rd-never-shown\nfor x", secrets: [password])
                == "bad password [hidden]; for x")
    }
}
