import Foundation
import Testing
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvTestFixtures

/// Windows' side of the plan: which Set-VpnConnectionIPsecConfiguration values a node's proposals become, which
/// nodes the validator refuses for Windows users, and the certificate checks Windows makes.
@Suite(.temporaries) struct WindowsTests {
    func derive(_ ike: [String], _ esp: [String]) -> WindowsIPsec? {
        WindowsIPsec.derive(from: Proposals(ike: ike, esp: esp))
    }

    @Test func defaultProposalsBecomeGCMWithECP256() throws {
        let w = try #require(WindowsIPsec.derive(from: .defaults))
        #expect([w.encryptionMethod, w.integrityCheckMethod, w.dhGroup] == ["GCMAES256", "SHA256", "ECP256"])
        #expect(
            [w.cipherTransformConstants, w.authenticationTransformConstants, w.pfsGroup] == [
                "GCMAES256", "GCMAES256", "None",
            ])
        #expect(w.offer == ProposalOffer(ike: ["aes256gcm16-prfsha256-ecp256"], esp: ["aes256gcm16"]))
    }

    @Test func firstExpressibleCombinationInTheNodesOrder() throws {
        // curve25519 and ChaCha20 are beyond Windows; the CBC fallback with MODP2048 is not.
        let w = try #require(
            derive(
                ["chacha20poly1305-prfsha256-curve25519", "aes256-sha384-ecp384-modp2048"],
                ["chacha20poly1305", "aes128-sha256-modp2048"]))
        #expect([w.encryptionMethod, w.integrityCheckMethod, w.dhGroup] == ["AES256", "SHA384", "ECP384"])
        #expect(
            [w.cipherTransformConstants, w.authenticationTransformConstants, w.pfsGroup] == [
                "AES128", "SHA256128", "PFS2048",
            ])
        #expect(w.offer == ProposalOffer(ike: ["aes256-sha384-ecp384"], esp: ["aes128-sha256-modp2048"]))
        // An optional group (`modpnone`) leaves PFS off; a group Windows lacks with no alternative makes the proposal
        // unusable.
        #expect(derive(["aes256-sha256-modp2048"], ["aes256gcm16-ecp256-modpnone"])?.pfsGroup == "None")
        #expect(derive(["aes256-sha256-modp2048"], ["aes256gcm16-curve25519"]) == nil)
        // AES-192-GCM exists for ESP only; SHA-512 and ECP-521 not at all.
        #expect(derive(["aes192gcm16-prfsha256-ecp256"], ["aes256gcm16"]) == nil)
        #expect(derive(["aes256-sha512-ecp521"], ["aes256gcm16"]) == nil)
        #expect(derive(["aes256-sha256-modp2048"], ["aes192gcm16"])?.cipherTransformConstants == "GCMAES192")
    }

    /// Checked with the validator's rules (`Pipeline.validate`), by the plan's derivation.
    @Test func validationRefusesANodeWindowsUsersCannotUse() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(ike: ["aes256gcm16-prfsha256-curve25519"], esp: ["aes256gcm16"])
        }
        let d = Pipeline.validate(inventory).filter { $0.code == .noWindowsProposal }
        #expect(d.count == 1)
        #expect(d.first?.message.contains("ams-1") == true && d.first?.message.contains("DH group 14") == true)
        // Without Windows devices nobody is hurt: no error.
        let noWindows = inventory.with { inv in
            for i in inv.users.indices { inv.users[i].devices.removeAll { $0 == .windows } }
        }
        #expect(!Pipeline.validate(noWindows).contains { $0.code == .noWindowsProposal })
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
                #expect(w.authenticationMethod == .machineCertificate)
                #expect(w.localID == .dn("O=acme, CN=alice@acme.example"))
            } else {
                #expect(w.authenticationMethod == .eap && w.localID == nil)
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
                return CertificateFacts(
                    dnsNames: ["fra-1.vpn.example.com"], issuerCommonName: "acme VPN Root CA",
                    extendedKeyUsages: ["1.3.6.1.5.5.8.2.2"])
            }
            if pem == m.nodes["ams-1"]!.certificatePEM {
                return CertificateFacts(ipAddresses: [[192, 0, 2, 10]], extendedKeyUsages: ["1.3.6.1.5.5.7.3.1"])
            }
            if pem == m.users["alice"]!.certificatePEM {
                return CertificateFacts(
                    emails: ["alice@acme.example"], subject: "O=acme, CN=alice@acme.example",
                    extendedKeyUsages: ["1.3.6.1.5.5.7.3.1"])
            }
            return nil
        }
        let d = Consistency.check(
            plan: plan, servers: servers, inventory: inventory, materials: materials, inspect: inspector
        )
        .filter { $0.code == .windowsCertificate }
        #expect(
            d.contains {
                $0.message.contains("ams-1") && $0.message.contains("no dNSName subjectAltName '192.0.2.10'")
            }, "\(d.map(\.message))")
        #expect(d.contains { $0.message.contains("fra-1") && $0.message.contains("serverAuth") })
        #expect(d.contains { $0.message.contains("alice") && $0.message.contains("clientAuth") })
        #expect(!d.contains { $0.message.contains("certificate subject") })
    }
}

/// Certificates issued without what Windows checks are renewed on the next run, and the summary says why.
@Suite(.temporaries) struct WindowsCertificateRenewalTests {
    /// Rewrites the state's index.json with `change` applied to the certificate records (JSON objects by
    /// serial), as an earlier vpnprov would have written them (a sealed state refuses any edit).
    func editIndex(_ state: String, _ change: (inout [String: Any]) -> Void) throws {
        try StateDamage.unseal(state)
        let url = URL(fileURLWithPath: state + "/index.json")
        var index = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var certificates = try #require(index["certificates"] as? [String: Any])
        change(&certificates)
        index["certificates"] = certificates
        try JSONSerialization.data(withJSONObject: index, options: [.sortedKeys]).write(to: url)
    }

    func serial(_ state: String, node: String? = nil, user: String? = nil) throws -> String {
        let index = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: state + "/index.json")))
                as? [String: Any])
        let holders = try #require(index[node != nil ? "nodes" : "users"] as? [String: [String: Any]])
        return try #require(holders[node ?? user!]?["serial"] as? String)
    }

    @Test func aCertificateWithoutTheEKUWindowsNeedsIsReissuedWithTheReason() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        let fra = try serial(state, node: "fra-1")
        let alice = try serial(state, user: "alice")
        try editIndex(state) { certs in
            var f = certs[fra] as! [String: Any]
            f["extendedKeyUsages"] = ["1.3.6.1.5.5.8.2.2"]
            certs[fra] = f
            var a = certs[alice] as! [String: Any]
            a["extendedKeyUsages"] = [String]()
            certs[alice] = a
        }
        let changes = try prepare(standardInventory(), state: state).changes.filter { $0.kind == .reissued }.map(
            \.description)
        #expect(changes.count == 2)
        #expect(
            changes.contains {
                $0.hasPrefix("re-issued node 'fra-1'")
                    && $0.hasSuffix(": lacks the serverAuth extended key usage Windows requires")
            })
        #expect(
            changes.contains {
                $0.hasPrefix("re-issued user 'alice'")
                    && $0.hasSuffix(": lacks the clientAuth extended key usage Windows requires")
            })
        #expect(try prepare(standardInventory(), state: state).changes.isEmpty)
    }

    @Test func stateWithoutRecordedEKUsIsCompletedWithoutReissuing() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        try editIndex(state) { certs in
            for (k, v) in certs {
                var r = v as! [String: Any]
                r.removeValue(forKey: "extendedKeyUsages")
                certs[k] = r
            }
        }
        #expect(try prepare(standardInventory(), state: state).changes.isEmpty)
        let text = try String(contentsOfFile: state + "/index.json", encoding: .utf8)
        #expect(text.contains("\"extendedKeyUsages\""))
    }

    @Test func aServerCertificateWithoutTheAddressAsDNSNameIsReissuedForWindows() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        let ams = try serial(state, node: "ams-1")
        try editIndex(state) { certs in
            var r = certs[ams] as! [String: Any]
            r["subjectAltNames"] = (r["subjectAltNames"] as! [String]).filter { $0 != "DNS:203.0.113.10" }
            certs[ams] = r
        }
        let changes = try prepare(standardInventory(), state: state).changes.filter { $0.kind == .reissued }.map(
            \.description)
        #expect(changes.count == 1)
        #expect(
            changes.first?.hasSuffix(": no dNSName for its IP address (203.0.113.10), which Windows requires") == true,
            "\(changes)")
    }
}
