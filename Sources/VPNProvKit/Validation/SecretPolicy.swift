// Strength and representability of PSKs and passwords (SPEC §5). Used by the validator for literal
// secrets in the inventory and by the PKI/state layer for env:/file: values at generate time.
// Messages never contain the secret or any part of it.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The policy every PSK and password must meet.
///
/// Strength is estimated as log2(character-set size) × effective length, where the character set is
/// the union of the classes used (lower 26, upper 26, digits 10, ASCII symbols and space 33,
/// anything non-ASCII 100) and the effective length leaves out what an attacker guesses first:
/// runs of ascending/descending characters (`abcd`, `4321`), keyboard-row runs (`qwer`, `asdf`),
/// repeated characters, a string that repeats a shorter unit, common words (also in leetspeak:
/// `p@ssw0rd`) and the names given as context (user, node, deployment). Each such run counts as one
/// character.
public enum SecretPolicy {
    public enum Kind: String, Sendable, Hashable {
        case psk
        case password

        public var minimumLength: Int { self == .psk ? 20 : 12 }
        public var minimumBits: Int { self == .psk ? 80 : 60 }
        var label: String { self == .psk ? "a PSK" : "a password" }
    }

    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        public enum Category: Sendable, Hashable {
            /// Cannot be carried by every output (control characters, NUL, edge whitespace).
            case unrepresentable
            /// Too short or too guessable.
            case weak
        }
        public var category: Category
        /// Describes the problem without revealing the secret.
        public var message: String
        public var description: String { message }
    }

    /// Problems of `secret` as `kind`; `names` are context words it must not rely on (user name,
    /// node name, deployment name). Empty when the secret is acceptable.
    public static func problems(secret: String, kind: Kind, names: [String] = []) -> [String] {
        check(secret: secret, kind: kind, names: names).map(\.message)
    }

    /// Like `problems`, with the category of each problem.
    public static func check(secret: String, kind: Kind, names: [String] = []) -> [Problem] {
        var out: [Problem] = []
        let scalars = Array(secret.unicodeScalars)
        if scalars.isEmpty {
            return [Problem(category: .weak, message: "is empty")]
        }
        if scalars.contains(where: TextCheck.isControl) {
            out.append(Problem(category: .unrepresentable,
                message: "contains control characters or NUL, which not every output (plist, .sswan, swanctl) can carry"))
        }
        if scalars.first!.properties.isWhitespace || scalars.last!.properties.isWhitespace {
            out.append(Problem(category: .unrepresentable,
                message: "starts or ends with whitespace, which is easily lost when the secret is copied or typed"))
        }
        if scalars.count < kind.minimumLength {
            out.append(Problem(category: .weak,
                message: "is \(scalars.count) characters long; \(kind.label) needs at least \(kind.minimumLength)"))
        }
        let estimate = estimate(scalars, names: names)
        if estimate.bits < Double(kind.minimumBits) {
            var message = "has an estimated strength of \(Int(estimate.bits)) bits; \(kind.label) needs at least \(kind.minimumBits)"
            if !estimate.patterns.isEmpty {
                message += " (it contains \(estimate.patterns.sorted().joined(separator: ", ")), which count for nothing)"
            }
            out.append(Problem(category: .weak, message: message))
        }
        return out
    }

    /// Estimated strength in bits and the kinds of guessable pattern found (names of kinds only).
    public static func estimatedBits(secret: String, names: [String] = []) -> Double {
        estimate(Array(secret.unicodeScalars), names: names).bits
    }

    static let keyboardRows = [
        "`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./",
        "qwertzuiop", "yxcvbnm", "azertyuiop", "qsdfghjklm", "wxcvbn",
        "1qaz", "2wsx", "3edc", "4rfv", "5tgb", "6yhn", "7ujm",
    ]
    static let commonWords = [
        "password", "passwort", "passwd", "secret", "letmein", "welcome", "admin", "qwerty", "changeme",
        "iloveyou", "dragon", "monkey", "master", "shadow", "sunshine", "football", "baseball", "princess",
        "trustno", "login", "guest", "root", "test", "default", "example", "vpn", "ipsec", "strongswan",
        "ikev2", "server", "user", "hello", "access", "private", "shared", "key",
    ]
    private static let leet: [Unicode.Scalar: Unicode.Scalar] = [
        "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i", "|": "l",
    ]

    struct Estimate {
        var bits: Double
        var patterns: Set<String>
    }

    static func estimate(_ scalars: [Unicode.Scalar], names: [String]) -> Estimate {
        let n = scalars.count
        guard n > 0 else { return Estimate(bits: 0, patterns: []) }
        let lower = scalars.map { s -> Unicode.Scalar in
            (s.value >= 0x41 && s.value <= 0x5A) ? Unicode.Scalar(s.value + 0x20)! : s
        }
        let normal = lower.map { leet[$0] ?? $0 }
        var covered = [Bool](repeating: false, count: n)
        var patterns: Set<String> = []
        func cover(_ start: Int, _ length: Int, _ kind: String) {
            guard length > 1 else { return }
            for i in (start + 1)..<(start + length) { covered[i] = true }
            patterns.insert(kind)
        }
        func find(_ needle: [Unicode.Scalar], in haystack: [Unicode.Scalar], _ kind: String) {
            guard needle.count >= 3, needle.count <= haystack.count else { return }
            var i = 0
            while i + needle.count <= haystack.count {
                if haystack[i..<(i + needle.count)].elementsEqual(needle) {
                    cover(i, needle.count, kind)
                    i += needle.count
                } else {
                    i += 1
                }
            }
        }
        // Ascending/descending runs of 4+ letters or digits, and repeated characters (3+).
        var i = 0
        while i < n {
            var j = i + 1
            let isAlnum = TextCheck.isASCIILetterOrDigit(lower[i])
            if isAlnum, j < n, TextCheck.isASCIILetterOrDigit(lower[j]) {
                let step = Int64(lower[j].value) - Int64(lower[i].value)
                if step == 1 || step == -1 {
                    while j < n, TextCheck.isASCIILetterOrDigit(lower[j]), Int64(lower[j].value) - Int64(lower[j - 1].value) == step { j += 1 }
                    if j - i >= 4 { cover(i, j - i, "a sequence"); i = j; continue }
                    j = i + 1
                }
            }
            while j < n, lower[j] == lower[i] { j += 1 }
            if j - i >= 3 { cover(i, j - i, "a repeated character") }
            i = max(j, i + 1)
        }
        // Keyboard-row runs of 4+ (forwards and backwards).
        for row in keyboardRows {
            let r = Array(row.unicodeScalars)
            for direction in [r, r.reversed()] {
                var k = 0
                while k < n {
                    // longest run starting at k that follows the row
                    guard let start = direction.firstIndex(of: lower[k]) else { k += 1; continue }
                    var len = 1
                    while k + len < n, start + len < direction.count, lower[k + len] == direction[start + len] { len += 1 }
                    if len >= 4 { cover(k, len, "a keyboard run"); k += len } else { k += 1 }
                }
            }
        }
        for word in commonWords { find(Array(word.unicodeScalars), in: normal, "a common word") }
        for name in names where name.unicodeScalars.count >= 3 {
            let lowered = Array(name.lowercased().unicodeScalars)
            find(lowered, in: lower, "a name")
            find(lowered.map { leet[$0] ?? $0 }, in: normal, "a name")
        }
        var effective = covered.filter { !$0 }.count
        // A string made of one shorter unit repeated counts as that unit.
        for period in 1...(n / 2) where n % period == 0 {
            if (period..<n).allSatisfy({ scalars[$0] == scalars[$0 - period] }) {
                if period < effective { effective = period; patterns.insert("a repeated pattern") }
                break
            }
        }
        var charset = 0
        if scalars.contains(where: { $0.value >= 0x61 && $0.value <= 0x7A }) { charset += 26 }
        if scalars.contains(where: { $0.value >= 0x41 && $0.value <= 0x5A }) { charset += 26 }
        if scalars.contains(where: { $0.value >= 0x30 && $0.value <= 0x39 }) { charset += 10 }
        if scalars.contains(where: { $0.value >= 0x20 && $0.value < 0x7F && !TextCheck.isASCIILetterOrDigit($0) }) { charset += 33 }
        if scalars.contains(where: { $0.value >= 0x80 }) { charset += 100 }
        let bits = charset > 1 ? log2(Double(charset)) * Double(effective) : 0
        return Estimate(bits: bits, patterns: patterns)
    }
}
