import Foundation
import Testing
import VPNProvAccounts
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvTestFixtures

@testable import VPNProvEngine

/// Central accounts (docs/accounts.md): the `accounts:` section, what a RADIUS node and its RADIUS
/// servers get, and FreeRADIUS's own verdict on the generated directory. The whole path with real
/// charon, FreeRADIUS and PostgreSQL is in EndToEndTests/RadiusAccountsTests.
@Suite(.temporaries) struct AccountsTests {
    static let database = "host=db.example.com dbname=vpn user=radius sslmode=verify-full"
    static let env = ["VPN_RADIUS_DB": database, "VPN_ACCOUNTS_DB": "host=db.example.com dbname=vpn user=ops"]

    static let freeradius = TestDependency(
        path: "/usr/sbin/freeradius",
        installedBy: "the Debian packages freeradius and freeradius-postgresql (scripts/install-test-deps)")

    static func inventory(accounts: String? = nil, freeAccounts: String = "radius", extraUsers: String = "") -> String {
        let section =
            accounts ?? """
                accounts:
                  database: env:VPN_ACCOUNTS_DB
                  radius_database: env:VPN_RADIUS_DB
                  servers:
                    rad-1: { address: 192.0.2.11 }
                    rad-2: { address: 192.0.2.12, auth_port: 11812, acct_port: 11813 }

                """
        return """
            vpnprov: 1
            name: acme
            \(section)nodes:
              nfree:
                address: 192.0.2.1
                tier: free
                pool: 10.27.1.0/24
                pool6: fd00:27:1::/112
                services: [ikev2-cert, ikev2-eap, ipsec-xauth-psk]
                psk: gen
                accounts: \(freeAccounts)
              npro:
                address: 192.0.2.3
                tier: pro
                pool: 10.27.3.0/24
                pool6: fd00:27:3::/112
                services: [ikev2-eap, ipsec-xauth-psk]
                psk: gen
                accounts: radius
            users:
              staff:
                cert: true
                password: gen
            \(extraUsers)
            """
    }

    static func codes(_ text: String) -> [String] {
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        var diagnostics = decoded.diagnostics
        if let inventory = decoded.inventory { diagnostics += Validator.validate(inventory) }
        return diagnostics.map { "\($0.severity == .error ? "E" : "W"):\($0.code.rawValue)" }
    }

    static func generate(_ dir: String, _ text: String, environment: [String: String] = env) throws -> (
        code: Int32, out: String, err: String
    ) {
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return vpnprov(["generate", "--quiet"], in: dir, environment: environment)
    }

    static func read(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    static func stateSecrets(_ dir: String) throws -> SecretsFile {
        let path = dir + "/state/secrets.json"
        return try StateStore.decodeSecrets(Array(try #require(FileManager.default.contents(atPath: path))), path: path)
    }

    @Test func theSectionIsCheckedKeyByKey() {
        #expect(Self.codes(Self.inventory()).filter { $0.hasPrefix("E") } == [])
        let broken = Self.inventory(
            accounts: """
                accounts:
                  radius_database: host=db password=hunter22hunter
                  secret: Sup3rSecretLiteral
                  device_limit: 0
                  servers:
                    rad-1: { address: 192.0.2.11, auth_port: 1812, acct_port: 1812 }
                    npro: { address: "not an address" }
                  retries: 3

                """)
        let found = Self.codes(broken)
        #expect(found.contains("E:unknown-key"))
        #expect(found.filter { $0 == "E:invalid-value" }.count >= 2, "\(found)")  // literal conninfo, secret
        #expect(found.contains("E:value-out-of-range") || found.contains("E:invalid-value"), "\(found)")
        // The literal connection string and the literal secret are hidden from every message.
        let decoded = InventoryLoader.decode(bytes: Array(broken.utf8), file: "inventory.yaml")
        #expect(decoded.secretLines.contains(4) || decoded.secretValues.contains("Sup3rSecretLiteral"))
        #expect(!decoded.diagnostics.map(\.message).joined().contains("hunter22"))
    }

    /// `accounts.quotas`: per tier, bytes or a size with a unit, `none` for unlimited; anything else is an error
    /// that says what a size looks like, at the value's line.
    @Test func quotasAreSizesPerTier() throws {
        func section(_ quotas: String) -> String {
            """
            accounts:
              radius_database: env:VPN_RADIUS_DB
              servers:
                rad-1: { address: 192.0.2.11 }
              quotas: \(quotas)

            """
        }
        func quotas(_ text: String) -> [Tier: Int]? {
            InventoryLoader.decode(bytes: Array(Self.inventory(accounts: section(text)).utf8), file: "inventory.yaml")
                .inventory?.accounts?.dataQuotas
        }
        #expect(quotas("{free: 10GB, pro: none}") == [.free: 10_000_000_000])
        #expect(quotas("{free: 3000000}") == [.free: 3_000_000])
        #expect(quotas("{free: 1.5 GiB, pro: 2TB}") == [.free: 1_610_612_736, .pro: 2_000_000_000_000])
        #expect(quotas("{free: 500MB}") == [.free: 500_000_000])
        #expect(Self.codes(Self.inventory()).filter { $0.hasPrefix("E") } == [])
        for bad in ["{free: 10 GBs}", "{free: 0}", "{free: -5MB}", "{free: lots}", "{free: 2000000EB}", "{gold: 1GB}"] {
            let decoded = InventoryLoader.decode(
                bytes: Array(Self.inventory(accounts: section(bad)).utf8), file: "inventory.yaml")
            let errors = decoded.diagnostics.filter { $0.severity == .error }
            #expect(errors.count == 1, "\(bad): \(errors.map(\.message))")
            #expect(errors.first?.location?.line == 7, "\(bad)")
            if bad.hasPrefix("{gold") {
                #expect(errors.first?.message.contains("unknown key 'gold'") == true)
            } else {
                #expect(
                    errors.first?.message.contains(
                        "'accounts.quotas.free' must be a size (3000000, 500MB, 10GB, 1.5TiB) or none")
                        == true, "\(errors.map(\.message))")
            }
        }
        // The servers must be able to end a session at its quota: the nodes admit their Disconnect-Requests.
        #expect(!Self.codes(Self.inventory(accounts: section("{free: 10GB}"))).contains("W:quota-disconnect-blocked"))
        let blocked = section("{free: 10GB}").replacingOccurrences(
            of: "  quotas:", with: "  disconnect_from: [198.51.100.7]\n  quotas:")
        #expect(Self.codes(Self.inventory(accounts: blocked)).contains("W:quota-disconnect-blocked"))
        #expect(
            !Self.codes(
                Self.inventory(accounts: blocked.replacingOccurrences(of: "  quotas: {free: 10GB}\n", with: ""))
            )
            .contains("W:quota-disconnect-blocked"))
        #expect(DataSize.format(10_000_000_000) == "10 GB")
        #expect(DataSize.format(3_318_816) == "3.3 MB")
        #expect(DataSize.format(512) == "512 B")
    }

    @Test func rulesNameWhatARadiusNodeLacks() {
        // accounts: radius without accounts:
        #expect(Self.codes(Self.inventory(accounts: "")).contains("E:accounts-missing"))
        // no radius_database
        let noDatabase = Self.inventory(
            accounts: "accounts:\n  servers:\n    rad-1: { address: 192.0.2.11 }\n\n")
        #expect(Self.codes(noDatabase).contains("E:radius-database-missing"))
        // every server a host name and no disconnect_from
        let names = Self.inventory(
            accounts: """
                accounts:
                  radius_database: env:VPN_RADIUS_DB
                  servers:
                    rad-1: { address: rad-1.example.com }

                """)
        #expect(Self.codes(names).contains("E:disconnect-from-empty"))
        #expect(
            !Self.codes(
                names.replacingOccurrences(of: "  servers:", with: "  disconnect_from: [198.51.100.0/24]\n  servers:")
            ).contains("E:disconnect-from-empty"))
        // a server named like a node, equal ports
        let clash = Self.inventory(
            accounts: """
                accounts:
                  radius_database: env:VPN_RADIUS_DB
                  servers:
                    npro: { address: 192.0.2.11 }
                    rad-2: { address: 192.0.2.12, auth_port: 1900, acct_port: 1900 }

                """)
        #expect(Self.codes(clash).filter { $0 == "E:invalid-radius-server" }.count == 2)
        // accounts: written, used by no node
        let unused = Self.inventory(freeAccounts: "inventory").replacingOccurrences(
            of: "    accounts: radius\n", with: "")
        #expect(Self.codes(unused).contains("W:accounts-unused"))
    }

    /// Every connection string that carries a password is refused, however libpq spells it: the
    /// keywords `password` and `sslpassword`, a URI's user information, and a URI's query parameters
    /// (percent-encoded names included, which libpq decodes). What holds none passes.
    @Test(arguments: [
        "host=db password=hunter22hunter", "host=db sslpassword=hunter22hunter", "password = x host=db",
        "postgresql://radius:hunter22@db/vpn", "postgres://radius:hunter22@db:5432/vpn",
        "postgresql://radius@db/vpn?password=hunter22", "postgresql://db/vpn?sslmode=require&password=hunter22",
        "postgresql://db/vpn?sslpassword=hunter22", "postgresql:///vpn?host=/run/pg&password=hunter22",
        "postgresql://db/vpn?%70assword=hunter22", "POSTGRESQL://db/vpn?Password=hunter22",
    ])
    func aConnectionStringWithAPasswordIsRefused(_ value: String) {
        #expect(ConnectionString.problem(value)?.contains("passfile") == true, "\(value)")
    }

    @Test(arguments: [
        "host=db dbname=vpn user=radius passfile=/etc/vpnprov/pgpass sslmode=verify-full",
        "postgresql://radius@db:5432/vpn?passfile=/etc/vpnprov/pgpass&sslmode=verify-full",
        "postgresql://db/vpn?user=a@b", "postgresql://radius@db:5432/vpn?application_name=password",
        "host=db sslkey=/etc/vpnprov/radius.key sslcert=/etc/vpnprov/radius.crt",
    ])
    func aConnectionStringWithoutAPasswordPasses(_ value: String) {
        #expect(ConnectionString.problem(value) == nil, "\(value)")
    }

    /// A RADIUS node may not offer ikev2-psk: the node PSK that every account of its PSK services holds
    /// would open a tunnel without an account. The error is at the node's services line; the other PSK
    /// services (whose PSK is followed by an account round) stay allowed, and so does ikev2-psk on a node
    /// without `accounts: radius`.
    @Test func aRadiusNodeMayNotOfferIkev2Psk() throws {
        let text = Self.inventory().replacingOccurrences(
            of: "services: [ikev2-eap, ipsec-xauth-psk]",
            with: "services: [ikev2-eap, ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk]")
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        let inventory = try #require(decoded.inventory)
        let found = Validator.validate(inventory).filter { $0.code.rawValue == "radius-psk-service" }
        #expect(found.count == 1 && found.first?.severity == .error, "\(found)")
        let servicesLine = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex {
            $0.contains("ikev2-psk, ikev2-psk-eap")
        }.map { $0 + 1 }
        #expect(found.first?.location?.line == servicesLine, "\(String(describing: found.first?.location))")
        #expect(found.first?.message.contains("npro") == true)
        // Without ikev2-psk the PSK services pass; on a node without accounts: radius ikev2-psk passes.
        #expect(
            !Self.codes(
                Self.inventory().replacingOccurrences(
                    of: "services: [ikev2-eap, ipsec-xauth-psk]",
                    with: "services: [ikev2-eap, ikev2-psk-eap, ipsec-xauth-psk]")
            )
            .contains("E:radius-psk-service"))
        let inventoryNode = Self.inventory(freeAccounts: "inventory").replacingOccurrences(
            of: "services: [ikev2-cert, ikev2-eap, ipsec-xauth-psk]", with: "services: [ikev2-cert, ikev2-psk]")
        #expect(!Self.codes(inventoryNode).contains("E:radius-psk-service"), "\(Self.codes(inventoryNode))")
    }

    /// A staff member's identities are no account names (an account `ops@lab` once ended the staff
    /// certificate tunnel of that identity and got its virtual address): the user's name and IKE identity, with the
    /// nodes' identities and addresses, are what `accounts add` refuses and what the RADIUS policy refuses for rows a
    /// backend wrote, folded as strongSwan compares them.
    @Test func staffIdentitiesAreKeptFromAccountNames() throws {
        let text = Self.inventory(extraUsers: "  Ops:\n    cert: true\n    id: Ops@Staff.Example\n")
        let inventory = try #require(InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml").inventory)
        let identities = Dictionary(
            RadiusPlan.inventoryIdentities(in: inventory).map { ($0.identity, $0.owner) },
            uniquingKeysWith: { a, _ in a })
        #expect(identities["ops"] == "the EAP/XAuth identity of user 'Ops'", "\(identities)")
        #expect(identities["ops@staff.example"] == "the IKE identity of user 'Ops'", "\(identities)")
        #expect(identities["staff"] == "the EAP/XAuth identity of user 'staff'", "\(identities)")
        // A node's IKE identity is its address.
        #expect(identities["192.0.2.1"] == "the IKE identity of node 'nfree'", "\(identities)")
        let dir = try temporaryDirectory("accounts-staff")
        let run = try Self.generate(dir, text)
        #expect(run.code == 0, "\(run.err)")
        for server in ["rad-1", "rad-2"] {
            let policy = try Self.read(dir + "/out/radius/\(server)/policy.d/vpnprov-identities")
            for identity in ["ops", "ops@staff.example", "staff", "192.0.2.1"] {
                #expect(policy.contains("case \"\(identity)\" {"), "\(server) lacks \(identity):\n\(policy)")
            }
            #expect(policy.contains("%{tolower:%{User-Name}}"), "the policy compares folded names")
        }
    }

    /// `disconnect_from` may not be every address or reach into a RADIUS node's pool: the error is at the
    /// entry, and an entry next to the pools passes.
    @Test func disconnectFromIsNeitherEverythingNorAPool() throws {
        func findings(_ list: String) throws -> [Diagnostic] {
            let text = Self.inventory(
                accounts: """
                    accounts:
                      radius_database: env:VPN_RADIUS_DB
                      disconnect_from:
                        \(list)
                      servers:
                        rad-1: { address: 192.0.2.11 }

                    """)
            let inventory = try #require(
                InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml").inventory)
            return Validator.validate(inventory).filter { $0.code.rawValue == "disconnect-from-wide" }
        }
        let everyone = try findings("- 192.0.2.11\n    - 0.0.0.0/0\n    - ::/0")
        #expect(everyone.count == 2 && everyone.allSatisfy { $0.severity == .error }, "\(everyone)")
        // The section starts on line 3: disconnect_from's entries are lines 6, 7, 8.
        #expect(everyone.map { $0.location?.line } == [7, 8], "\(everyone.map { $0.location })")
        // 10.27.0.0/16 holds both nodes' pools; fd00:27:3::5 is in npro's pool6.
        let pool = try findings("- 10.27.0.0/16\n    - fd00:27:3::5")
        #expect(pool.count == 3, "\(pool.map { $0.message })")
        #expect(pool.map { $0.location?.line } == [6, 6, 7], "\(pool.map { $0.location })")
        #expect(pool.allSatisfy { !$0.notes.isEmpty })
        let inside = try findings("- fd00:27:1::9")
        #expect(inside.count == 1 && inside.first?.message.contains("pool6") == true, "\(inside.map { $0.message })")
        #expect(try findings("- 192.0.2.11\n    - 198.51.100.0/24\n    - 2001:db8::/32").isEmpty)
        // Without disconnect_from the servers may send them: a server inside a pool is the same mistake.
        let text = Self.inventory(
            accounts: """
                accounts:
                  radius_database: env:VPN_RADIUS_DB
                  servers:
                    rad-1: { address: 10.27.3.9 }

                """)
        let inventory = try #require(InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml").inventory)
        let server = Validator.validate(inventory).filter { $0.code.rawValue == "disconnect-from-wide" }
        #expect(server.count == 1 && server.first?.location?.line == 6, "\(server.map { $0.location })")
    }

    @Test func aRadiusNodeHandsPasswordsToRadiusAndRequiresTheTierOfAPaidNode() throws {
        let dir = try temporaryDirectory("accounts")
        let run = try Self.generate(dir, Self.inventory())
        #expect(run.code == 0, "\(run.err)")
        let out = dir + "/out"
        let free = try Self.read(out + "/servers/nfree/swanctl/swanctl.conf")
        let pro = try Self.read(out + "/servers/npro/swanctl/swanctl.conf")
        #expect(free.contains("auth = \"eap-radius\"") && free.contains("auth = \"xauth-radius\""))
        #expect(!free.contains("groups ="), "a free node admits every tier")
        #expect(pro.components(separatedBy: "groups = \"pro\"").count - 1 == 2, "the EAP and the XAuth round:\n\(pro)")
        #expect(!free.contains("eap-mschapv2") && !pro.contains("eap-mschapv2"))
        // The inventory's password user has no password on a RADIUS node, and no EAP profile for it;
        // their certificate still opens the free node.
        let secrets = try Self.read(out + "/servers/nfree/swanctl/conf.d/secrets.conf")
        #expect(!secrets.contains("staff"))
        let staff = try Self.read(out + "/clients/staff/linux/swanctl/swanctl.conf")
        #expect(staff.contains("nfree-ikev2-cert") && !staff.contains("ikev2-eap"))
        // Private files, one secret per node, the same secret in the node's relay and in every server's
        // clients.conf; charon and the relay share one of their own.
        let state = try Self.stateSecrets(dir)
        let freeSecret = try #require(state.radiusSecrets?["nfree"])
        let proSecret = try #require(state.radiusSecrets?["npro"])
        let freeRelay = try #require(state.radiusRelaySecrets?["nfree"])
        #expect(freeSecret != proSecret && state.daeSecrets?["nfree"] != freeSecret)
        #expect(freeRelay != freeSecret && freeRelay != state.radiusRelaySecrets?["npro"])
        #expect(!(try Self.read(out + "/servers/nfree/strongswan.d/vpnprov-radius.conf")).contains(freeSecret))
        for (path, secret) in [
            ("servers/nfree/radius-relay/proxy.conf", freeSecret),
            ("servers/nfree/strongswan.d/vpnprov-radius.conf", freeRelay),
            ("servers/nfree/radius-relay/clients.conf", freeRelay),
            ("radius/rad-1/clients.conf", proSecret), ("radius/rad-2/clients.conf", freeSecret),
            ("servers/npro/strongswan.d/vpnprov-radius-dae.conf", try #require(state.daeSecrets?["npro"])),
            ("radius/rad-2/mods-enabled/sql", Self.database),
        ] {
            #expect(try Self.read(out + "/" + path).contains(secret), "\(path)")
            let mode = try FileManager.default.attributesOfItem(atPath: out + "/" + path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path)")
        }
        let clients = try Self.read(out + "/radius/rad-1/clients.conf")
        #expect(clients.contains("vpn_tier = \"pro\"") && clients.contains("vpn_tier = \"free\""))
        // charon asks the node's relay on loopback, which tries rad-1 first, then rad-2 (its ports), logins and
        // accounting alike, from the node's address; the DAE port is open only to the servers.
        let radius = try Self.read(out + "/servers/npro/strongswan.d/vpnprov-radius.conf")
        #expect(radius.contains("nas_identifier = \"npro\"") && radius.contains("address = \"127.0.0.1\""))
        #expect(radius.components(separatedBy: "address = ").count == 2, "one RADIUS server, the relay:\n\(radius)")
        let proxy = try Self.read(out + "/servers/npro/radius-relay/proxy.conf")
        for pool in ["vpnprov-auth", "vpnprov-acct"] {
            let members = try #require(proxy.range(of: "home_server_pool \(pool) {").map { proxy[$0.upperBound...] })
                .prefix { $0 != "}" }
            #expect(members.contains("type = fail-over"), "\(pool)")
            let kind = pool == "vpnprov-auth" ? "auth" : "acct"
            let first = try #require(members.range(of: "home_server = server1-\(kind)"))
            let second = try #require(members.range(of: "home_server = server2-\(kind)"))
            #expect(first.lowerBound < second.lowerBound, "\(pool)")
        }
        for (name, port) in [
            ("server1-auth", 1812), ("server1-acct", 1813), ("server2-auth", 11812), ("server2-acct", 11813),
        ] {
            let section = try #require(proxy.range(of: "home_server \(name) {").map { proxy[$0.upperBound...] })
                .prefix { $0 != "}" }
            let address = name.hasPrefix("server1") ? "192.0.2.11" : "192.0.2.12"
            #expect(section.contains("ipaddr = \"\(address)\"") && section.contains("port = \(port)\n"), "\(name)")
            #expect(section.contains("src_ipaddr = \"192.0.2.3\"") && section.contains("status_check = status-server"))
        }
        // Read by charon only when it starts, beside the listener: many logins at once from one address (a
        // carrier-grade NAT) are not ignored after the fifth half-open IKE_SA.
        let dae = try Self.read(out + "/servers/npro/strongswan.d/vpnprov-radius-dae.conf")
        #expect(dae.contains("\ncharon {\n") && dae.contains("\n   block_threshold = 50\n"), "\(dae)")
        // The RADIUS servers count a session as a device while it was updated within two accounting
        // intervals (300 s by default) and a minute.
        let sql = try Self.read(out + "/radius/rad-1/mods-enabled/sql")
        #expect(sql.contains("%{NAS-IP-Address}}', '660', '%{Acct-Session-Id}')\""), "\(sql)")
        #expect(sql.contains("FROM vpn_devices_in_use('%{SQL-User-Name}', '660')\""), "\(sql)")
        let nft = try Self.read(out + "/servers/npro/network/vpnprov.nft")
        #expect(nft.contains("udp dport 3799 ip saddr 192.0.2.11/32 accept"))
        #expect(nft.contains("udp dport 3799 drop"))
        // The catalogue says the app brings the account's own credentials, for password services only.
        let catalog = try Self.read(out + "/catalog/servers.json")
        #expect(catalog.components(separatedBy: "\"credentials\" : \"account\"").count - 1 == 4, "\(catalog)")
        // The database's migrations ship beside the servers' directories.
        #expect(try Self.read(out + "/radius/migrations/0001-accounts.sql").contains("CREATE FUNCTION vpn_check"))
        // Ansible knows the RADIUS servers.
        let hosts = try Self.read(out + "/deploy/inventory.yml")
        #expect(hosts.contains("vpnprov_radius:") && hosts.contains("\"rad-2\":"))
    }

    /// The PSK a RADIUS node hands every app account (`ipsec-xauth-psk`) may not be another node's `ikev2-psk` PSK,
    /// where it alone opens a tunnel: the same `file:`, `env:` or literal (a YAML anchor) is an error at the
    /// ikev2-psk node's PSK, not the `psk-reused` warning; two references that only resolve to one value are
    /// refused by `validate --secrets` and by `generate`, at the same place, before anything is written.
    @Test func anAccountPSKOpensNoPSKOnlyServiceElsewhere() throws {
        func text(free: String, staff: String, staffServices: String = "[ikev2-psk]") -> String {
            Self.inventory().replacingOccurrences(
                of: "    psk: gen\n    accounts: radius\n  npro:",
                with: "    psk: \(free)\n    accounts: radius\n  npro:"
            )
            .replacingOccurrences(
                of: "users:\n",
                with: """
                      nstaff:
                        address: 192.0.2.5
                        pool: 10.27.5.0/24
                        services: \(staffServices)
                        psk: \(staff)
                    users:

                    """)
        }
        func line(of needle: String, in text: String, last: Bool = true) -> Int? {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            return (last ? lines.lastIndex { $0.contains(needle) } : lines.firstIndex { $0.contains(needle) }).map {
                $0 + 1
            }
        }
        let literal = "Zq7-Lm2p#Rt9vW4xK8sBn"
        for (free, staff) in [
            ("file:shared.psk", "file:shared.psk"), ("env:VPN_SHARED_PSK", "env:VPN_SHARED_PSK"),
            ("&shared \(literal)", "*shared"), (literal, literal),
        ] {
            let inventory = text(free: free, staff: staff)
            let decoded = InventoryLoader.decode(bytes: Array(inventory.utf8), file: "inventory.yaml")
            let found = decoded.diagnostics + Validator.validate(try #require(decoded.inventory))
            let reused = found.filter { $0.code.rawValue == "radius-psk-reused" }
            #expect(reused.count == 1 && reused.first?.severity == .error, "\(staff): \(found.map(\.message))")
            // An alias is where its anchor is: the error of "*shared" points at the value it repeats.
            let at = staff.hasPrefix("*") ? "psk: \(free)" : "psk: \(staff)"
            #expect(reused.first?.location?.line == line(of: at, in: inventory), "\(reused)")
            #expect(reused.first?.notes.first?.location?.line == line(of: "psk: \(free)", in: inventory, last: false))
            #expect(reused.first?.message.contains("node 'nfree' hands every app account") == true)
            #expect(!reused.map(\.message).joined().contains(literal), "a literal PSK is never shown")
            #expect(!found.contains { $0.code.rawValue == "psk-reused" }, "\(found.map(\.message))")
        }
        // Shared with a node whose PSK is followed by a password round: the warning, as before.
        let eap = text(free: "file:shared.psk", staff: "file:shared.psk", staffServices: "[ikev2-psk-eap]")
        let eapCodes = Self.codes(eap)
        #expect(eapCodes.contains("W:psk-reused") && !eapCodes.contains("E:radius-psk-reused"), "\(eapCodes)")

        // The command line: file:line:col and the code; exit 1.
        let dir = try temporaryDirectory("psk-reused")
        try "Zq7-Lm2p#Rt9vW4xK8sBn-file\n".write(toFile: dir + "/shared.psk", atomically: true, encoding: .utf8)
        let same = text(free: "file:shared.psk", staff: "file:shared.psk")
        try same.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let validate = vpnprov(["validate"], in: dir, environment: Self.env)
        #expect(validate.code == 1, "\(validate.err)")
        let at = "inventory.yaml:\(line(of: "psk: file:shared.psk", in: same)!):10: error: node 'nstaff':"
        #expect(validate.err.contains(at) && validate.err.contains("[radius-psk-reused]"), "\(validate.err)")
        // Two spellings of one file: told apart as written, one value once read.
        let spelled = text(free: "file:shared.psk", staff: "file:./shared.psk")
        #expect(!Self.codes(spelled).contains("E:radius-psk-reused"))
        try spelled.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let secrets = vpnprov(["validate", "--secrets"], in: dir, environment: Self.env)
        let spelledAt = "inventory.yaml:\(line(of: "psk: file:./shared.psk", in: spelled)!):10: error: node 'nstaff':"
        #expect(secrets.code == 1 && secrets.err.contains(spelledAt), "\(secrets.err)")
        #expect(secrets.err.contains("holds the same value as") && secrets.err.contains("[radius-psk-reused]"))
        let generate = vpnprov(["generate", "--quiet"], in: dir, environment: Self.env)
        #expect(generate.code == 1 && generate.err.contains(spelledAt), "\(generate.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"), "generate wrote an output tree")
    }

    /// FreeRADIUS itself accepts each generated directory (`freeradius -C`): the RADIUS servers' and the nodes'
    /// relays.
    @Test(.needs(AccountsTests.freeradius)) func freeRadiusAcceptsTheGeneratedConfiguration() throws {
        try Self.freeradius.require()
        let dir = try temporaryDirectory("accounts")
        // nfree with a radius_address: its client's vpn_nas_address and the policy that reads it are FreeRADIUS's too.
        let run = try Self.generate(dir, Self.inventoryWithRadiusAddress())
        try #require(run.code == 0, "\(run.err)")
        for server in ["rad-1", "rad-2"] {
            // Its messages may quote the configuration's secrets: only the verdict is reported.
            let check = try runTool(["/usr/sbin/freeradius", "-C", "-d", dir + "/out/radius/" + server, "-lstdout"])
            #expect(check.status == 0, "freeradius -C refuses radius/\(server); run it by hand to see why")
            #expect(
                check.output.contains("Loaded virtual server vpnprov"), "radius/\(server): no vpnprov virtual server")
        }
        for node in ["nfree", "npro"] {
            let check = try runTool([
                "/usr/sbin/freeradius", "-C", "-d", dir + "/out/servers/\(node)/radius-relay", "-lstdout",
            ])
            #expect(check.status == 0, "freeradius -C refuses servers/\(node)/radius-relay; run it by hand to see why")
            #expect(
                check.output.contains("Loaded virtual server vpnprov-relay-forward"),
                "servers/\(node)/radius-relay: no forwarder")
        }
    }

    @Test func validateResolvesTheConnectionStringsWithoutPrintingThem() throws {
        let dir = try temporaryDirectory("accounts")
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let ok = vpnprov(["validate", "--secrets"], in: dir, environment: Self.env)
        #expect(ok.code == 0, "\(ok.err)")
        // The leak check of vpnprov(...) already fails on the connection strings; a missing one is named by reference.
        let missing = vpnprov(["validate", "--secrets"], in: dir, environment: ["VPN_RADIUS_DB": Self.database])
        #expect(missing.code != 0 && missing.err.contains("env:VPN_ACCOUNTS_DB"), "\(missing.err)")
        var quoted = Self.env
        quoted["VPN_RADIUS_DB"] = "host=db password=s3cretPassw0rd"
        let refused = vpnprov(["validate", "--secrets"], in: dir, environment: quoted)
        #expect(refused.code != 0 && refused.err.contains("passfile"), "\(refused.err)")
        let generate = vpnprov(["generate", "--quiet"], in: dir, environment: quoted)
        #expect(generate.code != 0 && !FileManager.default.fileExists(atPath: dir + "/out/radius"))
    }

    /// `vpnprov accounts` reads the nodes' Disconnect-Request secrets as every command reads the state:
    /// never through a symbolic link, and a state without them is named.
    @Test func accountsReadsTheStateSecretsLikeTheState() throws {
        let dir = try temporaryDirectory("accounts")
        try #require(try Self.generate(dir, Self.inventory()).code == 0)
        let secrets = dir + "/state/secrets.json"
        try FileManager.default.moveItem(atPath: secrets, toPath: dir + "/secrets-copy.json")
        try FileManager.default.createSymbolicLink(atPath: secrets, withDestinationPath: dir + "/secrets-copy.json")
        let linked = vpnprov(["accounts", "list"], in: dir, environment: Self.env)
        #expect(linked.code == 3 && linked.err.contains("Disconnect-Request secrets"), "\(linked.err)")
        #expect(linked.err.contains("symbolic link") || linked.err.contains("link"), "\(linked.err)")
        try FileManager.default.removeItem(atPath: secrets)
        // The manifest lists it: its loss is named as such.
        let lost = vpnprov(["accounts", "list"], in: dir, environment: Self.env)
        #expect(lost.code == 3 && lost.err.contains("secrets.json is missing, but"), "\(lost.err)")
        // A state without secrets (and without a manifest) has never been generated.
        try FileManager.default.removeItem(atPath: dir + "/state/manifest.sha256")
        let missing = vpnprov(["accounts", "list"], in: dir, environment: Self.env)
        #expect(missing.code == 3 && missing.err.contains("run 'vpnprov generate' first"), "\(missing.err)")
    }

    @Test func rotateRadiusSecretReplacesBothSidesAndNothingElse() throws {
        let dir = try temporaryDirectory("accounts")
        try #require(try Self.generate(dir, Self.inventory()).code == 0)
        let before = try Self.stateSecrets(dir)
        let rotated = vpnprov(["rotate-radius-secret", "npro", "--quiet"], in: dir, environment: Self.env)
        #expect(rotated.code == 0, "\(rotated.err)")
        let after = try Self.stateSecrets(dir)
        #expect(after.radiusSecrets?["npro"] != before.radiusSecrets?["npro"])
        #expect(after.daeSecrets?["npro"] != before.daeSecrets?["npro"])
        #expect(after.radiusSecrets?["nfree"] == before.radiusSecrets?["nfree"] && after.psks == before.psks)
        let clients = try Self.read(dir + "/out/radius/rad-1/clients.conf")
        #expect(clients.contains(try #require(after.radiusSecrets?["npro"])))
        #expect(!clients.contains(try #require(before.radiusSecrets?["npro"])))
        // The node's relay holds the new RADIUS secret, and a new one of its own, shared with charon.
        let proxy = try Self.read(dir + "/out/servers/npro/radius-relay/proxy.conf")
        #expect(proxy.contains(try #require(after.radiusSecrets?["npro"])))
        let relay = try #require(after.radiusRelaySecrets?["npro"])
        #expect(relay != before.radiusRelaySecrets?["npro"])
        #expect(after.radiusRelaySecrets?["nfree"] == before.radiusRelaySecrets?["nfree"])
        #expect(try Self.read(dir + "/out/servers/npro/strongswan.d/vpnprov-radius.conf").contains(relay))
        // The IPsec key goes with them, on the node and on every server.
        let newKey = try #require(after.radiusIPsecSecrets?["npro"])
        let oldKey = try #require(before.radiusIPsecSecrets?["npro"])
        #expect(newKey != oldKey && after.radiusIPsecSecrets?["nfree"] == before.radiusIPsecSecrets?["nfree"])
        for path in ["radius/rad-2/ipsec/swanctl.conf", "servers/npro/swanctl/conf.d/vpnprov-radius-ipsec.conf"] {
            let text = try Self.read(dir + "/out/" + path)
            #expect(text.contains(ServerRenderer.base64Secret(newKey)), "\(path)")
            #expect(!text.contains(ServerRenderer.base64Secret(oldKey)), "\(path)")
        }
        let refused = vpnprov(["rotate-radius-secret", "nosuch", "--quiet"], in: dir, environment: Self.env)
        #expect(refused.code != 0 && refused.err.contains("[no-such-node]"), "\(refused.err)")
    }
}
