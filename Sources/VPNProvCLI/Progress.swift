import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Progress on stderr while certificates are issued and profiles rendered: only when stderr is a
/// terminal and not in CI. One line per stage, redrawn when its percentage changes.
final class Progress: ProgressObserver, Sendable {
    /// What is on the terminal: the last percentage shown per stage, and the stages with a line open.
    private struct Shown {
        var lastShown: [ProgressStage: Int] = [:]
        var open: Set<ProgressStage> = []
    }

    private let console: Console
    private let shown = Locked(Shown())

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
        shown.withLock { shown in
            guard percent != shown.lastShown[stage, default: -1] else { return }
            shown.lastShown[stage] = percent
            shown.open.insert(stage)
            console.err("\rvpnprov: \(Self.label(stage)) \(done)/\(total) (\(percent)%)")
        }
    }

    func finished(_ stage: ProgressStage) {
        shown.withLock { shown in
            // A stage that runs again (a second render in one command) starts from nothing, as before.
            shown.lastShown[stage] = nil
            if shown.open.remove(stage) != nil { console.err("\n") }
        }
    }
}
