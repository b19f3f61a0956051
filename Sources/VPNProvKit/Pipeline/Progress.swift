import Foundation

/// Progress on stderr while certificates are issued: only when stderr is a terminal and not in CI.
final class Progress: @unchecked Sendable {
    private let console: Console
    private let enabled: Bool
    private let label: String
    private let lock = NSLock()
    private var lastShown = -1
    private var shownAny = false

    init(console: Console, environment: [String: String], label: String) {
        self.console = console
        self.label = label
        enabled = console.errorIsTerminal && environment["CI"] == nil
    }

    var callback: (@Sendable (Int, Int) -> Void)? {
        guard enabled else { return nil }
        return { [self] done, total in update(done, total) }
    }

    private func update(_ done: Int, _ total: Int) {
        guard total >= 20 else { return }
        let percent = done * 100 / total
        lock.lock()
        defer { lock.unlock() }
        guard percent != lastShown else { return }
        lastShown = percent
        shownAny = true
        console.err("\rvpnprov: \(label) \(done)/\(total) (\(percent)%)")
    }

    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if shownAny { console.err("\n") }
    }
}
