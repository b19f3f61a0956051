import Foundation

/// Waiting for something another process does, with a deadline: never a sleep standing in for the event.
package enum Poll {
    /// Checks `condition` every `interval` until it holds; throws naming `what` once `timeout` has passed, or when
    /// `alive` (is the process that should bring the condition about still there?) says no.
    package static func wait(
        _ what: String, timeout: Duration, interval: Duration = .milliseconds(10), while alive: () -> Bool = { true },
        until condition: () throws -> Bool
    ) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard alive() else { throw HarnessError("gone while waiting for \(what)") }
            guard ContinuousClock.now < deadline else { throw HarnessError("timeout waiting for \(what)") }
            let (seconds, attoseconds) = interval.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
        }
    }
}
