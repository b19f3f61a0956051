import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvCLI
@testable import VPNProvModel

/// Small gaps a new operator fell into on a first deployment, each pinned.
@Suite(.temporaries) struct HandOffTests {
    static let root = Repository.root

    func site(_ inventory: String? = nil) throws -> String {
        let dir = try temporaryDirectory()
        if let inventory {
            try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        } else {
            try FileManager.default.copyItem(atPath: Repository.example, toPath: dir + "/inventory.yaml")
        }
        return dir
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static let starter = StarterInventory.text

    /// The line of the starter inventory's first user, and the inventory with `line` added under it.
    func starterWithUserKey(_ line: String) -> String {
        var lines = Self.starter.components(separatedBy: "\n")
        let users = lines.firstIndex(of: "users:")!
        lines.insert(line, at: users + 2)
        return lines.joined(separator: "\n")
    }

    @Test func anUnknownKeyShowsItsLineAndCaretButNotItsValue() throws {
        let dir = try site(starterWithUserKey("    pasword: \"Zq8#vLw2!pR7xT4m\""))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate", "inventory.yaml"], in: dir)
        #expect(r.code == 1)
        #expect(
            r.err.contains(
                "unknown key 'pasword'; did you mean 'password'? [unknown-key]\n    pasword: <hidden>\n    ^\n"),
            "\(r.err)")
        #expect(!r.err.contains("Zq8#vLw2"))
        let json = vpnprov(["validate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(!json.out.contains("Zq8#vLw2") && !json.err.contains("Zq8#vLw2"))
    }

    /// A short value of an unknown key is no secret and is not hidden: hiding `1` hid every "1" of every message.
    @Test func aShortUnknownValueIsNotHiddenFromEveryMessage() throws {
        let inventory =
            starterWithUserKey("    bogus: 1")
            + "handoff:\n  address: get.vpn.example.com\n  expires: 3m\n  downloads: 1000\n"
        let dir = try site(inventory)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let v = vpnprov(["validate", "inventory.yaml"], in: dir)
        #expect(v.err.contains("unknown key 'bogus'"), "\(v.err)")
        // Only the excerpt of the unknown key's own line is cut where its value starts.
        #expect(v.err.contains("from 1h to 30d") && v.err.contains("found 1000"), "\(v.err)")
        #expect(v.err.components(separatedBy: "<hidden>").count == 2, "\(v.err)")
    }

    @Test func aWrittenOutKeyGetsTheAbbreviation() throws {
        let dir = try site(starterWithUserKey("    certificate: true"))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = vpnprov(["validate", "inventory.yaml"], in: dir)
        #expect(r.err.contains("unknown key 'certificate'; did you mean 'cert'? [unknown-key]"), "\(r.err)")
        #expect(DecodingContext.abbreviation(of: "serv", among: ["services", "pool"]) == "services")
        #expect(DecodingContext.abbreviation(of: "po", among: ["pool"]) == nil)
    }

    @Test func theTestClockTakesACalendarDate() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(vpnprov(["generate", "inventory.yaml"], in: dir).code == 0)
        let day = try #require(TestClock.parse("2040-11-15"))
        let r = vpnprov(["status", "inventory.yaml", "--format", "json"], in: dir, now: day)
        #expect(r.code == 0, "\(r.err)")
        #expect((try json(r.out)["status"] as? [String: Any])?["now"] as? String == "2040-11-15T00:00:00Z")
        #expect(TestClock.parse("2040-11-15T08:00:00Z") == day + 8 * 3600)
        #expect(TestClock.parse(String(Int(day.timeIntervalSince1970))) == day)
        #expect(TestClock.parse("15.11.2040") == nil)
    }

    /// The test seams answer only in vpnprov-testhooks: the product takes the real clock whatever
    /// VPNPROV_NOW says and never stops at a write step, while the test executable does both.
    @Test func onlyTheTestExecutableHasTestSeams() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let seams = ["VPNPROV_NOW": "2040-11-15", "VPNPROV_CRASH_AFTER_WRITES": "1"]
        let killed = try VPNProvBinary.run(
            ["generate", "inventory.yaml"], in: dir, environment: seams, testHooks: true)
        #expect(killed.killed, "\(killed.err)")
        let stepsFile = dir + "/write-steps"
        let product = try VPNProvBinary.run(
            ["generate", "inventory.yaml"], in: dir,
            environment: seams.merging(["VPNPROV_WRITE_STEPS_FILE": stepsFile]) { a, _ in a })
        #expect(product.status == 0 && !product.killed, "\(product.err)")
        #expect(!FileManager.default.fileExists(atPath: stepsFile))
        let counted = try VPNProvBinary.run(
            ["rotate-psk", "fra-1", "inventory.yaml"], in: dir, environment: ["VPNPROV_WRITE_STEPS_FILE": stepsFile],
            testHooks: true)
        #expect(counted.status == 0, "\(counted.err)")
        #expect(Int((try? String(contentsOfFile: stepsFile, encoding: .utf8))?.dropLast() ?? "") ?? 0 > 0)
        let status = try VPNProvBinary.run(
            ["status", "inventory.yaml", "--format", "json"], in: dir, environment: seams)
        #expect(
            (try json(status.out)["status"] as? [String: Any])?["now"] as? String != "2040-11-15T00:00:00Z",
            "\(status.out)")
        let hooked = try VPNProvBinary.run(
            ["status", "inventory.yaml", "--format", "json"], in: dir, environment: ["VPNPROV_NOW": "2040-11-15"],
            testHooks: true)
        #expect(
            (try json(hooked.out)["status"] as? [String: Any])?["now"] as? String == "2040-11-15T00:00:00Z",
            "\(hooked.err)")
        let bad = try VPNProvBinary.run(
            ["status", "inventory.yaml"], in: dir, environment: ["VPNPROV_NOW": "15.11.2040"], testHooks: true)
        #expect(bad.status == 2 && bad.err.contains("found '15.11.2040'"), "\(bad.err)")
    }

    @Test func validateCountsUsersAsGenerateDoes() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let validated = vpnprov(["validate", "inventory.yaml"], in: dir)
        #expect(validated.out == "inventory.yaml: ok (3 nodes, 5 users and 1 revoked)\n", "\(validated.out)")
        let doc = try #require(
            try json(vpnprov(["validate", "inventory.yaml", "--format", "json"], in: dir).out)["inventory"]
                as? [String: Any])
        #expect(doc["users"] as? Int == 5 && doc["revokedUsers"] as? Int == 1)
        let generated = vpnprov(["generate", "inventory.yaml"], in: dir)
        #expect(generated.err.contains("3 nodes, 5 users;"), "\(generated.err)")
    }

    @Test func theSummarySaysWhenTheCatalogueChanged() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func publish(_ r: (code: Int32, out: String, err: String)) throws -> String? {
            ((try json(r.out)["summary"] as? [String: Any])?["next"] as? [String: Any])?["publishCatalog"] as? String
        }
        let first = vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(try publish(first) == "out/catalog/servers.json")
        #expect(first.err.contains("the app catalogue changed: publish out/catalog/servers.json to the app's backend"))
        #expect(try publish(vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)) == nil)
        let path = dir + "/inventory.yaml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "region: ap-southeast", with: "region: ap-south").write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect(
            try publish(vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir))
                == "out/catalog/servers.json")
    }

    /// The example's comments say what happened to each user; a user said to be "listed in the CRL"
    /// must have a revoked certificate.
    @Test func theExampleSaysTheTruthAboutTheCRL() throws {
        let dir = try site()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(vpnprov(["generate", "inventory.yaml"], in: dir).code == 0)
        let status = try #require(
            try json(vpnprov(["status", "inventory.yaml", "--format", "json"], in: dir).out)["status"] as? [String: Any]
        )
        let revoked = Set(
            ((status["certificates"] as? [[String: Any]]) ?? []).filter { $0["status"] as? String == "revoked" }
                .compactMap { $0["holder"] as? String })
        let example = try String(contentsOfFile: Repository.example, encoding: .utf8)
        for line in example.components(separatedBy: "\n")
        where line.hasPrefix("  ") && !line.hasPrefix("   ") && line.contains("CRL") {
            let user = String(line.dropFirst(2).prefix { $0 != ":" })
            #expect(
                revoked.contains(user), "the example says \(user) is on the CRL, but \(user) has no revoked certificate"
            )
        }
    }

    /// The end of a first generate says how the new profiles reach their users: the hand-off command with a
    /// hand-off site in the inventory (in text and in the JSON summary), a pointer to it without one.
    @Test func theNextStepNamesTheHandOff() throws {
        let dir = try site()
        let without = vpnprov(["generate", "inventory.yaml"], in: dir)
        #expect(without.code == 0, "\(without.err)")
        #expect(
            without.err.contains(
                "hand new profiles to alice, bob, carol, dave, erin (out/clients/<user>/; with a handoff: site in the "
                    + "inventory, 'vpnprov handoff' publishes them behind expiring links)"), "\(without.err)")
        let path = dir + "/inventory.yaml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try (text + "acme: {email: ops@example.com}\nhandoff: {address: get.vpn.example.com}\n").write(
            toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: dir + "/out/clients")
        let with = vpnprov(["generate", "inventory.yaml", "--format", "json"], in: dir)
        #expect(with.code == 0, "\(with.err)")
        #expect(
            with.err.contains(
                "hand new profiles to alice, bob, carol, dave, erin with one expiring link each:\n  vpnprov handoff inventory.yaml\n"
            ),
            "\(with.err)")
        let next = (try json(with.out)["summary"] as? [String: Any])?["next"] as? [String: Any]
        #expect(next?["handOff"] as? String == "vpnprov handoff inventory.yaml")
        #expect(FileManager.default.fileExists(atPath: dir + "/out/deploy/host_vars/get.vpn.example.com.yml"))
    }

    /// The README's command reference lists every command, with every option it takes; its docs
    /// table lists each page once.
    @Test func theReadmeReferenceMatchesTheCommands() throws {
        let readme = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
        let reference = readme.components(separatedBy: "\n").filter { $0.hasPrefix("vpnprov ") }
        for command in CommandLineTool.commands {
            let name = command.configuration.name
            let line = try #require(
                reference.first { $0.hasPrefix("vpnprov \(name) ") }, "README reference lacks \(name)")
            for option in command.configuration.options {
                #expect(line.contains("--\(option.name)"), "README reference of \(name) lacks --\(option.name)")
            }
        }
        let rows = readme.components(separatedBy: "\n").filter { $0.hasPrefix("| [docs/") }
        let pages = rows.map { String($0.dropFirst(3).prefix { $0 != "]" }) }
        #expect(pages.count == Set(pages).count, "pages listed twice: \(pages)")
        let docs = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/docs").filter {
            $0.hasSuffix(".md")
        }
        for page in docs { #expect(pages.contains("docs/" + page), "README's docs table lacks docs/\(page)") }
    }
}
