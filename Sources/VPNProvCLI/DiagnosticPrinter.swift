import Foundation
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// The one place diagnostics become text: GCC style with a source excerpt and caret, or a JSON array.
package struct DiagnosticPrinter: Sendable {
    package enum Format: String, Sendable, CaseIterable {
        case text
        case json
        /// SARIF 2.1.0 (`validate` and `check` only).
        case sarif
    }

    package var format: Format
    /// Source bytes per file name (as used in `SourceLocation.file`), for excerpts.
    package var sources: [String: [UInt8]]
    /// Lines never shown in excerpts per file (they hold literal secrets).
    package var hiddenLines: [String: Set<Int>]
    /// Lines shown only up to a column (1-based) per file: what follows may be a secret (the value
    /// of an unknown key), so it is replaced by `hiddenValueMark`.
    package var cutLines: [String: [Int: Int]]

    /// Values that are, or might be, secrets (literal secrets, values of unknown keys): replaced by
    /// `hiddenValueMark` wherever a message or note would contain them, in text and JSON alike.
    package let hiddenValues: Set<String>

    package static let hiddenValueMark = "<hidden>"

    package init(
        format: Format = .text, sources: [String: [UInt8]] = [:], hiddenLines: [String: Set<Int>] = [:],
        hiddenValues: Set<String> = [], cutLines: [String: [Int: Int]] = [:]
    ) {
        self.format = format
        self.sources = sources
        self.hiddenLines = hiddenLines
        self.cutLines = cutLines
        // Longest first, so a secret that contains another is hidden whole.
        self.hiddenValues = hiddenValues
        self.orderedHiddenValues = hiddenValues.filter { !$0.isEmpty }.sorted {
            $0.count != $1.count ? $0.count > $1.count : $0 < $1
        }
    }

    private let orderedHiddenValues: [String]

    /// `d` with every hidden value replaced in its message and notes.
    package func scrubbed(_ d: Diagnostic) -> Diagnostic {
        guard !orderedHiddenValues.isEmpty else { return d }
        var copy = d
        copy.message = scrub(d.message)
        copy.notes = d.notes.map { Diagnostic.Note(location: $0.location, message: scrub($0.message)) }
        return copy
    }

    /// `message` with every hidden value replaced.
    func scrub(_ message: String) -> String {
        var text = message
        for value in orderedHiddenValues where text.contains(value) {
            text = text.replacingOccurrences(of: value, with: Self.hiddenValueMark)
        }
        return text
    }

    /// The whole rendering: for text, every diagnostic with its excerpt (for stderr); for JSON, the array
    /// followed by a newline (for stdout).
    package func render(_ diagnostics: [Diagnostic]) -> String {
        let ordered = diagnostics.inReportOrder()
        switch format {
        case .json, .sarif: return json(ordered)
        case .text: return ordered.map(text).joined()
        }
    }

    /// "2 errors, 1 warning", with acknowledged warnings counted apart ("1 warning, 6 acknowledged",
    /// or "6 warnings acknowledged" alone), or nil when there is nothing to count.
    package static func summary(_ diagnostics: [Diagnostic]) -> String? {
        let errors = diagnostics.filter { $0.severity == .error }.count
        let warnings = diagnostics.filter(\.isOpenWarning).count
        let acknowledged = diagnostics.filter { $0.severity == .warning && $0.acknowledged != nil }.count
        var parts: [String] = []
        if errors > 0 { parts.append(Plural.count(errors, "error")) }
        if warnings > 0 { parts.append(Plural.count(warnings, "warning")) }
        if acknowledged > 0 {
            parts.append(
                parts.isEmpty
                    ? Plural.count(acknowledged, "warning") + " acknowledged"
                    : "\(acknowledged) acknowledged")
        }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    // MARK: - Text

    func text(_ d: Diagnostic) -> String {
        var out = line(d.location, d.severity.rawValue, "\(scrub(d.message)) [\(d.code)]")
        out += excerpt(d.location)
        for note in d.notes {
            out += line(note.location ?? d.location, "note", scrub(note.message))
        }
        return out
    }

    /// One printed line, made safe by `escapedLine`: a message quotes inventory values (proposals,
    /// keys, URLs...), and the file name comes from the command line.
    private func line(_ location: SourceLocation?, _ severity: String, _ message: String) -> String {
        let prefix = location.map { "\($0.file):\($0.line):\($0.column): " } ?? "vpnprov: "
        return Self.escapedLine("\(prefix)\(severity): \(message)") + "\n"
    }

    /// Whether `u` is never printed as it is in text output: C0 controls (line breaks, ESC...), DEL,
    /// C1 controls (NEL, CSI...), the line and paragraph separators U+2028/U+2029, and the bidi
    /// embedding, override and isolate controls (U+061C, U+200E/F, U+202A...E, U+2066...9), which
    /// reorder what a reader sees.
    static func isUnprintable(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
            return true
        default: return false
        }
    }

    /// `text` as one line that cannot pass for anything else in a terminal or a CI log: every
    /// unprintable character (`isUnprintable`) written as `\u{1B}` (upper-case hex, Swift's escape
    /// syntax), and a line that would start with `::` after its leading blanks (a GitHub Actions
    /// workflow command such as `::error::`) with its first `:` written `\u{3A}`.
    static func escapedLine(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars {
            if isUnprintable(u) {
                out.append(contentsOf: "\\u{\(String(u.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return neutralisingWorkflowCommand(String(out), colon: "\\u{3A}")
    }

    /// `line` with its first `:` replaced by `colon` when, after leading spaces and tabs, it starts with `::`.
    static func neutralisingWorkflowCommand(_ line: String, colon: String) -> String {
        let body = line.drop { $0 == " " || $0 == "\t" }
        guard body.hasPrefix("::") else { return line }
        return String(line[..<body.startIndex]) + colon + String(body.dropFirst())
    }

    /// The offending source line and a caret under the column (tabs kept so the caret lines up).
    func excerpt(_ location: SourceLocation?) -> String {
        guard let location, location.line >= 1, let bytes = sources[location.file],
            !(hiddenLines[location.file]?.contains(location.line) ?? false),
            var source = Self.sourceLine(bytes, location.line)
        else { return "" }
        if let cut = cutLines[location.file]?[location.line] {
            source = String(source.prefix(max(0, cut - 1))) + Self.hiddenValueMark
        }
        // A line that names a secret key may hold a secret even when the decoder never saw it
        // (YAML syntax errors): never echo it.
        if Self.looksSecret(source) || location.column > 200 { return "" }
        let shown = String(source.prefix(200))
        var caret = ""
        for (i, ch) in shown.enumerated() where i < location.column - 1 {
            caret.append(ch == "\t" ? "\t" : " ")
        }
        if location.column - 1 > shown.count {
            caret += String(repeating: " ", count: location.column - 1 - shown.count)
        }
        return "\(shown)\n\(caret)^\n"
    }

    /// Bytes of a source line read for an excerpt (200 characters are shown).
    static let maxExcerptBytes = 4096

    /// Line `number` (1-based) of `bytes` (at most its first `maxExcerptBytes`), without its line
    /// break or a leading BOM.
    static func sourceLine(_ bytes: [UInt8], _ number: Int) -> String? {
        var line = 1
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var i = start
        while i < bytes.count {
            // Only the start of the line is ever shown: a multi-megabyte line (a huge scalar) must
            // not be decoded and scanned whole.
            if line == number && i - start >= maxExcerptBytes { break }
            let b = bytes[i]
            if b == 0x0A || b == 0x0D {
                if line == number { break }
                if b == 0x0D, i + 1 < bytes.count, bytes[i + 1] == 0x0A { i += 1 }
                line += 1
                start = i + 1
            }
            i += 1
        }
        guard line == number, start <= bytes.count else { return nil }
        let text = String(decoding: bytes[start..<min(i, bytes.count)], as: UTF8.self)
        // Never print control characters from the file (terminal escapes, C1, line separators, bidi
        // overrides): each becomes one '?', so the caret still lines up. Nor a line a CI log reads as a
        // workflow command (`::error::...`).
        let shown = String(text.unicodeScalars.map { $0 != "\t" && isUnprintable($0) ? "?" : Character($0) })
        return neutralisingWorkflowCommand(shown, colon: "?")
    }

    static func looksSecret(_ line: String) -> Bool {
        let lower = line.lowercased()
        for key in ["psk", "password", "secret", "passphrase"] {
            var rest = lower[...]
            while let r = rest.range(of: key) {
                let after = rest[r.upperBound...].drop { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "'" }
                if after.first == ":" { return true }
                rest = rest[r.upperBound...]
            }
        }
        return false
    }

    // MARK: - JSON

    struct JSONDiagnostic: Encodable {
        /// A related place: a note (`message`) or an acknowledgement (`reason`).
        struct Note: Encodable {
            var file: String?
            var line: Int?
            var column: Int?
            package var message: String?
            package var reason: String?
        }
        var file: String?
        var line: Int?
        var column: Int?
        var severity: String
        var code: String
        package var message: String
        var notes: [Note]?
        /// Present on a warning the inventory acknowledges: the reason and where it is written.
        var acknowledged: Note?

        init(_ d: Diagnostic) {
            file = d.location?.file
            line = d.location?.line
            column = d.location?.column
            severity = d.severity.rawValue
            code = d.code.rawValue
            message = d.message
            notes =
                d.notes.isEmpty
                ? nil
                : d.notes.map {
                    .init(
                        file: $0.location?.file, line: $0.location?.line, column: $0.location?.column,
                        message: $0.message)
                }
            acknowledged = d.acknowledged.map {
                .init(file: $0.location?.file, line: $0.location?.line, column: $0.location?.column, reason: $0.reason)
            }
        }
    }

    func json(_ diagnostics: [Diagnostic]) -> String {
        let items = diagnostics.map { JSONDiagnostic(scrubbed($0)) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(items)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
