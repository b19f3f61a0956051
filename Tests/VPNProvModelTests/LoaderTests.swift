import Foundation
import Testing
import VPNProvCLI
import VPNProvModel
import VPNProvTestFixtures
import VPNProvYAML

@Suite(.temporaries) struct BadInventoryFixtureTests {
    @Test func thereAreEnoughBadFixtures() {
        #expect(InventoryFixtures.names("bad").count >= 25)
    }

    @Test(arguments: InventoryFixtures.names("bad"))
    func badFixtureProducesExactlyItsErrors(_ name: String) throws {
        let bytes = try InventoryFixtures.bytes("bad", name)
        let expected = InventoryFixtures.expectations(bytes)
        try #require(!expected.isEmpty, "\(name) has no '# expect:' line")
        let result = InventoryLoader.decode(bytes: bytes, file: name)
        #expect(summary(result.diagnostics) == expected.sorted())
        #expect(result.inventory == nil)
        for d in result.diagnostics { #expect(d.location?.file == name) }
    }
}

@Suite(.temporaries) struct GoodInventoryFixtureTests {
    @Test(arguments: InventoryFixtures.names("good"))
    func goodFixtureDecodesCleanly(_ name: String) throws {
        let result = InventoryLoader.decode(bytes: try InventoryFixtures.bytes("good", name), file: name)
        #expect(result.diagnostics.isEmpty)
        #expect(result.inventory != nil)
    }

    @Test func byteOrderMarkIsAcceptedAndTakesNoColumn() throws {
        let result = InventoryLoader.decode(bytes: try InventoryFixtures.bytes("good", "bom.yaml"), file: "bom.yaml")
        let node = try #require(result.inventory?.nodes.first)
        #expect(node.location == SourceLocation(file: "bom.yaml", line: 4, column: 3))
        #expect(node.location(of: "address") == SourceLocation(file: "bom.yaml", line: 5, column: 14))
    }

    @Test func crlfLineEndingsAndNorwayStaysAString() throws {
        let result = InventoryLoader.decode(bytes: try InventoryFixtures.bytes("good", "crlf.yaml"), file: "crlf.yaml")
        let inventory = try #require(result.inventory)
        let node = try #require(inventory.nodes.first)
        #expect(node.country == "NO")
        #expect(node.address == "192.0.2.1")
        #expect(node.location(of: "country") == SourceLocation(file: "crlf.yaml", line: 6, column: 14))
        #expect(inventory.users.first?.password == .generate)
    }

    @Test func aliasesAreResolved() throws {
        let result = InventoryLoader.decode(bytes: try InventoryFixtures.bytes("good", "aliases.yaml"), file: "a.yaml")
        let nodes = try #require(result.inventory?.nodes)
        #expect(nodes.map(\.services) == [[.ikev2Cert, .ikev2EAP], [.ikev2Cert, .ikev2EAP]])
    }

    @Test func exampleInventoryDecodesWithoutErrors() throws {
        let url = InventoryFixtures.repository.appendingPathComponent("inventory/example.yaml")
        let (inventory, diagnostics) = try InventoryLoader.load(path: url.path, displayPath: "inventory/example.yaml")
        #expect(!diagnostics.hasErrors)
        let inv = try #require(inventory)
        #expect(inv.nodes.map(\.name) == ["fra-1", "nyc-1", "sgp-1"])
        // Every service but ipsec-xauth-hybrid, which needs RSA server keys (the example's are ECDSA); the
        // seed-app end-to-end inventory covers it.
        let exampleServices = Set(Service.allCases).subtracting([.ipsecXauthHybrid])
        #expect(Set(inv.nodes.flatMap(\.services)) == exampleServices)
        #expect(inv.nodes.contains { Set($0.services) == exampleServices })
        #expect(inv.nodes.contains { $0.pool6 != nil })
        #expect(inv.users.contains { $0.revoked })
        #expect(inv.users.contains { $0.cert && $0.password == nil })
        #expect(inv.users.contains { $0.cert && $0.password != nil })
        #expect(inv.users.contains { !$0.cert && $0.password != nil })
        #expect(inv.users.contains { $0.devices != Device.allCases })
        #expect(inv.users.contains { $0.nodes != inv.nodes.map(\.name) })
    }
}

@Suite(.temporaries) struct InventoryDecoderTests {
    static let full = """
        vpnprov: 1
        name: acme
        pki:
          ca: { key: rsa-3072, days: 3650 }
          server_days: 700
          client_key: ecdsa-p384
        defaults:
          services: [ikev2-eap, ikev2-cert]
          dns: [192.0.2.53]
          proposals: { esp: [aes128gcm16] }
          tier: pro
        nodes:
          fra-1:
            address: fra-1.vpn.example.com
            country: NO
            tier: free
            pool: 10.10.0.0/24
            pool6: fd00:10::/112
            psk: env:FRA_PSK
            group: acme
            services: [ipsec-xauth-psk, ikev2-psk, ikev2-eap]
          nyc-1:
            address: 203.0.113.10
            id: "C=US, O=acme, CN=nyc-1"
            psk: file:secrets/nyc.psk
          sgp-1:
            address: 2001:db8:0::1
            psk: s3cret-literal
        users:
          alice:
          bob:
            password: gen
            cert: true
            id: bob@example.com
            nodes: [sgp-1, fra-1]
            devices: [linux, apple]
            revoked: false
          carol:
            cert: false
            revoked: true
        """

    @Test func decodesEveryFieldWithDefaults() throws {
        let result = decode(Self.full, file: "inv.yaml")
        #expect(result.diagnostics.isEmpty)
        let inv = try #require(result.inventory)
        #expect(inv.name == "acme")
        #expect(inv.file == "inv.yaml")
        #expect(inv.pki.ca == CASettings(name: "acme VPN Root CA", key: .rsa3072, days: 3650))
        #expect(inv.pki.serverDays == 700)
        #expect(inv.pki.clientDays == 365)
        #expect(inv.pki.serverKey == .rsa3072)
        #expect(inv.pki.clientKey == .ecdsaP384)
        #expect(inv.nodes.map(\.name) == ["fra-1", "nyc-1", "sgp-1"])

        let fra = inv.nodes[0]
        #expect(fra.id == .fqdn("fra-1.vpn.example.com"))
        #expect(fra.country == "NO")
        #expect(fra.tier == .free)  // node wins over defaults
        #expect(fra.pool?.description == "10.10.0.0/24")
        #expect(fra.pool6?.description == "fd00:10::/112")
        #expect(fra.services == [.ikev2EAP, .ikev2PSK, .ipsecXauthPSK])  // sorted by Service order
        #expect(fra.psk == .env("FRA_PSK"))
        #expect(fra.group == "acme")
        #expect(fra.dns == ["192.0.2.53"])
        #expect(fra.proposals == Proposals(ike: Proposals.defaults.ike, esp: ["aes128gcm16"]))
        #expect(fra.location(of: "pool") == SourceLocation(file: "inv.yaml", line: 17, column: 11))
        #expect(fra.location(of: "psk") == SourceLocation(file: "inv.yaml", line: 19, column: 10))
        #expect(fra.location(of: "dns") == SourceLocation(file: "inv.yaml", line: 9, column: 8))  // from defaults
        #expect(fra.location == SourceLocation(file: "inv.yaml", line: 13, column: 3))

        let nyc = inv.nodes[1]
        #expect(nyc.id == .dn("C=US, O=acme, CN=nyc-1"))
        #expect(nyc.tier == .pro)  // from defaults
        #expect(nyc.services == [.ikev2Cert, .ikev2EAP])
        #expect(nyc.psk == .file("secrets/nyc.psk"))
        #expect(nyc.pool == nil)

        let sgp = inv.nodes[2]
        #expect(sgp.id == .ipv6("2001:db8::1"))
        #expect(sgp.address == "2001:db8:0::1")
        #expect(sgp.psk == .literal("s3cret-literal"))
        #expect(sgp.location(of: "id") == sgp.location(of: "address"))
        #expect(result.secretLines == [28])

        let alice = inv.users[0]
        #expect(alice.id == .userFQDN("alice@acme"))
        #expect(alice.nodes == ["fra-1", "nyc-1", "sgp-1"])
        #expect(alice.devices == Device.defaults)
        #expect(alice.cert == false && alice.revoked == false && alice.password == nil)

        let bob = inv.users[1]
        #expect(bob.password == .generate)
        #expect(bob.cert)
        #expect(bob.id == .userFQDN("bob@example.com"))
        #expect(bob.nodes == ["fra-1", "sgp-1"])  // inventory order
        #expect(bob.devices == [.apple, .linux])
        #expect(bob.location(of: "nodes") == SourceLocation(file: "inv.yaml", line: 35, column: 12))

        #expect(inv.users[2].revoked)
    }

    @Test func nodeWithoutServicesGetsIKEv2EAP() throws {
        let inv = try #require(decode("vpnprov: 1\nname: x\nnodes:\n  a: {address: 192.0.2.1}\n").inventory)
        #expect(inv.nodes[0].services == [.ikev2EAP])
        #expect(inv.nodes[0].id == .ipv4("192.0.2.1"))
        #expect(inv.nodes[0].proposals == .defaults)
        #expect(inv.pki == PKISettings(ca: CASettings(name: "x VPN Root CA", key: .ecdsaP256, days: 3650)))
    }

    @Test func yaml11BooleansAndOctalsAreNotGuessed() throws {
        let inv = try #require(
            decode("vpnprov: 1\nname: yes\nnodes:\n  a: {address: 192.0.2.1, region: on, country: NO}\n").inventory)
        #expect(inv.name == "yes")
        #expect(inv.nodes[0].region == "on")
        #expect(inv.nodes[0].country == "NO")
    }

    @Test func severalErrorsAreReportedTogether() {
        let result = decode(
            "vpnprov: 1\nname: x\nnodes:\n  a: {address: 192.0.2.1, tier: on, pool: 10.0.0.0/8x}\nusers:\n  u: {cert: no}\n"
        )
        #expect(summary(result.diagnostics) == ["invalid-cidr 4:43", "invalid-value 4:33", "type-mismatch 6:13"])
    }

    @Test func duplicateKeyNamesBothPlaces() throws {
        let result = decode("vpnprov: 1\nname: x\nnodes:\n  a:\n    address: 192.0.2.1\n    address: 192.0.2.2\n")
        let d = try #require(result.diagnostics.first)
        #expect(d.code == .duplicateKey)
        #expect(d.location?.line == 6)
        #expect(d.notes.map(\.location) == [SourceLocation(file: "t.yaml", line: 5, column: 5)])
    }

    @Test func appleOptionsMergeDefaultsNodeAndUser() throws {
        let inventory = try #require(
            InventoryLoader.decode(bytes: try InventoryFixtures.bytes("good", "apple-options.yaml"), file: "a.yaml")
                .inventory)
        let node = inventory.nodes[0]
        #expect(
            node.apple
                == AppleOptions(
                    onDemand: true, trustedSSIDs: ["Home", "Café Wi-Fi"], includeAllNetworks: true,
                    excludeLocalNetworks: false,
                    pfs: false, crlCheck: false, dpd: .high, disconnectOnIdle: 600))
        #expect(node.location(of: "apple.disconnect_on_idle").line == 14)
        let user = inventory.users[0]
        #expect(user.apple == AppleOptions(onDemand: false, disconnectOnIdle: 0))
        let resolved = AppleOptions.effective(user: user, node: node)
        #expect(
            !resolved.onDemand && resolved.disconnectOnIdle == 0 && resolved.trustedSSIDs == ["Home", "Café Wi-Fi"])
        // Unknown keys under apple: get a hint; server-side keys are not user keys.
        let typo = decode(
            "vpnprov: 1\nname: x\nnodes:\n  n:\n    address: a.example\n    pool: 10.0.0.0/24\n    apple: {kill_switch: true, include_all_network: true}\n"
        )
        #expect(typo.diagnostics.contains { $0.message.contains("did you mean 'include_all_networks'?") })
        let userPFS = decode("vpnprov: 1\nname: x\nusers:\n  u:\n    apple: {pfs: false}\n")
        #expect(
            userPFS.diagnostics.contains {
                $0.code == .unknownKey && $0.message.contains("'apple.pfs'") == false
                    && $0.message.contains("unknown key 'pfs'")
            })
    }

    @Test func crlURLIsAnHTTPURLOrAnErrorAtItsLine() throws {
        func load(_ url: String) -> InventoryDecoder.Result {
            decode("vpnprov: 1\nname: x\npki:\n  crl_url: \(url)\n")
        }
        let good = try #require(load("http://crl.example.com:8080/acme.crl").inventory)
        #expect(good.pki.crlURL == "http://crl.example.com:8080/acme.crl")
        #expect(try #require(load("https://[2001:db8::1]/c.crl").inventory).pki.crlURL == "https://[2001:db8::1]/c.crl")
        #expect(try #require(decode("vpnprov: 1\nname: x\n").inventory).pki.crlURL == nil)
        let bad: [(String, String)] = [
            ("ftp://crl.example.com/c.crl", "must be an http:// or https:// URL"),
            ("crl.example.com/c.crl", "must be an http:// or https:// URL"),
            ("http:///c.crl", "has no host"),
            ("'http://a.example/x,y'", "contains ','"),
            ("'http://a.example/x y'", "contains U+0020"),
            ("http://user:pw@a.example/c.crl", "user name or password"),
            ("http://a.example:99999/c.crl", "bad port"),
            ("'http://a.example/ü'", "contains 'ü'"),
        ]
        for (url, message) in bad {
            let result = load(url)
            #expect(result.inventory == nil, "\(url)")
            #expect(summary(result.diagnostics) == ["invalid-value 4:12"], "\(url)")
            #expect(
                result.diagnostics.first?.message.contains(message) == true,
                "\(url): \(result.diagnostics.first?.message ?? "")")
        }
        #expect(load("[a]").diagnostics.first?.code == .typeMismatch)
    }

    @Test func unknownKeyHintUsesEditDistance() {
        #expect(Spelling.closest(to: "pks", among: InventoryDecoder.nodeKeys) == "psk")
        #expect(Spelling.closest(to: "servces", among: InventoryDecoder.nodeKeys) == "services")
        #expect(Spelling.closest(to: "zzzzzz", among: InventoryDecoder.nodeKeys) == nil)
        let result = decode("vpnprov: 1\nname: x\nusers:\n  u: {revokd: true}\n")
        #expect(result.diagnostics.first?.message.contains("did you mean 'revoked'?") == true)
    }

    @Test func literalSecretsAreNeverEchoed() {
        let result = decode("vpnprov: 1\nname: x\nnodes:\n  a: {address: 192.0.2.1, psk: hunter2-secret, tier: on}\n")
        #expect(result.diagnostics.hasErrors)
        let printer = DiagnosticPrinter(
            sources: [
                "t.yaml": Array(
                    "vpnprov: 1\nname: x\nnodes:\n  a: {address: 192.0.2.1, psk: hunter2-secret, tier: on}\n".utf8)
            ], hiddenLines: ["t.yaml": result.secretLines])
        let text = printer.render(result.diagnostics)
        #expect(text.contains("[invalid-value]"))
        #expect(!text.contains("hunter2"))
        // A syntax error on a secret line: the decoder never ran, the printer still hides the line.
        let broken = "vpnprov: 1\nname: x\nnodes:\n  a: {psk: hunter2-secret, [\n"
        let syntax = decode(broken)
        let shown = DiagnosticPrinter(sources: ["t.yaml": Array(broken.utf8)]).render(syntax.diagnostics)
        #expect(syntax.diagnostics.first?.code == .yamlSyntax)
        #expect(!shown.contains("hunter2"))
    }
}

@Suite(.temporaries) struct YAMLLoaderTests {
    @Test func positionsAreOneBasedCharacters() throws {
        let root = try #require(try YAMLLoader.load(bytes: Array("é: [ä, 'b']\n".utf8)))
        guard case .mapping(let pairs) = root.kind, case .sequence(let items) = pairs[0].value.kind else {
            Issue.record("unexpected shape")
            return
        }
        #expect(pairs[0].key.mark == YAMLMark(line: 1, column: 1))
        #expect(items[0].mark == YAMLMark(line: 1, column: 5))
        #expect(items[1].mark == YAMLMark(line: 1, column: 8))
        #expect(items[0].kind == .scalar("ä", plain: true))
        #expect(items[1].kind == .scalar("b", plain: false))
    }

    @Test func emptyAndCommentOnlyDocumentsAreNil() throws {
        #expect(try YAMLLoader.load(bytes: []) == nil)
        #expect(try YAMLLoader.load(bytes: Array("# nothing\n".utf8)) == nil)
    }

    @Test func scalarLongerThanOneMiBIsRejected() {
        let text = "a: " + String(repeating: "x", count: (1 << 20) + 1) + "\n"
        #expect(
            throws: YAMLError(
                .scalarTooLong, "scalar of 1048577 bytes is longer than the limit of 1048576 bytes",
                at: YAMLMark(line: 1, column: 4))
        ) {
            try YAMLLoader.load(bytes: Array(text.utf8))
        }
        let fits = "a: " + String(repeating: "x", count: 1 << 20) + "\n"
        #expect((try? YAMLLoader.load(bytes: Array(fits.utf8))) != nil)
    }

    @Test func deepBlockNestingIsRejected() {
        var text = ""
        for level in 0..<1_000 { text += String(repeating: " ", count: level) + "- \n" }
        do {
            _ = try YAMLLoader.load(bytes: Array(text.utf8))
            Issue.record("expected depth-limit")
        } catch {
            #expect(error.kind == .depthLimit)
        }
    }

    @Test func aliasCountIsBounded() {
        var limits = YAMLLoader.Limits()
        limits.maxAliases = 3
        let text = "a: &a x\nb: [*a, *a, *a, *a]\n"
        do {
            _ = try YAMLLoader(limits: limits).load(bytes: Array(text.utf8))
            Issue.record("expected alias-limit")
        } catch {
            #expect(error.kind == .aliasLimit)
            #expect(error.mark == YAMLMark(line: 2, column: 17))
        }
    }

    @Test func controlCharactersAndStrayBOMAreRejected() {
        for (bytes, kind, mark) in [
            (Array("a: b\u{7}\n".utf8), YAMLError.Kind.invalidCharacter, YAMLMark(line: 1, column: 5)),
            (Array("a: b\n\u{FEFF}c: d\n".utf8), .invalidCharacter, YAMLMark(line: 2, column: 1)),
            ([0x61, 0x3A, 0x20, 0xED, 0xA0, 0x80], .invalidUTF8, YAMLMark(line: 1, column: 4)),  // surrogate
            ([0x61, 0x3A, 0x20, 0xE2, 0x82], .invalidUTF8, YAMLMark(line: 1, column: 4)),  // cut off
        ] {
            do {
                _ = try YAMLLoader.load(bytes: bytes)
                Issue.record("expected \(kind)")
            } catch {
                #expect(error.kind == kind)
                #expect(error.mark == mark)
            }
        }
    }
}

@Suite(.temporaries) struct YAMLComplexKeyTests {
    @Test func duplicateCollectionKeysAreFound() {
        let text = "? [a, b]\n: 1\n? [a, c]\n: 2\n? [a, b]\n: 3\n"
        do {
            _ = try YAMLLoader.load(bytes: Array(text.utf8))
            Issue.record("expected duplicate-key")
        } catch {
            #expect(error.kind == .duplicateKey)
            #expect(error.mark == YAMLMark(line: 5, column: 3))
            #expect(error.otherMark == YAMLMark(line: 1, column: 3))
        }
    }
}
