import Dispatch
import Synchronization

/// Runs `body` for 0..<count on all cores and returns the results in order; rethrows the first error.
package func parallelMap<T: Sendable>(_ count: Int, _ body: @Sendable (Int) throws -> T) throws -> [T] {
    // The first error in index order, so the outcome does not depend on scheduling.
    try parallelMap(count) { i in Result { try body(i) } }.map { try $0.get() }
}

/// `body(0..<count)` on all cores, results in index order.
package func parallelMap<T: Sendable>(_ count: Int, _ body: @Sendable (Int) -> T) -> [T] {
    if count <= 1 { return (0..<count).map(body) }
    let slots = Mutex<[T?]>(Array(repeating: nil, count: count))
    DispatchQueue.concurrentPerform(iterations: count) { i in
        let value = body(i)
        slots.withLock { $0[i] = value }
    }
    return slots.withLock { $0.map { $0! } }
}

/// `body`, started on another thread at once; `value` waits for its result. For work that can overlap
/// a serial stretch of the caller (a run reads the previous run's caches while the state loads).
package final class Background<T: Sendable>: Sendable {
    private let slot = Mutex<T?>(nil)
    private let finished = DispatchGroup()

    package init(_ body: @escaping @Sendable () -> T) {
        finished.enter()
        DispatchQueue.global().async { [self] in
            let result = body()
            slot.withLock { $0 = result }
            finished.leave()
        }
    }

    /// The result, once `body` has returned.
    package var value: T {
        finished.wait()
        return slot.withLock { $0! }
    }
}
