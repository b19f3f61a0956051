import Foundation

/// A deadline on a test's own work, counted from when that work starts.
///
/// Swift Testing's `.timeLimit` counts from when a test is queued, so on a loaded machine (a CI runner
/// building beside the tests, two cores shared by every suite) a short test could fail before it ran a
/// line. A deadline here starts with the work: load slows a run but does not fail it, while work that
/// blocks or never ends (a read of a FIFO, an endless loop) still ends the run with a message instead of
/// hanging it. `body` runs where it is called, so its expectations belong to the calling test; a watchdog
/// thread waits for it, and when the deadline passes first it prints what was still running and exits
/// the test process with status 1 (a blocked body cannot be interrupted from outside).
package enum Deadline {
    /// A running deadline: `finish()` (or `defer { watch.finish() }`) when the work is done.
    package final class Watch: Sendable {
        fileprivate let finished = DispatchSemaphore(value: 0)
        package func finish() { finished.signal() }
    }

    /// Starts the deadline of the work that follows, for a test body that is long (a loop of thousands).
    package static func start(_ what: String, seconds: Int, file: StaticString = #fileID, line: UInt = #line) -> Watch {
        let watch = Watch()
        let message = "\(file):\(line): error: \(what) did not finish within its own deadline of \(seconds) s\n"
        let thread = Thread {
            if watch.finished.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
                FileHandle.standardError.write(Data(message.utf8))
                exit(1)
            }
        }
        thread.start()
        return watch
    }

    /// Runs `body` within a deadline of its own.
    package static func watch<T>(
        _ what: String, seconds: Int, file: StaticString = #fileID, line: UInt = #line, _ body: () throws -> T
    ) rethrows -> T {
        let watch = start(what, seconds: seconds, file: file, line: line)
        defer { watch.finish() }
        return try body()
    }
}
