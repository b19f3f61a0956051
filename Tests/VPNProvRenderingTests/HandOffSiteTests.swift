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

    /// The last section names what it holds: the certificate and its password only when they are there.
    @Test func theLastSectionSaysWhatItHolds() {
        let readme = ["README.txt"]
        #expect(HandOffSection.other.title(names: readme) == "The instructions")
        #expect(!HandOffSection.other.steps(user: "cat", names: readme).joined().contains("certificate"))
        let p12 = ["ben.p12", "ben-p12-password.txt", "README.txt"]
        #expect(HandOffSection.other.title(names: p12) == "Other apps, and the instructions")
        #expect(HandOffSection.other.steps(user: "ben", names: p12).joined().contains("certificate"))
        #expect(HandOffSection.apple.title(names: ["ann.mobileconfig"]) == "iPhone, iPad and Mac")
    }

    @Test func aFileWithoutAPlaceIsRefused() {
        #expect(throws: HandOffPackageError.self) {
            try HandOffItem.items(user: "alice", paths: ["alice.mobileconfig", "alice.ovpn"])
        }
        #expect(throws: HandOffPackageError.self) {
            try HandOffItem.items(user: "alice", paths: ["other/alice.conf"])
        }
    }

    /// The site's gate service and its certificate's renewal service and timer, as the role renders them with
    /// its defaults (the gate's socket in /run/vpnprov-handoff/), pass `systemd-analyze verify` without a word
    /// about them.
    @Test(.needs(MonitoringTests.systemdAnalyze)) func theSitesUnitsVerify() throws {
        try MonitoringTests.systemdAnalyze.require()
        let dir = URL(fileURLWithPath: try TestTemporaries.makeDirectory("handoff-units"))
        // The role's defaults, `name: value` lines with a plain value.
        var values: [String: String] = [:]
        for line in try #require(BuiltinDeployFiles.files["roles/vpnprov_handoff/defaults/main.yml"]).split(
            separator: "\n")
        where line.hasPrefix("vpnprov_handoff_") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 && !parts[1].isEmpty { values[parts[0]] = parts[1] }
        }
        let socket = try #require(values["vpnprov_handoff_socket"])
        #expect(socket == "/run/vpnprov-handoff/gate.sock")
        values["vpnprov_handoff_socket | dirname | basename"] = "vpnprov-handoff"
        values["vpnprov_handoff.address"] = "get.vpn.example.com"
        values["vpnprov_handoff.acme.renew_days | default(30)"] = "30"
        var paths: [String] = []
        for unit in [
            "vpnprov-handoff.service", "vpnprov-handoff-acme-renew.service", "vpnprov-handoff-acme-renew.timer",
        ] {
            var text = try #require(BuiltinDeployFiles.files["roles/vpnprov_handoff/templates/\(unit).j2"])
            for (name, value) in values { text = text.replacingOccurrences(of: "{{ \(name) }}", with: value) }
            #expect(!text.contains("{{"), "\(unit): \(text)")
            let path = dir.appendingPathComponent(unit).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            paths.append(path)
        }
        // As MonitoringTests does, in a mount namespace with a tmpfs over /run; and one over /usr/local/lib that
        // holds the two programs the services run (verify checks that they are executables).
        let programs = [
            try #require(values["vpnprov_handoff_gate"]), try #require(values["vpnprov_handoff_acme_script"]),
        ]
        #expect(programs.allSatisfy { $0.hasPrefix("/usr/local/lib/vpnprov/") })
        let setup =
            "mount -t tmpfs -o size=1m vpnprov-verify /run && mount -t tmpfs -o size=1m vpnprov-verify /usr/local/lib "
            + "&& mkdir /usr/local/lib/vpnprov && for p in " + programs.joined(separator: " ")
            + "; do printf '#!/bin/sh\\n' > \"$p\" && chmod 755 \"$p\" || exit 1; done && exec \"$0\" \"$@\""
        let result = try MonitoringTests.run(
            "/usr/bin/unshare",
            [
                "--mount", "--map-root-user", "sh", "-c", setup, MonitoringTests.systemdAnalyze.path, "verify",
                "--man=no",
            ]
                + paths, in: dir)
        #expect(result.code == 0, "\(result.output)")
        #expect(!result.output.contains("vpnprov-handoff"), "\(result.output)")
    }
}
