import Testing
import VPNProvModel
import VPNProvTestFixtures

/// `handoff:` (docs/handoff.md): its defaults, and every bad value refused at its line with its code.
@Suite struct HandOffInventoryTests {
    /// An inventory with one ACME-less node and `handoff` as the last section (from line 9 on).
    static func inventory(_ handoff: String, acme: Bool = true) -> String {
        """
        vpnprov: 1
        name: lab
        \(acme ? "acme: {email: ops@example.com}" : "secrets: {}")
        nodes:
          n1: {address: n1.vpn.example.com, pool: 10.1.0.0/24, services: [ikev2-eap]}
        users:
          ann: {password: gen, devices: [apple, android]}
        # the site
        \(handoff)

        """
    }

    /// Every error of decoding and validating `text`, as `code line:column`.
    static func errors(_ text: String) -> [String] {
        let decoded = decode(text)
        var diagnostics = decoded.diagnostics
        if let inventory = decoded.inventory { diagnostics += Validator.validate(inventory) }
        return summary(diagnostics)
    }

    @Test func aSiteNeedsOnlyItsAddressAndTheACMEAccount() throws {
        let decoded = decode(Self.inventory("handoff: {address: get.vpn.example.com}"))
        let inventory = try #require(decoded.inventory, "\(decoded.diagnostics)")
        let site = try #require(inventory.handOff)
        #expect(site.address == "get.vpn.example.com" && site.deployHost == "get.vpn.example.com")
        #expect(site.lifetime == 72 * 3600 && site.downloads == 1)
        #expect(site.deploy == DeployTarget())
        let diagnostics = Validator.validate(inventory)
        // `acme:` is used by the site: no acme-unused warning.
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let unused = Validator.validate(try #require(decode(Self.inventory("")).inventory))
        #expect(unused.map(\.code.rawValue) == ["acme-unused"], "the control: acme: without a user of it")
    }

    @Test func lifetimesAreMinutesHoursOrDays() {
        #expect(HandOffSettings.seconds("90m") == 5400)
        #expect(HandOffSettings.seconds("24h") == 86400)
        #expect(HandOffSettings.seconds("3d") == 259_200)
        for bad in ["", "h", "3", "3w", "-2h", "0d", "1.5h", "3 d"] {
            #expect(HandOffSettings.seconds(bad) == nil, "\(bad)")
        }
        #expect(HandOffSettings.text(seconds: 259_200) == "3d" && HandOffSettings.text(seconds: 5400) == "90m")
        #expect(HandOffSettings.text(seconds: 36 * 3600) == "36h")
    }

    @Test(arguments: [
        ("handoff: {address: get.vpn.example.com, expires: 2w}", ["invalid-value 9:50"]),
        ("handoff: {address: get.vpn.example.com, expires: 30m}", ["invalid-value 9:50"]),
        ("handoff: {address: get.vpn.example.com, expires: 31d}", ["invalid-value 9:50"]),
        ("handoff: {address: get.vpn.example.com, downloads: 101}", ["invalid-value 9:52"]),
        ("handoff: {address: get.vpn.example.com, downloads: -1}", ["type-mismatch 9:52"]),
        ("handoff: {address: get.vpn.example.com, expiry: 3d}", ["unknown-key 9:41"]),
        ("handoff: {expires: 3d}", ["missing-key 9:10"]),
        ("handoff: {address: 192.0.2.80}", ["handoff-address 9:20"]),
        ("handoff: {address: get}", ["handoff-address 9:20"]),
        ("handoff: {address: get_.vpn.example.com}", ["handoff-address 9:20"]),
        ("handoff: {address: N1.vpn.example.com}", ["handoff-address 9:20"]),
        ("handoff: {address: n1}", ["handoff-address 9:20", "handoff-address 9:20"]),
        ("handoff: {address: get.vpn.example.com, deploy: {user: -x}}", ["invalid-deploy-user 9:56"]),
        ("handoff: {address: get.vpn.example.com, deploy: {host: 'a b'}}", ["invalid-deploy-host 9:56"]),
        ("handoff: {address: get.vpn.example.com, deploy: {port: 0}}", ["invalid-value 9:56"]),
    ])
    func aBadValueIsRefusedAtItsLine(handoff: String, expected: [String]) {
        #expect(Self.errors(Self.inventory(handoff)) == expected, "\(handoff)")
    }

    @Test func theSiteNeedsTheACMESection() {
        #expect(
            Self.errors(Self.inventory("handoff: {address: get.vpn.example.com}", acme: false))
                == ["acme-settings-missing 9:10"])
    }
}
