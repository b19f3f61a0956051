import VPNProvSupport

/// A flag set once, for what may be called twice, from two threads (a teardown, a stop): `claim()` is true
/// for the first caller only.
package final class Once: Sendable {
    private let done = Locked(false)

    package init() {}

    package func claim() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}
