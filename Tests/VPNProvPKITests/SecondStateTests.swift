import Foundation
import Testing
import VPNProvTestFixtures

/// A relative `--state` is taken from the current directory: given from the wrong one, or given where
/// it was left out before, it makes a second CA. The run that creates it says so.
@Suite(.temporaries) struct SecondStateTests {
    @Test func aNewCAWhileTheStateBesideTheInventoryHoldsOneIsWarnedAbout() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/inventory", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Repository.example, toPath: dir + "/inventory/example.yaml")
        // The example's header suggests the defaults (state and tree beside the inventory).
        let header = try String(contentsOfFile: dir + "/inventory/example.yaml", encoding: .utf8).components(
            separatedBy: "\n"
        )
        .prefix { $0.hasPrefix("#") }
        #expect(
            header.contains("#   vpnprov generate inventory/example.yaml")
                && !header.contains { $0.contains("--state state") })
        let first = vpnprov(["generate", "inventory/example.yaml", "--quiet"], in: dir)
        #expect(first.code == 0 && !first.err.contains("already holds a CA"), "\(first.err)")

        // What the old header led to, from the repository root: a second state at the root.
        let second = vpnprov(["generate", "inventory/example.yaml", "--out", "out", "--state", "state"], in: dir)
        #expect(second.code == 0)
        #expect(
            second.err.contains(
                "warning: this run created a new CA in state, but inventory/state already holds a CA; if that is this deployment's state, "
                    + "run with --state inventory/state"), "\(second.err)")
        #expect(second.err.contains("[state-notice]"))
        // A run that creates no CA says nothing about it; nor does one that creates the only CA.
        #expect(
            !vpnprov(["generate", "inventory/example.yaml", "--out", "out", "--state", "state"], in: dir).err.contains(
                "already holds"))
        let elsewhere = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        try FileManager.default.copyItem(atPath: Repository.example, toPath: elsewhere + "/inventory.yaml")
        #expect(!vpnprov(["generate"], in: elsewhere).err.contains("already holds"))
    }
}
