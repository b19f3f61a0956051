import Foundation
import Glibc
import Synchronization
import VPNProvSupport

/// Fault injection for the crash-safety tests: with `VPNPROV_CRASH_AFTER_WRITES=n` the process dies at
/// the n-th write step (1-based, see `WriteSteps`) with SIGKILL, or with the signal
/// `VPNPROV_CRASH_SIGNAL` names (`INT`, `TERM`: what Ctrl-C and a service manager send; vpnprov leaves
/// them at their default action, so they end a run exactly where they arrive, like a kill).
package enum CrashAfterWrites {
    package static let variable = "VPNPROV_CRASH_AFTER_WRITES"
    static let signalVariable = "VPNPROV_CRASH_SIGNAL"

    /// `VPNPROV_WRITE_STEPS_FILE=path`: the run counts its write steps and `recordCount` writes the
    /// number there (how the crash tests read the layout of a run off a completed one).
    package static let countVariable = "VPNPROV_WRITE_STEPS_FILE"
    private static let counted = Mutex(0)

    /// Writes the number of write steps counted to the file `VPNPROV_WRITE_STEPS_FILE` names (at the end
    /// of a run); does nothing without the variable.
    package static func recordCount(from environment: [String: String]) {
        guard let path = environment[countVariable], !path.isEmpty else { return }
        try? Data("\(counted.withLock { $0 })\n".utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Installs the kill at the step the environment names, or the step counter; does nothing without
    /// either variable.
    package static func install(from environment: [String: String]) {
        if environment[countVariable] != nil {
            WriteSteps.install { counted.withLock { $0 += 1 } }
        }
        guard let limit = environment[variable].flatMap({ Int($0) }) else { return }
        let signal: Int32 =
            switch environment[signalVariable] {
            case "INT": SIGINT
            case "TERM": SIGTERM
            default: SIGKILL
            }
        let count = Mutex(0)
        WriteSteps.install {
            let reached = count.withLock { value -> Int in
                value += 1
                return value
            }
            guard reached >= limit else { return }
            // To the process, as Ctrl-C or `kill` sends it: the write steps run on worker threads, which
            // block signals, so the kernel delivers it to a thread that does not (the main thread).
            kill(getpid(), signal)
            // Wait for the delivery (milliseconds); should it never come, exit so the test sees no kill.
            for _ in 0..<1000 { usleep(10_000) }
            _exit(137)
        }
    }
}
