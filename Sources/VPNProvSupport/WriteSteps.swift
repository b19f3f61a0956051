import Foundation

import Glibc

/// Test-only fault injection for the crash-safety test: with VPNPROV_CRASH_AFTER_WRITES=n
/// in the environment, the process dies with SIGKILL at the n-th write step (1-based) of a state or
/// output file, or with the signal VPNPROV_CRASH_SIGNAL names (`INT`, `TERM`: what Ctrl-C and a
/// service manager send; vpnprov leaves them at their default action, so they end a run exactly
/// where they arrive, like a kill). Every atomic write has two steps: its temporary file is complete but not yet renamed
/// (step 2k-1), and it has been renamed into place (step 2k). Without the variable (every normal run)
/// this does nothing beyond one environment lookup per process.
package enum CrashTestHook {
    private static let limit: Int? = ProcessInfo.processInfo.environment["VPNPROV_CRASH_AFTER_WRITES"].flatMap { Int($0) }
    private static let counter = StepCounter()
    private static let signal: Int32 = {
        switch ProcessInfo.processInfo.environment["VPNPROV_CRASH_SIGNAL"] {
        case "INT": return SIGINT
        case "TERM": return SIGTERM
        default: return SIGKILL
        }
    }()

    /// One write step happened; dies here when it is the chosen one.
    package static func step() {
        guard let limit else { return }
        if counter.increment() >= limit {
            // To the process, as Ctrl-C or `kill` sends it: the write steps run on worker threads, which
            // block signals, so the kernel delivers it to a thread that does not (the main thread).
            kill(getpid(), signal)
            // Wait for the delivery (milliseconds); should it never come, exit so the test sees no kill.
            for _ in 0..<1000 { usleep(10_000) }
            _exit(137)
        }
    }

    private final class StepCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func increment() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
