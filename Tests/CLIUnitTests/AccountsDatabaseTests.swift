import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
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

            let decisions = DecisionBox()
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                let answer = (try? cluster.psql("SET ROLE radius; SELECT vpn_device_claim('bob', '1', 'fra-1', '')"))
                decisions.append(answer ?? "error")
            }
            #expect(decisions.sorted == ["0", "1", "1", "1", "1", "1"])
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

    final class DecisionBox: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        func append(_ value: String) { lock.withLock { values.append(value) } }
        var sorted: [String] { lock.withLock { values.sorted() } }
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

    // MARK: - the binary

    struct Run {
        var status: Int32
        var out: String
        var err: String
    }

    /// Runs the built vpnprov with `stdin` as its standard input.
    func binary(_ arguments: [String], in dir: String, environment: [String: String], stdin: String? = nil) throws
        -> Run
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: VPNProvBinary.path)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        let id = UUID().uuidString
        let outPath = dir + "/../\(id).out"
        let errPath = dir + "/../\(id).err"
        let inPath = dir + "/../\(id).in"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        _ = FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))
        defer { for p in [outPath, errPath, inPath] { try? FileManager.default.removeItem(atPath: p) } }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.standardInput = FileHandle(forReadingAtPath: inPath)
        try process.run()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, out: try String(contentsOfFile: outPath, encoding: .utf8),
            err: try String(contentsOfFile: errPath, encoding: .utf8))
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
                    ["migrate"], ["list"], ["sessions"], ["sessions", "bob"], ["disconnect", "bob"],
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
