import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Where something is in an input file: 1-based line and column (columns count characters).
package struct SourceLocation: Sendable, Hashable, Codable, CustomStringConvertible {
    package var file: String
    package var line: Int
    package var column: Int

    package init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    package var description: String { "\(file):\(line):\(column)" }
}

package enum Severity: String, Sendable, Hashable, Codable, Comparable {
    case error
    case warning
    case note

    private var rank: Int {
        switch self {
        case .error: return 0
        case .warning: return 1
        case .note: return 2
        }
    }

    package static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// One finding about the inventory (or the environment), GCC-style when printed.
/// The message must never contain a secret value: name the reference or a fingerprint instead.
package struct Diagnostic: Sendable, Hashable {
    package struct Note: Sendable, Hashable {
        package var location: SourceLocation?
        package var message: String
        package init(location: SourceLocation?, message: String) {
            self.location = location
            self.message = message
        }
    }

    /// What a finding is about, for acknowledgements (`acknowledge:` in the inventory): the node or
    /// user, and the services of the node it concerns.
    package struct Subject: Sendable, Hashable {
        package var node: String?
        package var user: String?
        package var services: [Service] = []

        package static func node(_ name: String, services: [Service] = []) -> Subject {
            Subject(node: name, services: services)
        }
        package static func user(_ name: String) -> Subject { Subject(user: name) }
        /// The deployment's own settings (`pki:`).
        package static let deployment = Subject()
    }

    /// A warning the inventory acknowledges: why, and where the acknowledgement is written.
    package struct Acknowledged: Sendable, Hashable {
        package var reason: String
        package var location: SourceLocation?
        package init(reason: String, location: SourceLocation?) {
            self.reason = reason
            self.location = location
        }
    }

    package var location: SourceLocation?
    package var severity: Severity
    package var code: RuleCode
    package var message: String
    package var notes: [Note]
    /// Set by the rule checks on the warnings an acknowledgement can name.
    package var subject: Subject?
    /// Set when an acknowledgement in the inventory matches this warning: it does not count as a
    /// warning (not printed as text, not failing --strict) but stays in JSON and SARIF.
    package var acknowledged: Acknowledged?

    package init(
        _ severity: Severity, _ code: RuleCode, _ message: String,
        at location: SourceLocation?, notes: [Note] = [], about subject: Subject? = nil
    ) {
        assert(
            code.declaration.severities.contains(severity),
            "[\(code)] is declared \(code.declaration.severities), not \(severity) (RuleCode+Declarations.swift)")
        self.location = location
        self.severity = severity
        self.code = code
        self.message = message
        self.notes = notes
        self.subject = subject
    }

    package static func error(_ code: RuleCode, _ message: String, at location: SourceLocation?, notes: [Note] = [])
        -> Diagnostic
    {
        Diagnostic(.error, code, message, at: location, notes: notes)
    }

    package static func warning(
        _ code: RuleCode, _ message: String, at location: SourceLocation?, notes: [Note] = [],
        about subject: Subject? = nil
    ) -> Diagnostic {
        Diagnostic(.warning, code, message, at: location, notes: notes, about: subject)
    }

    /// A warning no acknowledgement covers.
    package var isOpenWarning: Bool { severity == .warning && acknowledged == nil }
}

extension Array where Element == Diagnostic {
    package var hasErrors: Bool { contains { $0.severity == .error } }
    /// Warnings that no acknowledgement covers (what `--strict` fails on).
    package var hasOpenWarnings: Bool { contains { $0.isOpenWarning } }
}

extension Array where Element == Diagnostic {
    /// Diagnostics in a stable order: by file, line, column; unlocated ones first; ties keep their order.
    package func inReportOrder() -> [Diagnostic] {
        enumerated().sorted { a, b in
            let la = a.element.location
            let lb = b.element.location
            switch (la, lb) {
            case (nil, nil): return a.offset < b.offset
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?):
                if x.file != y.file { return x.file < y.file }
                if x.line != y.line { return x.line < y.line }
                if x.column != y.column { return x.column < y.column }
                return a.offset < b.offset
            }
        }.map(\.element)
    }
}

extension Array where Element == Diagnostic {
    /// At most this many findings with one rule code, severity and location are reported.
    package static var repeatLimit: Int { 10 }

    /// The findings with repeats capped: of the findings that share a rule code, a severity and a
    /// location, the first `limit` (in order) are kept and the rest become one finding of the same
    /// code and severity there, "... and K more like this here". An inventory whose anchors are
    /// aliased thousands of times repeats one finding at one place thousands of times, which must
    /// not turn into megabytes of output. Without repeats the result is the input.
    package func cappingRepeats(limit: Int = repeatLimit) -> [Diagnostic] {
        typealias Key = RepeatKey
        var counts: [Key: Int] = [:]
        var out: [Diagnostic] = []
        var dropped: [Key] = []
        for d in self {
            let key = Key(code: d.code, severity: d.severity, location: d.location, acknowledged: d.acknowledged)
            let n = counts[key, default: 0] + 1
            counts[key] = n
            if n <= limit {
                out.append(d)
            } else if n == limit + 1 {
                dropped.append(key)
            }
        }
        for key in dropped {
            let more = counts[key]! - limit
            var summary = Diagnostic(
                key.severity, key.code, "... and \(more) more like \(limit == 1 ? "this" : "these") here",
                at: key.location)
            summary.acknowledged = key.acknowledged
            out.append(summary)
        }
        return out
    }
}

/// What makes two findings repeats of each other (`cappingRepeats`).
struct RepeatKey: Hashable {
    var code: RuleCode
    var severity: Severity
    var location: SourceLocation?
    var acknowledged: Diagnostic.Acknowledged?
}
