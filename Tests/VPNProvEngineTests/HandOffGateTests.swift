import Foundation
import Glibc
import Testing
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvEngine

/// The hand-off site's gate as the role installs it (`deploy/roles/vpnprov_handoff/files/vpnprov-handoff-gate`,
/// Python with python3-cryptography), run on a unix socket as nginx would ask it, against the links `vpnprov
/// handoff` wrote: the device's section first, each file once with its content type, then gone from the store;
/// a used-up, expired, withdrawn or replaced link gets a page that says so and no file; nothing the gate prints
/// or records holds a token; the audit journal stays bounded. The site with nginx, TLS and a browser is
/// `HandOffBrowserTests` (end to end).
@Suite(.temporaries, .serialized) struct HandOffGateTests {
    static let curl = TestDependency(
        path: "/usr/bin/curl", installedBy: "the Debian package curl (scripts/install-test-deps)")

    static let agents = [
        "apple":
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        "android":
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36",
        "windows":
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
        "linux": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    ]

    /// A gate serving a store of its own on a socket in a short directory (a socket path has at most 107 bytes).
    final class Gate {
        let script: String
        let store: String
        let socketDirectory: String
        var socket: String { socketDirectory + "/gate.sock" }
        let log: String
        let process = Process()
        let exited = ChildExit()

        init(site: HandOffSite, store: String) throws {
            script = site.out + "/deploy/roles/vpnprov_handoff/files/vpnprov-handoff-gate"
            self.store = store
            var template = Array("/tmp/vpnp-gate-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
            socketDirectory = String(cString: made)
            log = store + ".log"
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }

        /// Takes `out/handoff/` in as a rollout would (the index and the links the store does not know).
        func publish(_ site: HandOffSite) throws -> [String: Int] {
            let incoming = store + "-incoming"
            try? FileManager.default.removeItem(atPath: incoming)
            try FileManager.default.createDirectory(atPath: incoming + "/links", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: site.out + "/handoff/index.json", toPath: incoming + "/index.json")
            for name in try FileManager.default.contentsOfDirectory(atPath: site.out + "/handoff/links") {
                try FileManager.default.copyItem(
                    atPath: site.out + "/handoff/links/" + name, toPath: incoming + "/links/" + name)
            }
            let result = try runTool(["python3", script, "import", "--store", store, "--incoming", incoming])
            try #require(result.status == 0, "\(result.output)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: incoming + "/links").isEmpty)
            let counts = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Int]
            return counts ?? [:]
        }

        /// Serves; `sweepSeconds`: the gate's sweep interval instead of its SWEEP_SECONDS (set on the script
        /// loaded as a module, the way a test patches a constant; the script reads no such setting).
        func start(sweepSeconds: Int? = nil) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            let arguments = ["serve", "--store", store, "--socket", socket]
            if let sweepSeconds {
                let loader = """
                    import importlib.machinery, importlib.util, sys
                    loader = importlib.machinery.SourceFileLoader("gate", sys.argv[1])
                    gate = importlib.util.module_from_spec(importlib.util.spec_from_loader("gate", loader))
                    loader.exec_module(gate)
                    gate.SWEEP_SECONDS = \(sweepSeconds)
                    sys.argv = ["vpnprov-handoff-gate"] + sys.argv[2:]
                    gate.main()
                    """
                process.arguments = ["-c", loader, script] + arguments
            } else {
                process.arguments = [script] + arguments
            }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardOutput = handle
            process.standardError = handle
            exited.handle(process)
            try process.run()
            exited.watch(process.processIdentifier)
            let deadline = ContinuousClock.now + .seconds(20)
            while !FileManager.default.fileExists(atPath: socket) {
                try #require(exited.status == nil, "the gate exited: \(output)")
                try #require(ContinuousClock.now < deadline, "the gate did not listen: \(output)")
                usleep(20_000)
            }
        }

        var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        /// A request as nginx passes it: status, headers (lower-cased names), body. `post`: as the page's
        /// download button sends it (an empty form).
        func get(_ path: String, agent: String = "test", head: Bool = false, post: Bool = false) throws -> (
            status: Int, headers: [String: String], body: Data
        ) {
            let body = store + ".body"
            let headers = store + ".headers"
            let result = try runTool(
                [
                    "curl", "-sS", "--unix-socket", socket, "-o", body, "-D", headers, "-A", agent, "-H",
                    "X-Real-IP: 198.51.100.7",
                ]
                    + (head ? ["-I"] : []) + (post ? ["-d", ""] : []) + ["http://get.vpn.example.com" + path])
            try #require(result.status == 0, "curl: \(result.output)")
            let lines = try String(contentsOfFile: headers, encoding: .utf8).split(separator: "\r\n")
            let status = Int(lines.first?.split(separator: " ")[1] ?? "") ?? 0
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            return (status, fields, (try? Data(contentsOf: URL(fileURLWithPath: body))) ?? Data())
        }

        func record(_ id: String) throws -> [String: Any] {
            let data = try Data(contentsOf: URL(fileURLWithPath: store + "/links/\(id).json"))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        /// Changes link `id`'s record in the store as the gate writes it: under the store's lock, in one rename.
        func rewrite(_ id: String, _ change: (inout [String: Any]) -> Void) throws {
            let lock = open(store + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(lock >= 0)
            defer { close(lock) }
            try #require(flock(lock, LOCK_EX) == 0)
            var record = try self.record(id)
            change(&record)
            let data = try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys])
            try data.write(to: URL(fileURLWithPath: store + "/links/\(id).json"), options: .atomic)
        }

        /// SIGTERM, as systemd stops the service, must end it.
        func stop() {
            if process.processIdentifier > 0 && exited.status == nil {
                kill(process.processIdentifier, SIGTERM)
                if !exited.wait(for: .seconds(10)) {
                    Issue.record("the gate did not end on SIGTERM")
                    kill(process.processIdentifier, SIGKILL)
                    _ = exited.wait(for: .seconds(10))
                }
            }
            try? FileManager.default.removeItem(atPath: socketDirectory)
        }
    }

    static func path(_ url: String) -> String { String(url.dropFirst("https://get.vpn.example.com".count)) }

    @Test(.needs(.python3, Self.curl))
    func theGateServesEachFileAsOftenAsAllowedAndThenNothing() throws {
        try TestDependency.python3.require()
        try Self.curl.require()
        let dir = try temporaryDirectory()
        let site = try HandOffSite.make(in: dir)
        let links = try site.handOff()
        let gate = try Gate(site: site, store: dir + "/store")
        defer { gate.stop() }
        #expect(try gate.publish(site) == ["installed": 3, "ended": 0, "expired": 0])
        try gate.start()
        let ann = try #require(links["ann"]?["url"] as? String)
        let ben = try #require(links["ben"]?["url"] as? String)
        let cat = try #require(links["cat"]?["url"] as? String)

        // The device that opens the page gets its own section first.
        for (device, first) in [("apple", "apple"), ("android", "android"), ("windows", "windows"), ("linux", "linux")]
        {
            let page = try gate.get(Self.path(ann), agent: Self.agents[device]!)
            #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
            let html = String(decoding: page.body, as: UTF8.self)
            let sections = html.components(separatedBy: "<section class=\"").dropFirst().map {
                String($0.split(separator: "\"")[2])
            }
            #expect(sections.first == first, "\(device): \(sections)")
            #expect(html.contains("this device"))
            #expect(
                !html.contains(String(ann.dropFirst("https://get.vpn.example.com/h/".count).dropLast())),
                "the page holds its token")
        }
        let benPage = String(decoding: try gate.get(Self.path(ben), agent: Self.agents["linux"]!).body, as: UTF8.self)
        #expect(
            benPage.contains("<section class=\"this\" id=\"networkmanager\">"), "a Linux desktop: NetworkManager first")
        // Without the final slash, a redirect to the page.
        let bare = try gate.get(String(Self.path(ann).dropLast()))
        #expect(bare.status == 308 && bare.headers["location"] == Self.path(ann))

        // The page offers each file as a form's button (scanners follow links, not forms), posted to its place.
        let apple = String(decoding: try gate.get(Self.path(ann)).body, as: UTF8.self)
        #expect(
            apple.contains(
                "<form method=\"post\" action=\"0/ann.mobileconfig\"><button class=\"file\" type=\"submit\">"),
            "\(apple)")
        #expect(!apple.contains("<a "), "a link on the page")
        #expect(try gate.get(Self.path(ann)).headers["content-security-policy"]?.contains("form-action 'self'") == true)
        // A file: its bytes, its content type, as an attachment; a HEAD or GET (a scanner following the address)
        // counts nothing; the second time, no file.
        let mobileconfig = Self.path(ann) + "0/ann.mobileconfig"
        #expect(try gate.get(mobileconfig, head: true).status == 405)
        let followed = try gate.get(mobileconfig)
        #expect(followed.status == 405 && followed.headers["allow"] == "POST", "a GET of a file: \(followed.status)")
        #expect(!String(decoding: followed.body, as: UTF8.self).contains("PayloadContent"))
        #expect(try gate.get(Self.path(ann), post: true).status == 405, "a POST to the page")
        let file = try gate.get(mobileconfig, agent: Self.agents["apple"]!, post: true)
        #expect(file.status == 200 && file.headers["content-type"] == "application/x-apple-aspen-config")
        #expect(file.headers["content-disposition"] == "attachment; filename=\"ann.mobileconfig\"")
        #expect(file.headers["cache-control"] == "no-store" && file.headers["referrer-policy"] == "no-referrer")
        #expect(file.body == FileManager.default.contents(atPath: site.out + "/clients/ann/ann.mobileconfig"))
        let again = try gate.get(mobileconfig)
        #expect(again.status == 410 && String(decoding: again.body, as: UTF8.self).contains("already downloaded"))
        let annID = try #require(links["ann"]?["id"] as? String)
        let annFiles = try #require(try gate.record(annID)["files"] as? [[String: Any]])
        #expect(annFiles[0]["sealed"] == nil && annFiles[1]["sealed"] != nil, "the file's sealed copy is gone")
        let sswan = try gate.get(Self.path(ann) + "1/n1-ikev2-eap.sswan", agent: Self.agents["android"]!, post: true)
        #expect(sswan.headers["content-type"] == "application/vnd.strongswan.profile")
        #expect(sswan.body == FileManager.default.contents(atPath: site.out + "/clients/ann/n1-ikev2-eap.sswan"))
        let page = String(decoding: try gate.get(Self.path(ann)).body, as: UTF8.self)
        #expect(page.contains("ann.mobileconfig: already downloaded"))
        // A file name that is not the one at that place: nothing.
        #expect(try gate.get(Self.path(ann) + "2/ann.mobileconfig", post: true).status == 404)

        // Every file of cat's link downloaded: the link is used, its page says so, the store keeps no file.
        let catID = try #require(links["cat"]?["id"] as? String)
        for (index, name) in ((try gate.record(catID)["files"] as? [[String: Any]]) ?? []).enumerated() {
            #expect(
                try gate.get(Self.path(cat) + "\(index)/\(name["name"] as? String ?? "")", post: true).status == 200)
        }
        let used = try gate.get(Self.path(cat))
        #expect(used.status == 410 && String(decoding: used.body, as: UTF8.self).contains("This link has been used"))
        let tombstone = try gate.record(catID)
        #expect(tombstone["ended"] as? String == "used" && tombstone["files"] == nil && tombstone["page"] == nil)

        // A token nobody made: not valid.
        let unknown = try gate.get("/h/" + String(repeating: "A", count: 43) + "/")
        #expect(
            unknown.status == 404 && String(decoding: unknown.body, as: UTF8.self).contains("This link is not valid"))

        // Withdrawn (handoff-revoke) and replaced (a new link of ben's): at the next publish.
        #expect(site.run(["handoff-revoke", "ann", "inventory.yaml", "--no-publish"]).code == 0)
        let newer = try site.handOff(["--users", "ben"])
        #expect(try gate.publish(site) == ["installed": 1, "ended": 2, "expired": 0])
        #expect(
            try gate.publish(site) == ["installed": 0, "ended": 0, "expired": 0], "a second publish changes nothing")
        let withdrawn = try gate.get(Self.path(ann))
        #expect(
            withdrawn.status == 410
                && String(decoding: withdrawn.body, as: UTF8.self).contains("This link was withdrawn"))
        #expect(try gate.get(Self.path(ann) + "1/n1-ikev2-eap.sswan", post: true).status == 410)
        let replaced = try gate.get(Self.path(ben))
        #expect(
            replaced.status == 410 && String(decoding: replaced.body, as: UTF8.self).contains("This link was replaced"))
        let benNew = try #require(newer["ben"]?["url"] as? String)
        #expect(try gate.get(Self.path(benNew)).status == 200)
        for id in [annID, try #require(links["ben"]?["id"] as? String)] {
            let record = try gate.record(id)
            #expect(record["files"] == nil && record["page"] == nil, "an ended link keeps no sealed file")
        }

        // The journal: who fetched what, from where; no token in it or in the gate's own output.
        let journal = try String(contentsOfFile: gate.store + "/audit.jsonl", encoding: .utf8)
        #expect(journal.contains("\"event\": \"download\", \"file\": \"ann.mobileconfig\""))
        #expect(journal.contains("\"address\": \"198.51.100.7\""))
        #expect(journal.contains("\"reason\": \"used\""))
        for url in [ann, ben, cat, benNew] {
            let token = String(url.dropFirst("https://get.vpn.example.com/h/".count).dropLast())
            #expect(!journal.contains(token) && !gate.output.contains(token), "a token was recorded")
        }
        // The store is the gate's user's only.
        for path in [gate.store, gate.store + "/links"] {
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o700)
        }
        for path in [gate.store + "/audit.jsonl", gate.store + "/links/\(annID).json"] {
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        }
    }

    /// The audit journal forgets a link with its tombstone (30 days after its expiry) and never grows past 16 MiB:
    /// every publish fetches it whole, and `handoff-list` reads at most 64 MiB of it.
    @Test(.needs(.python3)) func theJournalIsBounded() throws {
        try TestDependency.python3.require()
        let dir = try temporaryDirectory()
        let site = try HandOffSite.make(in: dir)
        let links = try site.handOff(["--users", "cat"])
        let cat = try #require(links["cat"]?["id"] as? String)
        let gate = try Gate(site: site, store: dir + "/store")
        defer { gate.stop() }
        #expect(try gate.publish(site)["installed"] == 1)
        // A link that ended 40 days ago (its tombstone is due to go), and 17 MiB of views of cat's link.
        let old = String(repeating: "0", count: 32)
        let tombstone =
            #"{"version": 1, "id": "\#(old)", "user": "ben", "expires": 1000000000, "ended": "used", "endedAt": 1000000000}"#
        try tombstone.write(toFile: gate.store + "/links/\(old).json", atomically: true, encoding: .utf8)
        let view = { (n: Int, link: String) in
            #"{"address": "198.51.100.7", "agent": "Mozilla/5.0 (iPhone)", "event": "view", "link": "\#(link)", "n": \#(n), "time": "2026-12-07T09:01:00Z", "user": "cat"}"#
                + "\n"
        }
        var journal = view(0, old)
        var n = 1
        while journal.utf8.count < 17 << 20 {
            journal += view(n, cat)
            n += 1
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: gate.store + "/audit.jsonl"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(journal.utf8))
        try handle.close()
        _ = try gate.publish(site)
        #expect(!FileManager.default.fileExists(atPath: gate.store + "/links/\(old).json"), "the tombstone went")
        let kept = try String(contentsOfFile: gate.store + "/audit.jsonl", encoding: .utf8)
        #expect(kept.utf8.count <= 8 << 20 && kept.utf8.count > 7 << 20, "\(kept.utf8.count) bytes kept")
        let forgotten = !kept.contains(old)
        #expect(forgotten, "the events of a forgotten link stay")
        let lines = kept.split(separator: "\n")
        let whole = lines.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") }
        #expect(whole, "a line cut in two")
        let newest = lines.last?.contains("\"n\": \(n - 1),") == true
        #expect(newest, "the newest event is kept")
        #expect(
            try FileManager.default.attributesOfItem(atPath: gate.store + "/audit.jsonl")[.posixPermissions] as? Int
                == 0o600)
    }

    /// A link whose time is up when the site takes it in (made with the clock two hours back, for an hour) is
    /// ended at once: its page says it expired and it serves nothing.
    @Test(.needs(.python3, Self.curl)) func anExpiredLinkServesNothing() throws {
        try TestDependency.python3.require()
        try Self.curl.require()
        let dir = try temporaryDirectory()
        let site = try HandOffSite.make(in: dir)
        let links = try site.handOff(["--users", "cat", "--expires", "1h"], now: Date() - 7200)
        let gate = try Gate(site: site, store: dir + "/store")
        defer { gate.stop() }
        #expect(try gate.publish(site) == ["installed": 1, "ended": 0, "expired": 1])
        try gate.start()
        let cat = try #require(links["cat"]?["url"] as? String)
        let page = try gate.get(Self.path(cat))
        #expect(page.status == 410 && String(decoding: page.body, as: UTF8.self).contains("This link has expired"))
        #expect(try gate.get(Self.path(cat) + "0/cat.mobileconfig", post: true).status == 410)
        let record = try gate.record(try #require(links["cat"]?["id"] as? String))
        #expect(record["ended"] as? String == "expired" && record["files"] == nil)
    }

    /// A serving gate ends a link whose time ran out by itself, with no request for it and no import: its
    /// sweeper (every SWEEP_SECONDS, 1 s here) marks it expired and drops its files, as a request would.
    @Test(.needs(.python3, Self.curl)) func theSweeperEndsALinkWhoseTimeRanOutWithoutARequest() throws {
        try TestDependency.python3.require()
        let dir = try temporaryDirectory()
        let site = try HandOffSite.make(in: dir)
        let links = try site.handOff(["--users", "cat"])
        let gate = try Gate(site: site, store: dir + "/store")
        defer { gate.stop() }
        #expect(try gate.publish(site) == ["installed": 1, "ended": 0, "expired": 0])
        let id = try #require(links["cat"]?["id"] as? String)
        #expect(try gate.record(id)["files"] != nil)
        try gate.start(sweepSeconds: 1)
        #expect(try gate.record(id)["ended"] == nil, "ended before its time")
        try gate.rewrite(id) { $0["expires"] = Int(Date().timeIntervalSince1970) - 1 }
        let deadline = ContinuousClock.now + .seconds(20)
        while try gate.record(id)["ended"] == nil {
            try #require(ContinuousClock.now < deadline, "no sweep ended the link: \(gate.output)")
            usleep(50_000)
        }
        let record = try gate.record(id)
        #expect(record["ended"] as? String == "expired" && record["files"] == nil, "\(record.keys.sorted())")
        #expect(!gate.output.contains("sweep failed"), "\(gate.output)")
    }
}
