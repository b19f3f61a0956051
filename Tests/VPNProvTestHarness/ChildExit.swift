import Foundation
import Glibc
import VPNProvSupport

/// When a child started with Foundation's `Process` has exited, seen two ways at once.
///
/// swift-corelibs-foundation learns of a child's exit when a socket the child inherited reaches end of file. It
/// creates that socket without close-on-exec, so a program another thread starts at the same moment can inherit
/// it too, and then the exit is reported only when that program ends as well: a daemon lives for the whole test.
/// Seen once in CI, with charon daemons being started beside it: `ip route add` "timed out" after 30 s.
/// `watch(_:)` therefore also waits on the child itself with `waitid(WNOWAIT)`, which leaves the child for
/// Foundation to reap; whichever sees the exit first records it.
package final class ChildExit: Sendable {
    /// How a child ended: its exit code, or the signal that killed it.
    package struct Status: Sendable, Equatable {
        package var code: Int32
        package var killedBySignal: Bool

        package init(code: Int32, killedBySignal: Bool) {
            self.code = code
            self.killedBySignal = killedBySignal
        }
    }

    private let semaphore = DispatchSemaphore(value: 0)
    private let recorded = Locked<Status?>(nil)

    package init() {}

    /// Sets `process.terminationHandler` (before `run()`: a child that exits at once is not missed).
    package func handle(_ process: Process) {
        process.terminationHandler = { [self] finished in
            record(
                Status(code: finished.terminationStatus, killedBySignal: finished.terminationReason == .uncaughtSignal))
        }
    }

    /// Starts the second watch, on a thread of its own; call right after `run()`. The pid cannot be another
    /// child's by then: Foundation reaps only after the exit, and a pid comes back only after every other pid
    /// (`kernel.pid_max`) has been handed out.
    package func watch(_ pid: pid_t) {
        Thread { [self] in
            var info = siginfo_t()
            var rc: Int32
            repeat { rc = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) } while rc == -1 && errno == EINTR
            // ECHILD: Foundation has reaped the child already, so its handler has recorded the exit.
            guard rc == 0 else { return }
            let killed = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED
            record(Status(code: info._sifields._sigchld.si_status, killedBySignal: killed))
        }.start()
    }

    /// How the child ended, once it has.
    package var status: Status? { recorded.value }

    /// Waits until the child has exited or `duration` has passed; true when it has exited.
    package func wait(for duration: Duration) -> Bool {
        let (seconds, attoseconds) = duration.components
        let nanos = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard semaphore.wait(timeout: .now() + .nanoseconds(nanos)) == .success else { return false }
        semaphore.signal()  // stay signalled for later waiters
        return true
    }

    private func record(_ status: Status) {
        let first = recorded.withLock { recorded in
            guard recorded == nil else { return false }
            recorded = status
            return true
        }
        if first { semaphore.signal() }
    }
}
