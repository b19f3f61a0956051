/// Where something is in an input file: 1-based line and column (columns count characters).
public struct SourceLocation: Sendable, Hashable, Codable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

public enum Severity: String, Sendable, Hashable, Codable, Comparable {
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

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// A stable rule code, printed in brackets after every diagnostic (`[pool-overlap]`).
/// Extensible struct with `static let` members (see RuleCodes.swift) so tests match on the code.
public struct RuleCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// One finding about the inventory (or the environment), GCC-style when printed.
/// The message must never contain a secret value: name the reference or a fingerprint instead.
public struct Diagnostic: Sendable, Hashable {
    public struct Note: Sendable, Hashable {
        public var location: SourceLocation?
        public var message: String
        public init(location: SourceLocation?, message: String) {
            self.location = location
            self.message = message
        }
    }

    public var location: SourceLocation?
    public var severity: Severity
    public var code: RuleCode
    public var message: String
    public var notes: [Note]

    public init(
        _ severity: Severity, _ code: RuleCode, _ message: String,
        at location: SourceLocation?, notes: [Note] = []
    ) {
        self.location = location
        self.severity = severity
        self.code = code
        self.message = message
        self.notes = notes
    }

    public static func error(_ code: RuleCode, _ message: String, at location: SourceLocation?, notes: [Note] = []) -> Diagnostic {
        Diagnostic(.error, code, message, at: location, notes: notes)
    }

    public static func warning(_ code: RuleCode, _ message: String, at location: SourceLocation?, notes: [Note] = []) -> Diagnostic {
        Diagnostic(.warning, code, message, at: location, notes: notes)
    }
}

extension Array where Element == Diagnostic {
    public var hasErrors: Bool { contains { $0.severity == .error } }
}
