import Foundation
import Testing
import VPNProvTestFixtures

/// RADIUS servers wait for their rollout as nodes do (docs/ci.md, "the deploy job"): what the summary, `check`,
/// `status` and `rolled-out` say about them.
extension AccountsTests {
    /// A RADIUS server whose directory changed waits for a rollout like a node: `rotate-radius-secret` and a
    /// node taken out of the fleet rewrite every `radius/<server>/clients.conf`, and until the servers are
    /// rolled out the old secret stays valid there. The summary names them (`radius.pending`), the rollout
    /// command limits Ansible to them before the nodes, `rolled-out` takes their names, `check` and `status`
    /// list them; every document matches docs/json-output.schema.json.
    @Test(.needs(.schemaPython)) func radiusServersWhoseDirectoryChangedWaitForARollout() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        var documents: [String] = []
        func run(_ arguments: [String]) throws -> [String: Any] {
            let result = vpnprov(arguments + ["--format", "json"], in: dir, environment: Self.env)
            #expect(result.code == 0, "\(arguments): \(result.err)")
            documents.append(result.out)
            return try Self.json(result.out)
        }
        func summary(_ document: [String: Any]) throws -> (radius: [String], nodes: [String], next: [String: Any]) {
            let summary = try #require(document["summary"] as? [String: Any])
            let radius = try #require(summary["radius"] as? [String: Any], "no radius group: \(summary.keys)")
            return (
                radius["pending"] as? [String] ?? [],
                (summary["nodes"] as? [String: Any])?["pending"] as? [String] ?? [],
                try #require(summary["next"] as? [String: Any])
            )
        }
        let first = try summary(try run(["generate", "inventory.yaml"]))
        #expect(first.radius == ["rad-1", "rad-2"] && first.nodes == ["nfree", "npro"])
        #expect((first.next["rollout"] as? String)?.hasSuffix("--limit rad-1,rad-2,nfree,npro") == true)
        #expect((first.next["rolledOut"] as? String)?.hasSuffix("--nodes rad-1,rad-2,nfree,npro") == true)
        _ = try run(["rolled-out", "inventory.yaml", "--all"])

        // A rotated node secret: the servers first, then the node.
        let rotated = try run(["rotate-radius-secret", "npro", "inventory.yaml"])
        let after = try summary(rotated)
        #expect(after.radius == ["rad-1", "rad-2"] && after.nodes == ["npro"], "\(after)")
        #expect((after.next["rollout"] as? String)?.hasSuffix("--limit rad-1,rad-2,npro") == true)
        let lifecycle = try #require(rotated["lifecycle"] as? [String: Any])
        #expect(lifecycle["radiusServersToRollOut"] as? [String] == ["rad-1", "rad-2"])
        let check = vpnprov(["check", "inventory.yaml", "--format", "json"], in: dir, environment: Self.env)
        documents.append(check.out)
        #expect(
            check.err.contains("[rollout-pending]") && check.err.contains("RADIUS servers and nodes"), "\(check.err)")
        #expect(
            (try Self.json(check.out)["drift"] as? [String: Any])?["rolloutPending"] as? [String] == [
                "rad-1", "rad-2", "npro",
            ])
        let status = try run(["status", "inventory.yaml"])
        #expect((status["status"] as? [String: Any])?["rolloutPending"] as? [String] == ["rad-1", "rad-2", "npro"])
        let recorded = try run(["rolled-out", "inventory.yaml", "--nodes", "rad-1,rad-2"])
        #expect((recorded["rolledOut"] as? [String: Any])?["pending"] as? [String] == ["npro"])
        let typo = vpnprov(
            ["rolled-out", "inventory.yaml", "--nodes", "rad1"], in: dir, environment: Self.env)
        #expect(typo.code == 1 && typo.err.contains("did you mean 'rad-1'?"), "\(typo.err)")
        _ = try run(["rolled-out", "inventory.yaml", "--all"])

        // A node taken out of the fleet: its secret is gone from the servers only once they are rolled out.
        let text = Self.inventory()
        let removed = String(
            text[..<text.range(of: "  npro:\n")!.lowerBound] + text[text.range(of: "users:\n")!.lowerBound...])
        try removed.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generate = vpnprov(
            ["generate", "inventory.yaml", "--format", "json"], in: dir, environment: Self.env)
        #expect(generate.code == 0, "\(generate.err)")
        documents.append(generate.out)
        let retired = try summary(try Self.json(generate.out))
        // (nfree changes too: its CRL now lists npro's revoked certificate.)
        #expect(retired.radius == ["rad-1", "rad-2"] && retired.nodes == ["nfree"], "\(retired)")
        #expect((retired.next["rollout"] as? String)?.hasSuffix("--limit rad-1,rad-2,nfree") == true)
        #expect(generate.err.contains("next: roll the RADIUS servers, then the nodes out with"), "\(generate.err)")
        #expect(generate.err.contains("changed RADIUS servers: rad-1, rad-2"), "\(generate.err)")

        // Every document as docs/json-output.schema.json describes it.
        let files = try documents.enumerated().map { index, text in
            let path = dir + "/document-\(index).json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let (code, report) = try OutputSchema.check("json", files)
        #expect(code == 0, "\(report)")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }
}
