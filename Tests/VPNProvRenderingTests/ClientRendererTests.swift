import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvCrypto
@testable import VPNProvModel
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates

@Suite(.temporaries) struct ClientRendererTests {
    let inventory = ClientFixtures.inventory()
    let materials = ClientFixtures.materials()

    func render() throws -> [OutputFile] {
        try Render.clients(inventory, materials)
    }

    @Test func matchesGoldenFiles() throws {
        try Golden.check(try render(), against: "clients/all-services")
    }

    @Test func renderingTwiceGivesIdenticalBytes() throws {
        #expect(try render() == render())
    }

    @Test func emitsTheExpectedFilesWithPrivateModes() throws {
        let files = try render()
        let byPath = Dictionary(uniqueKeysWithValues: files.map { ($0.path, $0) })
        // Revoked users get nothing; bob (Android only) gets only ikev2-eap: ikev2-cert needs a certificate.
        #expect(!files.contains { $0.path.hasPrefix("clients/carol/") })
        #expect(
            files.filter { $0.path.hasPrefix("clients/bob/") }.map(\.path).sorted() == [
                "clients/bob/README", "clients/bob/fra-1-ikev2-eap.sswan",
            ])
        for path in [
            "clients/alice/alice.mobileconfig", "clients/alice/alice.p12", "clients/alice/fra-1-ikev2-cert.sswan",
            "clients/alice/fra-1-ikev2-eap.sswan", "clients/alice/ams-1-ikev2-eap.sswan",
            "clients/alice/linux/swanctl/conf.d/secrets.conf", "clients/alice/linux/swanctl/private/alice.key",
        ] {
            #expect(byPath[path]?.isPrivate == true, "\(path)")
        }
        for path in [
            "clients/alice/README", "clients/alice/linux/swanctl/swanctl.conf",
            "clients/alice/linux/swanctl/x509ca/ca.pem", "clients/alice/linux/swanctl/x509/alice.pem",
        ] {
            #expect(byPath[path]?.isPrivate == false, "\(path)")
        }
        // No .sswan for services the Android app cannot do.
        #expect(!files.contains { $0.path.hasSuffix("psk.sswan") || $0.path.hasSuffix("psk-eap.sswan") })
        // The p12's password is handed over beside it (0600, named for what it is); the README
        // names that file, never the password.
        let passwordFile = try #require(byPath["clients/alice/alice-p12-password.txt"])
        #expect(passwordFile.isPrivate)
        #expect(String(decoding: passwordFile.contents, as: UTF8.self).contains("\np12-secret-alice\n"))
        let readme = String(decoding: byPath["clients/alice/README"]!.contents, as: UTF8.self)
        #expect(readme.contains("alice-p12-password.txt"))
        for secret in ClientFixtures.secrets { #expect(!readme.contains(secret)) }
        // The .sswan certificate profile embeds the empty-password container, not the protected one.
        let sswan = String(decoding: byPath["clients/alice/fra-1-ikev2-cert.sswan"]!.contents, as: UTF8.self)
        #expect(sswan.contains(Data(materials.users["alice"]!.openP12!).base64EncodedString()))
        #expect(!sswan.contains(Data(materials.users["alice"]!.p12!).base64EncodedString()))
    }

    /// The README promises that every password a device asks for is in the folder. Windows asks for
    /// the EAP password at the first connect and the script leaves it out, so a Windows-only password
    /// user must find it in a sealed file of the folder that the README names.
    @Test func aWindowsPasswordUserFindsThePasswordInTheFolder() throws {
        var inventory = self.inventory
        inventory.users.append(
            User(
                name: "dave", password: .generate, id: .userFQDN("dave@acme.example"), nodes: ["fra-1"],
                devices: [.windows],
                location: ClientFixtures.loc(45)))
        var materials = self.materials
        materials.users["dave"] = UserMaterials(password: "dave-windows-pw-42")
        let files = try Render.clients(inventory, materials)
            .filter { $0.path.hasPrefix("clients/dave/") }
        let script = try #require(files.first { $0.path.hasSuffix("-windows.ps1") })
        #expect(!String(decoding: script.contents, as: UTF8.self).contains("dave-windows-pw-42"))
        let holders = files.filter { String(decoding: $0.contents, as: UTF8.self).contains("\ndave-windows-pw-42\n") }
        #expect(holders.map(\.path) == ["clients/dave/dave-windows-password.txt"])
        #expect(!holders.isEmpty && holders.allSatisfy(\.isPrivate))
        let readme = String(
            decoding: try #require(files.first { $0.path == "clients/dave/README" }).contents, as: UTF8.self)
        #expect(readme.contains("every password a device asks for is in this folder"))
        #expect(readme.contains("the password in\n  dave-windows-password.txt"))
        #expect(!readme.contains("dave-windows-pw-42"))
        // The script names the file when it has run.
        #expect(
            String(decoding: script.contents, as: UTF8.self).contains("$PasswordFile = 'dave-windows-password.txt'"))
        // A certificate-only Windows user is asked for no password and gets no such file.
        inventory.users[inventory.users.count - 1].password = nil
        inventory.users[inventory.users.count - 1].cert = true
        materials.users["dave"] = materials.users["alice"]
        materials.users["dave"]?.password = nil
        let certificateOnly = try Render.clients(inventory, materials)
        #expect(certificateOnly.contains { $0.path == "clients/dave/dave-windows.ps1" })
        #expect(!certificateOnly.contains { $0.path == "clients/dave/dave-windows-password.txt" })
    }

    // MARK: - Apple

    func profile() throws -> [String: Any] {
        let file = try #require(try render().first { $0.path == "clients/alice/alice.mobileconfig" })
        let plist = try PropertyListSerialization.propertyList(from: Data(file.contents), options: [], format: nil)
        return try #require(plist as? [String: Any])
    }

    func vpnPayloads() throws -> [String: [String: Any]] {
        let content = try #require(try profile()["PayloadContent"] as? [[String: Any]])
        var out: [String: [String: Any]] = [:]
        for payload in content where payload["PayloadType"] as? String == "com.apple.vpn.managed" {
            out[payload["PayloadIdentifier"] as! String] = payload
        }
        return out
    }

    enum Kind { case int, bool, string, data, dict }
    func expectType(
        _ value: Any?, _ kind: Kind, _ key: String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        let ok: Bool
        switch kind {
        // Foundation decodes <integer> as Int and <true/>/<false/> as Bool; neither passes for the other.
        // <integer> decodes as an NSNumber of an integer type, <true/>/<false/> as Swift Bool.
        case .int:
            ok =
                value.map { type(of: $0) != Bool.self } == true
                && (value as? NSNumber).map { !["c", "B", "f", "d"].contains(String(cString: $0.objCType)) } == true
        case .bool: ok = value.map { type(of: $0) == Bool.self } == true
        case .string: ok = value is String
        case .data: ok = value is Data
        case .dict: ok = value is [String: Any]
        }
        #expect(
            ok, "\(key): \(value.map { String(describing: type(of: $0)) } ?? "missing") is not \(kind)",
            sourceLocation: sourceLocation)
    }

    @Test func appleProfileHasSchemaTypes() throws {
        let top = try profile()
        expectType(top["PayloadVersion"], .int, "PayloadVersion")
        expectType(top["PayloadRemovalDisallowed"], .bool, "PayloadRemovalDisallowed")
        #expect(top["PayloadType"] as? String == "Configuration")
        let content = try #require(top["PayloadContent"] as? [[String: Any]])
        let root = try #require(content.first { $0["PayloadType"] as? String == "com.apple.security.root" })
        expectType(root["PayloadContent"], .data, "root PayloadContent")
        let p12 = try #require(content.first { $0["PayloadType"] as? String == "com.apple.security.pkcs12" })
        expectType(p12["PayloadContent"], .data, "pkcs12 PayloadContent")
        #expect(p12["PayloadContent"] as? Data == Data(materials.users["alice"]!.p12!))

        let vpns = try vpnPayloads()
        #expect(vpns.count == 7)  // fra-1: 5 services, ams-1: ikev2-eap + ipsec-xauth-psk
        for (name, payload) in vpns {
            expectType(payload["PayloadVersion"], .int, "\(name) PayloadVersion")
            if payload["VPNType"] as? String == "IPSec" {
                let ipsec = try #require(payload["IPSec"] as? [String: Any])
                expectType(ipsec["SharedSecret"], .data, "\(name) IPSec.SharedSecret")
                expectType(ipsec["XAuthEnabled"], .int, "\(name) XAuthEnabled")
                expectType((payload["IPv4"] as? [String: Any])?["OverridePrimary"], .int, "\(name) OverridePrimary")
                continue
            }
            let ike = try #require(payload["IKEv2"] as? [String: Any])
            for key in [
                "ExtendedAuthEnabled", "EnablePFS", "DisableMOBIKE", "DisableRedirect",
                "EnableCertificateRevocationCheck", "UseConfigurationAttributeInternalIPSubnet",
            ] {
                expectType(ike[key], .int, "\(name) \(key)")
            }
            for key in [
                "RemoteAddress", "RemoteIdentifier", "LocalIdentifier", "AuthenticationMethod", "DeadPeerDetectionRate",
            ] {
                expectType(ike[key], .string, "\(name) \(key)")
            }
            for saKey in ["IKESecurityAssociationParameters", "ChildSecurityAssociationParameters"] {
                let sa = try #require(ike[saKey] as? [String: Any])
                expectType(sa["DiffieHellmanGroup"], .int, "\(name) \(saKey).DiffieHellmanGroup")
                expectType(sa["LifeTimeInMinutes"], .int, "\(name) \(saKey).LifeTimeInMinutes")
                expectType(sa["EncryptionAlgorithm"], .string, "\(name) \(saKey).EncryptionAlgorithm")
                expectType(sa["IntegrityAlgorithm"], .string, "\(name) \(saKey).IntegrityAlgorithm")
            }
            if ike["SharedSecret"] != nil { expectType(ike["SharedSecret"], .string, "\(name) IKEv2.SharedSecret") }
        }
    }

    @Test func appleProfileEncodesEachServiceAsTheSpecSays() throws {
        let vpns = try vpnPayloads()
        let base = "vpnprov.acme.alice.vpn."
        func ike(_ s: String) throws -> [String: Any] { try #require(vpns[base + s]?["IKEv2"] as? [String: Any]) }

        let eap = try ike("fra-1.ikev2-eap")
        #expect(eap["AuthenticationMethod"] as? String == "Certificate")
        #expect(eap["ExtendedAuthEnabled"] as? Int == 1)
        #expect(eap["AuthName"] as? String == "alice")
        #expect(eap["AuthPassword"] as? String == "alice pass # }{")
        #expect(eap["PayloadCertificateUUID"] == nil)
        #expect(eap["ServerCertificateIssuerCommonName"] as? String == "acme VPN Root CA")
        #expect(eap["RemoteIdentifier"] as? String == "fra-1.vpn.example.com")

        let cert = try ike("fra-1.ikev2-cert")
        #expect(cert["AuthenticationMethod"] as? String == "Certificate")
        #expect(cert["ExtendedAuthEnabled"] as? Int == 0)
        #expect(cert["CertificateType"] as? String == "RSA")  // the test PKI's keys are RSA (deterministic signatures)
        // Every key type maps to the CertificateType value Apple's schema names.
        #expect(
            [KeyType.ecdsaP256, .ecdsaP384, .rsa2048, .rsa3072, .rsa4096].map(ClientPlan.appleCertificateType) == [
                "ECDSA256", "ECDSA384", "RSA", "RSA", "RSA",
            ])
        #expect(cert["LocalIdentifier"] as? String == "alice@acme.example")
        let content = try #require(try profile()["PayloadContent"] as? [[String: Any]])
        let p12UUID =
            content.first { $0["PayloadType"] as? String == "com.apple.security.pkcs12" }?["PayloadUUID"] as? String
        #expect(cert["PayloadCertificateUUID"] as? String == p12UUID)

        let psk = try ike("fra-1.ikev2-psk")
        #expect(psk["AuthenticationMethod"] as? String == "SharedSecret")
        #expect(psk["SharedSecret"] as? String == "fra psk with \"quotes\" & <tags>")
        #expect(psk["ExtendedAuthEnabled"] as? Int == 0)

        let pskEAP = try ike("fra-1.ikev2-psk-eap")
        #expect(pskEAP["AuthenticationMethod"] as? String == "SharedSecret")
        #expect(pskEAP["ExtendedAuthEnabled"] as? Int == 1)
        #expect(pskEAP["LocalIdentifier"] as? String == "psk-eap.acme")

        // The SA parameters are the node's first proposals, as Apple expresses them.
        let sa = try #require(eap["IKESecurityAssociationParameters"] as? [String: Any])
        #expect(sa["EncryptionAlgorithm"] as? String == "AES-256-GCM")
        #expect(sa["IntegrityAlgorithm"] as? String == "SHA2-256")
        #expect(sa["DiffieHellmanGroup"] as? Int == 19)
        // PFS on by default: the server's ESP proposal gains the group (ServerPlan), the device rekeys with it.
        #expect(eap["EnablePFS"] as? Int == 1)
        // Revocation checking where the server proves itself with a certificate; DPD medium by default.
        #expect(eap["EnableCertificateRevocationCheck"] as? Int == 1)
        #expect(psk["EnableCertificateRevocationCheck"] as? Int == 0)
        #expect(eap["DeadPeerDetectionRate"] as? String == "Medium")
        // fra-1 has an IPv6 pool: no kill switch by default; ams-1 has none: IncludeAllNetworks keeps IPv6 in.
        #expect(eap["IncludeAllNetworks"] == nil)
        #expect(eap["OnDemandEnabled"] == nil)
        // ams-1 pins modp2048 and rekeys ESP with PFS because its ESP proposal names a group.
        let ams = try ike("ams-1.ikev2-eap")
        #expect((ams["IKESecurityAssociationParameters"] as? [String: Any])?["DiffieHellmanGroup"] as? Int == 14)
        #expect(ams["EnablePFS"] as? Int == 1)
        #expect(ams["IncludeAllNetworks"] as? Int == 1)
        #expect(ams["ExcludeLocalNetworks"] as? Int == 1)

        let group = try #require(vpns[base + "fra-1.ipsec-xauth-psk"]?["IPSec"] as? [String: Any])
        #expect(group["LocalIdentifier"] as? String == "acme")
        #expect(group["LocalIdentifierType"] as? String == "KeyID")
        #expect(group["SharedSecret"] as? Data == Data("fra psk with \"quotes\" & <tags>".utf8))
        #expect(group["XAuthName"] as? String == "alice")
        let main = try #require(vpns[base + "ams-1.ipsec-xauth-psk"]?["IPSec"] as? [String: Any])
        #expect(main["LocalIdentifier"] == nil)
    }

    @Test func appleHybridPayloadOnlyForNodesIdentifiedByAddress() throws {
        // ams-1 (identity = its IPv4 address) gains ipsec-xauth-hybrid; fra-1 (a DNS name) already has it.
        var inventory = inventory
        inventory.nodes[1].services.append(.ipsecXauthHybrid)
        let files = try Render.clients(inventory, materials)
        let file = try #require(files.first { $0.path == "clients/alice/alice.mobileconfig" })
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: Data(file.contents), options: [], format: nil)
                as? [String: Any])
        let content = try #require(plist["PayloadContent"] as? [[String: Any]])
        let ids = content.compactMap { $0["PayloadIdentifier"] as? String }
        #expect(!ids.contains("vpnprov.acme.alice.vpn.fra-1.ipsec-xauth-hybrid"))
        let payload = try #require(
            content.first { $0["PayloadIdentifier"] as? String == "vpnprov.acme.alice.vpn.ams-1.ipsec-xauth-hybrid" })
        #expect(payload["VPNType"] as? String == "IPSec")
        let ipsec = try #require(payload["IPSec"] as? [String: Any])
        // Apple's schema: hybrid is SharedSecret with a group name ending in "hybrid"; the SharedSecret Apple's
        // IKEv1 client insists on is the group name, never the node PSK.
        #expect(ipsec["AuthenticationMethod"] as? String == "SharedSecret")
        #expect(ipsec["LocalIdentifier"] as? String == "acme-hybrid")
        #expect(ipsec["LocalIdentifierType"] as? String == "KeyID")
        #expect(ipsec["SharedSecret"] as? Data == Data("acme-hybrid".utf8))
        #expect(ipsec["XAuthEnabled"] as? Int == 1 && ipsec["XAuthName"] as? String == "alice")
        #expect(ipsec["PayloadCertificateUUID"] == nil)
        #expect(content.contains { $0["PayloadType"] as? String == "com.apple.security.root" })
        // Linux gets both nodes' hybrid connections.
        let linux = try #require(files.first { $0.path == "clients/alice/linux/swanctl/swanctl.conf" })
        let conf = String(decoding: linux.contents, as: UTF8.self)
        #expect(conf.contains("fra-1-ipsec-xauth-hybrid {") && conf.contains("ams-1-ipsec-xauth-hybrid {"))
    }

    @Test func uuidsAreNameBasedAndDistinct() throws {
        let content = try #require(try profile()["PayloadContent"] as? [[String: Any]])
        let uuids = content.compactMap { $0["PayloadUUID"] as? String } + [try profile()["PayloadUUID"] as! String]
        #expect(Set(uuids).count == uuids.count)
        for uuid in uuids {
            #expect(UUID(uuidString: uuid) != nil)
            #expect(Array(uuid)[14] == "5")  // version 5
        }
        // RFC 4122 Appendix B-style known answer: v5 of "www.example.com" in the DNS namespace.
        let dns = NameBasedUUID(bytes: [
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
        ])
        #expect(
            NameBasedUUID(namespace: dns, name: "www.example.com").description == "2ED6657D-E927-568B-95E1-2665A8AEA6A2"
        )
    }

    @Test func mobileconfigPassesPlutilLint() throws {
        let plutil = "/opt/swift/usr/bin/plutil"
        try #require(FileManager.default.isExecutableFile(atPath: plutil), "plutil not installed")
        let file = try #require(try render().first { $0.path.hasSuffix(".mobileconfig") })
        let dir = URL(fileURLWithPath: try temporaryDirectory("plutil"))
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("alice.mobileconfig")
        try Data(file.contents).write(to: url)
        let lint = try Subprocess.run(plutil, ["-lint", url.path])
        #expect(lint.succeeded, "\(lint)")
        #expect(lint.output.contains("OK"))
    }

    // MARK: - Android

    func sswan(_ path: String) throws -> [String: Any] {
        let file = try #require(try render().first { $0.path == path })
        return try #require(try JSONSerialization.jsonObject(with: Data(file.contents)) as? [String: Any])
    }

    @Test func androidProfilesHaveTheAppsKeysAndTypes() throws {
        let eap = try sswan("clients/alice/fra-1-ikev2-eap.sswan")
        #expect(eap["type"] as? String == "ikev2-eap")
        #expect(UUID(uuidString: eap["uuid"] as? String ?? "") != nil)
        #expect(eap["ike-proposal"] as? String == "aes256gcm16-prfsha256-ecp256")
        #expect(eap["esp-proposal"] as? String == "aes256gcm16")
        let remote = try #require(eap["remote"] as? [String: Any])
        #expect(remote["addr"] as? String == "fra-1.vpn.example.com")
        #expect(remote["id"] as? String == "fra-1.vpn.example.com")
        let caDER = try #require(Data(base64Encoded: remote["cert"] as? String ?? ""))
        #expect(try X509Certificate(der: [UInt8](caDER)).pem == materials.caCertificatePEM)
        let local = try #require(eap["local"] as? [String: Any])
        #expect(local["eap_id"] as? String == "alice")
        #expect(local["shared_secret"] as? String == "alice pass # }{")
        #expect(local["p12"] == nil)
        // fra-1 has an IPv6 pool: nothing to block.
        #expect(eap["split-tunneling"] == nil)
        let ams = try sswan("clients/alice/ams-1-ikev2-eap.sswan")
        // ams-1 has none: the app must drop IPv6 while connected (the key the app's importer reads).
        #expect((ams["split-tunneling"] as? [String: Any])?["block-ipv6"] as? Bool == true)

        let cert = try sswan("clients/alice/fra-1-ikev2-cert.sswan")
        #expect(cert["type"] as? String == "ikev2-cert")
        let certLocal = try #require(cert["local"] as? [String: Any])
        #expect(Data(base64Encoded: certLocal["p12"] as? String ?? "") == Data(materials.users["alice"]!.openP12!))
        #expect(certLocal["id"] as? String == "alice@acme.example")
        #expect(certLocal["shared_secret"] == nil)
    }

    @Test func appleOptionsFromNodeAndUser() throws {
        var inventory = inventory
        inventory.nodes[0].apple = AppleOptions(
            onDemand: true, trustedSSIDs: ["Home", "Office 5G"], includeAllNetworks: true, excludeLocalNetworks: false,
            pfs: false, crlCheck: false, dpd: .high, disconnectOnIdle: 600)
        // The user's own choice wins over the node's.
        inventory.users[0].apple = AppleOptions(trustedSSIDs: ["Home"], disconnectOnIdle: 0)
        let files = try Render.clients(inventory, materials)
        let file = try #require(files.first { $0.path == "clients/alice/alice.mobileconfig" })
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: Data(file.contents), format: nil) as? [String: Any])
        let payloads = try #require(plist["PayloadContent"] as? [[String: Any]])
        let eap = try #require(
            payloads.first { $0["PayloadIdentifier"] as? String == "vpnprov.acme.alice.vpn.fra-1.ikev2-eap" }?["IKEv2"]
                as? [String: Any])
        #expect(eap["OnDemandEnabled"] as? Int == 1)
        let rules = try #require(eap["OnDemandRules"] as? [[String: Any]])
        // Apple evaluates the rules in order: the trusted Wi-Fi disconnects before the catch-all connects.
        #expect(rules.count == 2)
        #expect(rules[0]["Action"] as? String == "Disconnect")
        #expect(rules[0]["InterfaceTypeMatch"] as? String == "WiFi")
        #expect(rules[0]["SSIDMatch"] as? [String] == ["Home"])
        #expect(rules[1]["Action"] as? String == "Connect" && rules[1].count == 1)
        #expect(eap["IncludeAllNetworks"] as? Int == 1)
        #expect(eap["ExcludeLocalNetworks"] as? Int == 0)
        #expect(eap["EnablePFS"] as? Int == 0)
        #expect(eap["EnableCertificateRevocationCheck"] as? Int == 0)
        #expect(eap["DeadPeerDetectionRate"] as? String == "High")
        #expect(eap["DisconnectOnIdle"] == nil && eap["DisconnectOnIdleTimer"] == nil)
        let ipsec = try #require(
            payloads.first { $0["PayloadIdentifier"] as? String == "vpnprov.acme.alice.vpn.fra-1.ipsec-xauth-psk" }?[
                "IPSec"] as? [String: Any])
        #expect(ipsec["OnDemandEnabled"] as? Int == 1)
        // Without the user's override the node's idle timer applies.
        inventory.users[0].apple = AppleOptions()
        let again = try Render.clients(inventory, materials)
        let plist2 = try #require(
            try PropertyListSerialization.propertyList(
                from: Data(again.first { $0.path == "clients/alice/alice.mobileconfig" }!.contents), format: nil)
                as? [String: Any])
        let eap2 = try #require(
            (plist2["PayloadContent"] as? [[String: Any]])?.first {
                $0["PayloadIdentifier"] as? String == "vpnprov.acme.alice.vpn.fra-1.ikev2-eap"
            }?["IKEv2"] as? [String: Any])
        #expect(eap2["DisconnectOnIdle"] as? Int == 1 && eap2["DisconnectOnIdleTimer"] as? Int == 600)
        #expect((eap2["OnDemandRules"] as? [[String: Any]])?.first?["SSIDMatch"] as? [String] == ["Home", "Office 5G"])
    }

    @Test func pfsPutsTheAppleChildGroupIntoTheServersESPProposal() {
        let p = Proposals(ike: ["aes256gcm16-prfsha256-ecp256"], esp: ["aes256gcm16", "aes256-sha256"])
        #expect(AppleSA.serverESPProposals(from: p, pfs: true) == ["aes256gcm16-ecp256-modpnone", "aes256-sha256"])
        #expect(AppleSA.serverESPProposals(from: p, pfs: false) == ["aes256gcm16", "aes256-sha256"])
        // A proposal that names the group already is left alone.
        let named = Proposals(ike: ["aes256-sha256-modp2048"], esp: ["aes256-sha256-modp2048-modpnone"])
        #expect(AppleSA.serverESPProposals(from: named, pfs: true) == named.esp)
        #expect(AppleSA.derive(from: p, pfs: true)?.offer.esp == ["aes256gcm16-ecp256"])
        #expect(AppleSA.derive(from: p, pfs: false)?.offer.esp == ["aes256gcm16"])
    }

    // MARK: - Linux

    @Test func linuxContextMatchesTheServerShape() throws {
        let inventory = inventory
        let plan = ClientPlan.build(inventory: inventory, materials: materials)
        let linux = plan.connections(of: "alice").filter { $0.devices.contains(.linux) }
        let ctx = try LinuxClientRenderer.context(
            user: "alice", connections: linux, deployment: DeploymentFacts(inventory), materials: materials)
        guard case .object(let top) = ctx.swanctl, case .list(let conns)? = top["connections"] else {
            Issue.record("no connections list")
            return
        }
        #expect(conns.count == 8)
        // IKEv1 with a group: Aggressive Mode, key ID local identity, PSK then XAuth round.
        let aggressive = conns.compactMap { c -> TemplateObject? in
            if case .object(let o) = c, o["name"] == .identifier("fra-1-ipsec-xauth-psk") { return o }
            return nil
        }.first
        #expect(aggressive?["version"] == .int(1))
        #expect(aggressive?["aggressive"] == .bool(true))
        #expect(aggressive?["vips"] == .string("0.0.0.0"))
        guard case .list(let rounds)? = aggressive?["local_rounds"], rounds.count == 2,
            case .object(let psk) = rounds[0], case .object(let xauth) = rounds[1]
        else {
            Issue.record("rounds")
            return
        }
        #expect(psk["section"] == .identifier("local-psk"))
        #expect(psk["id"] == .string("keyid:acme"))
        #expect(xauth["auth"] == .string("xauth"))
        #expect(xauth["xauth_id"] == .string("alice"))
        // Secrets are 0s-encoded: nothing of the secret itself reaches the file.
        guard case .object(let secrets) = ctx.secrets, case .list(let ike)? = secrets["ike"] else {
            Issue.record("secrets")
            return
        }
        #expect(ike.count == 2)
        if case .object(let first) = ike[0], case .string(let secret)? = first["secret"] {
            #expect(secret == "0s" + Data("fra psk with \"quotes\" & <tags>".utf8).base64EncodedString())
        }
    }

    @Test func templateFilesExistForTheLinuxRenderer() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        for name in [LinuxClientRenderer.swanctlTemplate, LinuxClientRenderer.secretsTemplate] {
            let text = try String(contentsOf: root.appendingPathComponent("templates/\(name)"), encoding: .utf8)
            #expect(text.hasPrefix("{{! syntax: swanctl }}"))
        }
    }

    @Test func missingMaterialThrowsWithoutRevealingSecrets() throws {
        var m = materials
        m.users["alice"]?.p12 = nil
        #expect(throws: ClientRenderError.self) {
            try Render.clients(inventory, m)
        }
    }
}
