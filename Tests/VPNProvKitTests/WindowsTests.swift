import Foundation
import Testing
@testable import VPNProvKit

/// Windows' side of the plan: which Set-VpnConnectionIPsecConfiguration values a node's proposals become, which
/// nodes the validator refuses for Windows users, and the certificate checks Windows makes.
@Suite struct WindowsTests {
    func derive(_ ike: [String], _ esp: [String]) -> WindowsIPsec? { WindowsIPsec.derive(from: Proposals(ike: ike, esp: esp)) }

    @Test func defaultProposalsBecomeGCMWithECP256() throws {
        let w = try #require(WindowsIPsec.derive(from: .defaults))
        #expect([w.encryptionMethod, w.integrityCheckMethod, w.dhGroup] == ["GCMAES256", "SHA256", "ECP256"])
        #expect([w.cipherTransformConstants, w.authenticationTransformConstants, w.pfsGroup] == ["GCMAES256", "GCMAES256", "None"])
        #expect(w.offer == ProposalOffer(ike: ["aes256gcm16-prfsha256-ecp256"], esp: ["aes256gcm16"]))
    }

    @Test func firstExpressibleCombinationInTheNodesOrder() throws {
        // curve25519 and ChaCha20 are beyond Windows; the CBC fallback with MODP2048 is not.
        let w = try #require(derive(["chacha20poly1305-prfsha256-curve25519", "aes256-sha384-ecp384-modp2048"], ["chacha20poly1305", "aes128-sha256-modp2048"]))
        #expect([w.encryptionMethod, w.integrityCheckMethod, w.dhGroup] == ["AES256", "SHA384", "ECP384"])
        #expect([w.cipherTransformConstants, w.authenticationTransformConstants, w.pfsGroup] == ["AES128", "SHA256128", "PFS2048"])
        #expect(w.offer == ProposalOffer(ike: ["aes256-sha384-ecp384"], esp: ["aes128-sha256-modp2048"]))
        // An optional group (`modpnone`) leaves PFS off; a group Windows lacks with no alternative makes the proposal unusable.
        #expect(derive(["aes256-sha256-modp2048"], ["aes256gcm16-ecp256-modpnone"])?.pfsGroup == "None")
        #expect(derive(["aes256-sha256-modp2048"], ["aes256gcm16-curve25519"]) == nil)
        // AES-192-GCM exists for ESP only; SHA-512 and ECP-521 not at all.
        #expect(derive(["aes192gcm16-prfsha256-ecp256"], ["aes256gcm16"]) == nil)
        #expect(derive(["aes256-sha512-ecp521"], ["aes256gcm16"]) == nil)
        #expect(derive(["aes256-sha256-modp2048"], ["aes192gcm16"])?.cipherTransformConstants == "GCMAES192")
    }

    @Test func validatorRefusesANodeWindowsUsersCannotUse() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(ike: ["aes256gcm16-prfsha256-curve25519"], esp: ["aes256gcm16"])
        }
        let d = Validator.validate(inventory).filter { $0.code == .noWindowsProposal }
        #expect(d.count == 1)
        #expect(d.first?.message.contains("ams-1") == true && d.first?.message.contains("DH group 14") == true)
        // Without Windows devices nobody is hurt: no error.
        let noWindows = inventory.with { inv in
            for i in inv.users.indices { inv.users[i].devices.removeAll { $0 == .windows } }
        }
        #expect(!Validator.validate(noWindows).contains { $0.code == .noWindowsProposal })
    }

    @Test func planGivesWindowsOnlyEAPAndCertificateConnections() throws {
        let inventory = ClientFixtures.inventory()
        let plan = ClientPlan.build(inventory: inventory, materials: ClientFixtures.materials())
        let windows = plan.connections.filter { $0.devices.contains(.windows) }
        #expect(!windows.isEmpty)
        #expect(Set(windows.map(\.service)).isSubset(of: [.ikev2EAP, .ikev2Cert]))
        for c in windows {
            let w = try #require(c.windows)
            if c.service == .ikev2Cert {
                #expect(w.authenticationMethod == "MachineCertificate")
                #expect(w.localID == .dn("O=acme, CN=alice@acme.example"))
            } else {
                #expect(w.authenticationMethod == "Eap" && w.localID == nil)
            }
            #expect(c.offers[.windows] == w.ipsec.offer)
        }
    }

    @Test func certificatesWindowsWouldRefuseAreErrors() throws {
        let inventory = ClientFixtures.inventory()
        let materials = ClientFixtures.materials()
        let servers = ClientFixtures.serverViews(inventory, materials: materials)
        let plan = ClientPlan.build(inventory: inventory, materials: materials)
        let m = materials
        // ams-1 is dialled at 192.0.2.10: an iPAddress alone satisfies strongSwan, not Windows. fra-1 lacks serverAuth,
        // alice's certificate clientAuth.
        let inspector: Consistency.CertificateInspector = { pem in
            if pem == m.nodes["fra-1"]!.certificatePEM {
                return CertificateFacts(dnsNames: ["fra-1.vpn.example.com"], issuerCommonName: "acme VPN Root CA", extendedKeyUsages: ["1.3.6.1.5.5.8.2.2"])
            }
            if pem == m.nodes["ams-1"]!.certificatePEM {
                return CertificateFacts(ipAddresses: [[192, 0, 2, 10]], extendedKeyUsages: ["1.3.6.1.5.5.7.3.1"])
            }
            if pem == m.users["alice"]!.certificatePEM {
                return CertificateFacts(emails: ["alice@acme.example"], subject: "O=acme, CN=alice@acme.example", extendedKeyUsages: ["1.3.6.1.5.5.7.3.1"])
            }
            return nil
        }
        let d = Consistency.check(plan: plan, servers: servers, inventory: inventory, materials: materials, inspect: inspector)
            .filter { $0.code == .windowsCertificate }
        #expect(d.contains { $0.message.contains("ams-1") && $0.message.contains("no dNSName subjectAltName '192.0.2.10'") }, "\(d.map(\.message))")
        #expect(d.contains { $0.message.contains("fra-1") && $0.message.contains("serverAuth") })
        #expect(d.contains { $0.message.contains("alice") && $0.message.contains("clientAuth") })
        #expect(!d.contains { $0.message.contains("certificate subject") })
    }
}
