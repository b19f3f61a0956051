import Foundation

/// The points between writes that must leave the state and the output tree recoverable: every atomic
/// write has two, when its temporary file is complete but not yet renamed (step 2k-1) and when it has
/// been renamed into place (step 2k). The product installs no hook, so a step costs one uncontended
/// lock; the crash-safety tests' executable (`vpnprov-testhooks`) installs one that kills the process
/// at a chosen step, through the same code paths a real run takes.
package enum WriteSteps {
    /// The hook, behind a `Locked` (an NSLock, which ThreadSanitizer sees; it reported reads under
    /// Synchronization's Mutex here as races).
    private static let hook = Locked<(@Sendable () -> Void)?>(nil)

    /// Calls `body` at every write step from now on (test executables only).
    package static func install(_ body: @escaping @Sendable () -> Void) {
        hook.withLock { $0 = body }
    }

    /// One write step happened.
    package static func step() {
        hook.value?()
    }
}
