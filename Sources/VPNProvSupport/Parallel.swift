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
