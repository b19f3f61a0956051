// Strength and representability of PSKs and passwords. Used by the validator for literal
// secrets in the inventory and by the PKI/state layer for env:/file: values at generate time.
// Messages never contain the secret or any part of it.

import Glibc
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// The policy every PSK and password must meet.
///
/// Strength is estimated as log2(character-set size) × effective length, where the character set is
/// the union of the classes used (lower 26, upper 26, digits 10, ASCII symbols and space 33,
/// anything non-ASCII 100) and the effective length leaves out what an attacker guesses first:
/// runs of ascending/descending characters (`abcd`, `4321`), keyboard-row runs (`qwer`, `asdf`),
/// repeated characters, a string that repeats a shorter unit, common words (also in leetspeak:
/// `p@ssw0rd`) and the names given as context (user, node, deployment). Each such run counts as one
/// character.
package enum SecretPolicy {
    package enum Kind: String, Sendable, Hashable {
        case psk
        case password

        package var minimumLength: Int { self == .psk ? 20 : 12 }
        var minimumBits: Int { self == .psk ? 80 : 60 }
        var label: String { self == .psk ? "a PSK" : "a password" }
    }

    package struct Problem: Sendable, Hashable, CustomStringConvertible {
        package enum Category: Sendable, Hashable {
            /// Cannot be carried by every output (control characters, NUL, edge whitespace).
            case unrepresentable
            /// Too short or too guessable.
            case weak
        }
        package var category: Category
        /// Describes the problem without revealing the secret.
        package var message: String
        package var description: String { message }
    }

    /// Problems of `secret` as `kind`; `names` are context words it must not rely on (user name,
    /// node name, deployment name). Empty when the secret is acceptable.
    package static func problems(secret: String, kind: Kind, names: [String] = []) -> [String] {
        check(secret: secret, kind: kind, names: names).map(\.message)
    }

    /// Longest secret accepted (UTF-8 bytes): far beyond any strength need, and small enough for
    /// every output (EAP-MSCHAPv2 passwords are at most 256 characters in Windows' own tools).
    package static let maxBytes = 1024
    /// Largest `file:` secret the bounded reader accepts: a secret of `maxBytes` and its line ending.
    package static let fileLimit = maxBytes + 2

    /// Like `problems`, with the category of each problem.
    package static func check(secret: String, kind: Kind, names: [String] = []) -> [Problem] {
        var out: [Problem] = []
        let scalars = Array(secret.unicodeScalars)
        if scalars.isEmpty {
            return [Problem(category: .weak, message: "is empty")]
        }
        if secret.utf8.count > maxBytes {
            return [Problem(category: .unrepresentable, message: "is longer than \(maxBytes) bytes")]
        }
        if scalars.contains("\u{FFFD}") {
            out.append(
                Problem(
                    category: .unrepresentable,
                    message: "contains U+FFFD, the replacement character: its bytes were not valid UTF-8"))
        }
        if scalars.contains(where: TextCheck.isControl) {
            out.append(
                Problem(
                    category: .unrepresentable,
                    message:
                        "contains control characters or NUL, which not every output (plist, .sswan, swanctl) can carry")
            )
        }
        if scalars.first!.properties.isWhitespace || scalars.last!.properties.isWhitespace {
            out.append(
                Problem(
                    category: .unrepresentable,
                    message: "starts or ends with whitespace, which is easily lost when the secret is copied or typed"))
        }
        if scalars.count < kind.minimumLength {
            out.append(
                Problem(
                    category: .weak,
                    message: "is \(scalars.count) characters long; \(kind.label) needs at least \(kind.minimumLength)"))
        }
        let estimate = estimate(scalars, names: names)
        if estimate.bits < Double(kind.minimumBits) {
            var message =
                "has an estimated strength of \(Int(estimate.bits)) bits; \(kind.label) needs at least \(kind.minimumBits)"
            if !estimate.patterns.isEmpty {
                message +=
                    " (it contains \(estimate.patterns.sorted().joined(separator: ", ")), which count for nothing)"
            }
            out.append(Problem(category: .weak, message: message))
        }
        return out
    }

    /// Estimated strength in bits and the kinds of guessable pattern found (names of kinds only).
    package static func estimatedBits(secret: String, names: [String] = []) -> Double {
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
    private static let leet: [UInt32: UInt32] = {
        var m: [UInt32: UInt32] = [:]
        for (a, b) in [
            ("0", "o"), ("1", "i"), ("3", "e"), ("4", "a"), ("5", "s"), ("7", "t"), ("@", "a"), ("$", "s"), ("!", "i"),
            ("|", "l"),
        ] {
            m[a.unicodeScalars.first!.value] = b.unicodeScalars.first!.value
        }
        return m
    }()
    /// Each keyboard row forwards and backwards, as character -> position.
    private static let rowPositions: [[UInt32: Int]] = keyboardRows.flatMap { row -> [[UInt32: Int]] in
        let r = row.unicodeScalars.map(\.value)
        return [r, r.reversed()].map { seq in
            var m: [UInt32: Int] = [:]
            for (i, c) in seq.enumerated() where m[c] == nil { m[c] = i }
            return m
        }
    }
    private static let wordScalars: [[UInt32]] = commonWords.map { $0.unicodeScalars.map(\.value) }

    struct Estimate {
        var bits: Double
        var patterns: Set<String>
    }

    static func isAlnum(_ v: UInt32) -> Bool { (v >= 0x30 && v <= 0x39) || (v >= 0x61 && v <= 0x7A) }

    static func estimate(_ scalars: [Unicode.Scalar], names: [String]) -> Estimate {
        let n = scalars.count
        guard n > 0 else { return Estimate(bits: 0, patterns: []) }
        let lower: [UInt32] = scalars.map { s in (s.value >= 0x41 && s.value <= 0x5A) ? s.value + 0x20 : s.value }
        let normal: [UInt32] = lower.map { leet[$0] ?? $0 }
        var coverage = Coverage(count: n)
        coverSequencesAndRepeats(lower, in: &coverage)
        coverKeyboardRuns(lower, in: &coverage)
        for word in wordScalars { coverage.find(word, in: normal, "a common word") }
        for name in names where name.unicodeScalars.count >= 3 {
            let lowered = name.lowercased().unicodeScalars.map(\.value)
            coverage.find(lowered, in: lower, "a name")
            coverage.find(lowered.map { leet[$0] ?? $0 }, in: normal, "a name")
        }
        var effective = coverage.covered.filter { !$0 }.count
        // A string made of one shorter unit repeated counts as that unit.
        for period in stride(from: 1, through: n / 2, by: 1) where n % period == 0 {  // empty for n < 2
            if (period..<n).allSatisfy({ scalars[$0] == scalars[$0 - period] }) {
                if period < effective {
                    effective = period
                    coverage.patterns.insert("a repeated pattern")
                }
                break
            }
        }
        let charset = charsetSize(of: scalars)
        let bits = charset > 1 ? log2(Double(charset)) * Double(effective) : 0
        return Estimate(bits: bits, patterns: coverage.patterns)
    }

    /// Which characters of a secret a guessable pattern explains (all but the pattern's first), and which
    /// patterns were found.
    private struct Coverage {
        var covered: [Bool]
        var patterns: Set<String> = []

        init(count: Int) { covered = [Bool](repeating: false, count: count) }

        mutating func cover(_ start: Int, _ length: Int, _ kind: String) {
            guard length > 1 else { return }
            for i in (start + 1)..<(start + length) { covered[i] = true }
            patterns.insert(kind)
        }

        mutating func find(_ needle: [UInt32], in haystack: [UInt32], _ kind: String) {
            let m = needle.count
            guard m >= 3, m <= haystack.count else { return }
            var i = 0
            while i + m <= haystack.count {
                var k = 0
                while k < m && haystack[i + k] == needle[k] { k += 1 }
                if k == m {
                    cover(i, m, kind)
                    i += m
                } else {
                    i += 1
                }
            }
        }
    }

    /// Ascending/descending runs of 4+ letters or digits, and repeated characters (3+).
    private static func coverSequencesAndRepeats(_ lower: [UInt32], in coverage: inout Coverage) {
        let n = lower.count
        var i = 0
        while i < n {
            var j = i + 1
            if isAlnum(lower[i]), j < n, isAlnum(lower[j]) {
                let step = Int64(lower[j]) - Int64(lower[i])
                if step == 1 || step == -1 {
                    while j < n, isAlnum(lower[j]), Int64(lower[j]) - Int64(lower[j - 1]) == step { j += 1 }
                    if j - i >= 4 {
                        coverage.cover(i, j - i, "a sequence")
                        i = j
                        continue
                    }
                    j = i + 1
                }
            }
            while j < n, lower[j] == lower[i] { j += 1 }
            if j - i >= 3 { coverage.cover(i, j - i, "a repeated character") }
            i = max(j, i + 1)
        }
    }

    /// Keyboard-row runs of 4+ (forwards and backwards).
    private static func coverKeyboardRuns(_ lower: [UInt32], in coverage: inout Coverage) {
        let n = lower.count
        for positions in rowPositions {
            var k = 0
            while k < n {
                guard let start = positions[lower[k]] else {
                    k += 1
                    continue
                }
                var len = 1
                while k + len < n, positions[lower[k + len]] == start + len { len += 1 }
                if len >= 4 {
                    coverage.cover(k, len, "a keyboard run")
                    k += len
                } else {
                    k += 1
                }
            }
        }
    }

    /// The size of the alphabet a brute-force guesser would have to try, from the classes the secret uses.
    private static func charsetSize(of scalars: [Unicode.Scalar]) -> Int {
        var charset = 0
        if scalars.contains(where: { $0.value >= 0x61 && $0.value <= 0x7A }) { charset += 26 }
        if scalars.contains(where: { $0.value >= 0x41 && $0.value <= 0x5A }) { charset += 26 }
        if scalars.contains(where: { $0.value >= 0x30 && $0.value <= 0x39 }) { charset += 10 }
        if scalars.contains(where: { $0.value >= 0x20 && $0.value < 0x7F && !TextCheck.isASCIILetterOrDigit($0) }) {
            charset += 33
        }
        if scalars.contains(where: { $0.value >= 0x80 }) { charset += 100 }
        return charset
    }
}
