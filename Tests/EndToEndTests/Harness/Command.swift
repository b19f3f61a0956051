import Foundation
import Glibc
import VPNProvTestSupport

/// What a finished (or killed) command left behind.
struct CommandResult: Sendable, CustomStringConvertible {
    var executable: String
    var arguments: [String]
    var exitCode: Int32
    var stdout: String
    var stderr: String
    /// The deadline passed and the process was killed.
    var timedOut: Bool

    var succeeded: Bool { exitCode == 0 && !timedOut }
    /// stdout then stderr, for searching.
    var output: String {
        stderr.isEmpty ? stdout : stdout + (stdout.hasSuffix("\n") || stdout.isEmpty ? "" : "\n") + stderr
    }
    var lines: [Substring] { output.split(separator: "\n", omittingEmptySubsequences: true) }

    var description: String {
        let what = ([executable] + arguments).joined(separator: " ")
        let how = timedOut ? "timed out" : "exit \(exitCode)"
        return "`\(what)` (\(how))\n\(output)"
    }
}

/// Errors of the harness itself (environment, set-up, tools misbehaving).
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A value set once from another thread (the termination handler).
final class OneShot: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var fired = false

    func fire() {
        lock.lock()
        let first = !fired
        fired = true
        lock.unlock()
        if first { semaphore.signal() }
    }

    /// Waits until fired or the deadline passes; true when fired.
    func wait(for duration: Duration) -> Bool {
        let nanos = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        if semaphore.wait(timeout: .now() + .nanoseconds(Int(nanos))) == .success {
            semaphore.signal()  // stay fired for later waiters
            return true
        }
        return false
    }
}

/// A task executor that is one thread of its own, running the jobs enqueued on it in order until `finish()`
/// (`Command.onOwnExecutor`).
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init() {
        let thread = Thread { [self] in drain() }
        thread.name = "vpnprov-test-executor"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once it has run what is enqueued.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func drain() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs external tools with a deadline each, so a hang cannot stall the suite.
/// Output goes to files (not pipes): a daemon that inherits the descriptors cannot block us.
enum Command {
    /// `run` on a thread of its own, awaited: a long run (ansible-playbook takes tens of seconds) then
    /// holds none of the few threads Swift Testing runs tests on, and the rest of the suite goes on.
    static func runAwaiting(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> CommandResult {
        try await onOwnThread { try run(executable, arguments, environment: environment, timeout: timeout) }
    }

    /// Runs `body` in the calling task (so its expectations count for the test) with a thread of its own as the
    /// task's executor: its blocking steps hold none of the few threads Swift Testing runs tests on, and after
    /// every `await` it goes on at once instead of queueing behind the synchronous tests for one of them (the
    /// Ansible rollout scenarios: minutes of work, started early, so the run does not end waiting for them).
    static func onOwnExecutor<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let executor = ThreadExecutor()
        defer { executor.finish() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    /// Runs `body` on a thread of its own, awaited (for long blocking work: a whole lab scenario). `body` must not
    /// record test issues itself (the thread is outside the test's task); it returns what the test then checks.
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Runs `executable` to completion (or kills it at the deadline: SIGTERM, then SIGKILL).
    static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) throws -> CommandResult {
        let scratch = Scratch.directory.appendingPathComponent("cmd-\(Scratch.next())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out")
        let errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let exited = ChildExit()
        exited.handle(process)
        do {
            try process.run()
        } catch {
            try? out.close()
            try? err.close()
            throw HarnessError("cannot start \(executable): \(error)")
        }
        exited.watch(process.processIdentifier)
        var timedOut = false
        if !exited.wait(for: timeout) {
            timedOut = true
            kill(process.processIdentifier, SIGTERM)
            if !exited.wait(for: .seconds(2)) {
                kill(process.processIdentifier, SIGKILL)
                _ = exited.wait(for: .seconds(5))
            }
        }
        try? out.close()
        try? err.close()
        let stdout = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return CommandResult(
            executable: executable, arguments: arguments,
            exitCode: exited.status?.code ?? -1,
            stdout: stdout, stderr: stderr, timedOut: timedOut)
    }

    /// Like `run`, but a non-zero exit or a timeout is an error carrying the output.
    @discardableResult
    static func check(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) throws -> CommandResult {
        let result = try run(executable, arguments, environment: environment, timeout: timeout)
        guard result.succeeded else { throw HarnessError("command failed: \(result)") }
        return result
    }
}

/// Per-process scratch space and unique numbers.
enum Scratch {
    /// Prefix of every namespace and temp directory this harness creates; followed by our pid.
    static let prefix = "vpnp"

    private final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var value = 0
    }
    private static let counter = Counter()

    /// A number unique within this process.
    static func next() -> Int {
        counter.lock.lock()
        defer { counter.lock.unlock() }
        counter.value += 1
        return counter.value
    }

    static let pid = ProcessInfo.processInfo.processIdentifier

    /// `<tmp>/vpnp-e2e-<pid>`; created on first use and removed when the process exits. It holds the
    /// run's shared fixtures (generated trees, PKIs, daemons' files), which live as long as the run;
    /// every daemon that used it has been stopped by then. A run that dies leaves it to the next
    /// run's `removeStaleDirectories()`. As root (the end-to-end tests need root) it is a tmpfs of its
    /// own, for the reason the unit tests' directory is one (TestTemporaries: vpnprov's syncfs waits
    /// for every writer of the disk).
    static let directory: URL = {
        let url = URL(fileURLWithPath: path)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if geteuid() == 0, ProcessInfo.processInfo.environment["VPNPROV_TEST_TMPFS"] != "0" {
            _ = mount("vpnprov-e2e", url.path, "tmpfs", 0, "mode=0755,size=4g")
        }
        atexit { Scratch.removeAtExit() }
        return url
    }()

    /// Where `directory` is, without creating it (a run whose filter leaves out every end-to-end test
    /// still evaluates their conditions, and should create nothing).
    static let path = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-e2e-\(pid)").path

    /// Unmounts (when it is a mount point) and removes a scratch directory.
    static func remove(_ path: String) {
        var own = stat()
        var parent = stat()
        if stat(path, &own) == 0 && stat(path + "/..", &parent) == 0 && own.st_dev != parent.st_dev {
            _ = umount2(path, Int32(MNT_DETACH))
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// At exit: removes `directory`; when that fails (the run's files, keys among them, would stay in
    /// /tmp) the process exits 1, so the run fails.
    static func removeAtExit() {
        remove(directory.path)
        guard FileManager.default.fileExists(atPath: directory.path) else { return }
        FileHandle.standardError.write(
            Data("error: the end-to-end scratch directory \(directory.path) could not be removed\n".utf8))
        fflush(nil)
        _exit(1)
    }

    /// A fresh directory below `directory`.
    static func makeDirectory(_ label: String) throws -> URL {
        let url = directory.appendingPathComponent("\(label)-\(next())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// True when a process with that id exists.
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Removes temp directories of earlier runs whose process is gone.
    static func removeStaleDirectories() {
        let tmp = URL(fileURLWithPath: NSTemporaryDirectory())
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmp.path) else { return }
        for name in names where name.hasPrefix("\(prefix)-e2e-") {
            guard let pid = Int32(name.dropFirst("\(prefix)-e2e-".count)), pid != Self.pid else { continue }
            if !processExists(pid) { remove(tmp.appendingPathComponent(name).path) }
        }
    }
}

/// A long-running child the harness starts (charon, FreeRADIUS, PostgreSQL): stdin /dev/null, stdout and stderr
/// appended to a file (not a pipe a daemon could block on), stopped by its pid.
final class DaemonProcess: @unchecked Sendable {
    private let process: Process
    private let exited = ChildExit()

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { exited.status == nil }

    private init(process: Process) { self.process = process }

    /// Starts `executable arguments…` with `environment` added to ours, output appended to `outputPath`.
    ///
    /// The child gets no blocked signal: it inherits the spawning thread's signal mask, and a thread of the test
    /// process may block SIGTERM. Seen: FreeRADIUS started from one ignored SIGTERM (it only installs handlers;
    /// charon and the postmaster set their own masks) and was killed 5 s later.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], outputPath: String
    ) throws -> DaemonProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if !FileManager.default.fileExists(atPath: outputPath) {
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        output.seekToEndOfFile()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        let daemon = DaemonProcess(process: process)
        daemon.exited.handle(process)
        try runWithNoSignalBlocked(process)
        daemon.exited.watch(process.processIdentifier)
        return daemon
    }

    /// Starts `process` with no signal blocked in the child (see `start`).
    static func runWithNoSignalBlocked(_ process: Process) throws {
        var none = sigset_t()
        var mask = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &mask)
        defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
        try process.run()
    }

    /// `signal` (SIGTERM unless said), wait up to `timeout` for the exit, then SIGKILL. Safe to call twice.
    func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(5)) {
        guard process.processIdentifier > 0, isRunning else { return }
        kill(pid, signal)
        if !exited.wait(for: timeout) {
            kill(pid, SIGKILL)
            _ = exited.wait(for: .seconds(5))
        }
    }
}
