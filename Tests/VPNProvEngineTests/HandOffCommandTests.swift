import Foundation
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvPKI

extension TestDependency {
    /// GNU tar reads the archives of the Linux and NetworkManager folders.
    static let tar = TestDependency(path: "/usr/bin/tar", installedBy: "the Debian package tar (essential)")
    static let zbar = TestDependency(
        path: "/usr/bin/zbarimg", installedBy: "the Debian package zbar-tools (scripts/install-test-deps)")
}

/// A deployment with a hand-off site, generated in a test's directory.
struct HandOffSite {
    static let inventory = """
        vpnprov: 1
        name: lab
        acme: {email: ops@example.com}
        handoff:
          address: get.vpn.example.com
          deploy: {host: 192.0.2.80}
        nodes:
          n1:
            address: n1.vpn.example.com
            pool: 10.1.0.0/24
            pool6: fd00:1::/112
            services: [ikev2-eap, ikev2-cert]
        users:
          ann:
            password: gen
            devices: [apple, android, windows, linux]
          ben:
            cert: true
            devices: [apple, android, networkmanager]
          cat:
            password: gen
            devices: [apple]

        """

    let dir: String
    var out: String { dir + "/out" }
    var state: String { dir + "/state" }

    /// Writes the inventory (`text`) and generates.
    static func make(_ text: String = inventory, in dir: String) throws -> HandOffSite {
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generated = vpnprov(["generate", "inventory.yaml"], in: dir)
        try #require(generated.code == 0, "\(generated.err)")
        return HandOffSite(dir: dir)
    }

    func run(_ arguments: [String], environment: [String: String] = [:], now: Date = Date()) -> (
        code: Int32, out: String, err: String
    ) {
        vpnprov(arguments, in: dir, environment: environment, now: now)
    }

    /// `handoff --no-publish --format json ARGS`: the links it made, by user.
    func handOff(_ arguments: [String] = [], now: Date = Date()) throws -> [String: [String: Any]] {
        let r = run(["handoff", "inventory.yaml", "--no-publish", "--format", "json"] + arguments, now: now)
        try #require(r.code == 0, "\(r.err)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let links = (document["handoff"] as? [String: Any])?["links"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: links.map { ($0["user"] as! String, $0) })
    }

    var index: PublishedIndex {
        get throws {
            try JSONDecoder().decode(
                PublishedIndex.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/handoff/index.json")))
        }
    }

    func published(_ id: String) throws -> PublishedLink {
        try JSONDecoder().decode(
            PublishedLink.self, from: Data(contentsOf: URL(fileURLWithPath: out + "/handoff/links/\(id).json")))
    }

    var ledger: [HandOffLink] { get throws { try HandOffLedger.read(stateDirectory: state) } }
}

/// `vpnprov handoff` and its kin without a site (docs/handoff.md): which users get a link, what the link
/// holds and opens with, what ends it, what is kept (never the token), the QR codes, and the publish step.
@Suite(.temporaries) struct HandOffCommandTests {
    @Test func aLinkPerUserOpensTheirFilesOnlyAndTheStateKeepsNoToken() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let text = site.run(["handoff", "inventory.yaml", "--no-publish"])
        #expect(text.code == 0, "\(text.err)")
        // Every user's profiles changed since they were (never) handed off.
        #expect(text.out.contains("ann: https://get.vpn.example.com/h/"), "\(text.out)")
        #expect(text.out.contains("ben: https://") && text.out.contains("cat: https://"))
        #expect(text.out.contains("\u{2588}\u{2588}\u{2588}\u{2588}"), "the terminal QR codes")
        #expect(
            text.err.contains(
                "next: publish with\n  ansible-playbook -i out/deploy/inventory.yml out/deploy/handoff.yml"))
        let ledger = try site.ledger
        #expect(ledger.map(\.user).sorted() == ["ann", "ben", "cat"] && ledger.allSatisfy(\.shown))
        let urls = text.out.split(separator: "\n").filter { $0.contains(": https://") }.map {
            String($0.split(separator: " ")[1])
        }
        #expect(urls.count == 3)
        for url in urls {
            let token = String(url.dropFirst("https://get.vpn.example.com/h/".count).dropLast())
            #expect(token.count == 43 && token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += "="
            let raw = try #require(Data(base64Encoded: base64))
            let derived = try HandOffToken(raw: Array(raw))
            #expect(derived.text == token)
            let link = try site.published(derived.id)
            #expect(ledger.contains { $0.id == derived.id && $0.user == link.user })
            // The page and every file open with the token's key, in their place only.
            let page = try JSONDecoder().decode(
                HandOffPage.self,
                from: Data(
                    try Seal.open(
                        Array(Data(base64Encoded: link.page)!), key: derived.key,
                        associatedData: Array("\(link.id)/page".utf8))))
            #expect(page.user == link.user && page.site == "get.vpn.example.com")
            for (index, file) in link.files.enumerated() {
                let sealed = Array(Data(base64Encoded: file.sealed)!)
                let opened = try Seal.open(
                    sealed, key: derived.key, associatedData: Array("\(link.id)/file/\(index)".utf8))
                #expect(opened.count == file.size)
                if !file.name.hasSuffix(".tar"), file.name != "README.txt" {
                    let original = try Data(
                        contentsOf: URL(fileURLWithPath: site.out + "/clients/\(link.user)/\(file.name)"))
                    #expect(Data(opened) == original, "\(link.user)/\(file.name)")
                }
                #expect(throws: CryptoError.self) {
                    try Seal.open(sealed, key: derived.key, associatedData: Array("\(link.id)/file/\(index + 1)".utf8))
                }
            }
            // The token is nowhere at rest: not in the state, not in the bundle.
            for path in SecretLeaks.filesBelow(site.state).map({ site.state + "/" + $0 })
                + SecretLeaks.filesBelow(site.out + "/handoff").map({ site.out + "/handoff/" + $0 })
            {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                #expect(!String(decoding: data, as: UTF8.self).contains(token), "\(path) holds a token")
            }
        }
        #expect(try site.index.links.count == 3)
        // Content types as the devices want them.
        let ann = try site.published(try #require(ledger.first { $0.user == "ann" }?.id))
        let types = Dictionary(uniqueKeysWithValues: ann.files.map { ($0.name, $0.type) })
        #expect(types["ann.mobileconfig"] == "application/x-apple-aspen-config")
        #expect(types["n1-ikev2-eap.sswan"] == "application/vnd.strongswan.profile")
        #expect(types["ann-linux.tar"] == "application/x-tar")
        // Nothing in the bundle is readable by others; check stays clean beside it.
        for path in SecretLeaks.filesBelow(site.out + "/handoff").map({ site.out + "/handoff/" + $0 }) {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path)")
        }
        #expect(site.run(["check", "inventory.yaml"]).code == 0)
        // A second run hands nobody off: nothing changed.
        let again = site.run(["handoff", "inventory.yaml", "--no-publish"])
        #expect(again.code == 0 && again.out.isEmpty && again.err.contains("handed off already"), "\(again.err)")
    }

    /// A link is the result and is kept nowhere: it goes where the result goes (standard output, or the JSON
    /// document), never to standard error, where scripts and CI collect their logs.
    @Test func noLinkReachesStandardError() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let text = site.run(["handoff", "inventory.yaml", "--no-publish", "--users", "ann"])
        let json = site.run(["handoff", "inventory.yaml", "--no-publish", "--users", "ben", "--format", "json"])
        #expect(text.code == 0 && json.code == 0, "\(text.err)\(json.err)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let links = try #require((document["handoff"] as? [String: Any])?["links"] as? [[String: Any]])
        let ben = try #require(links.first?["url"] as? String)
        let annLine = try #require(text.out.split(separator: "\n").first { $0.hasPrefix("ann: https://") })
        let ann = String(annLine.dropFirst("ann: ".count))
        for (url, run) in [(ann, text), (ben, json)] {
            let token = String(url.dropFirst("https://get.vpn.example.com/h/".count).dropLast())
            #expect(token.count == 43)
            for r in [text, json] {
                #expect(!r.err.contains(token), "a token on standard error")
            }
            #expect(run.out.contains(token))
            #expect(!run.err.contains("/h/") && !run.err.contains("\u{2588}"), "a link or QR code on standard error")
        }
    }

    /// `--quiet` keeps the links: they are the result and kept nowhere else, so they are printed (only the
    /// notes go); a link printed nowhere would still be marked shown and replace the user's earlier one.
    @Test func quietStillPrintsTheLinks() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let r = site.run(["handoff", "inventory.yaml", "--no-publish", "--users", "cat", "--quiet", "--no-qr"])
        #expect(r.code == 0 && r.err.isEmpty, "\(r.err)")
        #expect(r.out.hasPrefix("cat: https://get.vpn.example.com/h/") && r.out.contains("QR code:"))
        #expect(try site.ledger.filter(\.shown).map(\.user) == ["cat"])
    }

    @Test(.needs(.zbar)) func theQRCodesHoldTheLink() throws {
        try TestDependency.zbar.require()
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let links = try site.handOff(["--users", "cat"])
        let cat = try #require(links["cat"])
        let qr = try #require(cat["qr"] as? [String: String])
        #expect(qr["png"] == "out/handoff/qr/cat.png" && qr["svg"] == "out/handoff/qr/cat.svg")
        let decoded = try runTool(["zbarimg", "--nodbus", "-q", "--raw", site.dir + "/out/handoff/qr/cat.png"])
        #expect(decoded.output == (cat["url"] as? String ?? "") + "\n", "\(decoded.output)")
        #expect(links.count == 1)
    }

    @Test(.needs(.tar)) func theLinuxFoldersTravelAsTarArchivesWithTheirModes() throws {
        try TestDependency.tar.require()
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let links = try site.handOff(["--users", "ann"])
        let url = try #require(links["ann"]?["url"] as? String)
        let token = String(url.dropFirst("https://get.vpn.example.com/h/".count).dropLast())
        let raw = try #require(
            Data(
                base64Encoded: token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                    + "="))
        let derived = try HandOffToken(raw: Array(raw))
        let link = try site.published(derived.id)
        let index = try #require(link.files.firstIndex { $0.name == "ann-linux.tar" })
        let archive = try Seal.open(
            Array(Data(base64Encoded: link.files[index].sealed)!), key: derived.key,
            associatedData: Array("\(link.id)/file/\(index)".utf8))
        let dir = try temporaryDirectory()
        try Data(archive).write(to: URL(fileURLWithPath: dir + "/ann-linux.tar"))
        let listed = try runTool(["tar", "-tvf", dir + "/ann-linux.tar"])
        #expect(listed.status == 0, "\(listed.output)")
        let extracted = try runTool(["tar", "-xf", dir + "/ann-linux.tar", "-C", dir])
        #expect(extracted.status == 0, "\(extracted.output)")
        for relative in SecretLeaks.filesBelow(site.out + "/clients/ann/linux").map({ "linux/" + $0 }) + ["README"] {
            let path = site.out + "/clients/ann/" + relative
            #expect(
                FileManager.default.contents(atPath: dir + "/" + relative)
                    == FileManager.default.contents(atPath: path),
                "\(relative)")
            let mode = { (p: String) in try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as? Int }
            #expect(try mode(dir + "/" + relative) == mode(path), "\(relative)'s mode")
        }
    }

    /// A changed profile, `revoke`, `handoff-revoke` and a newer link each end a link; the bundle drops it and
    /// the index says why, for the site's page.
    @Test func whatEndsALink() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let first = try site.handOff()
        let id = { (user: String) in first[user]?["id"] as? String ?? "" }
        // A password rotation changes ann's profiles: her link ends as replaced.
        let rotated = site.run(["rotate-password", "ann", "inventory.yaml"])
        #expect(rotated.code == 0, "\(rotated.err)")
        #expect(rotated.err.contains("hand-off links ended: ann (profiles changed)"), "\(rotated.err)")
        #expect(
            rotated.err.contains(
                "hand new profiles to ann with one expiring link each:\n  vpnprov handoff inventory.yaml"))
        var index = try site.index
        #expect(index.ended[id("ann")] == "replaced" && !index.links.contains(id("ann")))
        #expect(!FileManager.default.fileExists(atPath: site.out + "/handoff/links/\(id("ann")).json"))
        #expect(!FileManager.default.fileExists(atPath: site.out + "/handoff/qr/ann.png"))
        // revoke: ben's link ends as revoked.
        let revoked = site.run(["revoke", "ben", "inventory.yaml"])
        #expect(revoked.code == 0 && revoked.err.contains("ben (revoked)"), "\(revoked.err)")
        index = try site.index
        #expect(index.ended[id("ben")] == "revoked" && index.links == [id("cat")])
        // The default hands off ann again (her folder changed), not ben (revoked) nor cat (unchanged).
        let second = try site.handOff()
        #expect(second.keys.sorted() == ["ann"])
        // A newer link of cat's replaces the older one.
        let third = try site.handOff(["--users", "cat", "--expires", "24h", "--downloads", "3"])
        index = try site.index
        #expect(index.ended[id("cat")] == "replaced")
        #expect(third["cat"]?["downloads"] as? Int == 3)
        let cat = try #require(try site.ledger.last { $0.user == "cat" })
        #expect(cat.expires - cat.created == 24 * 3600 && cat.downloads == 3)
        // handoff-revoke ends ann's new link.
        let ann = try #require(second["ann"]?["id"] as? String)
        let withdrawn = site.run(["handoff-revoke", "ann", "inventory.yaml", "--no-publish"])
        #expect(withdrawn.code == 0 && withdrawn.err.contains("ann (revoked)"), "\(withdrawn.err)")
        index = try site.index
        #expect(index.ended[ann] == "revoked" && index.links == [cat.id])
        #expect(site.run(["handoff-revoke", "zed", "inventory.yaml", "--no-publish"]).code == 1)
    }

    /// The publish step runs `ansible-playbook` from PATH on deploy/handoff.yml; when it fails no link is
    /// printed and the prepared links are withdrawn, so the next run makes new ones.
    @Test func aFailedPublishShowsNoLinkAndWithdrawsThem() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let bin = try temporaryDirectory()
        let calls = bin + "/calls"
        let fake = bin + "/ansible-playbook"
        let script =
            "#!/bin/sh\necho \"$@\" >> \(calls)\necho 'PLAY [Publish the vpnprov hand-off links]'\necho\n"
            + "echo 'fatal: [get.vpn.example.com]: UNREACHABLE!'\nexit ${FAKE_STATUS:-0}\n"
        try script.write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o755)
        let failed = site.run(
            ["handoff", "inventory.yaml", "--users", "cat"], environment: ["PATH": bin, "FAKE_STATUS": "4"])
        #expect(failed.code == 3, "\(failed.err)")
        #expect(!failed.out.contains("https://"), "a link was shown")
        #expect(failed.err.contains("publishing to get.vpn.example.com failed") && failed.err.contains("UNREACHABLE"))
        // The playbook's last lines, each a line of its own, not one line of escaped line breaks.
        #expect(
            failed.err.contains(
                "\nvpnprov: note: ansible-playbook: PLAY [Publish the vpnprov hand-off links]\n"
                    + "vpnprov: note: ansible-playbook: fatal: [get.vpn.example.com]: UNREACHABLE!\n"), "\(failed.err)")
        #expect(!failed.err.contains("\\u{A}"), "\(failed.err)")
        #expect(try site.index.links.isEmpty)
        #expect(try site.ledger.allSatisfy { $0.ended?.reason == .revoked && !$0.shown })
        let published = site.run(["handoff", "inventory.yaml", "--users", "cat"], environment: ["PATH": bin])
        #expect(published.code == 0 && published.out.contains("cat: https://"), "\(published.err)")
        #expect(published.err.contains("1 link published on get.vpn.example.com"))
        let lines = try String(contentsOfFile: calls, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last == "-i \(site.out)/deploy/inventory.yml \(site.out)/deploy/handoff.yml")
        // A failed re-hand-off: cat's working link ended for the new one, which is withdrawn. The next default run
        // hands cat off again rather than saying every user's profiles are handed off.
        let refailed = site.run(
            ["handoff", "inventory.yaml", "--users", "cat"], environment: ["PATH": bin, "FAKE_STATUS": "4"])
        #expect(refailed.code == 3 && !refailed.out.contains("https://"), "\(refailed.err)")
        #expect(refailed.err.contains("the next 'vpnprov handoff' hands them off again"), "\(refailed.err)")
        #expect(
            try site.ledger.filter { $0.user == "cat" }.allSatisfy { !$0.isLive(at: Int(Date().timeIntervalSince1970)) }
        )
        let next = try site.handOff()
        #expect(next["cat"] != nil, "cat was left without a link: \(next.keys.sorted())")
        let missing = site.run(["handoff", "inventory.yaml", "--users", "cat"], environment: ["PATH": "/nonexistent"])
        #expect(missing.code == 3 && missing.err.contains("ansible-playbook is not on PATH"), "\(missing.err)")
    }

    /// Following the printed steps sets the site up and takes ended links off it: the first `generate` with
    /// `handoff:` rolls the site out with the nodes, and a run that ends links names the playbook that only
    /// publishes (never `vpnprov handoff`, which hands out new links too).
    @Test func thePrintedStepsReachTheSite() throws {
        let dir = try temporaryDirectory()
        try HandOffSite.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let site = HandOffSite(dir: dir)
        let first = site.run(["generate", "inventory.yaml"])
        #expect(first.code == 0, "\(first.err)")
        #expect(
            first.err.contains(
                "next: roll the nodes, then the hand-off site out with\n  ansible-playbook -i out/deploy/inventory.yml "
                    + "out/deploy/site.yml --limit n1,get.vpn.example.com\nand once it succeeded, record it with\n  "
                    + "vpnprov rolled-out inventory.yaml --nodes n1\n"), "\(first.err)")
        // Nothing of the site changed since: no rollout is printed for it.
        _ = try site.handOff()
        let revoked = site.run(["revoke", "ben", "inventory.yaml"])
        #expect(revoked.code == 0, "\(revoked.err)")
        #expect(!revoked.err.contains("get.vpn.example.com\n") && !revoked.err.contains("vpnprov handoff"))
        #expect(
            revoked.err.contains(
                "hand-off links ended: ben (revoked); get.vpn.example.com serves them until the next publish\n"
                    + "vpnprov: next: take them off get.vpn.example.com with\n  ansible-playbook -i "
                    + "out/deploy/inventory.yml out/deploy/handoff.yml\n"), "\(revoked.err)")
        // A site alone: its part of deploy/ was rewritten, the nodes' was not.
        #expect(site.run(["rolled-out", "inventory.yaml", "--nodes", "n1"]).code == 0)
        try FileManager.default.removeItem(atPath: site.out + "/deploy/host_vars/get.vpn.example.com.yml")
        let changed = site.run(["generate", "inventory.yaml"])
        #expect(
            changed.err.contains(
                "next: roll the hand-off site out with\n  ansible-playbook -i out/deploy/inventory.yml "
                    + "out/deploy/site.yml --limit get.vpn.example.com\n"), "\(changed.err)")
        #expect(!changed.err.contains("rolled-out"))
    }

    @Test func refusedWithoutASiteOrWithAStaleTree() throws {
        let dir = try temporaryDirectory()
        let without = HandOffSite.inventory.replacingOccurrences(
            of: "handoff:\n  address: get.vpn.example.com\n  deploy: {host: 192.0.2.80}\n", with: "")
        let site = try HandOffSite.make(without, in: dir)
        let r = site.run(["handoff", "inventory.yaml", "--no-publish"])
        #expect(
            r.code == 1 && r.err.contains("names no hand-off site") && r.err.contains("[handoff-site-missing]"),
            "\(r.err)")
        // With the site but profiles edited since generate: nothing is handed off.
        try HandOffSite.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(site.run(["generate", "inventory.yaml"]).code == 0)
        let mobileconfig = site.out + "/clients/cat/cat.mobileconfig"
        try "changed".write(toFile: mobileconfig, atomically: false, encoding: .utf8)
        let stale = site.run(["handoff", "inventory.yaml", "--no-publish", "--users", "cat"])
        #expect(
            stale.code == 1
                && stale.err.contains("clients/cat/ is missing or not what 'vpnprov generate' would write now"),
            "\(stale.err)")
        #expect(
            site.run(["handoff", "inventory.yaml", "--no-publish", "--users", "zed"]).err.contains(
                "user 'zed' is not in"))
        #expect(site.run(["handoff", "inventory.yaml", "--users", "cat", "--all"]).code == 2)
        #expect(site.run(["handoff", "inventory.yaml", "--expires", "2w"]).code == 2)
        #expect(site.run(["handoff", "inventory.yaml", "--downloads", "101"]).code == 2)
    }

    /// Before any `generate`: `handoff` says to run it (not every pending change of the state), `handoff-revoke`
    /// has nothing to end and writes nothing, and no hand-off command makes a state directory, with a site or
    /// without one.
    @Test func beforeGenerateNothingIsWrittenAndTheErrorSaysWhatToRun() throws {
        let dir = try temporaryDirectory()
        let site = HandOffSite(dir: dir)
        try HandOffSite.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let handOff = site.run(["handoff", "inventory.yaml", "--no-publish"])
        #expect(
            handOff.code == 1
                && handOff.err.contains("no state yet in state: run 'vpnprov generate' first")
                && !handOff.err.contains("create CA"), "\(handOff.err)")
        let revoke = site.run(["handoff-revoke", "ann", "inventory.yaml", "--no-publish"])
        #expect(revoke.code == 0 && revoke.err.contains("ann had no live link"), "\(revoke.err)")
        #expect(site.run(["handoff-revoke", "zed", "inventory.yaml", "--no-publish"]).code == 1)
        #expect(!FileManager.default.fileExists(atPath: site.state), "a state directory was made")
        #expect(!FileManager.default.fileExists(atPath: site.out))
        // An empty state directory (made by hand, or by an earlier tool): still no CA, the same advice.
        try FileManager.default.createDirectory(atPath: site.state, withIntermediateDirectories: false)
        let empty = site.run(["handoff", "inventory.yaml", "--no-publish"])
        #expect(empty.code == 1 && empty.err.contains("no state yet in state"), "\(empty.err)")
        let emptyRevoke = site.run(["handoff-revoke", "ann", "inventory.yaml", "--no-publish"])
        #expect(emptyRevoke.code == 0, "\(emptyRevoke.err)")
        #expect(!FileManager.default.fileExists(atPath: site.state + "/handoff.json"))
        try FileManager.default.removeItem(atPath: site.state)
        // Without a site: refused, and nothing made.
        let without = HandOffSite.inventory.replacingOccurrences(
            of: "handoff:\n  address: get.vpn.example.com\n  deploy: {host: 192.0.2.80}\n", with: "")
        try without.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        for command in [["handoff"], ["handoff-revoke", "ann"], ["handoff-list"]] {
            let r = site.run(command + ["inventory.yaml", "--no-publish"].filter { _ in command[0] != "handoff-list" })
            #expect(r.code == 1 && r.err.contains("[handoff-site-missing]"), "\(command): \(r.err)")
            #expect(!FileManager.default.fileExists(atPath: site.state), "\(command) made a state directory")
        }
    }

    /// `handoff-list` puts the state's links beside the site's journal: their state, each view and download.
    @Test func theListShowsWhatIsOutAndEveryFetch() throws {
        let site = try HandOffSite.make(in: try temporaryDirectory())
        let links = try site.handOff()
        let ann = try #require(links["ann"]?["id"] as? String)
        let ben = try #require(links["ben"]?["id"] as? String)
        try FileManager.default.createDirectory(
            atPath: site.out + "/rollout/handoff", withIntermediateDirectories: true)
        let journal = [
            #"{"event": "published", "link": "\#(ann)", "time": "2026-12-07T09:00:00Z", "user": "ann"}"#,
            #"{"address": "198.51.100.7", "agent": "Mozilla/5.0 (iPhone)", "event": "view", "link": "\#(ann)", "time": "2026-12-07T09:01:00Z", "user": "ann"}"#,
            #"{"address": "198.51.100.7", "agent": "Mozilla/5.0 (iPhone)", "event": "download", "file": "ann.mobileconfig", "link": "\#(ann)", "time": "2026-12-07T09:01:05Z", "user": "ann"}"#,
            #"{"event": "ended", "link": "\#(ben)", "reason": "used", "time": "2026-12-07T09:02:00Z", "user": "ben"}"#,
            "not json",
        ]
        try (journal.joined(separator: "\n") + "\n").write(
            toFile: site.out + "/rollout/handoff/audit.jsonl", atomically: true, encoding: .utf8)
        let text = site.run(["handoff-list", "inventory.yaml", "--offline"])
        #expect(text.code == 0, "\(text.err)")
        #expect(text.out.hasPrefix("get.vpn.example.com: 3 links\n"), "\(text.out)")
        #expect(text.out.contains("ann  \(ann.prefix(12))  made "), "\(text.out)")
        #expect(text.out.contains("live, 1 download"))
        #expect(
            text.out.contains("  2026-12-07T09:01:05Z  download ann.mobileconfig  198.51.100.7  Mozilla/5.0 (iPhone)"))
        #expect(text.out.contains("ben  \(ben.prefix(12))") && text.out.contains("used, 0 downloads"))
        #expect(text.err.contains("1 line of out/rollout/handoff/audit.jsonl could not be read"), "\(text.err)")
        let json = site.run(["handoff-list", "inventory.yaml", "--offline", "--format", "json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let listed = try #require((document["handoff"] as? [String: Any])?["links"] as? [[String: Any]])
        #expect(
            listed.count == 3 && listed.compactMap { $0["status"] as? String }.sorted() == ["live", "live", "used"])
    }

    /// Every document of the hand-off commands, and of a run that ends links, matches docs/json-output.schema.json.
    @Test(.needs(.schemaPython)) func theJSONDocumentsMatchTheSchema() throws {
        try TestDependency.schemaPython.require()
        let dir = try temporaryDirectory()
        let site = try HandOffSite.make(in: dir)
        var documents: [String] = []
        func keep(_ arguments: [String]) throws -> [String: Any] {
            let r = site.run(arguments + ["--format", "json"])
            #expect(r.code == 0, "\(arguments): \(r.err)")
            let path = dir + "/doc-\(documents.count).json"
            try r.out.write(toFile: path, atomically: true, encoding: .utf8)
            documents.append(path)
            return try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        }
        _ = try keep(["handoff", "inventory.yaml", "--no-publish"])
        let rotated = try keep(["rotate-password", "cat", "inventory.yaml"])
        #expect((rotated["handoffEnded"] as? [[String: Any]])?.first?["reason"] as? String == "replaced")
        let next = ((rotated["summary"] as? [String: Any])?["next"] as? [String: Any])?["handOff"] as? String
        #expect(next == "vpnprov handoff inventory.yaml")
        _ = try keep(["handoff-revoke", "ann", "inventory.yaml", "--no-publish"])
        _ = try keep(["handoff-list", "inventory.yaml", "--offline"])
        let result = try runTool(
            [TestDependency.schemaPython.path, Repository.root + "/scripts/check-output", "json"] + documents)
        #expect(result.status == 0, "\(result.output)")
    }

    /// A run in another process finds the folders generate wrote fresh, with every `acme:` key written: the
    /// render cache's fingerprint once described the ACME settings with `String(reflecting:)`, whose
    /// dictionary of locations comes out in each process's own hash order, so no later run (hand-off
    /// included) ever found a user's folder as generate left it.
    @Test func aLaterProcessFindsTheFoldersFreshWithEveryACMEKeyWritten() throws {
        let dir = try temporaryDirectory()
        let text = HandOffSite.inventory.replacingOccurrences(
            of: "acme: {email: ops@example.com}",
            with: "acme:\n  email: ops@example.com\n  directory: https://acme.example.com/dir\n  key: ec256\n"
                + "  renew_days: 20\n  challenge: http-01")
        // Both in processes of their own (a run in-process is another build, whose cache entries no binary takes).
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generated = try VPNProvBinary.run(["generate", "inventory.yaml"], in: dir)
        try #require(generated.status == 0, "\(generated.err)")
        let site = HandOffSite(dir: dir)
        for _ in 0..<3 {
            let other = try VPNProvBinary.run(["handoff", "inventory.yaml", "--no-publish", "--users", "cat"], in: dir)
            #expect(other.status == 0, "\(other.err)")
        }
        #expect(try site.ledger.count == 3)
    }
}
