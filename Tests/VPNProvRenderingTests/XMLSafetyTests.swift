import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvModel
@testable import VPNProvRendering

/// Apple profiles are XML property lists: a value with a character XML 1.0 cannot carry is refused
/// at its line, and the plist writer can never write one (docs/diagnostics.md, `unrepresentable-text`).
@Suite(.temporaries) struct XMLSafetyTests {
    /// Python's plistlib (an XML parser that refuses ill-formed documents) reads `bytes`; returns
    /// the strings it found under "k" in the top dictionary, or its error.
    static func plistlibStrings(_ bytes: [UInt8]) throws -> (ok: Bool, output: String) {
        let dir = URL(fileURLWithPath: try temporaryDirectory("xml"))
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("doc.plist")
        try Data(bytes).write(to: file)
        let result = try Subprocess.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import plistlib,sys,json; d=plistlib.load(open(sys.argv[1],'rb')); print(json.dumps(d.get('k'), ensure_ascii=True))",
                file.path,
            ])
        return (result.succeeded, result.output)
    }

    @Test func ssidsXMLCannotCarryAreRefusedAtTheirLine() {
        let text = #"""
            vpnprov: 1
            name: acme
            nodes:
              n1:
                address: 192.0.2.1
                pool: 10.70.0.0/24
                apple:
                  on_demand: true
                  trusted_ssids:
                    - "\u0001\u0008"
                    - "\uFFFE"
                    - "caf\u00e9 <&> \"x\""
                    - "tab\there"
            """#
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "inv.yaml")
        let found = result.diagnostics.map { "\($0.location?.line ?? 0) \($0.code)" }
        #expect(
            found == ["10 unrepresentable-text", "11 unrepresentable-text", "13 unrepresentable-text"],
            "\(result.diagnostics)")
        #expect(result.diagnostics.allSatisfy { $0.severity == .error })
        #expect(result.diagnostics.first?.message.contains("U+0001") == true)
    }

    /// The other free-text strings an Apple profile holds are refused by their own rules.
    @Test(arguments: ["\u{FFFE}", "\u{FFFF}", "\u{1}"])
    func otherProfileStringsXMLCannotCarryAreRefused(_ bad: String) {
        let cases: [(RuleCode, (inout Inventory) -> Void)] = [
            (.invalidCAName, { $0.pki.ca.name = "acme\(bad) CA" }),
            (.invalidIdentity, { $0.nodes[1].id = .fqdn("ams\(bad).example.com") }),
            (.invalidIdentity, { $0.users[0].id = .userFQDN("alice\(bad)@example.com") }),
            (.unrepresentableSecret, { $0.users[1].password = .literal("Correct-Horse-Battery-\(bad)-Staple-42") }),
            (.unrepresentableSecret, { $0.nodes[0].psk = .literal("Correct-Horse-Battery-\(bad)-Staple-4242-zz") }),
            (.invalidName, { $0.name = "acme\(bad)" }),
        ]
        for (i, (code, change)) in cases.enumerated() {
            let diagnostics = Validator.validate(Fixture.good().with(change))
            #expect(
                diagnostics.contains { $0.code == code && $0.severity == .error },
                "case \(i) with U+\(String(bad.unicodeScalars.first!.value, radix: 16)): no \(code)")
        }
    }

    @Test(.needs(.python3)) func thePlistWriterNeverWritesACharacterXMLCannotCarry() throws {
        let hostile = ["a\u{0}b", "\u{1}\u{8}", "\u{B}\u{C}\u{1F}", "x\u{FFFE}y", "\u{FFFF}", "ok\t\n <&> é 😀"]
        let doc = DocumentValue.dictionary([("k", .array(hostile.map { .string($0) }))])
        let bytes = PropertyListWriter.xml(doc)
        // Nothing outside XML's Char production is left…
        #expect(String(decoding: bytes, as: UTF8.self).unicodeScalars.allSatisfy(TextCheck.xmlCanCarry))
        // …and an XML parser reads the document, each such character as U+FFFD.
        let parsed = try Self.plistlibStrings(bytes)
        #expect(parsed.ok, "\(parsed.output)")
        #expect(
            parsed.output.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"["a\ufffdb", "\ufffd\ufffd", "\ufffd\ufffd\ufffd", "x\ufffdy", "\ufffd", "ok\t\n <&> \u00e9 \ud83d\ude00"]"#
        )
    }

    @Test(.needs(.python3)) func generatedProfileWithUnusualSSIDsIsWellFormed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.70.0.0/24
            pool6: fd00:70::/112
            apple:
              on_demand: true
              trusted_ssids: ["caf\\u00e9 <&>", "]]>", "\\u00a0\\uFFFD"]
        users:
          alice:
            password: gen
            devices: [apple]

        """.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let result = vpnprov(["generate", dir + "/inventory.yaml", "--quiet"])
        #expect(result.code == 0, "\(result.err)")
        let profile = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/out/clients/alice/alice.mobileconfig")))
        let parsed = try Self.plistlibStrings(profile)
        #expect(parsed.ok, "\(parsed.output)")
        let text = String(decoding: profile, as: UTF8.self)
        #expect(text.contains("<string>café &lt;&amp;&gt;</string>"))
    }
}
