import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Progress on stderr while certificates are issued and profiles rendered: only when stderr is a
/// terminal and not in CI. One line per stage, redrawn when its percentage changes.
// @unchecked Sendable: lock-held. What is shown is read and written under `lock`; the rest is `let`.
final class Progress: ProgressObserver, @unchecked Sendable {
    private let console: Console
    private let lock = NSLock()
    private var lastShown: [ProgressStage: Int] = [:]
    private var shownAny: Set<ProgressStage> = []

    /// nil when progress is not shown (stderr is not a terminal, or `CI` is set).
    init?(console: Console, environment: [String: String]) {
        guard console.errorIsTerminal && environment["CI"] == nil else { return nil }
        self.console = console
    }

    static func label(_ stage: ProgressStage) -> String {
        switch stage {
        case .issuingCertificates: return "issuing certificates"
        case .comparingProfiles: return "comparing profiles"
        case .writingProfiles: return "writing profiles"
        case .importingAccounts: return "importing accounts"
        }
    }

    func advanced(_ stage: ProgressStage, done: Int, total: Int) {
        guard total >= 20 else { return }
        let percent = done * 100 / total
        lock.lock()
        defer { lock.unlock() }
        guard percent != lastShown[stage, default: -1] else { return }
        lastShown[stage] = percent
        shownAny.insert(stage)
        console.err("\rvpnprov: \(Self.label(stage)) \(done)/\(total) (\(percent)%)")
    }

    func finished(_ stage: ProgressStage) {
        lock.lock()
        defer { lock.unlock() }
        // A stage that runs again (a second render in one command) starts from nothing, as before.
        lastShown[stage] = nil
        if shownAny.remove(stage) != nil { console.err("\n") }
    }
}
