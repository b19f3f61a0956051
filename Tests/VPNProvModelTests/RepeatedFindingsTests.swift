import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// One finding repeated at one place (an anchor aliased thousands of times) is reported a bounded
/// number of times, and a value repeated in one list is reported once (docs/diagnostics.md).
@Suite(.temporaries) struct RepeatedFindingsTests {
    /// Users aliasing one user whose `nodes:` lists n1 100 times: the hostile inventory that showed it had 9,000
    /// (120 KB, about a million warnings); 2,000 show the bound as well, faster.
    static func aliasedInventory(users: Int = 2_000, repeats: Int = 100) -> String {
        var text = """
            vpnprov: 1
            name: acme
            nodes:
              n1:
                address: 192.0.2.1
                pool: 10.70.0.0/16
            users:
              u0: &u
                password: gen
                devices: [linux, linux]
                nodes: [\(Array(repeating: "n1", count: repeats).joined(separator: ", "))]

            """
        for i in 1..<users { text += "  u\(i): *u\n" }
        return text
    }

    @Test func aliasedRepeatsGiveBoundedOutput() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/inventory.yaml"
        try Self.aliasedInventory().write(toFile: path, atomically: true, encoding: .utf8)
        let result = vpnprov(["validate", path])
        #expect(result.code == 0, "\(result.err.prefix(2000))")
        // Before: 99 warnings per user, and one more per user for devices: about 200,000 lines.
        #expect(result.err.utf8.count < 16_384, "\(result.err.utf8.count) bytes of stderr")
        let lines = result.err.split(separator: "\n")
        let nodes = lines.filter { $0.contains("'nodes': 'n1' is listed 100 times [duplicate-entry]") }
        let devices = lines.filter { $0.contains("'devices': 'linux' is listed twice [duplicate-entry]") }
        #expect(nodes.count == Array<Diagnostic>.repeatLimit, "\(result.err.prefix(2000))")
        #expect(devices.count == Array<Diagnostic>.repeatLimit)
        #expect(
            lines.filter { $0.contains("... and 1990 more like these here [duplicate-entry]") }.count == 2,
            "\(result.err.prefix(4000))")
        // JSON carries the same bounded list.
        let json = vpnprov(["validate", path, "--format", "json"])
        #expect(json.out.utf8.count < 32_768, "\(json.out.utf8.count) bytes of JSON")
    }

    @Test func aValueRepeatedInOneListIsReportedOnceWithItsCount() {
        let result = InventoryLoader.decode(
            bytes: Array(
                """
                vpnprov: 1
                name: acme
                nodes:
                  n1:
                    address: 192.0.2.1
                    pool: 10.70.0.0/24
                    services: [ikev2-eap, ikev2-eap, ikev2-eap, ikev2-cert, ikev2-cert]
                """.utf8), file: "inv.yaml")
        #expect(
            result.diagnostics.map(\.message) == [
                "node 'n1': 'services': 'ikev2-eap' is listed 3 times",
                "node 'n1': 'services': 'ikev2-cert' is listed twice",
            ])
        #expect(result.diagnostics.map { $0.location?.column } == [27, 61])
    }

    @Test func cappingKeepsTheFirstAndSummarisesTheRest() {
        let here = SourceLocation(file: "f", line: 3, column: 4)
        let there = SourceLocation(file: "f", line: 5, column: 1)
        // A rule that reports both severities: an error at the same place is not a repeat of the warnings.
        var list: [Diagnostic] = (0..<25).map { .warning(.radiusAddress, "w\($0)", at: here) }
        list.append(.error(.radiusAddress, "e", at: here))
        list.append(.warning(.radiusAddress, "other place", at: there))
        let capped = list.cappingRepeats(limit: 10)
        #expect(
            capped.map(\.message) == (0..<10).map { "w\($0)" } + [
                "e", "other place", "... and 15 more like these here",
            ])
        #expect(
            capped.last?.location == here && capped.last?.severity == .warning && capped.last?.code == .radiusAddress)
        // Nothing repeated: nothing changes.
        #expect(Array(list.suffix(2)).cappingRepeats(limit: 1) == Array(list.suffix(2)))
    }
}
