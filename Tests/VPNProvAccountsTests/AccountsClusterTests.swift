import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

/// The accounts database as a pg_auto_failover cluster (`accounts.cluster`, docs/accounts.md): how the inventory
/// describes it, what validation refuses, and what everything that connects is told.
@Suite(.temporaries) struct AccountsClusterTests {
    static let cluster = """
          cluster:
            tls_dir: /etc/vpnprov-ops/accounts-db
            hosts:
              db-eu: { address: 192.0.2.31, region: eu }
              db-us: { address: 192.0.2.32, region: us }
              db-mon: { address: 192.0.2.30, region: ap, role: monitor }

        """

    static func accounts(_ cluster: String = cluster, radiusDatabase: Bool = false) -> String {
        """
        accounts:
          database: env:VPN_ACCOUNTS_DB
        \(radiusDatabase ? "  radius_database: env:VPN_RADIUS_DB\n" : "")  servers:
            rad-1: { address: 192.0.2.11, region: eu }
            rad-2: { address: 192.0.2.12, region: us }
        \(cluster)
        """
    }

    static func diagnostics(_ text: String) -> [Diagnostic] {
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        var diagnostics = decoded.diagnostics
        if let inventory = decoded.inventory { diagnostics += Validator.validate(inventory) }
        return diagnostics
    }

    static func inventory(_ text: String) throws -> Inventory {
        try #require(InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml").inventory)
    }

    @Test func aClusterReplacesTheRadiusConnectionString() {
        let codes = AccountsTests.codes(AccountsTests.inventory(accounts: Self.accounts()))
        #expect(codes.filter { $0.hasPrefix("E") } == [], "\(codes)")
        #expect(!codes.contains("W:accounts-cluster-region"))
        // Beside a cluster, radius_database is a second and conflicting connection string.
        let both = Self.diagnostics(AccountsTests.inventory(accounts: Self.accounts(radiusDatabase: true)))
        let conflict = both.filter { $0.code.rawValue == "accounts-cluster" }
        #expect(conflict.count == 1 && conflict[0].location?.line == 5, "\(both.map(\.message))")
    }

    /// Each refusal points at the line responsible.
    @Test(arguments: [
        // no monitor: at hosts
        ("      db-mon: { address: 192.0.2.30, region: ap, role: monitor }\n", "", 11, "no host has 'role: monitor'"),
        // one data node
        ("      db-us: { address: 192.0.2.32, region: us }\n", "", 11, "one data node"),
        // the monitor on a data node's host
        ("192.0.2.30, region: ap", "192.0.2.32, region: ap", 13, "must not share a host with a data node"),
        // a second monitor
        (
            "      db-us: { address: 192.0.2.32, region: us }",
            "      db-us: { address: 192.0.2.32, region: us }\n      db-as: { address: 192.0.2.33, role: monitor }", 14,
            "a second monitor"
        ),
        // a name a RADIUS server has
        ("      db-eu:", "      rad-1:", 11, "a node or RADIUS server has the same name"),
    ])
    func aClusterThatCannotWorkIsRefusedAtItsLine(_ find: String, _ replace: String, _ line: Int, _ text: String) {
        let cluster = Self.cluster.replacingOccurrences(of: find, with: replace)
        #expect(cluster != Self.cluster)
        let found = Self.diagnostics(AccountsTests.inventory(accounts: Self.accounts(cluster)))
            .filter { $0.code.rawValue == "accounts-cluster" }
        // accounts: starts at line 3 of the inventory, the cluster's hosts at line 11.
        #expect(found.count == 1, "\(found.map(\.message))")
        #expect(found.first?.message.contains(text) == true, "\(found.map(\.message))")
        #expect(found.first?.location?.line == line, "\(found.map { $0.location?.line ?? 0 })")
    }

    @Test func theMonitorBelongsInAThirdRegion() {
        let cluster = Self.cluster.replacingOccurrences(of: "region: ap", with: "region: us")
        let found = Self.diagnostics(AccountsTests.inventory(accounts: Self.accounts(cluster)))
        let warning = found.filter { $0.code.rawValue == "accounts-cluster-region" }
        #expect(warning.count == 1 && warning[0].severity == .warning && warning[0].location?.line == 13)
        #expect(!found.contains { $0.severity == .error }, "\(found.map(\.message))")
    }

    @Test func keysAreCheckedWhereWritten() {
        let cluster = Self.cluster.replacingOccurrences(
            of: "tls_dir: /etc/vpnprov-ops/accounts-db", with: "tls_dir: accounts-db\n    dbname: Accounts")
        let found = Self.diagnostics(AccountsTests.inventory(accounts: Self.accounts(cluster)))
        #expect(
            found.filter { $0.code.rawValue == "invalid-value" }.compactMap(\.location?.line) == [9, 10],
            "\(found.map(\.message))")
        let noTLS = Self.cluster.replacingOccurrences(of: "    tls_dir: /etc/vpnprov-ops/accounts-db\n", with: "")
        #expect(
            Self.diagnostics(AccountsTests.inventory(accounts: Self.accounts(noTLS))).contains {
                $0.code.rawValue == "missing-key" && $0.message.contains("tls_dir")
            })
    }
}

extension AccountsClusterTests {
    /// Every RADIUS server connects to every data node, its own region's first, in libpq's keyword form (FreeRADIUS
    /// appends `application_name=`, which a URI with a query string cannot take), to the primary only, with a
    /// certificate and the timeouts that notice a dead host; a node asks the RADIUS server of its region first.
    @Test func everythingThatConnectsFollowsThePrimaryNearestFirst() throws {
        let dir = try temporaryDirectory("accounts-cluster")
        let text = AccountsTests.inventory(accounts: Self.accounts()).replacingOccurrences(
            of: "    tier: pro\n", with: "    tier: pro\n    region: us\n")
        let run = try AccountsTests.generate(dir, text, environment: ["VPN_ACCOUNTS_DB": "host=unused"])
        #expect(run.code == 0, "\(run.err)")
        let tail =
            " port=5432,5432 dbname=accounts user=radius sslmode=verify-full"
            + " sslrootcert=/etc/vpnprov/postgresql/ca.crt sslcert=/etc/vpnprov/postgresql/radius.crt"
            + " sslkey=/etc/vpnprov/postgresql/radius.key target_session_attrs=read-write connect_timeout=2"
            + " tcp_user_timeout=5000 keepalives_idle=5 keepalives_interval=2 keepalives_count=2"
        let eu = try AccountsTests.read(dir + "/out/radius/rad-1/mods-enabled/sql")
        let us = try AccountsTests.read(dir + "/out/radius/rad-2/mods-enabled/sql")
        #expect(eu.contains("radius_db = \"host=192.0.2.31,192.0.2.32\(tail)\"\n"), "\(eu)")
        #expect(us.contains("radius_db = \"host=192.0.2.32,192.0.2.31\(tail)\"\n"), "\(us)")
        #expect(!eu.contains("password="))
        // npro is in region us: its relay asks rad-2 first; nfree (no region) keeps the inventory's order.
        func homes(_ node: String) throws -> [String] {
            try AccountsTests.read(dir + "/out/servers/\(node)/radius-relay/proxy.conf")
                .split(separator: "\n").filter { $0.hasPrefix("\tipaddr = ") }.map {
                    String($0.dropFirst(10)).replacingOccurrences(of: "\"", with: "")
                }
        }
        #expect(try homes("npro") == ["192.0.2.12", "192.0.2.12", "192.0.2.11", "192.0.2.11"])
        #expect(try homes("nfree") == ["192.0.2.11", "192.0.2.11", "192.0.2.12", "192.0.2.12"])
    }

    /// Without accounts.database, `vpnprov accounts` connects to the cluster with the operator's certificate; libpq
    /// reads its conninfo as several hosts, which is what lets it wait out a failover.
    @Test func theOperatorConnectsToEveryDataNode() throws {
        let inventory = try Self.inventory(
            AccountsTests.inventory(
                accounts: Self.accounts().replacingOccurrences(of: "  database: env:VPN_ACCOUNTS_DB\n", with: "")))
        let plan = try #require(AccountsDatabasePlan.make(inventory))
        #expect(
            plan.operatorConninfo.hasPrefix(
                "host=192.0.2.31,192.0.2.32 port=5432,5432 dbname=accounts user=vpnprov sslmode=verify-full"
                    + " sslrootcert=/etc/vpnprov-ops/accounts-db/ca.crt sslcert=/etc/vpnprov-ops/accounts-db/vpnprov.crt"
                    + " sslkey=/etc/vpnprov-ops/accounts-db/vpnprov.key target_session_attrs=read-write"))
        #expect(
            plan.monitorURI
                == "postgres://autoctl_node@192.0.2.30:5432/pg_auto_failover?sslmode=verify-full&sslrootcert=/etc/vpnprov/postgresql/ca.crt"
                + "&tcp_user_timeout=5000&keepalives_idle=5&keepalives_interval=2&keepalives_count=2"
        )
    }
}

extension AccountsClusterTests {
    /// The database hosts' files: certificate logins only (the same pg_hba.conf on every data node, so libpq never
    /// stops at a host that refuses a login), the monitor's failover timers, the playbook and role only in a tree
    /// with a cluster.
    @Test func theDatabaseHostsGetTheirFilesAndARole() throws {
        let dir = try temporaryDirectory("accounts-cluster")
        let run = try AccountsTests.generate(
            dir, AccountsTests.inventory(accounts: Self.accounts()), environment: ["VPN_ACCOUNTS_DB": "host=unused"])
        #expect(run.code == 0, "\(run.err)")
        let out = dir + "/out"
        let eu = try AccountsTests.read(out + "/accounts-db/db-eu/pg_hba.conf")
        #expect(
            eu
                == (try AccountsTests.read(out + "/accounts-db/db-us/pg_hba.conf")).replacingOccurrences(
                    of: "db-us", with: "db-eu"))
        let records = eu.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(records.filter { $0.hasPrefix("host") }.allSatisfy { $0.hasPrefix("hostssl ") && $0.contains(" cert") })
        #expect(records.contains("hostssl accounts radius 192.0.2.11/32 cert"))
        #expect(records.contains("hostssl replication pgautofailover_replicator 192.0.2.32/32 cert map=vpnprov"))
        let monitor = try AccountsTests.read(out + "/accounts-db/db-mon/vpnprov.conf")
        #expect(monitor.contains("pgautofailover.node_considered_unhealthy_timeout = '5000'\n"))
        #expect(try AccountsTests.read(out + "/accounts-db/db-eu/vpnprov.conf").contains("wal_sender_timeout = '5s'\n"))
        #expect(
            try AccountsTests.read(out + "/accounts-db/db-eu/pg_ident.conf").contains(
                "vpnprov db-us pgautofailover_replicator\n"))
        let vars = try AccountsTests.read(out + "/deploy/host_vars/db-us.yml")
        #expect(
            vars.contains("vpnprov_accounts_db_role: \"data\"\n")
                && vars.contains("vpnprov_accounts_db_hostname: \"192.0.2.32\"\n"))
        let inventory = try AccountsTests.read(out + "/deploy/inventory.yml")
        #expect(inventory.contains("    vpnprov_accounts_db_monitor:\n      hosts:\n        \"db-mon\":\n"))
        #expect(FileManager.default.fileExists(atPath: out + "/deploy/roles/vpnprov_accounts_db/tasks/main.yml"))
        // Without a cluster: no playbook, no role, no group.
        let single = try temporaryDirectory("accounts-single")
        #expect(try AccountsTests.generate(single, AccountsTests.inventory()).code == 0)
        #expect(!FileManager.default.fileExists(atPath: single + "/out/deploy/accounts-db.yml"))
        #expect(!FileManager.default.fileExists(atPath: single + "/out/deploy/roles/vpnprov_accounts_db"))
        #expect(!(try AccountsTests.read(single + "/out/deploy/inventory.yml")).contains("accounts_db"))
    }
}
