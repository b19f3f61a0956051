import Foundation
import Testing
@testable import VPNProvKit

/// A value that is, or might be, a secret is never printed: not in a source excerpt, not in a
/// message or note, in text or JSON. "Might be": the value of a key vpnprov does not know (a
/// misspelt `pasword:`), and a literal secret aliased into another field.
@Suite struct SecretEchoTests {
    static let secret = "Xk9vBq2LmZt7Rw4Np8Hs"

    static func inventory(node extra: String = "", user extra2: String = "", psk: String = "psk: &k \(secret)") -> String {
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
    func expectHidden(_ text: String, _ commands: [[String]] = [["validate"], ["generate"]], expected: String,
                      sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        for command in commands {
            for format in ["text", "json"] {
                let r = vpnprov(command + ["--format", format], in: dir, sourceLocation: sourceLocation)
                let all = r.out + r.err
                #expect(!all.contains(Self.secret), "\(command) \(format) printed the secret", sourceLocation: sourceLocation)
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
        let d = Diagnostic.error(.invalidIdentity, "a 'abcdef' b 'abc'", at: nil, notes: [.init(location: nil, message: "n abcdef")])
        let printer = DiagnosticPrinter(format: .text, hiddenValues: ["abc", "abcdef"])
        #expect(printer.render([d]) == "vpnprov: error: a '<hidden>' b '<hidden>' [invalid-identity]\nvpnprov: note: n <hidden>\n")
        let json = DiagnosticPrinter(format: .json, hiddenValues: ["abcdef"]).render([d])
        #expect(!json.contains("abcdef") && json.contains("<hidden>"))
    }
}
