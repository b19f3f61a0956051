import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Checks an inventory against every consistency rule that needs no certificate, collecting all problems.
/// Rules live beside this file, one family per file; each appends to one list, which is sorted at the
/// end so the output does not depend on the order the rules run in.
package enum Validator {
    typealias Rule = @Sendable (Inventory, inout [Diagnostic]) -> Void

    /// The rules, each a pure function of the inventory; two read a top-level section throughout
    /// (and are skipped when it did not decode).
    static let rules: [Rule] = [
        NameRules.check, IdentityRules.check, ServerIdentityRules.check, NodeIdentityRules.check, ProposalRules.check,
        NetworkManagerRules.check, NetworkRules.check, ServiceRules.check, ClientRules.check,
        DeployRules.check, ACMERules.check, QuantumSafeRules.check, MonitoringRules.check, HandOffRules.check,
    ]
    static let accountsRule: Rule = AccountsRules.check
    static let secretsRule: Rule = SecretRules.check
    static let pkiRule: Rule = PKIRules.check

    /// What a user gets from their nodes: not judged for a user on a node that did not decode.
    static let nodeDependentUserCodes: Set<RuleCode> = [
        .missingPassword, .unusedPassword, .certUnused, .userWithoutService, .deviceWithoutService,
    ]

    /// Checks `inventory`; for the partial inventory of one that did not decode cleanly, `broken`
    /// names what is missing from it, and the findings that would depend on that are left out
    /// (the rules reading a broken `pki:` or `secrets:`, what users get from a broken node).
    package static func validate(_ inventory: Inventory, broken: InventoryDecoder.BrokenParts = .init()) -> [Diagnostic]
    {
        let active =
            rules + (broken.secrets ? [] : [secretsRule]) + (broken.pki ? [] : [pkiRule])
            + (broken.accounts ? [] : [accountsRule])
        // The rules run on all cores: validation is on the serial path, before anything else can start
        // (docs/benchmarks.md, "Why the code is shaped this way");
        // the findings are sorted, so the order they come in does not matter.
        let found = parallelMap(active.count) { i -> [Diagnostic] in
            var diagnostics: [Diagnostic] = []
            active[i](inventory, &diagnostics)
            return diagnostics
        }
        var all = found.flatMap { $0 }
        if !broken.usersOnBrokenNodes.isEmpty || broken.pki {
            var skipped = Set<SourceLocation>()
            for user in inventory.users where broken.usersOnBrokenNodes.contains(user.name) {
                skipped.insert(user.location)
                skipped.formUnion(user.fieldLocations.values)
            }
            all.removeAll { d in
                (broken.pki && d.code == .hybridServerKey)
                    || (nodeDependentUserCodes.contains(d.code) && d.location.map(skipped.contains) == true)
            }
        }
        return sorted(all)
    }

    /// Deterministic order: (file, line, column, code), then severity and message; unlocated first.
    package static func sorted(_ diagnostics: [Diagnostic]) -> [Diagnostic] {
        diagnostics.sorted { a, b in
            let la = a.location
            let lb = b.location
            if (la == nil) != (lb == nil) { return la == nil }
            if let la, let lb {
                if la.file != lb.file { return la.file < lb.file }
                if la.line != lb.line { return la.line < lb.line }
                if la.column != lb.column { return la.column < lb.column }
            }
            if a.code != b.code { return a.code.rawValue < b.code.rawValue }
            if a.severity != b.severity { return a.severity < b.severity }
            return a.message < b.message
        }
    }
}

/// Small text helpers shared by the rules, the decoder and the renderers.
package enum TextCheck {
    /// Unicode control characters (C0, DEL, C1) and the non-characters U+FFFE/U+FFFF: none of them can be
    /// written in an XML plist, and swanctl/JSON would need escapes the consumers do not all undo.
    static func hasControlCharacters(_ s: String) -> Bool {
        s.unicodeScalars.contains { isControl($0) }
    }

    static func isControl(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (u.value >= 0x7F && u.value <= 0x9F) || u.value == 0xFFFE || u.value == 0xFFFF
            || u.value == 0x2028 || u.value == 0x2029
    }

    /// Printable ASCII without space (0x21...0x7E).
    static func isPrintableASCII(_ u: Unicode.Scalar) -> Bool { u.value >= 0x21 && u.value <= 0x7E }

    package static func isASCIILetterOrDigit(_ u: Unicode.Scalar) -> Bool {
        (u.value >= 0x30 && u.value <= 0x39) || (u.value >= 0x41 && u.value <= 0x5A)
            || (u.value >= 0x61 && u.value <= 0x7A)
    }

    /// Whether XML 1.0 can carry `u` in a document at all (its `Char` production: tab, line feed,
    /// carriage return, U+0020...U+D7FF, U+E000...U+FFFD, U+10000 and above; Swift strings hold no
    /// surrogates). The validator refuses inventory values with any other character
    /// (`unrepresentable-text`), and the property list writer never writes one (`PropertyListStream`).
    static func xmlCanCarry(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...: return true
        default: return false
        }
    }

    /// A swanctl section name from free text: [A-Za-z0-9_-] kept, anything else becomes `_`.
    package static func swanctlSectionName(_ text: String) -> String {
        func kept(_ b: UInt8) -> Bool {
            (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
        }
        // Most names are kept whole (every connection of every user asks for its section name).
        if text.utf8.allSatisfy(kept) { return text }
        var name = String.UnicodeScalarView()
        for s in text.unicodeScalars { name.append(s.isASCII && kept(UInt8(s.value)) ? s : "_") }
        return String(name)
    }

    /// Levenshtein distance (for "did you mean" hints over short lists).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased().unicodeScalars)
        let b = Array(b.lowercased().unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The closest candidate within a small edit distance, for `did you mean 'x'?`.
    static func suggestion(for word: String, in candidates: [String]) -> String? {
        let limit = max(2, word.count / 3)
        var best: (String, Int)?
        for c in candidates {
            let d = distance(word, c)
            if d <= limit, best == nil || d < best!.1 { best = (c, d) }
        }
        return best?.0
    }

    /// `'text'` with anything unprintable shown as `\u{XX}` so a diagnostic never carries raw controls.
    static func quoted(_ s: String) -> String {
        var out = "'"
        for u in s.unicodeScalars {
            if isControl(u) {
                out += "\\u{\(String(u.value, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(u)
            }
        }
        return out + "'"
    }
}
