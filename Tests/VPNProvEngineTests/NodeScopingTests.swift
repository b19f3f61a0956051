import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

/// Certificate users are scoped to their nodes (docs/security.md, section 13): the certificate's
/// policies, the node's `cert_policy`, what a change of `nodes:` re-issues and revokes, and a CA from
/// before node scoping. The real charon's verdict is proven in EndToEndTests/ForwardingTests.
@Suite(.temporaries) struct NodeScopingTests {
    static let env = ["NYC_PSK": "Hq7#Lm2@Vx9!Rt4$Kp8&Zw3"]

    static func inventory(annNodes: String, withNYC: Bool = true) -> String {
        LifecycleTests.inventory(
            users: "  ann:\n    cert: true\n\(annNodes)  bob:\n    cert: true\n",
            nodes: """
                  fra-1:
                    address: fra-1.vpn.example.com
                    pool: 10.10.0.0/24
                    services: [ikev2-cert]
                """
                    + (withNYC
                        ? """

                          nyc-1:
                            address: 203.0.113.10
                            pool: 10.20.0.0/24
                            services: [ikev2-cert]
                        """ : ""))
    }

    static func generate(_ dir: String, _ text: String) throws -> (code: Int32, out: String, err: String) {
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return vpnprov(["generate"], in: dir, environment: env)
    }

    /// The certificate policies of a user's current certificate, read back with OpenSSL's parser.
    static func policies(_ dir: String, user: String) throws -> [String] {
        let index = LifecycleTests.json(try String(contentsOfFile: dir + "/state/index.json", encoding: .utf8))
        let users = try #require(index["users"] as? [String: [String: Any]])
        let serial = try #require(users[user]?["serial"] as? String)
        let pem = try String(contentsOfFile: dir + "/state/certs/\(serial).pem", encoding: .utf8)
        return try X509Certificate(pem: pem).certificatePolicyOIDs
    }

    static func statuses(_ dir: String, holder: String) -> [String] {
        let index = LifecycleTests.json((try? String(contentsOfFile: dir + "/state/index.json", encoding: .utf8)) ?? "")
        let certificates = index["certificates"] as? [String: [String: Any]] ?? [:]
        return certificates.values.filter { $0["holder"] as? String == holder && $0["kind"] as? String == "client" }
            .compactMap { $0["status"] as? String }.sorted()
    }

    @Test func certificatesCarryTheirNodesAndNodesRequireTheirOwn() throws {
        let dir = try temporaryDirectory()
        let first = try Self.generate(dir, Self.inventory(annNodes: "    nodes: [fra-1]\n"))
        #expect(first.code == 0, "\(first.err)")
        let fra = NodeAccessPolicy.oid(forNode: "fra-1")
        let nyc = NodeAccessPolicy.oid(forNode: "nyc-1")
        #expect(fra != nyc && fra.hasPrefix(NodeAccessPolicy.arc + "."))
        #expect(try Self.policies(dir, user: "ann") == [fra])
        #expect(try Self.policies(dir, user: "bob") == [fra, nyc])
        for (node, oid) in [("fra-1", fra), ("nyc-1", nyc)] {
            let conf = try String(contentsOfFile: dir + "/out/servers/\(node)/swanctl/swanctl.conf", encoding: .utf8)
            #expect(conf.contains("cert_policy = \"\(oid)\""), "\(node)")
        }
        // The CA allows every policy (strongSwan 5.9 checks the whole chain).
        let ca = try X509Certificate(pem: String(contentsOfFile: dir + "/state/ca/ca.pem", encoding: .utf8))
        #expect(ca.certificatePolicyOIDs == [NodeAccessPolicy.anyPolicy])
    }

    @Test func addingANodeReissuesAndRemovingOneRevokesTheOldCertificate() throws {
        let dir = try temporaryDirectory()
        #expect(try Self.generate(dir, Self.inventory(annNodes: "    nodes: [fra-1]\n")).code == 0)
        let widened = try Self.generate(dir, Self.inventory(annNodes: "    nodes: [fra-1, nyc-1]\n"))
        #expect(widened.code == 0, "\(widened.err)")
        #expect(widened.err.contains("ann") && widened.err.contains("nodes added"), "\(widened.err)")
        #expect(Self.statuses(dir, holder: "ann") == ["superseded", "valid"], "widening only adds")
        let narrowed = try Self.generate(dir, Self.inventory(annNodes: "    nodes: [fra-1]\n"))
        #expect(narrowed.code == 0, "\(narrowed.err)")
        #expect(narrowed.err.contains("nodes removed"), "\(narrowed.err)")
        // The certificate that opened nyc-1 is on the CRL; the first one (fra-1 only) stays superseded.
        #expect(Self.statuses(dir, holder: "ann") == ["revoked", "superseded", "valid"])
        #expect(try Self.policies(dir, user: "ann") == [NodeAccessPolicy.oid(forNode: "fra-1")])
        let crl = try CertificateRevocationList(
            pem: String(contentsOfFile: dir + "/out/servers/fra-1/swanctl/x509crl/crl.pem", encoding: .utf8))
        #expect(crl.revoked.count == 1)
        // bob is untouched by ann's changes.
        #expect(Self.statuses(dir, holder: "bob") == ["valid"])
    }

    @Test func removingANodeFromTheFleetReissuesNobody() throws {
        let dir = try temporaryDirectory()
        #expect(try Self.generate(dir, Self.inventory(annNodes: "")).code == 0)
        let before = try Self.policies(dir, user: "bob")
        let shrunk = try Self.generate(dir, Self.inventory(annNodes: "", withNYC: false))
        #expect(shrunk.code == 0, "\(shrunk.err)")
        #expect(try Self.policies(dir, user: "bob") == before, "bob was re-issued")
        #expect(Self.statuses(dir, holder: "bob") == ["valid"] && Self.statuses(dir, holder: "ann") == ["valid"])
    }

    @Test func aCAFromBeforeNodeScopingLeavesNodesUnscopedAndSaysSoUntilItIsRotated() throws {
        let dir = try temporaryDirectory()
        let text = Self.inventory(annNodes: "    nodes: [fra-1]\n")
        #expect(try Self.generate(dir, text).code == 0)
        // A state written by an earlier vpnprov: its CA record says nothing of anyPolicy.
        try StateDamage.unseal(dir + "/state")
        let indexPath = dir + "/state/index.json"
        let index = try String(contentsOfFile: indexPath, encoding: .utf8)
        let legacy = index.replacingOccurrences(of: #"    "anyPolicy" : true,\#n"#, with: "")
            .replacingOccurrences(of: #","anyPolicy":true"#, with: "")
        try #require(legacy != index, "index.json has no anyPolicy to remove:\n\(index.prefix(400))")
        try legacy.write(toFile: indexPath, atomically: true, encoding: .utf8)
        let old = try Self.generate(dir, text)
        #expect(old.code == 0, "\(old.err)")
        #expect(old.err.contains("rotate-ca") && old.err.contains("anyPolicy"), "\(old.err)")
        let conf = try String(contentsOfFile: dir + "/out/servers/fra-1/swanctl/swanctl.conf", encoding: .utf8)
        #expect(!conf.contains("cert_policy"), "a 5.9 node would refuse every certificate user")
        #expect(vpnprov(["rotate-ca"], in: dir, environment: Self.env).code == 0)
        #expect(
            !(try String(contentsOfFile: dir + "/out/servers/fra-1/swanctl/swanctl.conf", encoding: .utf8)).contains(
                "cert_policy"),
            "during the overlap the old CA is still the nodes' trust root")
        let finish = vpnprov(["rotate-ca", "--finish"], in: dir, environment: Self.env)
        #expect(finish.code == 0, "\(finish.err)")
        #expect(!finish.err.contains("anyPolicy"))
        #expect(
            (try String(contentsOfFile: dir + "/out/servers/fra-1/swanctl/swanctl.conf", encoding: .utf8)).contains(
                "cert_policy"))
    }
}

/// `network:` is decoded at its lines, merged from `defaults:` key by key, refused where a value is
/// wrong, and warned where a setting cannot take effect.
@Suite(.temporaries) struct NetworkSettingsTests {
    static func decode(_ network: String, pool6: String = "fd00:9::/112") -> InventoryDecoder.Result {
        VPNProvTestFixtures.decode(
            """
            vpnprov: 1
            name: acme
            defaults:
              network: {mss: 1300}
            nodes:
              n1:
                address: 192.0.2.1
                pool: 10.9.0.0/24
                pool6: \(pool6)
                network: \(network)
            users:
              u: {password: gen}
            """)
    }

    @Test func settingsMergeWithDefaultsKeyByKey() throws {
        let inventory = try #require(
            Self.decode("{uplink: eth0.100, isolate_clients: false, ipsec: libipsec}").inventory)
        let n = inventory.nodes[0].network
        #expect(
            n.uplink == "eth0.100" && n.mss == .fixed(1300) && !n.isolateClients && n.ipsec == .libipsec
                && n.ipv6 == nil)
        #expect(inventory.nodes[0].ipv6Mode == .nat)
        let auto = try #require(Self.decode("{mss: auto}").inventory)
        #expect(auto.nodes[0].network.mss == .routeMTU && auto.nodes[0].network.isolateClients)
        let global = try #require(Self.decode("{}", pool6: "2001:db8:9::/112").inventory)
        #expect(global.nodes[0].ipv6Mode == .routed)
    }

    @Test(arguments: [
        "{uplink: \"eth0; flush ruleset\"}", "{uplink: abcdefghijklmnop}", "{mss: 100}", "{mss: 9000}",
        "{ipsec: kame}", "{ipv6: nat66}", "{isolate_clients: yes}", "{nat: true}",
    ])
    func badSettingsAreErrorsAtTheirLine(_ network: String) {
        let result = Self.decode(network)
        #expect(result.inventory == nil, "\(network) was accepted")
        #expect(
            result.diagnostics.contains { $0.severity == .error && $0.location?.line == 10 },
            "\(result.diagnostics.map(\.message))")
    }

    @Test func settingsThatCannotTakeEffectAreWarned() throws {
        let routedULA = try #require(Self.decode("{ipv6: routed}").inventory)
        #expect(
            Validator.validate(routedULA).contains { $0.code == .networkSetting && $0.message.contains("unique local") }
        )
        let noPool6 = try #require(
            VPNProvTestFixtures.decode(
                """
                vpnprov: 1
                name: acme
                nodes:
                  n1:
                    address: 192.0.2.1
                    pool: 10.9.0.0/24
                    network: {ipv6: nat}
                users:
                  u: {password: gen}
                """
            ).inventory)
        #expect(Validator.validate(noPool6).contains { $0.code == .networkSetting && $0.location?.line == 7 })
        let fine = try #require(Self.decode("{ipv6: nat}").inventory)
        #expect(!Validator.validate(fine).contains { $0.code == .networkSetting })
    }
}
