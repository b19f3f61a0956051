import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvPlanning

@Suite(.temporaries) struct ConsistencyTests {
    let inventory = ClientFixtures.inventory()
    let materials = ClientFixtures.materials()

    func check(
        inventory: Inventory? = nil, materials: Materials? = nil, servers: (([ServerView]) -> [ServerView])? = nil,
        inspect: Consistency.CertificateInspector? = nil
    ) -> [Diagnostic] {
        let inv = inventory ?? self.inventory
        let mat = materials ?? self.materials
        var views = ClientFixtures.serverViews(inv, materials: mat)
        if let servers { views = servers(views) }
        return Consistency.check(
            plan: ClientPlan.build(inventory: inv, materials: mat), servers: views, inventory: inv, materials: mat,
            inspect: inspect)
    }

    /// Applies `change` to one connection of one node's view.
    func changing(_ node: String, _ connection: String, _ change: @escaping (inout ServerConnectionView) -> Void) -> (
        [ServerView]
    ) -> [ServerView] {
        { views in
            views.map { view in
                var v = view
                if v.node == node {
                    v.connections = v.connections.map { c in
                        var c = c
                        if c.name == connection { change(&c) }
                        return c
                    }
                }
                return v
            }
        }
    }

    @Test func theMatchingServerConfigurationPasses() {
        let d = check()
        #expect(d.isEmpty, "\(d.map(\.message))")
    }

    @Test func hybridClientsNeedTheHybridConnection() {
        // Without the hybrid connection the Aggressive Mode PSK connection (group key ID) is no substitute:
        // IKEv1 selects by auth method first.
        let d = check(servers: { views in
            views.map { v in
                var v = v
                v.connections.removeAll { $0.name == "ipsec-xauth-hybrid-aggressive" }
                return v
            }
        })
        #expect(d.contains { $0.code == .authMismatch && $0.message.contains("ipsec-xauth-hybrid client") })
        // A hybrid connection whose server proves itself by PSK is an auth mismatch too.
        let psk = check(servers: changing("fra-1", "ipsec-xauth-hybrid-aggressive") { $0.localAuth = .psk })
        #expect(psk.contains { $0.code == .authMismatch && $0.message.contains("proves the server with psk") })
    }

    @Test func wrongRemoteIDPointsAtTheNodeID() throws {
        let d = check(servers: changing("fra-1", "ikev2-eap") { $0.localID = .fqdn("other.example.com") })
        // The EAP client falls through to nothing with the expected identity... except psk-eap's,
        // which takes EAP clients but proves itself by PSK: an auth mismatch, at the services.
        let codes = Set(d.map(\.code))
        #expect(codes.contains(.authMismatch))
        // With every connection of the node on another identity, the remote ID itself is blamed.
        let all = check(servers: { views in
            views.map {
                var v = $0
                if v.node == "ams-1" {
                    v.connections = v.connections.map {
                        var c = $0
                        c.localID = .fqdn("wrong")
                        return c
                    }
                }
                return v
            }
        })
        let e = try #require(all.first { $0.code == .remoteIDMismatch })
        #expect(e.location == ClientFixtures.loc(23, 9))
        #expect(e.severity == .error)
    }

    @Test func proposalMismatchPointsAtTheNodeProposals() throws {
        let d = check(servers: changing("fra-1", "ikev2-eap") { $0.ikeProposals = ["aes128-sha1-modp2048"] })
        let e = try #require(d.first { $0.code == .ikeProposalMismatch })
        #expect(e.location == ClientFixtures.loc(5))
        // Every client kind of the connection is reported: Apple, Android, Linux and Windows.
        #expect(
            Set(d.filter { $0.code == .ikeProposalMismatch }.map { $0.message.split(separator: " ").first! }) == [
                "apple", "android", "linux", "windows",
            ])

        let esp = check(servers: changing("fra-1", "ikev2-eap") { $0.espProposals = ["aes128-sha1"] })
        #expect(esp.contains { $0.code == .espProposalMismatch })
    }

    @Test func pfsGroupMismatchIsReported() throws {
        // ams-1's ESP proposal has modp2048: Apple rekeys with PFS. A server without that group fails on rekey.
        let d = check(servers: changing("ams-1", "ikev2-eap") { $0.espProposals = ["aes256-sha256-ecp384"] })
        #expect(d.contains { $0.code == .pfsMismatch })
        #expect(!d.contains { $0.code == .espProposalMismatch })
    }

    @Test func wrongServerAuthIsAnAuthMismatch() throws {
        let d = check(servers: changing("fra-1", "ikev2-eap") { $0.localAuth = .psk })
        let e = try #require(d.first { $0.code == .authMismatch })
        #expect(e.location == ClientFixtures.loc(18, 15))
        #expect(e.message.contains("'ikev2-eap'"))
    }

    @Test func pskEAPClientsNeedTheirOwnIdentityOnTheServer() throws {
        // Without the dedicated identity the psk-eap client lands on ikev2-eap, whose server proves
        // itself with a certificate.
        let d = check(servers: changing("fra-1", "ikev2-psk-eap") { $0.remote[0].id = .any })
        // Still found first in rank order? Both %any: ikev2-eap comes first in file order.
        let e = try #require(d.first { $0.code == .authMismatch })
        #expect(e.message.contains("ikev2-psk-eap client"))
        #expect(e.message.contains("'ikev2-eap'"))
    }

    @Test func certificateClientsNeedACertificateRequestFromTheFirstConnection() throws {
        let d = check(servers: { views in
            views.map { view in
                var v = view
                if v.node == "fra-1" { v.connections.swapAt(0, 1) }  // ikev2-eap (send_certreq = no) first
                return v
            }
        })
        let e = try #require(d.first { $0.code == .authMismatch && $0.message.contains("ikev2-cert") })
        #expect(e.message.contains("certificate request"))
    }

    @Test func aggressiveModeNeedsTheGroupConnection() throws {
        let d = check(servers: { views in
            views.map {
                var v = $0
                v.connections.removeAll { $0.aggressive == true }
                return v
            }
        })
        let e = try #require(d.first { $0.code == .noServerConnection })
        #expect(e.message.contains("Aggressive Mode"))
        let wrongGroup = check(
            servers: changing("fra-1", "ipsec-xauth-psk-aggressive") { $0.remote[0].id = .exactly(.keyID("other")) })
        let g = try #require(wrongGroup.first { $0.code == .localIDMismatch })
        #expect(g.location == ClientFixtures.loc(20, 12))
    }

    @Test func missingSecretsPointAtTheirFields() throws {
        var m = materials
        m.users["bob"]?.password = nil
        m.nodes["ams-1"]?.psk = nil
        let d = check(materials: m)
        let password = try #require(d.first { $0.code == .missingSecret && $0.message.contains("user 'bob'") })
        #expect(password.location == ClientFixtures.loc(36, 15))
        let psk = try #require(d.first { $0.code == .missingSecret && $0.message.contains("node 'ams-1'") })
        #expect(psk.location == inventory.node(named: "ams-1")!.location(of: "psk"))
        // Diagnostics never carry secrets.
        for diagnostic in d { for secret in ClientFixtures.secrets { #expect(!diagnostic.message.contains(secret)) } }

        let noServerPassword = check(servers: { views in
            views.map {
                var v = $0
                v.passwordUsers.removeAll { $0 == "alice" }
                return v
            }
        })
        #expect(noServerPassword.contains { $0.code == .missingSecret && $0.message.contains("does not know") })

        var noCert = materials
        noCert.users["alice"]?.p12 = nil
        let c = try #require(check(materials: noCert).first { $0.code == .missingSecret })
        #expect(c.location == ClientFixtures.loc(32, 11))
    }

    @Test func certificateSANsAreChecked() throws {
        // An inspector that cannot read the certificates leaves the identity-level checks only.
        #expect(check(inspect: { _ in nil }).isEmpty)
        let m = materials
        let inspector: Consistency.CertificateInspector = { pem in
            if pem == m.nodes["fra-1"]!.certificatePEM {
                return CertificateFacts(dnsNames: ["other.example.com"], issuerCommonName: "acme VPN Root CA")
            }
            if pem == m.nodes["ams-1"]!.certificatePEM {
                // The IP identity as dNSName only: strongSwan needs an iPAddress SAN.
                return CertificateFacts(dnsNames: ["192.0.2.10"], issuerCommonName: "another CA")
            }
            if pem == m.users["alice"]!.certificatePEM { return CertificateFacts(emails: ["someone@else"]) }
            return nil
        }
        let d = check(inspect: inspector)
        let server = d.filter { $0.code == .serverCertificateSAN }
        #expect(Set(server.map(\.location)) == [ClientFixtures.loc(12, 9), ClientFixtures.loc(23, 9)])
        #expect(d.contains { $0.code == .caMismatch && $0.message.contains("another CA") })
        let client = try #require(d.first { $0.code == .clientCertificateSAN })
        #expect(client.location == ClientFixtures.loc(33, 9))

        let fine: Consistency.CertificateInspector = { pem in
            if pem == m.nodes["fra-1"]!.certificatePEM {
                return CertificateFacts(dnsNames: ["FRA-1.vpn.example.com"], issuerCommonName: "acme VPN Root CA")
            }
            if pem == m.nodes["ams-1"]!.certificatePEM {
                return CertificateFacts(dnsNames: ["192.0.2.10"], ipAddresses: [[192, 0, 2, 10]])
            }
            if pem == m.users["alice"]!.certificatePEM { return CertificateFacts(emails: ["alice@acme.example"]) }
            return nil
        }
        #expect(check(inspect: fine).isEmpty)
    }

    @Test func clientCertificateWithoutTheNodePolicyIsReported() throws {
        let m = materials
        let certNodes = inventory.nodes.filter { $0.services.contains(.ikev2Cert) }.map(\.name)
        try #require(!certNodes.isEmpty)
        func inspector(_ policies: [String]) -> Consistency.CertificateInspector {
            { pem in
                guard pem == m.users["alice"]!.certificatePEM else { return nil }
                var facts = CertificateFacts(emails: ["alice@acme.example"])
                facts.policies = policies
                return facts
            }
        }
        // The fixture's hand-made server views, with the node policy the server plan requires.
        let scoped: ([ServerView]) -> [ServerView] = { views in
            views.map { view in
                var v = view
                v.connections = v.connections.map { c in
                    var c = c
                    if c.remote.contains(where: { $0.auth == .pubkey }) {
                        c.remote = c.remote.map { r in
                            var r = r
                            r.certPolicies = [NodeAccessPolicy.oid(forNode: view.node)]
                            return r
                        }
                    }
                    return c
                }
                return v
            }
        }
        let all = inventory.nodes.map { NodeAccessPolicy.oid(forNode: $0.name) }
        #expect(!check(servers: scoped, inspect: inspector(all)).contains { $0.code == .clientCertificatePolicy })
        let none = check(servers: scoped, inspect: inspector([])).filter { $0.code == .clientCertificatePolicy }
        #expect(!none.isEmpty)
        #expect(
            none.allSatisfy { d in certNodes.contains { d.message.contains("node '\($0)'") } }, "\(none.map(\.message))"
        )
    }

    @Test func serverShippingAnotherCAIsReported() {
        let d = check(servers: { views in
            views.map {
                var v = $0
                v.caCertificatePEM = ClientFixtures.pem("old ca")
                return v
            }
        })
        #expect(d.contains { $0.code == .caMismatch })
    }

    @Test func usersGetOnlyTheServicesTheyHoldCredentialsFor() {
        var inv = inventory
        inv.users[0].password = nil
        let services = ClientPlan.build(inventory: inv).connections(of: "alice").map(\.service)
        #expect(Set(services) == [.ikev2Cert, .ikev2PSK])
    }

    @Test func nodesAppleCannotExpressAreReportedOnce() throws {
        var inv = inventory
        inv.nodes[1].proposals = Proposals(ike: ["camellia256-sha256-modp2048"], esp: ["camellia256-sha256"])
        let plan = ClientPlan.build(inventory: inv)
        let d = plan.diagnostics.filter { $0.code == .appleProposalUnsupported }
        #expect(d.count == 1)
        #expect(d.first?.location == inv.nodes[1].location(of: "proposals"))
        // Apple clients lose that profile; other clients keep theirs.
        let amsEAP = try #require(
            plan.connections.first { $0.user == "alice" && $0.node == "ams-1" && $0.service == .ikev2EAP })
        #expect(amsEAP.devices == [.android, .linux])
    }

    @Test func proposalIntersectionFollowsStrongSwan() {
        #expect(
            Proposal.intersects(
                ["aes256gcm16-prfsha256-ecp256"], ["aes128gcm16-aes256gcm16-prfsha384-prfsha256-modp2048-ecp256"],
                purpose: .ike, withGroups: true))
        #expect(
            !Proposal.intersects(
                ["aes256gcm16-prfsha256-ecp256"], ["aes256gcm16-prfsha256-ecp384"], purpose: .ike, withGroups: true))
        #expect(
            Proposal.intersects(
                ["aes256-sha256-modp2048"], ["aes256-sha2_256-modp2048"], purpose: .ike, withGroups: true))
        #expect(
            Proposal.intersects(["aes256-sha256"], ["aes256-sha256-modp2048-modpnone"], purpose: .esp, withGroups: true)
        )
        #expect(!Proposal.intersects(["aes256-sha256"], ["aes256-sha256-modp2048"], purpose: .esp, withGroups: true))
        #expect(Proposal.intersects(["aes256-sha256"], ["aes256-sha256-modp2048"], purpose: .esp, withGroups: false))
        #expect(Proposal.intersects(["aes256-sha256-ecp256"], ["default"], purpose: .ike, withGroups: true))
    }
}

@Suite(.temporaries) struct ConsistencyAgainstServerPlanTests {
    @Test func theRealServerPlanAcceptsEveryClient() {
        let inventory = ClientFixtures.inventory()
        let d = Consistency.check(inventory: inventory, materials: ClientFixtures.materials())
        #expect(d.isEmpty, "\(d.map { "\($0.code): \($0.message)" })")
    }

    @Test func aNodeProposalAppleCannotUseIsCaughtAgainstTheRealPlan() {
        var inventory = ClientFixtures.inventory()
        inventory.nodes[0].proposals.ike = ["camellia256-sha256-modp2048"]
        let d = Consistency.check(inventory: inventory, materials: ClientFixtures.materials())
        #expect(d.contains { $0.code == .appleProposalUnsupported })
    }
}

@Suite(.temporaries) struct NameComparisonTests {
    /// The ASCII shortcut agrees with comparing lowercased strings, also where Unicode case mapping
    /// changes a name's length or only non-ASCII letters differ.
    @Test func caseInsensitiveComparisonAgreesWithLowercasing() {
        let names = [
            "vpn.example.com", "VPN.Example.COM", "vpn.example.co", "vpn-example.com", "ÄBC.example", "äbc.example",
            "İx", "i̇x", "ix", "[email protected]", "[email protected]", "", "a", "A", "@", "`", "[", "{",
        ]
        var equalPairs = 0
        for a in names {
            for b in names {
                let expected = a.lowercased() == b.lowercased()
                #expect(CertificateFacts.sameIgnoringCase(a, b) == expected, "\(a) vs \(b)")
                if expected && a != b { equalPairs += 1 }
            }
        }
        #expect(equalPairs >= 4)
    }
}
