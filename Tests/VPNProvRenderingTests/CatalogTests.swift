import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport

@Suite(.temporaries) struct CatalogTests {
    let inventory = ClientFixtures.inventory()

    @Test func matchesGoldenFile() throws {
        try Golden.check(Render.files(CatalogRenderer.self, inventory), against: "catalog/two-nodes")
    }

    @Test func isDeterministicAndSecretFree() throws {
        let a = try Render.files(CatalogRenderer.self, inventory)
        #expect(try a == Render.files(CatalogRenderer.self, inventory))
        #expect(a.count == 1 && a[0].path == "catalog/servers.json" && !a[0].isPrivate)
        let text = String(decoding: a[0].contents, as: UTF8.self)
        for secret in ClientFixtures.secrets { #expect(!text.contains(secret)) }
    }

    /// `vpnprov accounts catalogue`: the same entries, each RADIUS node's with its live sessions, the addresses
    /// of its IPv4 pool (a /24: 254), the load in percent (rounded down) and whether accounting says it is up;
    /// other nodes' entries as `generate` writes them; the same bytes for the same activity.
    /// A node drained through the accounts database (`vpnprov accounts drain`) is `draining` in the live catalogue,
    /// with when the drain began and when its sessions end; the other nodes carry no state.
    @Test func theLiveCatalogueMarksANodeTheDatabaseDrains() throws {
        var inventory = inventory
        inventory.nodes[0].accounts = .radius
        let drains = [
            "fra-1": NodeDrain(node: "fra-1", since: "2026-12-07T12:00:00Z", graceUntil: "2026-12-07T12:10:00Z")
        ]
        let live = CatalogRenderer.liveCatalog(CataloguePlan.make(inventory), activity: [:], drains: drains)
        #expect(!live.servers.isEmpty)
        for server in live.servers {
            let drained = server.node == "fra-1"
            #expect(server.state == (drained ? "draining" : nil))
            #expect(server.drainingSince == (drained ? "2026-12-07T12:00:00Z" : nil))
            #expect(server.graceUntil == (drained ? "2026-12-07T12:10:00Z" : nil))
        }
        #expect(
            CatalogRenderer.liveCatalog(CataloguePlan.make(inventory), activity: [:]).servers.allSatisfy {
                $0.state == nil
            })
    }

    @Test func theLiveCatalogueAddsLoadAndStateToRadiusNodes() throws {
        var inventory = inventory
        inventory.nodes[0].accounts = .radius
        let activity = ["fra-1": NodeActivity(liveSessions: 127, staleSessions: 3)]
        let live = Pipeline.liveCatalogue(inventory: inventory, activity: activity).bytes
        #expect(live == Pipeline.liveCatalogue(inventory: inventory, activity: activity).bytes)
        let top = try #require(try JSONSerialization.jsonObject(with: Data(live)) as? [String: Any])
        let servers = try #require(top["servers"] as? [[String: Any]])
        let fra = servers.filter { $0["node"] as? String == "fra-1" }
        #expect(!fra.isEmpty)
        for entry in fra {
            #expect(entry["sessions"] as? Int == 127 && entry["capacity"] as? Int == 254)
            #expect(entry["load"] as? Int == 50 && entry["alive"] as? Bool == true)
        }
        for entry in servers where entry["node"] as? String == "ams-1" {
            #expect(entry["sessions"] == nil && entry["alive"] == nil && entry["load"] == nil)
        }
        // Without the live fields the entries are the static catalogue's.
        let stripped = servers.map { $0.filter { !["sessions", "capacity", "load", "alive"].contains($0.key) } }
        let staticTop = try #require(
            try JSONSerialization.jsonObject(with: Data(Render.files(CatalogRenderer.self, inventory)[0].contents))
                as? [String: Any])
        #expect(NSArray(array: stripped).isEqual(to: staticTop["servers"] as? [Any] ?? []))
        // Open sessions, none updated lately: its accounting stopped. No session at all: up, and idle.
        let stopped = Pipeline.liveCatalogue(
            inventory: inventory, activity: ["fra-1": NodeActivity(liveSessions: 0, staleSessions: 2)]
        ).bytes
        #expect(String(decoding: stopped, as: UTF8.self).contains("\"alive\" : false"))
        let idle = Pipeline.liveCatalogue(inventory: inventory, activity: [:]).bytes
        let idleText = String(decoding: idle, as: UTF8.self)
        #expect(idleText.contains("\"alive\" : true") && idleText.contains("\"sessions\" : 0"))
        #expect(!idleText.contains("\"alive\" : false"))
    }

    /// The static catalogue and a live one (fra-1 a RADIUS node, one with its accounting stopped) match
    /// docs/catalog.schema.json, which apps and backends can validate against.
    @Test(.needs(.schemaPython)) func catalogsMatchTheirSchema() throws {
        let dir = try temporaryDirectory("catalog-schema")
        var radius = inventory
        radius.nodes[0].accounts = .radius
        let documents: [(String, [UInt8])] = [
            ("static.json", Array(try Render.files(CatalogRenderer.self, inventory)[0].contents)),
            (
                "live.json",
                Pipeline.liveCatalogue(inventory: radius, activity: ["fra-1": .init(liveSessions: 3, staleSessions: 0)])
                    .bytes
            ),
            (
                "stopped.json",
                Pipeline.liveCatalogue(inventory: radius, activity: ["fra-1": .init(liveSessions: 0, staleSessions: 1)])
                    .bytes
            ),
        ]
        var files: [String] = []
        for (name, bytes) in documents {
            files.append(dir + "/" + name)
            try Data(bytes).write(to: URL(fileURLWithPath: files.last!))
        }
        let check = try runTool(
            [TestDependency.schemaPython.path, Repository.root + "/scripts/check-output", "catalog"] + files)
        #expect(check.status == 0, "\(check.output)")
        // and the schema is strict: an unknown field is refused
        try Data(#"{"version": 1, "deployment": "d", "servers": [], "extra": 1}"#.utf8).write(
            to: URL(fileURLWithPath: dir + "/extra.json"))
        let extra = try runTool(
            [
                TestDependency.schemaPython.path, Repository.root + "/scripts/check-output", "catalog",
                dir + "/extra.json",
            ])
        #expect(extra.status == 1, "\(extra.output)")
    }

    @Test func fourFieldModelNeedsTheDeviceDefaultProposals() throws {
        // A node without AES-256/SHA2-256/MODP2048 (IKE) cannot take the seed's IKEv2 clients; IKEv1 always can.
        var inventory = inventory
        inventory.nodes[0].proposals = Proposals(
            ike: ["aes256gcm16-prfsha384-ecp384", "aes128-sha256-ecp256"], esp: ["aes256gcm16"])
        let catalog = try Render.catalog(inventory)
        let marked = catalog.servers.filter { $0.node == "fra-1" && $0.fourFieldModel }.map(\.service)
        #expect(marked == ["ipsec-xauth-psk"])
        #expect(FourFieldModel.service(ikeVersion: 2, pskEnabled: true) == .ikev2PSKEAP)
        #expect(FourFieldModel.service(ikeVersion: 1, pskEnabled: false) == .ipsecXauthHybrid)
    }

    @Test func anACMENodesCertificateEntriesNeedNothingOnTheDevice() throws {
        // An ACME node's certificate chains to a root the device already trusts: its ikev2-eap and hybrid
        // entries are for the four-field code, name no issuer and turn off the deployment CRL's check.
        var inventory = inventory
        var acme = ACMESettings(location: SourceLocation(file: "t", line: 1, column: 1))
        acme.email = "ops@acme.example"
        inventory.acme = acme
        inventory.nodes[0].certificate = .acme
        inventory.nodes[0].id = .fqdn("fra-1.vpn.example.com")
        let catalog = try Render.catalog(inventory)
        let fra = catalog.servers.filter { $0.node == "fra-1" }
        #expect(
            fra.filter(\.fourFieldModel).map(\.service) == [
                "ikev2-eap", "ikev2-psk-eap", "ipsec-xauth-psk", "ipsec-xauth-hybrid",
            ])
        let eap = try #require(fra.first { $0.service == "ikev2-eap" })
        #expect(eap.needsOnDevice == [] && eap.serverCertificateIssuerCommonName == nil)
        #expect(eap.enableRevocationCheck == false)
        let cert = try #require(fra.first { $0.service == "ikev2-cert" })
        #expect(cert.needsOnDevice == ["client-certificate"] && !cert.fourFieldModel)
        // The other node still holds a certificate of the deployment CA.
        let ams = try #require(catalog.servers.first { $0.id == "ams-1-ikev2-eap" })
        #expect(ams.needsOnDevice == ["ca-certificate"] && !ams.fourFieldModel)
    }

    @Test func entriesHaveTheAppFieldsWithJSONTypes() throws {
        let data = Data(try Render.files(CatalogRenderer.self, inventory)[0].contents)
        let top = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(top["version"] as? Int == 1)
        #expect(top["deployment"] as? String == "acme")
        let servers = try #require(top["servers"] as? [[String: Any]])
        #expect(
            servers.map { $0["id"] as? String } == [
                "fra-1-ikev2-cert", "fra-1-ikev2-eap", "fra-1-ikev2-psk", "fra-1-ikev2-psk-eap",
                "fra-1-ipsec-xauth-psk",
                "fra-1-ipsec-xauth-hybrid", "ams-1-ikev2-eap", "ams-1-ipsec-xauth-psk",
            ])
        // The seed app's four-field model: extended authentication always on, no client certificate,
        // the device's default proposals (the fixture nodes accept aes256-sha256-modp2048 / aes256-sha256).
        // The fixture's nodes hold certificates of the deployment CA, which a device must have installed: their
        // ikev2-eap and hybrid entries need it (needsOnDevice) and so are not for the four-field code.
        let fourField = servers.filter { $0["fourFieldModel"] as? Bool == true }.map { $0["service"] as? String }
        #expect(fourField == ["ikev2-psk-eap", "ipsec-xauth-psk", "ipsec-xauth-psk"])
        let needs = Dictionary(
            uniqueKeysWithValues: servers.map { ($0["id"] as! String, $0["needsOnDevice"] as? [String]) })
        #expect(needs["fra-1-ikev2-eap"] == ["ca-certificate"])
        #expect(needs["fra-1-ikev2-cert"] == ["ca-certificate", "client-certificate"])
        #expect(needs["fra-1-ipsec-xauth-hybrid"] == ["ca-certificate"])
        #expect(needs["fra-1-ipsec-xauth-psk"] == [])
        let hybrid = try #require(servers.first { $0["id"] as? String == "fra-1-ipsec-xauth-hybrid" })
        #expect(hybrid["protocol"] as? String == "IPSec" && hybrid["pskEnabled"] as? Bool == false)
        #expect(hybrid["localID"] as? String == "acme-hybrid" && hybrid["localIDType"] as? String == "KeyID")
        #expect(
            hybrid["authenticationMethod"] as? String == "sharedSecret"
                && hybrid["authMethod"] as? String == "xauth-hybrid")
        let byID = Dictionary(uniqueKeysWithValues: servers.map { ($0["id"] as! String, $0) })
        let eap = try #require(byID["fra-1-ikev2-eap"])
        #expect(eap["protocol"] as? String == "IKEv2")
        #expect(eap["flag"] as? String == "🇩🇪")
        #expect(eap["countryCode"] as? String == "DE")
        #expect(eap["pskEnabled"] as? Bool == false)
        #expect(eap["authMethod"] as? String == "eap")
        #expect(eap["localID"] as? String == "")
        let ike = try #require(eap["ikeSecurityAssociation"] as? [String: Any])
        #expect(ike["diffieHellmanGroup"] as? Int == 19)
        #expect(ike["proposal"] as? String == "aes256gcm16-prfsha256-ecp256")
        let ipsec = try #require(byID["fra-1-ipsec-xauth-psk"])
        #expect(ipsec["protocol"] as? String == "IPSec")
        #expect(ipsec["localID"] as? String == "acme")
        #expect(ipsec["pskEnabled"] as? Bool == true)
        #expect(ipsec["ikeSecurityAssociation"] == nil)
        #expect(byID["fra-1-ikev2-psk-eap"]?["localID"] as? String == "psk-eap.acme")
        #expect(byID["ams-1-ipsec-xauth-psk"]?["localID"] as? String == "")
        #expect(byID["ams-1-ikev2-eap"]?["tier"] as? String == "pro")
        #expect(byID["ams-1-ikev2-eap"]?["flag"] as? String == "🇳🇱")
    }

    @Test func carriesTheSameDeviceOptionsAsTheProfiles() throws {
        var inventory = inventory
        inventory.nodes[0].apple = AppleOptions(
            onDemand: true, trustedSSIDs: ["Home"], dpd: .low, disconnectOnIdle: 300)
        let catalog = try Render.catalog(inventory)
        let fraEAP = try #require(catalog.servers.first { $0.id == "fra-1-ikev2-eap" })
        #expect(fraEAP.onDemandEnabled == true)
        #expect(
            fraEAP.onDemandRules == [
                .init(action: "disconnect", interfaceTypeMatch: "wiFi", ssidMatch: ["Home"]), .init(action: "connect"),
            ])
        #expect(fraEAP.deadPeerDetectionRate == "low" && fraEAP.disconnectOnIdleSeconds == 300)
        #expect(fraEAP.carriesIPv6 == true && fraEAP.blockIPv6 == false && fraEAP.includeAllNetworks == false)
        // ams-1 has no IPv6 pool: block IPv6 and the kill switch, as its Apple profiles and .sswan do.
        let ams = try #require(catalog.servers.first { $0.id == "ams-1-ikev2-eap" })
        #expect(ams.blockIPv6 == true && ams.includeAllNetworks == true && ams.excludeLocalNetworks == true)
        // The SA parameters and PFS are exactly what the Apple profile pins.
        let plan = ClientPlan.build(inventory: inventory, materials: ClientFixtures.materials())
        let connection = try #require(
            plan.connections.first { $0.node == "fra-1" && $0.service == .ikev2EAP && $0.user == "alice" })
        #expect(fraEAP.enablePFS == connection.apple?.enablePFS)
        #expect(fraEAP.childSecurityAssociation?.proposal == connection.apple?.offer.esp.first)
        #expect(fraEAP.enableRevocationCheck == connection.appleSettings?.crlCheck)
        // IPSec entries cannot carry the kill switch.
        let ipsec = try #require(catalog.servers.first { $0.id == "fra-1-ipsec-xauth-psk" })
        #expect(ipsec.includeAllNetworks == nil && ipsec.enablePFS == nil)
    }

    @Test func flagNeedsTwoLetters() {
        #expect(CatalogRenderer.flag("ch") == "🇨🇭")
        #expect(CatalogRenderer.flag("CHE") == nil)
        #expect(CatalogRenderer.flag("1A") == nil)
    }
}
