import Foundation

/// `transform` of every item, in the items' order, computed on all cores: for the mutation tests,
/// whose thousands of inputs each go through pure readers. The checks stay with the caller, on the
/// test's own task, so every issue is recorded against the test.
func parallelMap<T: Sendable, R>(_ items: [T], _ transform: @Sendable (T) -> R) -> [R] {
    let results = ParallelResults<R>(count: items.count)
    let lanes = max(1, ProcessInfo.processInfo.activeProcessorCount)
    DispatchQueue.concurrentPerform(iterations: lanes) { lane in
        for index in stride(from: lane, to: items.count, by: lanes) {
            let value = transform(items[index])
            results.lock.withLock { results.values[index] = value }
        }
    }
    return results.values.map { $0! }
}

private final class ParallelResults<R>: @unchecked Sendable {
    let lock = NSLock()
    var values: [R?]
    init(count: Int) { values = Array(repeating: nil, count: count) }
}
