import Foundation
import Glibc
import VPNProvSupport

/// What a finished (or killed) command left behind.
package struct ProgramResult: Sendable, CustomStringConvertible {
    package var executable: String
    package var arguments: [String]
    package var exitCode: Int32
    /// The child ended by a signal (`exitCode` is the signal's number then).
    package var killedBySignal: Bool = false
    package var stdout: String
    package var stderr: String
    /// The deadline passed and the process was killed.
    package var timedOut: Bool
    /// The child's process id (its leftovers are named by it).
    package var pid: Int32 = 0

    package var succeeded: Bool { exitCode == 0 && !timedOut && !killedBySignal }
    /// stdout then stderr, for searching.
    package var output: String {
        stderr.isEmpty ? stdout : stdout + (stdout.hasSuffix("\n") || stdout.isEmpty ? "" : "\n") + stderr
    }
    package var lines: [Substring] { output.split(separator: "\n", omittingEmptySubsequences: true) }

    package var description: String {
        let what = ([executable] + arguments).joined(separator: " ")
        let how = timedOut ? "timed out" : killedBySignal ? "killed by signal \(exitCode)" : "exit \(exitCode)"
        return "`\(what)` (\(how))\n\(output)"
    }
}

/// Errors of the harness itself (environment, set-up, tools misbehaving).
package struct HarnessError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// The one way the tests run a program: to completion with a deadline of its own, its output in files (not
/// pipes: a daemon that inherits the descriptors cannot block us, and nothing blocks on a full pipe), its
/// exit seen by `ChildExit`. Long-running children are `Daemon`s.
package enum Subprocess {
    /// Runs `executable` to completion (or kills it at the deadline: SIGTERM, then SIGKILL).
    /// - `environment`: added to the test process's own (`inheriting`), which `VPNProvBinary` filters.
    /// - `directory`: the working directory; `input`: the child's standard input (else /dev/null).
    package static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        inheriting inherited: [String: String] = ProcessInfo.processInfo.environment,
        directory: String? = nil,
        input: [UInt8]? = nil,
        timeout: Duration = .seconds(30)
    ) throws -> ProgramResult {
        let files = try TestTemporaries.makeDirectory("cmd")
        defer { try? FileManager.default.removeItem(atPath: files) }
        let (outPath, errPath, inPath) = (files + "/out", files + "/err", files + "/in")
        guard FileManager.default.createFile(atPath: outPath, contents: nil),
            FileManager.default.createFile(atPath: errPath, contents: nil),
            FileManager.default.createFile(atPath: inPath, contents: Data(input ?? []))
        else { throw HarnessError("cannot create the output files of \(executable) in \(files)") }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        defer { for handle in [out, err, stdin] { try? handle.close() } }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = inherited.merging(environment) { $1 }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        process.standardOutput = out
        process.standardError = err
        let exited = ChildExit()
        exited.handle(process)
        do {
            try process.run()
        } catch {
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
        let status = exited.status ?? ChildExit.Status(code: -1, killedBySignal: false)
        return ProgramResult(
            executable: executable, arguments: arguments, exitCode: status.code,
            killedBySignal: status.killedBySignal && !timedOut,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "", timedOut: timedOut,
            pid: process.processIdentifier)
    }

    /// Like `run`, but a non-zero exit or a timeout is an error carrying the output.
    @discardableResult
    package static func check(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: String? = nil,
        input: [UInt8]? = nil,
        timeout: Duration = .seconds(30)
    ) throws -> ProgramResult {
        let result = try run(
            executable, arguments, environment: environment, directory: directory, input: input, timeout: timeout)
        guard result.succeeded else { throw HarnessError("command failed: \(result)") }
        return result
    }

    /// `run` on a thread of its own, awaited: a long run (ansible-playbook takes tens of seconds) then
    /// holds none of the few threads Swift Testing runs tests on, and the rest of the suite goes on.
    package static func runAwaiting(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> ProgramResult {
        try await onOwnThread { try run(executable, arguments, environment: environment, timeout: timeout) }
    }

    /// Runs `body` in the calling task (so its expectations count for the test) with a thread of its own as the
    /// task's executor: its blocking steps hold none of the few threads Swift Testing runs tests on, and after
    /// every `await` it goes on at once instead of queueing behind the synchronous tests for one of them (the
    /// Ansible rollout scenarios: minutes of work, started early, so the run does not end waiting for them).
    package static func onOwnExecutor<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let executor = ThreadExecutor()
        defer { executor.finish() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    /// Runs `body` on a thread of its own, awaited (for long blocking work: a whole lab scenario). `body` must not
    /// record test issues itself (the thread is outside the test's task); it returns what the test then checks.
    package static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// A long-running child the harness starts (charon, FreeRADIUS, PostgreSQL, nginx): stdin /dev/null, stdout and
/// stderr appended to a file (not a pipe a daemon could block on), stopped by its pid.
package final class Daemon: Sendable {
    /// Kept for as long as the daemon: Foundation's bookkeeping of the child lives in it. Never used after start.
    private let process: Locked<Process>
    private let watch: ChildExit
    package let pid: Int32

    package var isRunning: Bool { watch.status == nil }
    /// How it ended, once it has.
    package var status: ChildExit.Status? { watch.status }

    private init(process: Process, watch: ChildExit) {
        self.process = Locked(process)
        self.watch = watch
        self.pid = process.processIdentifier
    }

    /// Starts `executable arguments…` with `environment` added to ours, output appended to `outputPath`.
    ///
    /// The child gets no blocked signal: it inherits the spawning thread's signal mask, and a thread of the test
    /// process may block SIGTERM. Seen: FreeRADIUS started from one ignored SIGTERM (it only installs handlers;
    /// charon and the postmaster set their own masks) and was killed 5 s later.
    package static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], outputPath: String
    ) throws -> Daemon {
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
        let exited = ChildExit()
        exited.handle(process)
        try runWithNoSignalBlocked(process)
        exited.watch(process.processIdentifier)
        return Daemon(process: process, watch: exited)
    }

    /// Starts `process` with no signal blocked in the child (see `start`).
    package static func runWithNoSignalBlocked(_ process: Process) throws {
        var none = sigset_t()
        var mask = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &mask)
        defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
        try process.run()
    }

    /// Waits up to `timeout` for the daemon to exit by itself; true when it has.
    package func wait(for timeout: Duration) -> Bool { watch.wait(for: timeout) }

    /// `signal` (SIGTERM unless said), wait up to `timeout` for the exit, then SIGKILL. Safe to call twice.
    package func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(5)) {
        guard pid > 0, isRunning else { return }
        kill(pid, signal)
        if !watch.wait(for: timeout) {
            kill(pid, SIGKILL)
            _ = watch.wait(for: .seconds(5))
        }
    }
}

/// A task executor that is one thread of its own, running the jobs enqueued on it in order until `finish()`
/// (`Subprocess.onOwnExecutor`).
package final class ThreadExecutor: TaskExecutor, Sendable {
    /// The jobs not yet run, and whether `finish()` was called; `ready` counts what the thread has to look at.
    private let queue = Locked<(jobs: [UnownedJob], finished: Bool)>(([], false))
    private let ready = DispatchSemaphore(value: 0)

    package init() {
        let thread = Thread { [self] in drain() }
        thread.name = "vpnprov-test-executor"
        thread.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        ready.signal()
    }

    /// Lets the thread end once it has run what is enqueued.
    package func finish() {
        queue.withLock { $0.finished = true }
        ready.signal()
    }

    private func drain() {
        while true {
            ready.wait()
            let next: UnownedJob? = queue.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
            guard let next else { return }  // only `finish()` signals with nothing enqueued
            next.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
