import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Everything a command reports besides the files it writes: diagnostics, run-level warnings and
/// notes, and its result (summary, drift, status...).
///
/// The rule, whatever `--format` says: standard error carries the human-readable text (diagnostics
/// with their excerpts, notes, the end-of-run summary); with `--format json` (or `sarif`) standard
/// output carries exactly one document, printed by `finish` when the command ends, however it ends.
/// `--quiet` leaves only errors on standard error. See docs/json-output.md for the JSON shape.
///
/// A command reports through the one `CommandOutput` of its run (`context.output`):
/// `diagnostics(_:)` for findings, `warning`/`note` for run-level messages, `record(_:)` for its
/// result (`CommandResult`: the summary, the drift, the status...).
package final class CommandOutput: Sendable {
    /// Version of the JSON document's shape (`"vpnprov": 1`). Raised only for incompatible changes.
    package static let schemaVersion = 1

    package let command: String
    package let format: DiagnosticPrinter.Format
    package let console: Console
    /// Only errors on standard error.
    package let quiet: Bool
    /// The inventory the command reads, as written (SARIF shows unlocated findings there).
    package var primaryFile: String? {
        get { state.withLock { $0.primaryFile } }
        set { state.withLock { $0.primaryFile = newValue } }
    }
    /// Shows how far the long stages are (nil: not shown).
    package let progress: (any ProgressObserver)?
    /// Print acknowledged warnings too, each with a note giving the reason (`validate --show-acknowledged`).
    var showAcknowledged: Bool {
        get { state.withLock { $0.showAcknowledged } }
        set { state.withLock { $0.showAcknowledged = newValue } }
    }

    /// What the run has reported so far: threads of one command report at once.
    private struct State {
        var primaryFile: String?
        var showAcknowledged = false
        var collected: [Diagnostic] = []
        var sources: [String: [UInt8]] = [:]
        var hiddenLines: [String: Set<Int>] = [:]
        var cutLines: [String: [Int: Int]] = [:]
        /// Values that are, or might be, secrets: replaced in every diagnostic before it is printed or kept.
        var hiddenValues: Set<String> = []
        var results: [any CommandResult] = []
        var sarifResults: [Diagnostic] = []
        var finished = false
    }
    private let state = Locked(State())

    package init(
        command: String, format: DiagnosticPrinter.Format = .text, console: Console, quiet: Bool = false,
        progress: (any ProgressObserver)? = nil
    ) {
        self.command = command
        self.progress = progress
        self.format = format
        self.console = console
        self.quiet = quiet
    }

    /// Every diagnostic reported so far, in report order.
    package var diagnostics: [Diagnostic] { state.withLock { $0.collected } }

    /// True when the document goes to standard output (json, sarif).
    var isMachineReadable: Bool { format != .text }

    /// Source text of an input file, for excerpts under text diagnostics; `hidden` lines (literal
    /// secrets) are never shown.
    /// `hiddenValues` (literal secrets, values of unknown keys) are replaced by `<hidden>` in the
    /// message and notes of every diagnostic reported afterwards, in text, JSON and SARIF alike.
    /// `cut` lines are shown up to a column only (where a value that may be a secret starts).
    package func addSource(
        _ file: String, _ bytes: [UInt8], hidden: Set<Int> = [], hiddenValues: Set<String> = [], cut: [Int: Int] = [:]
    ) {
        state.withLock { state in
            state.sources[file] = bytes
            state.hiddenLines[file, default: []].formUnion(hidden)
            state.cutLines[file, default: [:]].merge(cut) { min($0, $1) }
            state.hiddenValues.formUnion(hiddenValues)
        }
    }

    /// Reports findings: printed as text on standard error now (errors even with --quiet) and kept
    /// for the document.
    package func diagnostics(_ found: [Diagnostic]) {
        guard !found.isEmpty else { return }
        let (found, printer) = state.withLock { state in
            // Scrubbed once, here, so the document (JSON, SARIF) holds the same text as standard error.
            let found =
                state.hiddenValues.isEmpty
                ? found : found.map(DiagnosticPrinter(hiddenValues: state.hiddenValues).scrubbed)
            state.collected += found
            let printer = DiagnosticPrinter(
                format: .text, sources: state.sources, hiddenLines: state.hiddenLines, cutLines: state.cutLines)
            return (found, printer)
        }
        // Acknowledged warnings are kept for the document only (the inventory says why they stay),
        // unless asked for.
        let shown =
            quiet
            ? found.filter { $0.severity == .error }
            : showAcknowledged ? found.map(Self.withReason) : found.filter { $0.acknowledged == nil }
        console.err(printer.render(shown))
    }

    /// An acknowledged warning as text: a note at the acknowledgement with its reason.
    static func withReason(_ d: Diagnostic) -> Diagnostic {
        guard let ack = d.acknowledged else { return d }
        var copy = d
        copy.notes.append(.init(location: ack.location, message: "acknowledged: \(ack.reason)"))
        return copy
    }

    /// Keeps the error that ended the command for the document (it was printed already).
    func collect(_ error: CLIError) {
        let diagnostic: Diagnostic
        switch error {
        // A refusal ends with a usage error's exit status, and documents say so with its code.
        case .usage(let message, _), .refused(let message): diagnostic = .error(.usage, message, at: nil)
        case .environment(let message): diagnostic = .error(.environment, message, at: nil)
        case .failure: return
        }
        state.withLock { $0.collected.append(diagnostic) }
    }

    /// "2 errors, 1 warning, 6 acknowledged" for `batch` (nothing with --quiet, or when empty).
    package func countSummary(_ batch: [Diagnostic], strictFailure: Bool = false) {
        guard !quiet, let summary = DiagnosticPrinter.summary(batch) else { return }
        console.err("\(summary)\(strictFailure ? " (warnings are errors with --strict)" : "")\n")
    }

    /// A run-level warning (not about a place in the inventory): a diagnostic without location.
    package func warning(_ code: RuleCode, _ message: String) {
        diagnostics([.warning(code, message, at: nil)])
    }

    /// A run-level error that ends the command (state, environment, usage): a diagnostic without
    /// location, printed even with --quiet.
    package func error(_ code: RuleCode, _ message: String) {
        diagnostics([.error(code, message, at: nil)])
    }

    /// An informational line on standard error (not with --quiet). `text` has no trailing newline.
    package func info(_ text: String) {
        if !quiet { console.err(text + "\n") }
    }

    /// The command's own text result (the `validate` ok line, `check`'s drift list, `init`'s next
    /// step): standard output in text format, standard error when standard output holds a document.
    /// With --quiet only a `failing` result is printed (`check`'s drift list: why it fails).
    package func result(_ text: String, failing: Bool = false) {
        if quiet && !failing { return }
        if isMachineReadable {
            console.err(text)
        } else {
            console.out(text)
        }
    }

    /// A result that holds a secret made for this run and kept nowhere else (a hand-off link): standard output
    /// in text format, and there even with --quiet (it is the result: not printing it would lose it); nothing
    /// with json or sarif, whose document on standard output carries it. Never standard error, which scripts
    /// and CI send to their logs.
    package func secretResult(_ text: String) {
        if !isMachineReadable { console.out(text) }
    }

    /// Findings that only the SARIF log carries (`check`'s drifted files: the JSON document has
    /// them under "drift", the text on standard output).
    package func sarifOnly(_ found: [Diagnostic]) {
        state.withLock { $0.sarifResults += found }
    }

    /// The command's own part of the JSON document: its result's keys (`summary`, `drift`, `status`...).
    package func record(_ result: any CommandResult) {
        state.withLock { $0.results.append(result) }
    }

    /// Prints the document (json, sarif) once; later calls do nothing. `ok` is true for exit
    /// status 0; SARIF's `executionSuccessful` also for 1 (the run worked and found problems).
    package func finish(exitCode: Int32) {
        let ok = exitCode == ExitCode.success
        let taken = state.withLock {
            state -> (diagnostics: [Diagnostic], results: [any CommandResult], sarif: [Diagnostic])? in
            if state.finished { return nil }
            state.finished = true
            return (state.collected.inReportOrder(), state.results, state.sarifResults)
        }
        guard let (diagnostics, results, sarifResults) = taken else { return }
        switch format {
        case .text:
            return
        case .json:
            console.out(Self.encode(Envelope(command: command, ok: ok, diagnostics: diagnostics, results: results)))
        case .sarif:
            console.out(
                Self.encode(
                    SARIFLog(
                        diagnostics: diagnostics + sarifResults, command: command,
                        executionSuccessful: exitCode == ExitCode.success || exitCode == ExitCode.failure,
                        primaryFile: primaryFile)))
        }
    }

    /// Pretty-printed, sorted keys, a trailing newline: byte-stable for the same content.
    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}\n" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// The JSON document: `vpnprov`, `command`, `ok`, `diagnostics`, then the keys of the command's results.
    struct Envelope: Encodable {
        var command: String
        var ok: Bool
        var diagnostics: [Diagnostic]
        var results: [any CommandResult]

        enum Key: String, CodingKey {
            case vpnprov, command, ok, diagnostics
        }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(CommandOutput.schemaVersion, forKey: .vpnprov)
            try c.encode(command, forKey: .command)
            try c.encode(ok, forKey: .ok)
            try c.encode(diagnostics.map(DiagnosticPrinter.JSONDiagnostic.init), forKey: .diagnostics)
            // The results' keys go into the same object: a second container of the same encoder writes there.
            var document = encoder.container(keyedBy: DocumentKey.self)
            for result in results { try result.write(to: &document) }
        }
    }
}

/// The engine reports through the command's output.
extension CommandOutput: RunReporter {}
