import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvPKI

/// A deploy job that failed half-way must converge when it is retried: vpnprov remembers which nodes
/// wait for a rollout until it is told they were rolled out (docs/ci.md, "the deploy job").
@Suite(.temporaries) struct RolloutPendingTests {
    /// `dir/inventory.yaml` (the example) and the directory, removed by the caller.
    func site() throws -> String {
        let dir = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: Repository.example, toPath: dir + "/inventory.yaml")
        return dir
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func summaryNodes(_ run: (code: Int32, out: String, err: String)) throws -> (
        changed: [String], pending: [String], rollout: String?
    ) {
        let summary = try #require(try json(run.out)["summary"] as? [String: Any])
        let nodes = try #require(summary["nodes"] as? [String: Any])
        let next = try #require(summary["next"] as? [String: Any])
        return (nodes["changed"] as? [String] ?? [], nodes["pending"] as? [String] ?? [], next["rollout"] as? String)
    }

    @Test func aRetriedDeployRollsOutWhatTheFailedOneDidNot() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        let all = ["fra-1", "nyc-1", "sgp-1"]
        #expect(try summaryNodes(first).pending == all)
        #expect(first.err.contains("vpnprov rolled-out inventory.yaml --nodes fra-1,nyc-1,sgp-1"), "\(first.err)")

        // The rollout failed: nobody ran rolled-out. The retried job's generate changes nothing,
        // and still names every node, with the rollout command.
        let retry = vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(retry.code == 0)
        let nodes = try summaryNodes(retry)
        #expect(nodes.changed.isEmpty)
        #expect(nodes.pending == all)
        #expect(nodes.rollout?.hasSuffix("--limit fra-1,nyc-1,sgp-1") == true, "\(nodes.rollout ?? "nil")")
        #expect(
            retry.err.contains("nodes still waiting for a rollout from an earlier run: fra-1, nyc-1, sgp-1"),
            "\(retry.err)")

        // check: the tree is up to date, but the servers are not: a warning.
        let check = vpnprov(["check", "inventory.yaml", "--format", "json"], in: dir)
        #expect(check.code == 0)
        #expect(check.err.contains("[rollout-pending]"))
        #expect((try json(check.out)["drift"] as? [String: Any])?["rolloutPending"] as? [String] == all)

        // Told part of it: the rest stays.
        let some = vpnprov(["rolled-out", "inventory.yaml", "--nodes", "fra-1,nyc-1", "--format", "json"], in: dir)
        #expect(some.code == 0, "\(some.err)")
        let recorded = try #require(try json(some.out)["rolledOut"] as? [String: Any])
        #expect(recorded["recorded"] as? [String] == ["fra-1", "nyc-1"])
        #expect(recorded["pending"] as? [String] == ["sgp-1"])
        let status = vpnprov(["status", "inventory.yaml", "--format", "json"], in: dir)
        #expect((try json(status.out)["status"] as? [String: Any])?["rolloutPending"] as? [String] == ["sgp-1"])
        #expect(
            try summaryNodes(vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)).pending == ["sgp-1"])

        // Everything rolled out: no rollout to suggest, nothing left in the state, no warning.
        #expect(vpnprov(["rolled-out", "inventory.yaml", "--all"], in: dir).code == 0)
        #expect(!FileManager.default.fileExists(atPath: dir + "/state/" + RolloutLedger.fileName))
        let quiet = vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(try summaryNodes(quiet).rollout == nil)
        #expect(try summaryNodes(quiet).pending.isEmpty)
        #expect(!vpnprov(["check", "inventory.yaml"], in: dir).err.contains("rollout-pending"))

        // A change to one node makes only that node pending.
        let path = dir + "/inventory.yaml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "    pool: 10.30.0.0/24\n", with: "    pool: 10.31.0.0/24\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let changed = try summaryNodes(vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir))
        #expect(changed.changed == ["sgp-1"])
        #expect(changed.pending == ["sgp-1"])
    }

    @Test func namesAreCheckedBeforeAnythingChanges() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(vpnprov(["generate", "inventory.yaml"], in: dir).code == 0)
        let before = try RolloutLedger.read(stateDirectory: dir + "/state")
        let typo = vpnprov(["rolled-out", "inventory.yaml", "--nodes", "fra-1,fra1"], in: dir)
        #expect(typo.code == 1)
        #expect(
            typo.err.contains("node 'fra1' is not in inventory.yaml; did you mean 'fra-1'? [no-such-node]"),
            "\(typo.err)")
        #expect(try RolloutLedger.read(stateDirectory: dir + "/state") == before)
        #expect(vpnprov(["rolled-out", "inventory.yaml"], in: dir).code == 2)
        #expect(vpnprov(["rolled-out", "inventory.yaml", "--all", "--nodes", "fra-1"], in: dir).code == 2)
        // A node that was not waiting is said, not an error.
        #expect(vpnprov(["rolled-out", "inventory.yaml", "--nodes", "fra-1"], in: dir).code == 0)
        let again = vpnprov(["rolled-out", "inventory.yaml", "--nodes", "fra-1"], in: dir)
        #expect(again.code == 0)
        #expect(again.out.contains("not waiting for a rollout: fra-1"), "\(again.out)")
    }

    /// The lifecycle commands said "next" twice, in two forms; now once, with the pending nodes.
    /// A node name that does not exist is a node, not a user.
    @Test func lifecycleCommandsSayTheRolloutOnce() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(vpnprov(["generate", "inventory.yaml"], in: dir).code == 0)
        #expect(vpnprov(["rolled-out", "inventory.yaml", "--all"], in: dir).code == 0)
        let rotated = vpnprov(["rotate-psk", "sgp-1", "inventory.yaml"], in: dir)
        #expect(rotated.code == 0, "\(rotated.err)")
        let all = rotated.out + rotated.err
        #expect(all.components(separatedBy: "next: roll the nodes out").count == 2, "\(all)")
        #expect(!all.contains("nodes to roll out:"))
        #expect(all.contains("--limit sgp-1"))
        let unknown = vpnprov(["rotate-psk", "nosuch", "inventory.yaml"], in: dir)
        #expect(unknown.code == 1)
        #expect(unknown.err.contains("[no-such-node]"), "\(unknown.err)")
        #expect(!unknown.err.contains("no-such-user"))
    }

    @Test func theRecordIsReadBoundedAndParsedStrictly() throws {
        #expect(RolloutLedger.parse(Array("b\n a\n\n\na\n".utf8)) == ["a", "b"])
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try RolloutLedger.read(stateDirectory: dir).isEmpty)
        try Data(repeating: UInt8(ascii: "a"), count: RolloutLedger.maxBytes + 1).write(
            to: URL(fileURLWithPath: dir + "/" + RolloutLedger.fileName))
        #expect(throws: StateError.self) { try RolloutLedger.read(stateDirectory: dir) }
        try FileManager.default.removeItem(atPath: dir + "/" + RolloutLedger.fileName)
        // Names no longer in the fleet are dropped; the file holds one sorted name a line.
        #expect(try RolloutLedger.add(["x", "gone"], fleet: ["x", "y"], stateDirectory: dir) == ["x"])
        #expect(try String(contentsOfFile: dir + "/" + RolloutLedger.fileName, encoding: .utf8) == "x\n")
        #expect(try RolloutLedger.add(["y"], fleet: ["x", "y"], stateDirectory: dir) == ["x", "y"])
    }
}
