import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates
import VPNProvTestFixtures

@testable import VPNProvRendering

/// Inventories built in code and fake Materials (dummy PEM text) for the server renderer.
enum ServerFixtures {
    static let here = SourceLocation(file: "test.yaml", line: 1, column: 1)

    static func cidr(_ text: String) -> CIDR {
        let parsed = IPAddressText.parseCIDR(text)!
        return CIDR(address: parsed.address, prefix: parsed.prefix)
    }

    static func node(
        _ name: String, services: [Service], id: IKEIdentity? = nil, pool: String? = "10.10.0.0/24",
        pool6: String? = nil, group: String? = nil, dns: [String] = ["1.1.1.1", "2606:4700:4700::1111"],
        proposals: Proposals = .defaults
    ) -> Node {
        Node(
            name: name, address: "\(name).vpn.example.com", id: id ?? .fqdn("\(name).vpn.example.com"),
            pool: pool.map(cidr), pool6: pool6.map(cidr), services: services.sorted(),
            psk: services.contains(where: \.needsPSK) ? .generate : nil, group: group, proposals: proposals,
            dns: dns, location: here)
    }

    /// alice: password + cert on every node; bob: hostile password; carol: revoked; dave: other node
    /// only; erin: certificate only (no password); "Zed": upper case sorts first (UTF-8 byte order).
    static func inventory(_ nodes: [Node]) -> Inventory {
        let all = nodes.map(\.name)
        func user(
            _ name: String, password: Bool = true, cert: Bool = false, nodes: [String]? = nil, revoked: Bool = false
        )
            -> User
        {
            User(
                name: name, password: password ? .generate : nil, cert: cert, id: .userFQDN("\(name)@example.com"),
                nodes: nodes ?? all, revoked: revoked, location: here)
        }
        return Inventory(
            file: "test.yaml", name: "acme",
            pki: PKISettings(ca: CASettings(name: "acme VPN Root CA", key: .ecdsaP256, days: 3650)),
            nodes: nodes,
            users: [
                user("Zed"), user("bob"), user("alice", cert: true), user("carol", revoked: true),
                user("dave", nodes: ["elsewhere"]), user("erin", password: false, cert: true),
            ])
    }

    /// Real materials from the deterministic test PKI: goldens hold real certificate and CRL bytes.
    static func materials(_ inventory: Inventory) -> Materials {
        var nodes: [String: NodeMaterials] = [:]
        for node in inventory.nodes {
            nodes[node.name] = NodeMaterials(
                certificatePEM: GoldenPKI.serverCertificatePEM(node, in: inventory),
                privateKeyPEM: GoldenPKI.keyPEM("server"),
                psk: node.psk == nil ? nil : "psk of \(node.name) with # and \"quotes\"")
        }
        let passwords = [
            "alice": "alice-pw", "bob": "a\"b\\c#d}{\nx", "Zed": "0xdeadbeef", "dave": "dave-pw",
        ]
        var users: [String: UserMaterials] = [:]
        for user in inventory.users where !user.revoked {
            users[user.name] = UserMaterials(password: passwords[user.name])
        }
        return Materials(
            caCertificatePEM: GoldenPKI.ca.pem, caCommonName: GoldenPKI.caName, caKeyType: .rsa2048,
            crlPEM: GoldenPKI.crlPEM(revokedUsers: inventory.users.filter(\.revoked).map(\.name)), nodes: nodes,
            users: users)
    }

    /// Golden cases: name -> nodes.
    static let cases: [(String, [Node])] = [
        ("cert-only", [node("n1", services: [.ikev2Cert])]),
        ("eap-only", [node("n1", services: [.ikev2EAP])]),
        ("psk-only", [node("n1", services: [.ikev2PSK], id: .ipv4("192.0.2.10"))]),
        ("psk-eap", [node("n1", services: [.ikev2PSKEAP])]),
        ("xauth-main", [node("n1", services: [.ipsecXauthPSK])]),
        ("xauth-group", [node("n1", services: [.ipsecXauthPSK], group: "acme")]),
        (
            "all-five",
            [
                node(
                    "fra-1", services: Service.allCases, group: "acme vpn #1 \"x\"",
                    dns: ["1.1.1.1", "9.9.9.9", "2606:4700:4700::1111"]),
                node("fra-2", services: [.ikev2EAP, .ikev2Cert], pool: "10.20.0.0/24", dns: []),
            ]
        ),
        (
            "ipv6-pool",
            [
                node(
                    "n1", services: [.ikev2EAP, .ipsecXauthPSK], id: .ipv6("2001:db8::10"), pool6: "fd00:10:10::/112",
                    dns: ["2606:4700:4700::1111", "1.1.1.1"]),
                node("n6", services: [.ikev2Cert], pool: nil, pool6: "fd00:20::/112"),
            ]
        ),
    ]
}

@Suite(.temporaries) struct ServerRendererTests {
    func render(_ nodes: [Node]) throws -> [OutputFile] {
        let inventory = ServerFixtures.inventory(nodes)
        return try Render.files(ServerRenderer.self, inventory, ServerFixtures.materials(inventory))
    }

    @Test(arguments: ServerFixtures.cases.map(\.0))
    func goldenFiles(_ name: String) throws {
        let nodes = ServerFixtures.cases.first { $0.0 == name }!.1
        let files = try render(nodes)
        try Golden.check(files, against: "server/\(name)")
    }

    @Test func outputIsDeterministicAndSorted() throws {
        let nodes = ServerFixtures.cases.first { $0.0 == "all-five" }!.1
        let a = try render(nodes)
        let b = try render(nodes)
        #expect(a == b)
        let fra1 = a.filter { $0.path.hasPrefix("servers/fra-1/") }.map(\.path)
        #expect(fra1 == fra1.sorted())
        #expect(a.first?.path.hasPrefix("servers/fra-1/") == true && a.last?.path.hasPrefix("servers/fra-2/") == true)
    }

    @Test func secretsAndKeysArePrivateAndNothingElseIs() throws {
        let files = try render(ServerFixtures.cases.first { $0.0 == "all-five" }!.1)
        let privatePaths = files.filter(\.isPrivate).map(\.path)
        #expect(
            privatePaths == [
                "servers/fra-1/swanctl/conf.d/secrets.conf", "servers/fra-1/swanctl/private/fra-1.key",
                "servers/fra-2/swanctl/conf.d/secrets.conf", "servers/fra-2/swanctl/private/fra-2.key",
            ])
        // No secret in any public file.
        for file in files where !file.isPrivate {
            let text = String(decoding: file.contents, as: UTF8.self)
            #expect(!text.contains("alice-pw") && !text.contains("psk of"), "\(file.path) leaks a secret")
        }
    }

    @Test func secretsHoldExactlyTheAllowedUsersBase64Encoded() throws {
        let files = try render([ServerFixtures.node("n1", services: [.ikev2EAP])])
        let secrets = String(
            decoding: files.first { $0.path == "servers/n1/swanctl/conf.d/secrets.conf" }!.contents, as: UTF8.self)
        // Zed, alice, bob in UTF-8 byte order; not carol (revoked), dave (other node), erin (no password).
        #expect(secrets.contains("eap-u0001 {\n      id = \"Zed\"\n      secret = \"0sMHhkZWFkYmVlZg==\"\n"))
        #expect(secrets.contains("eap-u0002 {\n      id = \"alice\"\n      secret = \"0sYWxpY2UtcHc=\"\n"))
        #expect(
            secrets.contains(
                "eap-u0003 {\n      id = \"bob\"\n      secret = \"\(ServerRenderer.base64Secret("a\"b\\c#d}{\nx"))\""))
        #expect(!secrets.contains("carol") && !secrets.contains("dave") && !secrets.contains("erin"))
        #expect(!secrets.contains("eap-u0004"))
        // Certificate-only node: no passwords at all, no PSK.
        let certOnly = try render([ServerFixtures.node("n1", services: [.ikev2Cert])])
        let s2 = String(decoding: certOnly.first { $0.path.hasSuffix("secrets.conf") }!.contents, as: UTF8.self)
        #expect(!s2.contains("eap-") && !s2.contains("ike-"))
    }

    @Test func daemonSettingsOnlyForAggressiveMode() throws {
        let main = try render([ServerFixtures.node("n1", services: [.ipsecXauthPSK])])
        #expect(!main.contains { $0.path.hasPrefix("servers/n1/strongswan.d/") })
        let aggr = try render([ServerFixtures.node("n1", services: [.ipsecXauthPSK], group: "g")])
        let conf = aggr.first { $0.path == "servers/n1/strongswan.d/vpnprov.conf" }
        #expect(
            conf.map { String(decoding: $0.contents, as: UTF8.self) }?
                .contains("   i_dont_care_about_security_and_use_aggressive_mode_psk = yes\n") == true)
    }

    @Test func missingMaterialsAreErrorsWithoutSecrets() throws {
        let inventory = ServerFixtures.inventory([ServerFixtures.node("n1", services: [.ikev2PSK, .ikev2EAP])])
        var materials = ServerFixtures.materials(inventory)
        materials.nodes["n1"]?.psk = nil
        #expect(throws: ServerRenderError(kind: .missingPSK(node: "n1"))) {
            try Render.files(ServerRenderer.self, inventory, materials)
        }
        materials = ServerFixtures.materials(inventory)
        materials.users["bob"]?.password = nil
        #expect(throws: ServerRenderError(kind: .missingPassword(user: "bob", node: "n1"))) {
            try Render.files(ServerRenderer.self, inventory, materials)
        }
        materials.nodes = [:]
        #expect(throws: ServerRenderError(kind: .missingNodeMaterials(node: "n1"))) {
            try Render.files(ServerRenderer.self, inventory, materials)
        }
    }
}

@Suite(.temporaries) struct ServerPlanTests {
    @Test func connectionOrderIsCertEAPPSKEAPPSKThenIKEv1() {
        let node = ServerFixtures.node("n1", services: Service.allCases, group: "g")
        let plan = ServerPlan.make(for: node, in: ServerFixtures.inventory([node]))
        #expect(
            plan.connections.map(\.name) == [
                "ikev2-cert", "ikev2-eap", "ikev2-psk-eap", "ikev2-psk", "ipsec-xauth-psk-main",
                "ipsec-xauth-psk-aggressive", "ipsec-xauth-hybrid-aggressive",
            ])
        #expect(plan.needsAggressiveModePSK)
        #expect(plan.pskIdentities == [.fqdn("n1.vpn.example.com"), .keyID("g")])
    }

    @Test func authRoundsPerService() {
        let node = ServerFixtures.node("n1", services: Service.allCases, group: "g")
        let inventory = ServerFixtures.inventory([node])
        let plan = ServerPlan.make(for: node, in: inventory)
        let cert = plan.connections(for: .ikev2Cert)[0]
        #expect(cert.local.auth == .pubkey && cert.local.certificates == ["n1.pem"] && cert.sendCert == .always)
        #expect(cert.remote.map(\.auth) == [.pubkey] && cert.remote[0].caCertificates == ["ca.pem"])
        #expect(cert.remote[0].revocation == "relaxed" && cert.sendCertreq)
        let eap = plan.connections(for: .ikev2EAP)[0]
        #expect(eap.local.auth == .pubkey && eap.remote[0].auth == .eapMSCHAPv2 && eap.remote[0].eapID == .any)
        #expect(!eap.sendCertreq && eap.sendCert == .always)
        let pskEAP = plan.connections(for: .ikev2PSKEAP)[0]
        #expect(pskEAP.local.auth == .psk && pskEAP.remote[0].auth == .eapMSCHAPv2)
        #expect(pskEAP.remote[0].id == .exactly(ServerPlan.pskEAPClientIdentity(in: inventory)))
        let psk = plan.connections(for: .ikev2PSK)[0]
        #expect(psk.local.auth == .psk && psk.remote.map(\.auth) == [.psk] && psk.sendCert == .never)
        let xauth = plan.connections(for: .ipsecXauthPSK)
        #expect(xauth.map(\.aggressive) == [false, true] && xauth.allSatisfy { $0.version == 1 })
        #expect(xauth.allSatisfy { $0.remote.map(\.section) == ["remote-psk", "remote-xauth"] })
        #expect(xauth.allSatisfy { $0.remote.map(\.auth) == [.psk, .xauth] })
        #expect(xauth[0].remote[0].id == .any && xauth[1].remote[0].id == .exactly(.keyID("g")))
        // No group: Main Mode only, no daemon setting.
        let noGroup = ServerFixtures.node("n2", services: [.ipsecXauthPSK])
        let p2 = ServerPlan.make(for: noGroup, in: ServerFixtures.inventory([noGroup]))
        #expect(p2.connections.map(\.name) == ["ipsec-xauth-psk-main"] && !p2.needsAggressiveModePSK)
    }

    @Test func poolsSplitDNSByFamily() {
        let node = ServerFixtures.node(
            "n1", services: [.ikev2EAP, .ipsecXauthPSK], pool6: "fd00::/112", dns: ["2606:4700:4700::1111", "1.1.1.1"])
        let plan = ServerPlan.make(for: node, in: ServerFixtures.inventory([node]))
        #expect(plan.pools.map(\.name) == ["pool-v4", "pool-v6"])
        #expect(plan.pools.map(\.dns) == [["1.1.1.1"], ["2606:4700:4700::1111"]])
        let eap = plan.connections(for: .ikev2EAP)[0]
        #expect(eap.pools == ["pool-v4", "pool-v6"] && eap.child.localTS == ["0.0.0.0/0", "::/0"])
        let v1 = plan.connections(for: .ipsecXauthPSK)[0]
        #expect(v1.pools == ["pool-v4"] && v1.child.localTS == ["0.0.0.0/0"])
    }

    @Test func ikev1ProposalsHaveNoAEADAndOneAlgorithmEach() {
        #expect(
            IKEv1Proposals.ike(from: ["aes256gcm16-prfsha256-ecp256", "aes256-sha256-modp2048"]) == [
                "aes256-sha256-ecp256", "aes256-sha256-modp2048", "aes128-sha256-modp2048", "aes256-sha1-modp2048",
                "aes128-sha1-modp2048",
            ])
        #expect(
            IKEv1Proposals.ike(from: ["aes128gcm16-aes256gcm16-prfsha384-ecp384-modp3072"]).prefix(4) == [
                "aes128-sha384-ecp384", "aes128-sha384-modp3072", "aes256-sha384-ecp384", "aes256-sha384-modp3072",
            ])
        #expect(!IKEv1Proposals.ike(from: ["chacha20poly1305-prfsha256-curve25519"]).contains { $0.contains("chacha") })
        #expect(
            IKEv1Proposals.esp(from: ["aes256gcm16", "aes256-aes128-sha256-sha1-modp2048"]) == [
                "aes256gcm16", "aes256-sha256-modp2048", "aes256-sha1-modp2048", "aes128-sha256-modp2048",
                "aes128-sha1-modp2048", "aes256-sha256", "aes256-sha1", "aes128-sha1",
            ])
    }
}
