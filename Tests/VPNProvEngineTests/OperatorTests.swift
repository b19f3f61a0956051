import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// The rough edges a new operator hits: where the output tree goes, what the per-node README asks
/// them to paste, what revoke says, and errors that follow from an earlier one.
@Suite(.temporaries) struct OperatorTests {
    static let example = Repository.example

    /// `dir/site/inventory.yaml` (the example), so the inventory is not in the working directory.
    func site() throws -> String {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/site", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.example, toPath: dir + "/site/inventory.yaml")
        return dir
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test func theOutputTreeBelongsBesideTheInventoryAndIsNeverSplit() throws {
        let dir = try site()
        let first = vpnprov(["generate", "site/inventory.yaml"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        #expect(exists(dir + "/site/out/.vpnprov-manifest"))
        #expect(!exists(dir + "/out"))
        #expect(
            first.err.contains(
                "ansible-playbook -i site/out/deploy/inventory.yml site/out/deploy/site.yml --limit fra-1,nyc-1,sgp-1"))
        // From another directory, the same tree.
        #expect(vpnprov(["check", "inventory.yaml"], in: dir + "/site").code == 0)

        // A second tree elsewhere is refused while the recorded one exists; nothing is written.
        let second = vpnprov(["generate", "site/inventory.yaml", "--out", "other", "--format", "json"], in: dir)
        #expect(second.code == 2)
        #expect(second.err.contains("the output tree of this deployment is at 'site/out'"), "\(second.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(second.out.utf8)) as? [String: Any])
        #expect(((doc["diagnostics"] as? [[String: Any]])?.first?["code"]) as? String == "output-location")
        #expect(!exists(dir + "/other"))
        #expect(vpnprov(["check", "site/inventory.yaml", "--out", "other"], in: dir).code == 2)

        // Moving the tree is moving the directory and naming its new place once.
        try FileManager.default.moveItem(atPath: dir + "/site/out", toPath: dir + "/moved")
        let moved = vpnprov(["generate", "site/inventory.yaml", "--out", "moved"], in: dir)
        #expect(moved.code == 0, "\(moved.err)")
        #expect(moved.err.contains("0 files written"))
        // Now the default would be a second tree.
        let back = vpnprov(["generate", "site/inventory.yaml"], in: dir)
        #expect(back.code == 2)
        #expect(back.err.contains("is at 'moved'"))
        #expect(!exists(dir + "/site/out"))
    }

    @Test func aTreeAtTheFormerDefaultIsPointedOut() throws {
        let dir = try site()
        // What vpnprov used to do: out/ in the working directory, whatever the inventory's place.
        #expect(
            vpnprov(["generate", "site/inventory.yaml", "--out", "out", "--state", "elsewhere-state"], in: dir).code
                == 0)
        let r = vpnprov(["generate", "site/inventory.yaml"], in: dir)
        #expect(r.code == 0)
        #expect(
            r.err.contains("warning: 'out' holds an output tree (--out used to default to the working directory)"),
            "\(r.err)")
        #expect(exists(dir + "/site/out/.vpnprov-manifest"))
    }

    @Test func theNodeReadmeDeployCommandsParseAsShellAndItsTableLinesUp() throws {
        let text = """
            vpnprov: 1
            name: acme
            nodes:
              a-rather-long-node-name-01:
                address: 192.0.2.1
                pool: 10.1.0.0/24
              short:
                address: 192.0.2.2
                pool: 10.2.0.0/24
                services: [ipsec-xauth-psk]
                psk: gen
                group: acme
            users:
              u1:
                password: gen
            """
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        for node in ["a-rather-long-node-name-01", "short"] {
            let readme = try String(contentsOfFile: dir + "/out/servers/\(node)/README", encoding: .utf8)
            let lines = readme.components(separatedBy: "\n")
            // The commands: the indented lines after "Deploy with Ansible" and "Deploy by hand", up to the
            // next paragraph.
            for (header, minimum) in [("Deploy with Ansible", 1), ("Deploy by hand", 3)] {
                let start = try #require(lines.firstIndex { $0.hasPrefix(header) })
                let commands = lines[(start + 1)...].drop { !$0.hasPrefix("  ") }.prefix { !$0.isEmpty }
                #expect(commands.count >= minimum, "\(header)")
                let syntax = try Subprocess.run("/bin/sh", ["-n", "-c", commands.joined(separator: "\n")])
                #expect(syntax.succeeded, "\(node): \(header): \(syntax)")
            }
            // Every row of the file table starts its description in one column (short names).
            let table = lines.drop { $0 != "Files" }.dropFirst().prefix { !$0.isEmpty }
            let columns = Set(
                table.map { row -> Int in
                    // The path ends at the first space after the indentation; the description starts after the gap.
                    let chars = Array(row)
                    var i = 2
                    while i < chars.count && chars[i] != " " { i += 1 }
                    while i < chars.count && chars[i] == " " { i += 1 }
                    return i
                })
            if node == "short" { #expect(columns.count == 1, "\(Array(table))") }
            #expect(table.contains { $0.contains("swanctl/x509/\(node).pem") })
        }
    }

    @Test func revokeSaysOnceHowToRestore() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: Self.example, toPath: dir + "/inventory.yaml")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let r = vpnprov(["revoke", "bob"], in: dir)
        #expect(r.code == 0, "\(r.err)")
        #expect(r.err.components(separatedBy: "vpnprov unrevoke bob").count == 2, "\(r.err)")
        #expect(r.err.components(separatedBy: "revoked: true").count == 2, "\(r.err)")
        #expect(!r.err.contains("note:"))
        // Every later run says it again, once.
        let later = vpnprov(["generate"], in: dir)
        #expect(later.err.components(separatedBy: "vpnprov unrevoke bob").count == 2)
    }

    @Test func noFollowOnErrorsForANodeThatFailedToDecode() throws {
        let text = """
            vpnprov: 1
            name: acme
            nodes:
              sto-1:
                adress: sto-1.example.com
                pool: 10.1.0.0/24
            users:
              u1:
                password: gen
                nodes: [sto-1]
              u2:
                password: gen
                nodes: [sto-1, sto-2]
            """
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "i.yaml")
        let found = decoded.diagnostics.map { "\($0.location?.line ?? 0) \($0.code)" }
        // The typo and the missing address; a user's reference to sto-1 is not an error of its own,
        // a reference to a node that is not there at all still is.
        #expect(
            found == ["5 unknown-key", "4 missing-key", "13 unknown-node"], "\(decoded.diagnostics.map(\.message))")
    }

    @Test func aFieldIndentedAsAnEntrySaysSo() throws {
        let text = """
            vpnprov: 1
            name: acme
            nodes:
              vpn-1:
                address: 192.0.2.1
              pool: 10.1.0.0/24
            users:
              u1:
                nodes: [vpn-1]
              password: gen
            """
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "i.yaml")
        let messages = decoded.diagnostics.map { "\($0.location?.line ?? 0):\($0.location?.column ?? 0) \($0.message)" }
        #expect(
            messages.contains {
                $0.hasPrefix("6:3 'pool' is a node field, but it is indented as a node name directly under 'nodes:'")
            }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("10:3 'password' is a user field") }, "\(messages)")
        #expect(!messages.contains { $0.contains("must be a mapping") })
    }
}
