import Foundation
import Glibc
import VPNProvTestHarness

/// One `charon-systemd` running inside a network namespace, with a private strongswan.conf, vici socket and
/// log file in its own run directory. `swanctl` calls made through it talk to this daemon only, with the
/// `swanctl` of the same strongSwan build (`StrongSwanBuild`: the host's 5.9 or the Debian 13 tree's 6.0).
///
///     let server = try Charon.start(in: pair.serverNamespace, label: "server",
///                                   settingsIncludes: [generatedDir + "/strongswan.d/vpnprov.conf"])
///     defer { server.stop() }
///     try server.loadAllCleanly(confFile: generatedDir + "/swanctl/swanctl.conf")
final class Charon: Sendable {
    let namespace: String
    let build: StrongSwanBuild
    let label: String
    let runDirectory: URL
    let settingsPath: String
    let socketPath: String
    let logPath: String
    private let process: Daemon
    private let stopped = Once()

    var pid: Int32 { process.pid }
    private var environment: [String: String] { ["STRONGSWAN_CONF": settingsPath] }

    private init(
        namespace: String, build: StrongSwanBuild, label: String, runDirectory: URL, process: Daemon
    ) {
        self.namespace = namespace
        self.build = build
        self.label = label
        self.runDirectory = runDirectory
        self.settingsPath = runDirectory.appendingPathComponent("strongswan.conf").path
        self.socketPath = runDirectory.appendingPathComponent("charon.vici").path
        self.logPath = runDirectory.appendingPathComponent("charon.log").path
        self.process = process
    }

    /// Starts charon in `namespace` and waits (bounded) until its vici socket exists.
    /// - Parameters:
    ///   - settingsIncludes: strongswan.conf snippets to `include` at top level (e.g. a node's generated
    ///     `strongswan.d/vpnprov.conf`); absolute paths.
    ///   - extraSettings: more strongswan.conf text appended verbatim.
    ///   - build: which strongSwan runs (the host's by default).
    ///   - extraPlugins: plugins charon loads beyond the build's list (e.g. `eap-radius` on a node whose
    ///     password services go to RADIUS).
    static func start(
        in namespace: String,
        build: StrongSwanBuild = .host,
        label: String,
        settingsIncludes: [String] = [],
        extraSettings: String = "",
        extraPlugins: [String] = [],
        timeout: Duration = .seconds(15)
    ) throws -> Charon {
        try build.require()
        let dir = try Scratch.makeDirectory("charon-\(label)")
        // `ip netns exec` (and the tree's `sh -c '…; exec chroot …'`) exec charon in place: the pid we hold is
        // charon's, so stopping it also ends the mount namespace of a tree build.
        let (executable, arguments) = build.command(in: namespace, StrongSwanBuild.charonPath, [])
        let settingsPath = dir.appendingPathComponent("strongswan.conf").path
        try Self.settings(
            build: build, socketPath: dir.appendingPathComponent("charon.vici").path,
            logPath: dir.appendingPathComponent("charon.log").path, extraPlugins: extraPlugins,
            includes: settingsIncludes, extra: extraSettings
        ).write(toFile: settingsPath, atomically: true, encoding: .utf8)
        let stdoutURL = dir.appendingPathComponent("charon.stdout")
        let process = try Daemon.start(
            executable, arguments, environment: ["STRONGSWAN_CONF": settingsPath], outputPath: stdoutURL.path)
        let charon = Charon(namespace: namespace, build: build, label: label, runDirectory: dir, process: process)

        // Wait for the condition "socket exists" (or "daemon died"), polling with a deadline.
        let deadline = ContinuousClock.now + timeout
        while !FileManager.default.fileExists(atPath: charon.socketPath) {
            if !process.isRunning || ContinuousClock.now > deadline {
                let out = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
                let log = charon.log
                charon.stop()
                throw HarnessError(
                    "charon (\(label), \(build)) did not open \(charon.socketPath): "
                        + (process.isRunning ? "timeout" : "exited") + "\n\(out)\n\(log)")
            }
            usleep(5_000)
        }
        return charon
    }

    /// The strongswan.conf of a harness charon: the plugin set, the vici socket (for charon and swanctl) and a
    /// file log.
    static func settings(
        build: StrongSwanBuild, socketPath: String, logPath: String, extraPlugins: [String] = [],
        includes: [String] = [], extra: String = ""
    ) -> String {
        var text = """
            # written by the vpnprov end-to-end harness
            charon-systemd {
              load = \(([build.charonPlugins] + extraPlugins).joined(separator: " "))
              plugins {
                vici {
                  socket = unix://\(socketPath)
                }
              }
              journal {
                default = -1
              }
            }
            charon {
              # charon-systemd reads its file loggers from here (charon-systemd falls back to charon)
              filelog {
                e2e {
                  path = \(logPath)
                  default = 1
                  ike = 2
                  cfg = 2
                  knl = 1
                  time_format = %H:%M:%S
                  flush_line = yes
                }
              }
            }
            swanctl {
              socket = unix://\(socketPath)
              load = \(build.swanctlPlugins)
            }

            """
        for include in includes { text += "include \(include)\n" }
        text += extra
        if !text.hasSuffix("\n") { text += "\n" }
        return text
    }

    /// SIGKILL, as a crash or a power cut ends it: charon deletes no IKE_SA and sends no accounting Stop.
    func crash() {
        guard stopped.claim() else { return }
        process.stop(signal: SIGKILL)
    }

    /// SIGTERM, wait up to `timeout`, then SIGKILL. Safe to call twice.
    func stop(timeout: Duration = .seconds(5)) {
        guard stopped.claim() else { return }
        process.stop(timeout: timeout)
    }

    deinit { stop() }

    // MARK: swanctl

    /// Runs `swanctl <arguments>` (of the daemon's build, in the daemon's namespace) against this daemon.
    func swanctl(_ arguments: [String], timeout: Duration = .seconds(30)) throws -> ProgramResult {
        if build.root == nil {
            return try Subprocess.run(
                StrongSwanBuild.swanctlPath, arguments, environment: environment, timeout: timeout)
        }
        let (executable, args) = build.command(in: namespace, StrongSwanBuild.swanctlPath, arguments)
        return try Subprocess.run(executable, args, environment: environment, timeout: timeout)
    }

    /// `swanctl --version --daemon`: the version the running charon reports. Asked again (within `timeout`) until
    /// it answers: on a loaded machine the first request could come back empty (seen under load in the
    /// matrix). The last result whatever it holds, for the caller's expectation to show.
    func daemonVersion(timeout: Duration = .seconds(60)) throws -> ProgramResult {
        var result = try swanctl(["--version", "--daemon"])
        let deadline = ContinuousClock.now + timeout
        while !(result.succeeded && result.stdout.contains("strongSwan")) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            result = try swanctl(["--version", "--daemon"])
        }
        return result
    }

    /// `swanctl --load-all --noprompt --file <confFile>` (credentials are read from the dirs beside it).
    /// With `clear`, charon's credentials are emptied first (`--clear`): without it, certificates an earlier
    /// configuration loaded (a CA the device then trusted) stay loaded. Throws when swanctl exits non-zero;
    /// returns the result for inspection otherwise.
    @discardableResult
    func loadAll(confFile: String, clear: Bool = false) throws -> ProgramResult {
        let result = try swanctl(["--load-all", "--noprompt", "--file", confFile] + (clear ? ["--clear"] : []))
        guard result.succeeded else { throw HarnessError("load failed: \(result)") }
        return result
    }

    /// `loadAll` plus: any output line saying failed/invalid/ignored/discarded is an error.
    @discardableResult
    func loadAllCleanly(confFile: String, clear: Bool = false) throws -> ProgramResult {
        let result = try loadAll(confFile: confFile, clear: clear)
        let problems = Self.loadProblems(in: result.output)
        guard problems.isEmpty else {
            throw HarnessError("swanctl load reported problems:\n" + problems.joined(separator: "\n"))
        }
        return result
    }

    /// Lines of swanctl output that mean something was not loaded as written (failed, invalid, ignored/ignoring,
    /// discarded; case-insensitive). The one exception is
    /// "opening directory '…/x509aa' failed: No such file or directory": swanctl looks into every standard
    /// credential directory and a config without e.g. CRLs simply has no `x509crl/`.
    static func loadProblems(in output: String) -> [String] {
        let words = ["failed", "invalid", "ignored", "ignoring", "discarded"]
        return output.split(separator: "\n").map(String.init).filter { line in
            let lower = line.lowercased()
            guard words.contains(where: lower.contains) else { return false }
            if lower.hasPrefix("opening directory '"), lower.hasSuffix("' failed: no such file or directory") {
                return false
            }
            return true
        }
    }

    /// `swanctl --initiate --child <child> [--ike <ike>] --timeout <s>`; exit 0 once the CHILD_SA is up.
    func initiate(child: String, ike: String? = nil, timeout: Duration = .seconds(20)) throws -> ProgramResult {
        var args = ["--initiate", "--child", child]
        if let ike { args += ["--ike", ike] }
        args += ["--timeout", String(timeout.components.seconds)]
        return try swanctl(args, timeout: timeout + .seconds(5))
    }

    /// `swanctl --terminate --ike <ike>` (waits for the delete to complete, bounded).
    @discardableResult
    func terminate(ike: String, timeout: Duration = .seconds(10)) throws -> ProgramResult {
        try swanctl(
            ["--terminate", "--ike", ike, "--timeout", String(timeout.components.seconds)],
            timeout: timeout + .seconds(5))
    }

    /// Established IKE_SAs with their CHILD_SAs (from `swanctl --list-sas --raw`).
    func securityAssociations() throws -> [IKESA] {
        let result = try swanctl(["--list-sas", "--raw"])
        guard result.succeeded else { throw HarnessError("list-sas failed: \(result)") }
        return IKESA.parse(raw: result.stdout)
    }

    /// Virtual IPs assigned to this (client) daemon by `ike`, or by any IKE_SA when nil.
    func virtualIPs(ike: String? = nil) throws -> [String] {
        try securityAssociations().filter { ike == nil || $0.name == ike }.flatMap(\.localVirtualIPs)
    }

    // MARK: log

    /// The daemon's log so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Whether the log contains `text` (case-sensitive), e.g. "no shared key found", "NO_PROPOSAL_CHOSEN",
    /// "constraint check failed", "certificate was revoked", "MAC mismatched".
    func logContains(_ text: String) -> Bool { log.contains(text) }

    /// Log lines containing `text`.
    func logLines(containing text: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { $0.contains(text) }
    }
}

/// One IKE_SA as `swanctl --list-sas --raw` reports it (only what tests need).
struct IKESA: Sendable {
    struct Child: Sendable {
        var name: String
        var state: String
        var localTS: [String]
        var remoteTS: [String]
        var encryption: String
        var packetsIn: Int
        var packetsOut: Int
    }
    var name: String
    var state: String
    var version: Int
    var localID: String
    var remoteID: String
    var encryption: String
    var integrity: String?
    var prf: String?
    var dhGroup: String?
    var localVirtualIPs: [String]
    var children: [Child]
    /// The daemon's unique ID of this IKE_SA (the same SA keeps it across rekeying).
    var uniqueID = ""
    /// The peer's EAP or XAuth identity, when it authenticated with one.
    var remoteEAPID: String?

    /// Parses the vici "raw" text: `list-sa event {name {k=v k=[a b] child-sas {c {k=v}}}}` one event per line.
    static func parse(raw: String) -> [IKESA] {
        raw.split(separator: "\n").compactMap { line -> IKESA? in
            guard line.hasPrefix("list-sa event {") else { return nil }
            var parser = RawParser(text: Substring(line.dropFirst("list-sa event ".count)))
            guard case .section(let top)? = parser.value(), let (name, body) = top.first,
                case .section(let ike) = body
            else { return nil }
            func str(_ d: [(String, RawParser.Value)], _ k: String) -> String? {
                if case .string(let s)? = d.first(where: { $0.0 == k })?.1 { return s }
                return nil
            }
            func list(_ d: [(String, RawParser.Value)], _ k: String) -> [String] {
                if case .list(let l)? = d.first(where: { $0.0 == k })?.1 { return l }
                return []
            }
            var children: [Child] = []
            if case .section(let kids)? = ike.first(where: { $0.0 == "child-sas" })?.1 {
                for (_, value) in kids {
                    guard case .section(let c) = value else { continue }
                    children.append(
                        Child(
                            name: str(c, "name") ?? "", state: str(c, "state") ?? "",
                            localTS: list(c, "local-ts"), remoteTS: list(c, "remote-ts"),
                            encryption: str(c, "encr-alg") ?? "",
                            packetsIn: Int(str(c, "packets-in") ?? "") ?? 0,
                            packetsOut: Int(str(c, "packets-out") ?? "") ?? 0))
                }
            }
            return IKESA(
                name: name, state: str(ike, "state") ?? "", version: Int(str(ike, "version") ?? "") ?? 0,
                localID: str(ike, "local-id") ?? "", remoteID: str(ike, "remote-id") ?? "",
                encryption: str(ike, "encr-alg") ?? "", integrity: str(ike, "integ-alg"),
                prf: str(ike, "prf-alg"), dhGroup: str(ike, "dh-group"),
                localVirtualIPs: list(ike, "local-vips"), children: children,
                uniqueID: str(ike, "uniqueid") ?? "",
                remoteEAPID: str(ike, "remote-eap-id") ?? str(ike, "remote-xauth-id"))
        }
    }
}

/// Tiny reader for swanctl's `--raw` format: `{k=v k=[a b] s {…}}`.
private struct RawParser {
    indirect enum Value {
        case string(String)
        case list([String])
        case section([(String, Value)])
    }
    var text: Substring

    mutating func skipSpaces() { text = text.drop(while: { $0 == " " }) }

    mutating func token() -> String {
        let t = text.prefix(while: { !" {}=[]".contains($0) })
        text = text.dropFirst(t.count)
        return String(t)
    }

    /// Parses `{ … }` at the current position.
    mutating func value() -> Value? {
        skipSpaces()
        guard text.first == "{" else { return nil }
        text = text.dropFirst()
        var entries: [(String, Value)] = []
        while true {
            skipSpaces()
            guard let c = text.first else { return .section(entries) }
            if c == "}" {
                text = text.dropFirst()
                return .section(entries)
            }
            let key = token()
            skipSpaces()
            if text.first == "=" {
                text = text.dropFirst()
                if text.first == "[" {
                    text = text.dropFirst()
                    var items: [String] = []
                    while let f = text.first, f != "]" {
                        if f == " " {
                            text = text.dropFirst()
                            continue
                        }
                        // An item ends only at a space or the list's closing bracket: items hold `=`
                        // (distinguished names; a stop at it would never advance) and brackets of their own
                        // (a traffic selector's protocol, `192.0.2.1/32[17]`).
                        var depth = 0
                        let item = text.prefix { c in
                            if c == "[" { depth += 1 } else if c == "]" { depth -= 1 }
                            return c != " " && depth >= 0
                        }
                        text = text.dropFirst(item.count)
                        items.append(String(item))
                    }
                    text = text.dropFirst()
                    entries.append((key, .list(items)))
                } else {
                    entries.append((key, .string(token())))
                }
            } else if text.first == "{" {
                guard let v = value() else { return nil }
                entries.append((key, v))
            } else if key.isEmpty {
                return nil
            }
        }
    }
}
