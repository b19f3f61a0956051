import Foundation

/// A value shared between threads, read and changed only under its lock.
///
/// The one lock type of the product that is `@unchecked Sendable`: the compiler cannot see that a lock guards
/// a value, so that promise is made here once, where it is easy to check (`state` is private and touched only
/// inside `withLock`), instead of in every class that holds a lock beside some variables. The lock is an
/// `NSLock`, not `Synchronization.Mutex`: ThreadSanitizer, which `.ci/run` runs over the concurrent parts,
/// reported reads under a `Mutex` as races where this pattern was first used (the write-step hook), while
/// it understands `NSLock`. Where a `Mutex` is already used and ThreadSanitizer is content, it stays (a
/// `Mutex` needs no `@unchecked`). The product's only other `@unchecked` is not a lock: the state a run loads
/// on another thread, handed over once (`PKIManager.StatePreload`), which a `sending` result through
/// `Background` cannot yet express.
package final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    package init(_ state: State) { self.state = state }

    /// Runs `body` with the value, holding the lock; what `body` changes is the new value.
    @discardableResult
    package func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

}

extension Locked where State: Sendable {
    /// A copy of the value, taken under the lock.
    package var value: State { withLock { $0 } }
}
