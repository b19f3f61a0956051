import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestHarness

/// Debian's Chromium, headless, in a lab host's network namespace, driven over its DevTools protocol
/// (https://chromedevtools.github.io/devtools-protocol/) on a pipe (`--remote-debugging-pipe`: the browser
/// reads commands from descriptor 3 and writes answers and events to descriptor 4, each a JSON text ended by a
/// NUL byte), so no debugging port is opened in the lab. A `Tab` is a browser context of its own (its own
/// cookies and download directory) with one page, as a phone or a desktop opening a link.
///
/// The browser trusts what `trustedRoots` names, through the NSS database in its `HOME` (Chromium on Linux
/// verifies server certificates against it): the lab's ACME CA is its public CA. Its temporary files go to the
/// scratch directory (`TMPDIR`, `--disable-dev-shm-usage`), nothing to the host's.
final class HeadlessChromium: Sendable {
    static let path = "/usr/bin/chromium"
    static let certutilPath = "/usr/bin/certutil"

    /// Why Chromium cannot run here, or nil.
    static var unavailableReason: String? {
        for (path, what) in [(path, "chromium (apt: chromium)"), (certutilPath, "certutil (apt: libnss3-tools)")]
        where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(what) not found at \(path)"
        }
        return nil
    }

    struct ProtocolError: Error, CustomStringConvertible {
        var description: String
    }

    let scratch: URL
    private let process = Process()
    private let exited = ChildExit()
    private let input = Pipe()
    private let output = Pipe()
    /// What the browser sent (every message, and whether its pipe closed) and the last command id; `arrived`
    /// is signalled after each change, for a wait that found nothing yet.
    private let received = Locked<(messages: [[String: Any]], nextID: Int, closed: Bool)>(([], 0, false))
    private let arrived = NSCondition()

    /// Starts Chromium in `namespace` (with the namespace's `PrivateView`s, for its `/etc/hosts`).
    init(namespace: String, trustedRoots: [String]) throws {
        if let reason = Self.unavailableReason { throw HarnessError("Chromium cannot run: \(reason)") }
        scratch = try Scratch.makeDirectory("chromium")
        let home = scratch.appendingPathComponent("home").path
        let tmp = scratch.appendingPathComponent("tmp").path
        let nss = home + "/.pki/nssdb"
        try FileManager.default.createDirectory(atPath: nss, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        try Subprocess.check(Self.certutilPath, ["-N", "-d", "sql:" + nss, "--empty-password"])
        for (index, root) in trustedRoots.enumerated() {
            try Subprocess.check(
                Self.certutilPath, ["-A", "-d", "sql:" + nss, "-n", "lab-root-\(index)", "-t", "C,,", "-i", root])
        }
        let flags = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--password-store=basic", "--remote-debugging-pipe",
            "--user-data-dir=" + scratch.appendingPathComponent("profile").path, "about:blank",
        ]
        // The shell puts the pipes on descriptors 3 and 4 and execs Chromium (Debian's wrapper script, which
        // execs the browser in turn): the pid is the browser's.
        let script = "exec \(Self.path) \(flags.map { "'\($0)'" }.joined(separator: " ")) 3<&0 4>&1 0</dev/null 1>&2"
        let command = PrivateView.exec(namespace, "/bin/sh", ["-c", script])
        process.executableURL = URL(fileURLWithPath: StrongSwanEnvironment.ipPath)
        process.arguments = command
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home
        environment["TMPDIR"] = tmp
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        let log = scratch.appendingPathComponent("chromium.log").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        exited.handle(process)
        try Daemon.runWithNoSignalBlocked(process)
        exited.watch(process.processIdentifier)
        Thread { [self] in readMessages() }.start()
        _ = try send("Browser.getVersion")
    }

    var log: String { (try? String(contentsOf: scratch.appendingPathComponent("chromium.log"), encoding: .utf8)) ?? "" }

    /// Splits what the browser writes into messages.
    private func readMessages() {
        let reader = output.fileHandleForReading
        var buffer = Data()
        while case let chunk = reader.availableData, !chunk.isEmpty {
            buffer += chunk
            while let end = buffer.firstIndex(of: 0) {
                let text = buffer[buffer.startIndex..<end]
                buffer = Data(buffer[(end + 1)...])
                if let message = try? JSONSerialization.jsonObject(with: text) as? [String: Any] {
                    received.withLock { $0.messages.append(message) }
                    signalArrival()
                }
            }
        }
        received.withLock { $0.closed = true }
        signalArrival()
    }

    private func signalArrival() {
        arrived.lock()
        arrived.broadcast()
        arrived.unlock()
    }

    /// Sends a command and waits for its answer; throws on the protocol's error.
    @discardableResult
    func send(
        _ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Duration = .seconds(30)
    ) throws -> [String: Any] {
        let id = received.withLock { received in
            received.nextID += 1
            return received.nextID
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: message) + Data([0]))
        let answer = try wait(timeout, what: method) { $0["id"] as? Int == id }
        if let error = answer["error"] { throw ProtocolError(description: "\(method): \(error)") }
        return answer["result"] as? [String: Any] ?? [:]
    }

    /// The first message (answer or event) received that `matches`, waiting up to `timeout`. Events stay in
    /// the list, so one that came before the wait is found too.
    func wait(_ timeout: Duration, what: String, _ matches: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date() + Double(timeout.components.seconds)
        while true {
            let (found, closed) = received.withLock { ($0.messages.first(where: matches), $0.closed) }
            if let found { return found }
            if closed {
                throw ProtocolError(description: "Chromium ended while waiting for \(what):\n\(log.suffix(2000))")
            }
            guard Date() < deadline else { throw ProtocolError(description: "no \(what) within \(timeout)") }
            // A message that arrives between the look above and this wait is seen at the next look, at most
            // 100 ms later: the wait is bounded, not a lost wake-up.
            arrived.lock()
            _ = arrived.wait(until: min(deadline, Date() + 0.1))
            arrived.unlock()
        }
    }

    /// The events received so far named `method`.
    func events(_ method: String) -> [[String: Any]] {
        received.withLock { $0.messages.filter { $0["method"] as? String == method } }
    }

    /// A new tab of its own browser context, as a device with `userAgent` opens it; its downloads go to a
    /// directory of its own.
    func tab(userAgent: String, width: Int, height: Int, mobile: Bool, scale: Double = 1) throws -> Tab {
        let context = try send("Target.createBrowserContext")["browserContextId"] as? String ?? ""
        let downloads = scratch.appendingPathComponent("downloads-\(context)")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        try send(
            "Browser.setDownloadBehavior",
            ["behavior": "allow", "downloadPath": downloads.path, "browserContextId": context, "eventsEnabled": true])
        let target =
            try send("Target.createTarget", ["url": "about:blank", "browserContextId": context])["targetId"] as? String
            ?? ""
        let session =
            try send("Target.attachToTarget", ["targetId": target, "flatten": true])["sessionId"] as? String ?? ""
        let tab = Tab(browser: self, session: session, downloads: downloads)
        try tab.send("Page.enable")
        try tab.send("Network.enable")
        try tab.send("Emulation.setUserAgentOverride", ["userAgent": userAgent])
        try tab.send(
            "Emulation.setDeviceMetricsOverride",
            ["width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile])
        return tab
    }

    func stop() {
        if process.processIdentifier > 0 && exited.status == nil {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGTERM)
            if !exited.wait(for: .seconds(10)) {
                kill(process.processIdentifier, SIGKILL)
                _ = exited.wait(for: .seconds(5))
            }
        }
        try? FileManager.default.removeItem(at: scratch)
    }

    deinit { stop() }

    /// One page of a browser context.
    final class Tab {
        let browser: HeadlessChromium
        let session: String
        let downloads: URL

        init(browser: HeadlessChromium, session: String, downloads: URL) {
            self.browser = browser
            self.session = session
            self.downloads = downloads
        }

        @discardableResult
        func send(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
            try browser.send(method, params, session: session)
        }

        private func loads() -> Int {
            browser.events("Page.loadEventFired").filter { $0["sessionId"] as? String == session }.count
        }

        /// Opens `url` and waits until the page has loaded; returns its HTML.
        func open(_ url: String) throws -> String {
            let before = loads()
            let answer = try send("Page.navigate", ["url": url])
            if let error = answer["errorText"] as? String { throw ProtocolError(description: "\(url): \(error)") }
            try waitForLoad(after: before)
            return try html()
        }

        private func waitForLoad(after count: Int) throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while loads() <= count {
                if ContinuousClock.now > deadline { throw ProtocolError(description: "the page did not load") }
                usleep(20_000)
            }
        }

        /// The page's HTML as the browser holds it.
        func html() throws -> String {
            let root = try send("DOM.getDocument")["root"] as? [String: Any]
            let node = root?["nodeId"] as? Int ?? 0
            return try send("DOM.getOuterHTML", ["nodeId": node])["outerHTML"] as? String ?? ""
        }

        /// Clicks the element `selector` names with the mouse, as a person taps it: no script of the page runs.
        func click(_ selector: String) throws {
            let root = (try send("DOM.getDocument")["root"] as? [String: Any])?["nodeId"] as? Int ?? 0
            let node = try send("DOM.querySelector", ["nodeId": root, "selector": selector])["nodeId"] as? Int ?? 0
            guard node != 0 else { throw ProtocolError(description: "no element \(selector) on the page") }
            try send("DOM.scrollIntoViewIfNeeded", ["nodeId": node])
            let model = try send("DOM.getBoxModel", ["nodeId": node])["model"] as? [String: Any]
            let quad = model?["content"] as? [Double] ?? []
            guard quad.count == 8 else { throw ProtocolError(description: "\(selector) has no box") }
            let x = (quad[0] + quad[2]) / 2
            let y = (quad[1] + quad[5]) / 2
            for type in ["mousePressed", "mouseReleased"] {
                try send(
                    "Input.dispatchMouseEvent",
                    ["type": type, "x": x, "y": y, "button": "left", "clickCount": 1])
            }
        }

        /// Clicks a link that leads to a download and waits for the download to complete; returns the file
        /// and the content type the server answered with.
        func download(_ selector: String) throws -> (file: URL, contentType: String) {
            func guid(_ message: [String: Any]) -> String? { (message["params"] as? [String: Any])?["guid"] as? String }
            let seen = Set(browser.events("Browser.downloadWillBegin").compactMap(guid))
            try click(selector)
            let begun = try browser.wait(.seconds(30), what: "a download") { message in
                message["method"] as? String == "Browser.downloadWillBegin" && !seen.contains(guid(message) ?? "")
            }
            let params = begun["params"] as? [String: Any] ?? [:]
            let guid = params["guid"] as? String ?? ""
            let url = params["url"] as? String ?? ""
            let done = try browser.wait(.seconds(30), what: "the download of \(url)") { message in
                guard message["method"] as? String == "Browser.downloadProgress",
                    let p = message["params"] as? [String: Any], p["guid"] as? String == guid
                else { return false }
                return p["state"] as? String == "completed" || p["state"] as? String == "canceled"
            }
            let progress = done["params"] as? [String: Any] ?? [:]
            guard progress["state"] as? String == "completed", let path = progress["filePath"] as? String else {
                throw ProtocolError(description: "the download of \(url) was canceled")
            }
            let response = browser.events("Network.responseReceived").last { message in
                ((message["params"] as? [String: Any])?["response"] as? [String: Any])?["url"] as? String == url
            }
            let headers = ((response?["params"] as? [String: Any])?["response"] as? [String: Any])?["headers"]
            let type =
                (headers as? [String: Any])?.first { $0.key.lowercased() == "content-type" }?.value as? String ?? ""
            return (URL(fileURLWithPath: path), type)
        }

        /// Clicks a link that leads to a page (not a download) and returns its HTML once it loaded.
        func follow(_ selector: String) throws -> String {
            let before = loads()
            try click(selector)
            try waitForLoad(after: before)
            return try html()
        }

        /// The files downloaded into this tab's directory so far.
        var downloaded: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: downloads.path)) ?? []).sorted()
        }

        /// The visible page as PNG.
        func screenshot() throws -> Data {
            let data = try send("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true])["data"]
            guard let text = data as? String, let png = Data(base64Encoded: text) else {
                throw ProtocolError(description: "no screenshot")
            }
            return png
        }
    }
}
