import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvModel

/// `acknowledge:` (docs/inventory.md): a warning kept on purpose is marked with the operator's reason,
/// left out of the text output and of --strict, and kept in JSON and SARIF (as a suppression).
@Suite(.temporaries) struct AcknowledgementTests {
    /// fra-1 offers two PSK services (two weak-psk-service warnings); carol is on no node
    /// (user-without-service). The `acknowledge:` entries start at line 16.
    static func inventory(acknowledge: String) -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
          fra-1:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            pool6: fd00:10::/112
            services: [ikev2-eap, ikev2-cert, ikev2-psk, ikev2-psk-eap]
            psk: gen
        users:
          alice:
            password: gen
          carol:
            nodes: []
        \(acknowledge)
        """
    }

    func workspace(_ text: String) throws -> String {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return dir
    }

    func diagnostics(_ out: String) throws -> [[String: Any]] {
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        return try #require(doc["diagnostics"] as? [[String: Any]])
    }

    static let acknowledged = """
        acknowledge:
          - rule: weak-psk-service
            service: ikev2-psk
            reason: the iOS app's pskEnabled servers
          - rule: weak-psk-service
            node: fra-1
            service: ikev2-psk-eap
            reason: old Android clients
        """

    @Test func acknowledgedWarningsAreQuietAndPassStrict() throws {
        let dir = try workspace(Self.inventory(acknowledge: Self.acknowledged))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let text = vpnprov(["validate"], in: dir)
        #expect(text.code == 0)
        #expect(!text.err.contains("weak-psk-service"))
        // carol's warning is still printed; the two acknowledged are counted.
        #expect(text.err.contains("[user-without-service]"))
        #expect(text.err.hasSuffix("1 warning, 2 acknowledged\n"), "\(text.err)")

        let strict = vpnprov(["validate", "--strict"], in: dir)
        #expect(strict.code == 1)
        #expect(!strict.err.contains("weak-psk-service"))

        let shown = vpnprov(["validate", "--show-acknowledged"], in: dir)
        #expect(shown.code == 0)
        #expect(shown.err.contains("[weak-psk-service]"))
        #expect(shown.err.contains("inventory.yaml:16:5: note: acknowledged: the iOS app's pskEnabled servers\n"))
        #expect(shown.err.contains("inventory.yaml:19:5: note: acknowledged: old Android clients\n"))
        #expect(shown.err.hasSuffix("1 warning, 2 acknowledged\n"))

        let json = vpnprov(["validate", "--format", "json"], in: dir)
        let found = try diagnostics(json.out).filter { $0["code"] as? String == "weak-psk-service" }
        #expect(found.count == 2)
        let reasons = found.compactMap { ($0["acknowledged"] as? [String: Any])?["reason"] as? String }.sorted()
        #expect(reasons == ["old Android clients", "the iOS app's pskEnabled servers"])
        let lines = found.compactMap { ($0["acknowledged"] as? [String: Any])?["line"] as? Int }.sorted()
        #expect(lines == [16, 19])
    }

    @Test func withEveryWarningAcknowledgedStrictPasses() throws {
        let dir = try workspace(
            Self.inventory(
                acknowledge: Self.acknowledged + """

                      - rule: user-without-service
                        user: carol
                        reason: on leave; her profiles come back with her nodes
                    """))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let strict = vpnprov(["validate", "--strict"], in: dir)
        #expect(strict.code == 0, "\(strict.err)")
        #expect(strict.err == "3 warnings acknowledged\n")
    }

    @Test(.needs(.schemaPython)) func sarifMarksThemSuppressed() throws {
        let dir = try workspace(Self.inventory(acknowledge: Self.acknowledged))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate", "--format", "sarif"], in: dir)
        #expect(r.code == 0)
        let log = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let results = try #require((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        let psk = results.filter { $0["ruleId"] as? String == "weak-psk-service" }
        #expect(psk.count == 2)
        for result in psk {
            let suppression = try #require((result["suppressions"] as? [[String: Any]])?.first)
            #expect(suppression["kind"] as? String == "inSource")
            #expect(suppression["status"] as? String == "accepted")
            #expect((suppression["justification"] as? String)?.isEmpty == false)
            let region =
                ((suppression["location"] as? [String: Any])?["physicalLocation"] as? [String: Any])?["region"]
                as? [String: Any]
            #expect([16, 19].contains(region?["startLine"] as? Int))
        }
        #expect(results.first { $0["ruleId"] as? String == "user-without-service" }?["suppressions"] == nil)
        // Both documents still match their schemas (OASIS SARIF 2.1.0; docs/json-output.schema.json).
        try r.out.write(toFile: dir + "/validate.sarif", atomically: true, encoding: .utf8)
        try vpnprov(["validate", "--format", "json"], in: dir).out.write(
            toFile: dir + "/validate.json", atomically: true, encoding: .utf8)
        let sarif = try OutputSchema.check("sarif", [dir + "/validate.sarif"])
        #expect(sarif.0 == 0, "\(sarif.1)")
        let json = try OutputSchema.check("json", [dir + "/validate.json"])
        #expect(json.0 == 0, "\(json.1)")
    }

    @Test func errorsUnknownRulesAndStaleEntriesAreReported() throws {
        // Each entry three lines (the last has no reason): at lines 16, 19, 22, 25, 28.
        let entries = [
            ("missing-psk", "errors are fixed"), ("weak-psk-servce", "a typo"), ("ipv6-leak", "fra-2 is no node"),
            ("weak-psk-service", "\"  \""),
        ]
        let text = entries.map {
            "  - rule: \($0.0)\n    node: \($0.0 == "ipv6-leak" ? "fra-2" : "fra-1")\n    reason: \($0.1)\n"
        }.joined()
        let dir = try workspace(
            Self.inventory(acknowledge: "acknowledge:\n" + text + "  - rule: weak-psk-service\n    node: fra-1\n"))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate", "--format", "json"], in: dir)
        #expect(r.code == 1)
        let found = try diagnostics(r.out).map { "\($0["code"]!) \($0["line"]!)" }
        #expect(found.contains("error-acknowledged 16"))
        #expect(found.contains("unknown-rule 19"))
        #expect(found.contains("invalid-value 27"))
        #expect(found.contains("missing-key 28"))
        // Not judged while the inventory has decoding errors (the blank and the missing reason).
        #expect(!found.contains { $0.hasPrefix("stale-acknowledgement") })
        #expect(r.err.contains("'acknowledge': no rule 'weak-psk-servce'; did you mean 'weak-psk-service'?"))
    }

    /// A rule whose declaration does not make its warnings acknowledgeable is refused for what it is: a rule that
    /// reports only warnings is not said to report errors.
    @Test func aWarningRuleThatCannotBeAcknowledgedIsRefusedForWhatItIs() throws {
        let dir = try workspace(
            Self.inventory(acknowledge: "acknowledge:\n  - rule: acme-unused\n    reason: not yet\n"))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate"], in: dir)
        #expect(r.code == 1)
        #expect(
            r.err.contains(
                "'acknowledge': 'acme-unused' warns about the inventory's own sections, which cannot be acknowledged;"))
        #expect(RuleCode.acmeUnused.declaration.severities == [.warning])
        #expect(!Acknowledgements.warningRules.contains(.acmeUnused))
    }

    @Test func anEntryThatCoversNothingIsAWarning() throws {
        let dir = try workspace(
            Self.inventory(
                acknowledge: """
                    acknowledge:
                      - rule: ipv6-leak
                        node: fra-2
                        reason: no such node
                      - rule: weak-psk-service
                        user: alice
                        reason: users have no PSK services
                    """))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate"], in: dir)
        #expect(r.code == 0)
        #expect(
            r.err.contains(
                "inventory.yaml:16:5: warning: 'acknowledge': ipv6-leak for node 'fra-2' matches no warning (the inventory has no node 'fra-2'); remove the entry if the warning is gone [stale-acknowledgement]"
            ))
        #expect(
            r.err.contains(
                "inventory.yaml:19:5: warning: 'acknowledge': weak-psk-service for user 'alice' matches no warning;"))
        // The stale entries' own warnings cannot be acknowledged away: --strict fails.
        #expect(vpnprov(["validate", "--strict"], in: dir).code == 1)
    }

    @Test func everyValidatorWarningNamesWhatItIsAbout() {
        // Each acknowledgeable warning the rule checks report carries a subject, so an entry can
        // name it; duplicate-entry (remove the repeat) is the one warning that cannot be acknowledged.
        let inventory = Fixture.good()
        var all = Validator.validate(inventory)
        all += Validator.validate(Self.warningsInventory())
        let warnings = all.filter { $0.severity == .warning && $0.code != .duplicateEntry }
        #expect(warnings.count >= 5)
        for w in warnings {
            #expect(w.subject != nil, "\(w.code) has no subject: \(w.message)")
            #expect(Acknowledgements.warningRules.contains(w.code), "\(w.code) is not acknowledgeable")
        }
    }

    static func warningsInventory() -> Inventory {
        let text = """
            vpnprov: 1
            name: acme
            pki:
              server_days: 900
            nodes:
              fra-1:
                address: 192.0.2.1
                pool: 10.0.0.0/8
                services: [ikev2-eap, ikev2-psk, ipsec-xauth-psk]
                psk: a-literal-psk-that-is-long-enough-Xq7
                group: acme
                dns: [10.0.0.53]
            users:
              con:
                password: gen
                cert: true
            """
        return decode(text).inventory!
    }

    @Test func theExampleInventoryIsQuiet() throws {
        let dir = try workspace(try String(contentsOfFile: Repository.example, encoding: .utf8))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate", "--strict"], in: dir)
        #expect(r.code == 0)
        #expect(r.err == "6 warnings acknowledged\n")
        let json = vpnprov(["validate", "--format", "json"], in: dir)
        let warnings = try diagnostics(json.out)
        #expect(warnings.count == 6)
        #expect(warnings.allSatisfy { $0["acknowledged"] != nil })
    }
}
