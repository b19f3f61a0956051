import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvTemplates

/// The hand-off site in deploy/ (docs/handoff.md): its inventory entry and host_vars, from its plan; and what
/// a link offers of a user's folder: every file of every client kind has its section and content type.
@Suite(.temporaries) struct HandOffSiteTests {
    static func inventory() -> Inventory {
        var inventory = ClientFixtures.inventory()
        var acme = ACMESettings(location: ClientFixtures.loc(50))
        acme.email = "ops@acme.example"
        acme.caBundle = "private-acme-ca.pem"
        inventory.acme = acme
        var site = HandOffSettings(address: "get.vpn.example.com", location: ClientFixtures.loc(60))
        site.deploy = DeployTarget(host: "192.0.2.80", port: 2222, user: "admin", become: true)
        inventory.handOff = site
        return inventory
    }

    @Test func theSiteIsAHostOfItsOwnInDeploy() throws {
        let inventory = Self.inventory()
        let bundle = ClientFixtures.pem("private ACME CA") + ClientFixtures.pem("its intermediate")
        let plan = try #require(HandOffPlan.make(inventory, acmeCABundlePEM: bundle))
        #expect(plan.link(token: "abc") == "https://get.vpn.example.com/h/abc/")
        let templates = try TemplateSet.builtin()
        let deploy = try Render.files(DeployRenderer.self, inventory, templates: templates)
        let files =
            deploy.filter { $0.path == "deploy/inventory.yml" }
            + (try HandOffSiteRenderer.render(plan: plan, templates: templates))
        try Golden.check(files, against: "deploy/handoff-site")
        #expect(files.allSatisfy { !$0.isPrivate })
        // Without handoff: no host_vars, the group empty (the two-nodes goldens).
        #expect(
            try HandOffSiteRenderer.render(
                plan: HandOffPlan.make(ClientFixtures.inventory(), acmeCABundlePEM: nil), templates: templates
            ).isEmpty)
    }

    /// Every file a user's folder can hold has its place on the page: the fixtures' users hold every client
    /// kind's files (alice has every device and a certificate).
    @Test func everyFileOfAUsersFolderHasItsSection() throws {
        var inventory = ClientFixtures.inventory()
        // NetworkManager is no default device: alice gets every kind.
        inventory.users[0].devices = Device.allCases
        let files = try Render.clients(inventory, ClientFixtures.materials())
        for user in ["alice", "bob"] {
            let prefix = "clients/\(user)/"
            let paths = files.map(\.path).filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            let items = try HandOffItem.items(user: user, paths: paths)
            // Each file of the folder is in exactly one item.
            #expect(
                items.flatMap(\.sources).filter { $0 != "README" }.sorted() == paths.filter { $0 != "README" }.sorted())
            #expect(Set(items.map(\.name)).count == items.count)
            let order = items.map { HandOffSection.allCases.firstIndex(of: $0.section)! }
            #expect(order == order.sorted(), "items in the page's order")
        }
        let alice = try HandOffItem.items(
            user: "alice",
            paths: files.map(\.path).filter { $0.hasPrefix("clients/alice/") }.map { String($0.dropFirst(14)) })
        let byName = Dictionary(uniqueKeysWithValues: alice.map { ($0.name, $0) })
        #expect(byName["alice.mobileconfig"]?.contentType == "application/x-apple-aspen-config")
        #expect(byName["fra-1-ikev2-eap.sswan"]?.contentType == "application/vnd.strongswan.profile")
        #expect(byName["fra-1-ikev2-eap.sswan"]?.section == .android)
        #expect(byName["alice-windows.ps1"]?.section == .windows)
        #expect(byName["alice-linux.tar"]?.isArchive == true && byName["alice-linux.tar"]?.sources.first == "README")
        #expect(byName["alice-networkmanager.tar"]?.section == .networkmanager)
        #expect(byName["README.txt"]?.section == .other && byName["alice.p12"]?.contentType == "application/x-pkcs12")
        #expect(Set(alice.map(\.section)) == Set(HandOffSection.allCases), "alice's folder fills every section")
        let names = alice.map(\.name)
        #expect(names.firstIndex(of: "alice-windows.ps1")! < names.firstIndex(of: "alice-windows-password.txt")!)
        #expect(names.firstIndex(of: "alice.p12")! < names.firstIndex(of: "alice-p12-password.txt")!)
    }

    @Test func aFileWithoutAPlaceIsRefused() {
        #expect(throws: HandOffPackageError.self) {
            try HandOffItem.items(user: "alice", paths: ["alice.mobileconfig", "alice.ovpn"])
        }
        #expect(throws: HandOffPackageError.self) {
            try HandOffItem.items(user: "alice", paths: ["other/alice.conf"])
        }
    }
}
