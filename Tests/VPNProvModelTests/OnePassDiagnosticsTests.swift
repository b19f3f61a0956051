import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// An inventory with schema errors still gets every rule check that does not depend on a broken
/// piece, in the same run; and an indentation mistake is reported at the line that is wrong, with
/// what to change (docs/diagnostics.md).
@Suite(.temporaries) struct OnePassDiagnosticsTests {
    /// Node b has a schema error; a and c overlap; a offers a PSK service (a warning). Bob is only
    /// on b, carol on every node: what they get from b cannot be judged; dave is not on b, and his
    /// certificate no node of his uses is reported.
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          a:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            pool6: fd00:10::/112
            services: [ikev2-eap, ikev2-psk]
            psk: gen
          b:
            address: 192.0.2.2
            pool: 10.10.0.0/25
            tier: gold
            services: [ikev2-cert]
          c:
            address: 192.0.2.3
            pool: 10.10.0.128/25
            pool6: fd00:30::/112
        users:
          alice:
            password: gen
            nodes: [a, c]
            devices: [android]
          bob:
            cert: true
            nodes: [b]
          carol:
            cert: true
            password: gen
          dave:
            cert: true
            password: gen
            nodes: [a]

        """

    @Test func schemaErrorPoolOverlapAndWarningInOneRun() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["validate", "--format", "json"], in: dir)
        #expect(r.code == 1)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let found = try #require(doc["diagnostics"] as? [[String: Any]]).map { "\($0["code"]!) \($0["line"]!)" }
        // The schema error, the overlap of the two nodes that decoded, the PSK warning: nothing
        // about b's pool (b did not decode) and nothing about what bob and carol get from b.
        #expect(found == ["weak-psk-service 8", "invalid-value 13", "pool-overlap 17", "cert-unused 31"])
        #expect(r.err.hasSuffix("2 errors, 2 warnings\n"))
    }

    @Test func aBrokenDefaultsFieldSkipsOnlyTheNodesThatInheritIt() throws {
        let text = """
            vpnprov: 1
            name: acme
            defaults:
              services: [ikev2-eapp]
            nodes:
              a:
                address: 192.0.2.1
                pool: 10.10.0.0/24
              b:
                address: 192.0.2.2
                pool: 10.10.0.0/24
                services: [ikev2-eap]
              c:
                address: 192.0.2.3
                pool: 10.10.0.0/24
                services: [ikev2-eap]

            """
        let decoded = decode(text)
        #expect(decoded.inventory == nil)
        #expect(decoded.broken.nodes == ["a"])
        let partial = try #require(decoded.partial)
        let overlaps = Validator.validate(partial, broken: decoded.broken).filter { $0.code == .poolOverlap }
        #expect(overlaps.map { $0.location!.line } == [15])
    }

    @Test func aBrokenSectionSkipsTheRulesThatReadIt() throws {
        let text = """
            vpnprov: 1
            name: acme
            pki:
              server_key: ecdsa-p257
              server_days: 900
            nodes:
              a:
                address: 192.0.2.1
                pool: 10.10.0.0/24
                pool6: fd00:10::/112
                services: [ipsec-xauth-hybrid]

            """
        let decoded = decode(text)
        #expect(decoded.broken.pki)
        let found = Validator.validate(try #require(decoded.partial), broken: decoded.broken).map(\.code)
        // The server key did not decode: neither its RSA requirement nor the other pki rules are judged.
        #expect(!found.contains(.hybridServerKey))
        #expect(!found.contains(.serverDaysApple))
        #expect(found.contains(.ikev1Hybrid))
    }

    @Test func aCleanInventoryHasNoPartialOne() {
        let decoded = decode("vpnprov: 1\nname: x\nnodes:\n  a:\n    address: 192.0.2.1\n    pool: 10.1.0.0/24\n")
        #expect(decoded.inventory != nil)
        #expect(decoded.partial == nil)
    }

    // MARK: - Indentation hints

    func syntaxError(_ text: String) throws -> Diagnostic {
        let d = try #require(decode(text).diagnostics.first)
        #expect(d.code == .yamlSyntax)
        return d
    }

    @Test func aDedentedKeyIsReportedAtItsOwnLine() throws {
        let d = try syntaxError(
            """
            vpnprov: 1
            name: dedent
            nodes:
              n1:
                address: 198.51.100.7
              pool: 10.77.0.0/24
                services: [ikev2-eap]

            """)
        #expect(d.location?.line == 6)
        #expect(d.location?.column == 3)
        #expect(
            d.message.hasPrefix(
                "mapping values are not allowed in this context; check the indentation of line 6: 'pool:' starts at column 3"
            ))
        #expect(d.message.hasSuffix("indent it to column 5"))
        #expect(d.notes.first?.location?.line == 7)
        #expect(d.notes.first?.message == "the YAML parser stopped here")
    }

    @Test func aKeyIndentedUnderAValueIsNamed() throws {
        let d = try syntaxError(
            "vpnprov: 1\nname: acme\nnodes:\n  fra-1:\n    address: 192.0.2.1\n      pool: 10.10.0.0/24\n")
        #expect(d.location?.line == 6)
        #expect(d.location?.column == 7)
        #expect(
            d.message.contains(
                "check the indentation of line 6: 'pool:' starts at column 7, deeper than 'address:' on line 5"))
        #expect(d.message.hasSuffix("start it at column 5 to make it a key of the same mapping"))
    }

    @Test func aLineBetweenTwoLevelsNamesBoth() throws {
        let d = try syntaxError(
            "vpnprov: 1\nname: acme\nnodes:\n  fra-1:\n    address: 192.0.2.1\n   pool: 10.10.0.0/24\n")
        #expect(d.location?.line == 6)
        #expect(
            d.message.contains(
                "check the indentation of line 6: 'pool:' starts at column 4, between the keys of the mapping on line 4 (column 3) and 'address:' on line 5 (column 5)"
            ))
    }

    @Test func aValueWithAColonIsToldToBeQuoted() throws {
        let d = try syntaxError("vpnprov: 1\nname: acme\nnodes:\n  fra-1:\n    address: a: b\n")
        #expect(d.location?.line == 5)
        #expect(d.message.hasSuffix("a plain value cannot contain ': ' on line 5; put the value in quotes"))
    }

    @Test func otherSyntaxErrorsKeepLibyamlsMessage() throws {
        let d = try syntaxError("vpnprov: 1\nname: [acme\n")
        #expect(!d.message.contains("check the indentation"))
    }
}
