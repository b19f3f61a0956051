import Foundation

/// Runs `body` for 0..<count on all cores and returns the results in order; rethrows the first error.
package func parallelMap<T>(_ count: Int, _ body: (Int) throws -> T) throws -> [T] {
    // The first error in index order, so the outcome does not depend on scheduling.
    try parallelMap(count) { i in Result { try body(i) } }.map { try $0.get() }
}

/// `body(0..<count)` on all cores, results in index order.
package func parallelMap<T>(_ count: Int, _ body: (Int) -> T) -> [T] {
    if count <= 1 { return (0..<count).map(body) }
    let slots = ParallelSlots<T>(count)
    withoutActuallyEscaping(body) { body in
        let box = UncheckedBox(body)
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let value = box.value(i)
            slots.lock.lock()
            slots.values[i] = value
            slots.lock.unlock()
        }
    }
    return slots.values.map { $0! }
}

package final class ParallelSlots<T>: @unchecked Sendable {
    package var values: [T?]
    package let lock = NSLock()
    package init(_ count: Int) { values = Array(repeating: nil, count: count) }
}

struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
