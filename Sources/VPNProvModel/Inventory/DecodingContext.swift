import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Typed reading of YAML nodes by the schema's expected type, collecting diagnostics instead of
/// stopping at the first problem. Every reader returns nil after reporting why.
final class DecodingContext {
    let file: String
    private(set) var diagnostics: [Diagnostic] = []
    /// Errors so far: a part of the inventory whose decoding added one is broken (`Result.broken`).
    private(set) var errorCount = 0
    /// Source lines that hold secret values (never shown in diagnostic excerpts).
    private(set) var secretLines: Set<Int> = []
    /// Lines shown only up to a column (1-based), where a value that may be a secret starts.
    private(set) var cutLines: [Int: Int] = [:]
    /// Values that are, or might be, secrets: never quoted in a diagnostic message.
    private(set) var secretValues: Set<String> = []

    init(file: String) {
        self.file = file
    }

    var hasErrors: Bool { diagnostics.hasErrors }

    func location(_ node: YAMLNode) -> SourceLocation {
        SourceLocation(file: file, line: node.line, column: node.column)
    }

    func location(_ mark: YAMLMark) -> SourceLocation {
        SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    func error(_ code: RuleCode, _ message: String, at node: YAMLNode, notes: [Diagnostic.Note] = []) {
        diagnostics.append(.error(code, message, at: location(node), notes: notes))
        errorCount += 1
    }

    func warning(_ code: RuleCode, _ message: String, at node: YAMLNode) {
        diagnostics.append(.warning(code, message, at: location(node)))
    }

    func append(_ diagnostic: Diagnostic) {
        diagnostics.append(diagnostic)
        if diagnostic.severity == .error { errorCount += 1 }
    }

    /// The repeated entries of one list, so each repeated value is reported once (at its first
    /// repeat, with how often it is listed) however often it is repeated.
    struct Repeats {
        private var order: [String] = []
        private var found: [String: (times: Int, at: YAMLNode)] = [:]

        /// `value` is listed again (its first occurrence was kept) at `item`.
        mutating func add(_ value: String, at item: YAMLNode) {
            if let (times, at) = found[value] {
                found[value] = (times + 1, at)
            } else {
                order.append(value)
                found[value] = (2, item)
            }
        }

        /// One `duplicate-entry` warning per repeated value: "'<what>: 'x' is listed twice" / "N times".
        func report(_ what: String, shown: (String) -> String = { $0 }, into cx: DecodingContext) {
            for value in order {
                let (times, at) = found[value]!
                cx.warning(
                    .duplicateEntry, "\(what): '\(shown(value))' is listed \(times == 2 ? "twice" : "\(times) times")",
                    at: at)
            }
        }
    }

    /// `node` holds a secret: its lines are never shown, and its value is hidden from every message
    /// (an anchored secret may be aliased into a field whose diagnostic would quote it).
    func markSecret(_ node: YAMLNode) {
        for line in node.line...max(node.line, node.endLine) { secretLines.insert(line) }
        if let value = node.scalar, !value.isEmpty { secretValues.insert(value) }
    }

    /// Whether an unknown key's value is hidden from every message as a possible secret: not when it is
    /// shorter than 4 characters or a YAML boolean or null. No secret that short passes the strength policy,
    /// and hiding it would garble every message that holds those characters (`bogus: 1` hid every "1").
    static func mayBeSecret(_ value: String) -> Bool {
        value.count >= 4 && !["true", "false", "yes", "no", "on", "off", "null"].contains(value.lowercased())
    }

    // MARK: - Mappings with known keys

    /// The entries of a mapping whose keys are strings, in order. Reports non-mappings, non-scalar keys
    /// and (when `allowed` is given) unknown keys with a "did you mean" hint.
    func mapping(_ node: YAMLNode, _ what: String, allowed: [String]? = nil) -> [(
        key: String, keyNode: YAMLNode, value: YAMLNode
    )]? {
        guard case .mapping(let pairs) = node.kind else {
            error(.typeMismatch, "\(what) must be a mapping, found \(describe(node))", at: node)
            return nil
        }
        var result: [(key: String, keyNode: YAMLNode, value: YAMLNode)] = []
        for pair in pairs {
            guard let key = pair.key.scalar else {
                error(.typeMismatch, "\(what): keys must be strings, found \(describe(pair.key))", at: pair.key)
                continue
            }
            if let allowed, !allowed.contains(key) {
                // An unknown key may be a misspelt secret key (`pasword:`): its scalar value counts as a
                // secret. The key itself stays visible: the excerpt is cut where the value starts.
                if pair.value.scalar != nil {
                    if pair.value.line == pair.key.line && pair.value.endLine <= pair.value.line {
                        if let value = pair.value.scalar, Self.mayBeSecret(value) { secretValues.insert(value) }
                        cutLines[pair.value.line] = min(cutLines[pair.value.line] ?? .max, pair.value.column)
                    } else {
                        markSecret(pair.value)
                    }
                }
                error(
                    .unknownKey, "\(what): unknown key '\(Self.printable(key))'" + Self.hint(for: key, among: allowed),
                    at: pair.key)
                continue
            }
            result.append((key, pair.key, pair.value))
        }
        return result
    }

    /// The entries of a mapping whose keys are those of one section (`Keys`, in the order of its cases:
    /// the allowed list and the "did you mean" hints come from it), in order; anything else is reported as
    /// `mapping(_:_:allowed:)` does.
    func mapping<Keys: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ what: String, keys: Keys.Type) -> [(
        key: Keys, keyNode: YAMLNode, value: YAMLNode
    )]? where Keys.RawValue == String {
        guard let entries = mapping(node, what, allowed: Keys.allCases.map(\.rawValue)) else { return nil }
        // Every key left is one of `allowed`, so each has its case.
        return entries.map { (Keys(rawValue: $0.key)!, $0.keyNode, $0.value) }
    }

    // MARK: - Scalars by expected type

    /// Any scalar as text (a plain `NO` or `on` stays the string). Nil for null (absent) or after an error.
    package func string(_ node: YAMLNode, _ what: String) -> String? {
        if node.isNull { return nil }
        guard let s = node.scalar else {
            error(.typeMismatch, "\(what) must be a string, found \(describe(node))", at: node)
            return nil
        }
        return s
    }

    /// A decimal integer written plainly (no quotes, no sign, no leading zeros, no 0x/0o forms).
    func integer(_ node: YAMLNode, _ what: String, minimum: Int = 1, maximum: Int = 100_000) -> Int? {
        if node.isNull { return nil }
        guard case .scalar(let s, let plain) = node.kind else {
            error(.typeMismatch, "\(what) must be an integer, found \(describe(node))", at: node)
            return nil
        }
        guard plain else {
            error(.typeMismatch, "\(what) must be an integer, found the quoted string '\(Self.printable(s))'", at: node)
            return nil
        }
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(s) else {
            error(.typeMismatch, "\(what) must be a decimal integer, found '\(Self.printable(s))'", at: node)
            return nil
        }
        if s.count > 1 && s.hasPrefix("0") {
            error(
                .typeMismatch,
                "\(what) must be a decimal integer without leading zeros, found '\(s)' (YAML 1.1 reads it as octal)",
                at: node)
            return nil
        }
        guard value >= minimum, value <= maximum else {
            error(.invalidValue, "\(what) must be between \(minimum) and \(maximum), found \(value)", at: node)
            return nil
        }
        return value
    }

    /// `true` or `false` only (YAML 1.2 core spellings); the YAML 1.1 forms yes/no/on/off are rejected.
    func bool(_ node: YAMLNode, _ what: String) -> Bool? {
        if node.isNull { return nil }
        guard case .scalar(let s, let plain) = node.kind else {
            error(.typeMismatch, "\(what) must be true or false, found \(describe(node))", at: node)
            return nil
        }
        if plain {
            switch s {
            case "true", "True", "TRUE": return true
            case "false", "False", "FALSE": return false
            default: break
            }
        }
        let yaml11 = ["yes", "no", "on", "off", "y", "n"].contains(s.lowercased())
        let shown = plain ? "'\(Self.printable(s))'" : "the quoted string '\(Self.printable(s))'"
        error(
            .typeMismatch,
            "\(what) must be true or false, found \(shown)"
                + (yaml11 && plain ? " (YAML 1.1 boolean spellings are not accepted)" : ""),
            at: node)
        return nil
    }

    /// One of a fixed set of words, with a hint when misspelt.
    func choice<T: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ what: String, _: T.Type) -> T?
    where T.RawValue == String {
        guard let s = string(node, what) else {
            if node.isNull {
                error(
                    .typeMismatch, "\(what) must be one of \(Self.list(T.allCases.map(\.rawValue))), found null",
                    at: node)
            }
            return nil
        }
        if let value = T(rawValue: s) { return value }
        let all = T.allCases.map(\.rawValue)
        error(
            .invalidValue,
            "\(what) must be one of \(Self.list(all)), found '\(Self.printable(s))'" + Self.hint(for: s, among: all),
            at: node)
        return nil
    }

    /// A list of scalars as strings (each with its node for positions).
    func stringList(_ node: YAMLNode, _ what: String) -> [(String, YAMLNode)]? {
        if node.isNull { return [] }
        guard case .sequence(let items) = node.kind else {
            error(.typeMismatch, "\(what) must be a list, found \(describe(node))", at: node)
            return nil
        }
        var result: [(String, YAMLNode)] = []
        var ok = true
        for item in items {
            guard let s = item.scalar, !item.isNull else {
                error(.typeMismatch, "\(what): entries must be strings, found \(describe(item))", at: item)
                ok = false
                continue
            }
            result.append((s, item))
        }
        return ok ? result : nil
    }

    /// A list of words from a fixed set, duplicates reported as warnings and dropped.
    func choiceList<T: RawRepresentable & CaseIterable & Hashable>(_ node: YAMLNode, _ what: String, _: T.Type) -> [T]?
    where T.RawValue == String {
        guard let items = stringList(node, what) else { return nil }
        let all = T.allCases.map(\.rawValue)
        var result: [T] = []
        var ok = true
        var repeats = Repeats()
        for (s, item) in items {
            guard let value = T(rawValue: s) else {
                error(
                    .invalidValue,
                    "\(what): unknown entry '\(Self.printable(s))'; allowed: \(Self.list(all))"
                        + Self.hint(for: s, among: all), at: item)
                ok = false
                continue
            }
            if result.contains(value) {
                repeats.add(s, at: item)
                continue
            }
            result.append(value)
        }
        repeats.report(what, into: self)
        return ok ? result : nil
    }

    /// `gen`, `env:VAR`, `file:PATH`, or a literal secret. The value is never echoed.
    func secret(_ node: YAMLNode, _ what: String) -> SecretSource? {
        if node.isNull { return nil }
        guard let s = node.scalar else {
            error(
                .typeMismatch, "\(what) must be gen, env:VAR, file:PATH or a string, found \(describe(node))", at: node)
            return nil
        }
        if s == "gen" { return .generate }
        if s.hasPrefix("env:") {
            let name = String(s.dropFirst(4))
            guard !name.isEmpty else {
                error(.invalidValue, "\(what): 'env:' needs an environment variable name (env:VAR)", at: node)
                return nil
            }
            return .env(name)
        }
        if s.hasPrefix("file:") {
            let path = String(s.dropFirst(5))
            guard !path.isEmpty else {
                error(.invalidValue, "\(what): 'file:' needs a path (file:PATH)", at: node)
                return nil
            }
            return .file(path)
        }
        markSecret(node)
        return .literal(s)
    }

    /// A CIDR network with host bits zero, of the family the field expects.
    func cidr(_ node: YAMLNode, _ what: String, ipv6: Bool) -> CIDR? {
        guard let s = string(node, what) else { return nil }
        guard let (address, prefix) = IPAddressText.parseCIDR(s) else {
            error(
                .invalidCIDR,
                "\(what) '\(Self.printable(s))' is not a network in CIDR notation (e.g. \(ipv6 ? "fd00:10::/112" : "10.10.0.0/24"))",
                at: node)
            return nil
        }
        guard (address.count == 16) == ipv6 else {
            error(
                .invalidCIDR,
                "\(what) '\(s)' is an \(ipv6 ? "IPv4" : "IPv6") network; use \(ipv6 ? "pool" : "pool6") for it",
                at: node)
            return nil
        }
        var masked = address
        for bit in prefix..<(address.count * 8) {
            masked[bit / 8] &= ~(UInt8(0x80) >> UInt8(bit % 8))
        }
        guard masked == address else {
            let network = CIDR(address: masked, prefix: prefix)
            error(.invalidCIDR, "\(what) '\(s)' has host bits set; the network is \(network)", at: node)
            return nil
        }
        return CIDR(address: address, prefix: prefix)
    }

    // MARK: - Text helpers

    func describe(_ node: YAMLNode) -> String {
        switch node.kind {
        case .scalar(let s, _): return node.isNull ? "null" : "'\(Self.printable(s))'"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    /// A value as shown in a message: control characters escaped, long values cut.
    static func printable(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if u.value < 0x20 || u.value == 0x7F {
                out += "\\u{\(String(u.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out.count > 60 ? String(out.prefix(57)) + "..." : out
    }

    static func list(_ words: [String]) -> String {
        switch words.count {
        case 0: return ""
        case 1: return words[0]
        default: return words.dropLast().joined(separator: ", ") + " or " + words.last!
        }
    }

    /// "; did you mean 'x'?" when a candidate is close enough, else "".
    static func hint(for word: String, among candidates: [String]) -> String {
        guard let best = Spelling.closest(to: word, among: candidates) ?? abbreviation(of: word, among: candidates)
        else { return "" }
        return "; did you mean '\(best)'?"
    }

    /// A key written out where the schema abbreviates it (`certificate:` for `cert`), or cut short
    /// (`serv:` for `services`): the longest candidate of three or more letters that starts the word
    /// or that the word starts. Edit distance misses these: they differ by many letters.
    static func abbreviation(of word: String, among candidates: [String]) -> String? {
        let lower = word.lowercased()
        guard lower.count >= 3 else { return nil }
        let matches = candidates.filter { c in
            let candidate = c.lowercased()
            return candidate.count >= 3 && (lower.hasPrefix(candidate) || candidate.hasPrefix(lower))
        }
        return matches.max { ($0.count, $1) < ($1.count, $0) }
    }
}

/// Edit distance (optimal string alignment: insert, delete, substitute, swap neighbours) for hints.
package enum Spelling {
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased())
        let b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    /// The closest candidate within a distance that scales with its length (1 for short words, up to 3).
    package static func closest(to word: String, among candidates: [String]) -> String? {
        guard word.count <= 64 else { return nil }
        var best: (String, Int)?
        for c in candidates {
            let d = distance(word, c)
            let limit = max(1, min(3, c.count / 3))
            if d <= limit, d < (best?.1 ?? Int.max) { best = (c, d) }
        }
        return best?.0
    }
}
