import Foundation
import Testing
import VPNProvCLI
import VPNProvModel
import VPNProvTestFixtures

/// A value that is, or might be, a secret is never printed: not in a source excerpt, not in a
/// message or note, in text or JSON. "Might be": the value of a key vpnprov does not know (a
/// misspelt `pasword:`), and a literal secret aliased into another field.
@Suite(.temporaries) struct SecretEchoTests {
    static let secret = "Xk9vBq2LmZt7Rw4Np8Hs"

    static func inventory(node extra: String = "", user extra2: String = "", psk: String = "psk: &k \(secret)")
        -> String
    {
        """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            services: [ikev2-psk, ikev2-eap]
            \(psk)
        \(extra)
        users:
          alice:
            password: gen
        \(extra2)

        """
    }

    /// Runs `arguments` in text and JSON and checks the secret appears nowhere, and `expected` does.
    func expectHidden(
        _ text: String, _ commands: [[String]] = [["validate"], ["generate"]], expected: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        for command in commands {
            for format in ["text", "json"] {
                let r = vpnprov(command + ["--format", format], in: dir, sourceLocation: sourceLocation)
                let all = r.out + r.err
                #expect(
                    !all.contains(Self.secret), "\(command) \(format) printed the secret",
                    sourceLocation: sourceLocation)
                #expect(all.contains(expected), "\(command) \(format): \(all)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func misspeltSecretKeyValueIsNotEchoed() throws {
        let text = Self.inventory(user: "    pasword: \(Self.secret)")
        try expectHidden(text, expected: "unknown key 'pasword'; did you mean 'password'?")
    }

    @Test func unknownKeyLineIsNotShownEvenWithAnAnchor() throws {
        // The text excerpt would show the unknown key's line, value and all.
        let text = Self.inventory(node: "    colour: &c \(Self.secret)\n    country: *c", psk: "psk: gen")
        try expectHidden(text, [["validate"]], expected: "unknown key 'colour'")
    }

    @Test func aliasedSecretAsIdentityIsNotEchoed() throws {
        // A single-label FQDN identity only warns: generate goes on and prints the warning too.
        let text = Self.inventory(node: "    id: *k")
        try expectHidden(text, expected: "identity '\(DiagnosticPrinter.hiddenValueMark)' is a single-label FQDN")
    }

    @Test func aliasedSecretAsNodeReferenceIsNotEchoed() throws {
        let text = Self.inventory(user: "    nodes: [*k]")
        try expectHidden(text, expected: "no node named '\(DiagnosticPrinter.hiddenValueMark)'")
    }

    @Test func aliasedSecretAsCountryIsNotEchoed() throws {
        let text = Self.inventory(node: "    country: *k")
        try expectHidden(text, [["validate"]], expected: "country '\(DiagnosticPrinter.hiddenValueMark)'")
    }

    @Test func printerHidesLongestValueFirstInMessagesAndNotes() {
        let d = Diagnostic.error(
            .invalidIdentity, "a 'abcdef' b 'abc'", at: nil, notes: [.init(location: nil, message: "n abcdef")])
        let printer = DiagnosticPrinter(format: .text, hiddenValues: ["abc", "abcdef"])
        #expect(
            printer.render([d])
                == "vpnprov: error: a '<hidden>' b '<hidden>' [invalid-identity]\nvpnprov: note: n <hidden>\n")
        let json = DiagnosticPrinter(format: .json, hiddenValues: ["abcdef"]).render([d])
        #expect(!json.contains("abcdef") && json.contains("<hidden>"))
    }
}

/// Diagnostics at the place the value is written, and YAML tags refused.
@Suite(.temporaries) struct DecoderPlacementTests {
    @Test func deploymentNameAndPKIErrorsPointAtTheirLines() {
        let text =
            "# comment\nvpnprov: 1\n\nname: \"acme corp\"\npki:\n  ca:\n    days: 100\n  server_days: 900\nnodes:\n  n1:\n    address: 192.0.2.1\n"
            + "    pool: 10.10.0.0/24\n    services: [ikev2-eap]\nusers:\n  a:\n    password: gen\n"
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "i.yaml")
        let inventory = try! #require(decoded.inventory)
        let found = Validator.validate(inventory).map { "\($0.code) \($0.location!.line):\($0.location!.column)" }
        #expect(found.contains("invalid-name 4:7"), "\(found)")
        #expect(found.contains("server-days-apple 8:16"), "\(found)")
        #expect(found.contains("ca-days-short 7:11"), "\(found)")
        #expect(!found.contains { $0.hasSuffix(" 1:1") }, "\(found)")
    }

    @Test(arguments: [
        ("vpnprov: !!str 1\nname: acme\n", "'!!str'", 1, 10),
        ("vpnprov: 1\nname: !!binary YWNtZQ==\n", "'!!binary'", 2, 7),
        ("vpnprov: 1\nname: !custom acme\n", "'!custom'", 2, 7),
        ("vpnprov: 1\nname: acme\nnodes: !!map\n  n1: {address: 192.0.2.1}\n", "'!!map'", 3, 8),
        ("vpnprov: 1\nname: acme\nusers:\n  a:\n    nodes: !!seq [n1]\n", "'!!seq'", 5, 12),
        ("vpnprov: 1\nname: acme\nusers:\n  a:\n    cert: ! true\n", "'!'", 5, 11),
    ])
    func explicitTagsAreRefused(_ text: String, _ tag: String, _ line: Int, _ column: Int) {
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "i.yaml")
        #expect(decoded.inventory == nil)
        #expect(decoded.diagnostics.map(\.code) == [.yamlTag])
        #expect(
            decoded.diagnostics.first?.message.contains("YAML tag \(tag) is not supported") == true,
            "\(decoded.diagnostics)")
        #expect(decoded.diagnostics.first?.location == SourceLocation(file: "i.yaml", line: line, column: column))
    }
}
