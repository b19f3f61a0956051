import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates
import VPNProvYAML

/// Where the engine reports a run: findings, run-level messages, its result and the keys of the JSON
/// document. The engine prints nothing itself; the command line decides what goes
/// to which stream in which format.
package protocol RunReporter: AnyObject, Sendable {
    /// The inventory the command reads, as written (SARIF shows unlocated findings there).
    var primaryFile: String? { get set }
    /// Where long stages report how far they are; nil when nobody watches.
    var progress: (any ProgressObserver)? { get }

    /// Source text of an input file for excerpts, with the lines and values that must never be shown.
    func addSource(_ file: String, _ bytes: [UInt8], hidden: Set<Int>, hiddenValues: Set<String>, cut: [Int: Int])
    /// Findings, reported now and kept for the document.
    func diagnostics(_ found: [Diagnostic])
    /// The count line of `batch` ("2 errors, 1 warning"); `strictFailure` when only --strict fails it.
    func countSummary(_ batch: [Diagnostic], strictFailure: Bool)
    /// A run-level warning (no place in the inventory).
    func warning(_ code: RuleCode, _ message: String)
    /// A run-level error that ends the command.
    func error(_ code: RuleCode, _ message: String)
    /// An informational line (no trailing newline).
    func info(_ text: String)
    /// The command's own text result; a `failing` one is shown even when the rest is not.
    func result(_ text: String, failing: Bool)
    /// A text result that holds a secret made for this run and kept nowhere else (a hand-off link): shown
    /// only where the command's result goes, never where logs collect; a document carries it in its place.
    func secretResult(_ text: String)
    /// Findings only the SARIF log carries.
    func sarifOnly(_ found: [Diagnostic])
    /// The command's own part of the JSON document (its keys are the result type's).
    func record(_ result: any CommandResult)
}

extension RunReporter {
    func countSummary(_ batch: [Diagnostic]) { countSummary(batch, strictFailure: false) }
    func result(_ text: String) { result(text, failing: false) }
}

/// The long stages of a run, for progress shown while they work.
package enum ProgressStage: Sendable, Hashable {
    case issuingCertificates
    case comparingProfiles
    case writingProfiles
    case importingAccounts
}

/// Watches the long stages of a run. `advanced` is called from worker threads.
package protocol ProgressObserver: Sendable {
    /// `done` of `total` units of `stage` are finished.
    func advanced(_ stage: ProgressStage, done: Int, total: Int)
    /// `stage` has completed.
    func finished(_ stage: ProgressStage)
}

extension Optional where Wrapped == any ProgressObserver {
    /// The (done, total) callback of `stage` for the workers; nil when nobody watches.
    func callback(_ stage: ProgressStage) -> (@Sendable (Int, Int) -> Void)? {
        guard let observer = self else { return nil }
        return { done, total in observer.advanced(stage, done: done, total: total) }
    }

    func finished(_ stage: ProgressStage) { self?.finished(stage) }
}
