import Foundation
import Glibc
import VPNProvSupport
import VPNProvTestHarness

/// One FreeRADIUS 3.2 server (Debian's `freeradius`) running in the foreground inside a network namespace,
/// from a given configuration directory, logging to a file of its own: a RADIUS server of the fleet, or a
/// node's RADIUS relay (`Kind`), whose generated configurations name different directories.
///
///     let rad = try FreeRADIUSServer.start(in: ns, label: "rad-1", configDirectory: dir)
///     defer { rad.stop() }
///     let mark = rad.logMark
///     … // a login
///     #expect(rad.log(since: mark).contains("Login OK: [alice]"))
///
/// `freeradius -C` checks the directory first: a configuration FreeRADIUS rejects fails the start with its
/// output. Readiness is FreeRADIUS's own "Ready to process requests" line in the log (polled, with a deadline).
final class FreeRADIUSServer: Sendable {
    static let path = "/usr/sbin/freeradius"

    /// Which generated configuration it runs: its `logdir` under /var/log and the directory of its accounting
    /// buffer under /var/lib are named after it.
    enum Kind: String, Sendable {
        /// `radius/<server>/`
        case server = "vpnprov-freeradius"
        /// `servers/<node>/radius-relay/`
        case relay = "vpnprov-radius-relay"
    }

    let namespace: String
    let label: String
    let kind: Kind
    let configDirectory: String
    /// Variables the configuration reads with `$ENV{…}` (none for a generated directory).
    let environment: [String: String]
    /// Whether it runs with its namespace's `PrivateView`s in place (the files a host installs for it, under /etc).
    let withViews: Bool
    let runDirectory: URL
    /// Where FreeRADIUS logs (every start of this server appends to it): the generated configuration's
    /// `${logdir}/radius.log`, with the scratch directory mounted on its `logdir`, so that the lines the
    /// configuration itself writes there (its linelog of every login decision) are in it too.
    let logPath: String
    /// What the server keeps on disk across its restarts (the accounting buffer): a scratch directory mounted on
    /// the configuration's /var/lib/vpnprov-freeradius, so a stop and start (or a kill) of the server keeps it.
    let stateDirectory: URL
    /// The running daemon (nil when stopped) and whether its namespace drops RADIUS packets.
    private let running = Locked<(process: Daemon?, silenced: Bool)>((nil, false))
    private var process: Daemon? { running.withLock { $0.process } }

    var pid: Int32 { process?.pid ?? 0 }
    var isRunning: Bool { process?.isRunning ?? false }

    private init(
        namespace: String, label: String, kind: Kind, configDirectory: String, environment: [String: String],
        withViews: Bool
    ) throws {
        self.namespace = namespace
        self.label = label
        self.kind = kind
        self.configDirectory = configDirectory
        self.environment = environment
        self.withViews = withViews
        runDirectory = try Scratch.makeDirectory("radius-\(label)")
        logPath = runDirectory.appendingPathComponent("radius.log").path
        stateDirectory = runDirectory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }

    /// Checks the configuration (`freeradius -C`), starts the server and waits until it is ready.
    static func start(
        in namespace: String, label: String, kind: Kind = .server, configDirectory: String,
        environment: [String: String] = [:], withViews: Bool = false, timeout: Duration = .seconds(20)
    ) throws -> FreeRADIUSServer {
        let server = try FreeRADIUSServer(
            namespace: namespace, label: label, kind: kind, configDirectory: configDirectory, environment: environment,
            withViews: withViews)
        try server.checkConfiguration()
        try server.start(timeout: timeout)
        return server
    }

    /// `freeradius -C -d <dir>` in the server's namespace; throws with its output unless it accepts the directory.
    func checkConfiguration() throws {
        let check = try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            command(["-C", "-d", configDirectory, "-l", "stdout"]),
            environment: environment, timeout: .seconds(30))
        guard check.succeeded else {
            throw HarnessError("FreeRADIUS (\(label)) rejects the configuration in \(configDirectory): \(check)")
        }
    }

    /// Starts the daemon (again, after `stop()`) and waits for its next "Ready to process requests".
    func start(timeout: Duration = .seconds(20)) throws {
        if isRunning { return }
        let readyBefore = readyCount
        let stdoutPath = runDirectory.appendingPathComponent("stdout.log").path
        let process = try Daemon.start(
            StrongSwanEnvironment.ipPath, command(["-f", "-d", configDirectory]),
            environment: environment, outputPath: stdoutPath)
        running.withLock { $0.process = process }
        let deadline = ContinuousClock.now + timeout
        while readyCount <= readyBefore {
            if !process.isRunning || ContinuousClock.now > deadline {
                let out = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
                let why = process.isRunning ? "timeout" : "exited"
                stop()
                throw HarnessError("FreeRADIUS (\(label)) did not become ready (\(why)):\n\(out)\n\(log.suffix(4000))")
            }
            usleep(10_000)
        }
    }

    /// `ip netns exec <ns> sh -c '<mounts>; exec freeradius …'`: `ip netns exec` and the shell exec in place, so
    /// the pid is the server's. FreeRADIUS creates its `run_dir` and `logdir` when they are missing, and a
    /// deployed configuration names fixed ones (/var/run/…, /var/log/…): in the private mount namespace `ip netns
    /// exec` gives it, a tmpfs over /run, /var/log and /var/lib take them, so nothing is created on the host.
    /// The configuration's `logdir` (`/var/log/vpnprov-freeradius`, a relay's `/var/log/vpnprov-radius-relay`) is the
    /// scratch directory, bind-mounted there, and its accounting buffer's directory (`/var/lib/…` of the same name)
    /// is `stateDirectory`. `withViews`: the namespace's `PrivateView`s are put in place first.
    private func command(_ arguments: [String]) -> [String] {
        let script =
            "set -e\n" + (withViews ? PrivateView.mountScript(for: namespace) : "")
                + """
                mount -t tmpfs -o size=1m,mode=0755 vpnp-radius /run
                mount -t tmpfs -o size=1m,mode=0755 vpnp-radius /var/log
                mkdir /var/log/\(kind.rawValue)
                mount --bind "$1" /var/log/\(kind.rawValue)
                mount -t tmpfs -o size=1m,mode=0755 vpnp-radius /var/lib
                mkdir /var/lib/\(kind.rawValue)
                mount --bind "$2" /var/lib/\(kind.rawValue)
                shift 2
                exec "$@"
                """
        return [
            "netns", "exec", namespace, "/bin/sh", "-c", script, "sh", runDirectory.path, stateDirectory.path,
            Self.path,
        ] + arguments
    }

    private var readyCount: Int { log.components(separatedBy: "Ready to process requests").count - 1 }

    /// SIGTERM, wait up to `timeout`, then SIGKILL. Safe to call twice; `start()` may follow.
    func stop(timeout: Duration = .seconds(5)) {
        running.withLock { running in
            defer { running.process = nil }
            return running.process
        }?.stop(timeout: timeout)
    }

    /// SIGKILL, as a crash or a lost host ends it: nothing it holds in memory is written or answered. `start()`
    /// may follow (its buffer directory is kept).
    func kill() {
        running.withLock { running in
            defer { running.process = nil }
            return running.process
        }?.stop(signal: SIGKILL)
    }

    /// Makes the server silent as a dead host is: its namespace drops every RADIUS packet (authentication
    /// and accounting ports) without an answer, while the process keeps running.
    func silence() throws {
        guard !running.withLock({ $0.silenced }) else { return }
        try NetworkPair.loadNftables(
            """
            table inet radius_silence {
              chain in {
                type filter hook input priority 0; policy accept;
                udp dport { 1812, 1813 } drop
              }
            }

            """, in: namespace)
        running.withLock { $0.silenced = true }
    }

    /// Undoes `silence()`.
    func unsilence() throws {
        guard running.withLock({ $0.silenced }) else { return }
        try NetworkPair.loadNftables("delete table inet radius_silence\n", in: namespace)
        running.withLock { $0.silenced = false }
    }

    deinit { stop() }

    // MARK: log

    /// What the configuration itself writes into `${logdir}/radius.log` (the policy's linelog lines; FreeRADIUS's
    /// own lines go to `-l`): the file is in the tmpfs of the server's private mount namespace, read through
    /// /proc/<pid>/root. Empty when the server is not running or wrote none. The file lives as long as the process.
    var policyLog: String {
        guard pid > 0 else { return "" }
        return (try? String(contentsOfFile: "/proc/\(pid)/root/var/log/\(kind.rawValue)/radius.log", encoding: .utf8))
            ?? ""
    }

    /// Everything the server logged so far (all of its starts).
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// A position in the log, for `log(since:)`.
    var logMark: Int { log.utf8.count }

    /// What the server logged after `mark`.
    func log(since mark: Int) -> String { NodeUnderTest.since(mark, log) }

    /// The server's log and its stdout/stderr (the places a leaked secret would show).
    var allOutput: String {
        log + ((try? String(contentsOf: runDirectory.appendingPathComponent("stdout.log"), encoding: .utf8)) ?? "")
    }
}
