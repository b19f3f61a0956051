import Foundation
import Testing
import VPNProvTestFixtures

/// A run that finds a state directory an earlier run made locks it before reading the inventory, and loads
/// the state and checks the previous run's files on other threads meanwhile (docs/benchmarks.md). What it
/// finds must still be reported in the order it was before: the inventory's errors first, then the state's.
@Suite(.temporaries) struct EarlyStateLoadTests {
    static let inventory = """
        vpnprov: 1
        name: early
        nodes:
          fra-1:
            address: fra-1.vpn.example.com
            pool: 10.10.0.0/24
            services: [ikev2-eap, ikev2-cert]
        users:
          alice: {password: gen}
          bob: {cert: true}

        """

    @Test func inventoryErrorsAreReportedBeforeADamagedState() throws {
        let dir = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Self.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let first = try VPNProvBinary.run(["generate"], in: dir)
        try #require(first.status == 0, "\(first.err.suffix(400))")
        // One byte of the state's index flipped: the state no longer loads.
        let index = dir + "/state/index.json"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: index)))
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: index))
        chmod(index, 0o600)
        // A user on a node the inventory does not have: an inventory error, reported alone, exit 1.
        let broken = Self.inventory.replacingOccurrences(
            of: "bob: {cert: true}", with: "bob: {cert: true, nodes: [nowhere]}")
        try broken.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let withErrors = try VPNProvBinary.run(["generate"], in: dir)
        #expect(withErrors.status == 1, "\(withErrors.err.suffix(400))")
        #expect(withErrors.err.contains("nowhere"))
        #expect(!withErrors.err.contains("index.json"))
        // The same for `check`.
        let checked = try VPNProvBinary.run(["check"], in: dir)
        #expect(checked.status == 1, "\(checked.err.suffix(400))")
        #expect(!checked.err.contains("index.json"))
        // With the inventory put right, the damaged state is what stops the run (exit 3), named.
        try Self.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let damaged = try VPNProvBinary.run(["generate"], in: dir)
        #expect(damaged.status == 3, "\(damaged.err.suffix(400))")
        #expect(damaged.err.contains("index.json"))
    }
}
