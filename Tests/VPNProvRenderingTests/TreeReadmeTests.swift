import Foundation
import Testing
import VPNProvModel
import VPNProvRendering
import VPNProvTemplates
import VPNProvTestFixtures

/// `out/README`: what goes to whom, at the top of the output tree.
@Suite(.temporaries) struct TreeReadmeTests {
    @Test func matchesGoldenFiles() throws {
        let templates = try TemplateSet.builtin()
        var inventory = ClientFixtures.inventory()
        try Golden.check(
            try Render.files(TreeReadmeRenderer.self, inventory, templates: templates), against: "tree/two-nodes")
        inventory.pki.crlURL = "http://crl.example.com/acme.crl"
        try Golden.check(
            try Render.files(TreeReadmeRenderer.self, inventory, templates: templates), against: "tree/crl")
    }

    /// Every entry `generate` writes at the top of the tree is named in the README, with whom it goes
    /// to; the README is public and in the manifest like every other file, so `check` sees it.
    @Test(arguments: [false, true])
    func theTreesReadmeNamesEveryTopLevelEntry(crl: Bool) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var text = try String(contentsOfFile: Repository.example, encoding: .utf8)
        if crl {
            text = text.replacingOccurrences(
                of: "\npki:\n", with: "\npki:\n  crl_url: http://crl.example.com/acme.crl\n")
        }
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generated = vpnprov(["generate", "--quiet"], in: dir)
        #expect(generated.code == 0, "\(generated.err)")
        let readme = try String(contentsOfFile: dir + "/out/README", encoding: .utf8)
        let lines = readme.components(separatedBy: "\n")
        let entries = try FileManager.default.contentsOfDirectory(atPath: dir + "/out").sorted()
        #expect(entries.contains("crl") == crl)
        for entry in entries where entry != "README" {
            let name = entry.hasPrefix(".vpnprov-") ? ".vpnprov-*" : entry
            #expect(
                lines.contains { $0.hasPrefix(name + "/") || $0.hasPrefix(name + " ") }, "\(entry) is not in out/README"
            )
        }
        #expect(readme.contains("crl.example.com") == crl)
        #expect(
            try FileManager.default.attributesOfItem(atPath: dir + "/out/README")[.posixPermissions] as? Int == 0o644)
        // Removed, it is drift that the next generate repairs.
        try FileManager.default.removeItem(atPath: dir + "/out/README")
        let check = vpnprov(["check"], in: dir)
        #expect(check.code == 1 && check.out.contains("README"), "\(check.out)")
        #expect(vpnprov(["generate", "--quiet"], in: dir).code == 0)
        #expect(try String(contentsOfFile: dir + "/out/README", encoding: .utf8) == readme)
    }
}
