import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// Writes an XML property list as it goes, byte for byte what Foundation's `PropertyListEncoder`
/// (XML) and `PropertyListSerialization` write for the same values: tab indentation, `<`, `>` and
/// `&` escaped (nothing else), data as base64 in lines of 76 − 8 × indent characters indented by that
/// many tabs (indent counted up to 8), empty containers as `<dict/>`/`<array/>`. One deliberate
/// difference: a character XML 1.0 cannot carry (which Foundation writes raw, making the document
/// ill-formed) is written as U+FFFD (`TextCheck.xmlCanCarry`); the validator refuses such values before.
///
/// Foundation sorts dictionary keys; a stream writes them in the order it is given, so a caller that
/// writes a document directly (the Apple profile) gives them sorted by UTF-16 code unit, and
/// `PropertyListWriter` sorts a `DocumentValue`'s. `DocumentWriterTests` proves the equality with
/// Foundation over generated values of every escape class, and `DirectProfileWriterTests` the
/// profile's direct writer against the same profile through Foundation.
struct PropertyListStream {
    private(set) var bytes: [UInt8]
    /// Nesting depth of the next line.
    private var depth = 0
    /// Where each open container's first child would start (to write an empty one as `<dict/>`).
    private var opened: [Int] = []

    static let header = Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """.utf8)

    init(capacity: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes += Self.header
        opened.reserveCapacity(8)
    }

    /// The document's bytes, closed with `</plist>`.
    mutating func finish() -> [UInt8] {
        append("</plist>\n")
        return bytes
    }

    private mutating func tabs(_ n: Int) {
        for _ in 0..<n { bytes.append(0x09) }
    }

    private mutating func append(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `s` with `<`, `>` and `&` as entities; a string without them is copied in one piece. A
    /// character XML cannot carry (`TextCheck.xmlCanCarry`) becomes U+FFFD, so the document is always well-formed
    /// (nothing vpnprov validated holds one: this is the last line of defence, not a conversion).
    private mutating func escaped(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            var i = 0
            while i < utf8.count {
                // Eight bytes at a time past those that need nothing.
                i = ByteScan.skip(utf8, from: i) { word in
                    ByteScan.hasLess(word, 0x20) || ByteScan.has(word, UInt8(ascii: "<"))
                        || ByteScan.has(word, UInt8(ascii: ">")) || ByteScan.has(word, UInt8(ascii: "&"))
                        || ByteScan.has(word, 0xEF)
                }
                guard i < utf8.count else { break }
                let entity: StaticString
                var length = 1
                switch utf8[i] {
                case UInt8(ascii: "<"): entity = "&lt;"
                case UInt8(ascii: ">"): entity = "&gt;"
                case UInt8(ascii: "&"): entity = "&amp;"
                case 0x09, 0x0A, 0x0D:
                    i += 1
                    continue
                case 0x00..<0x20:
                    entity = "\u{FFFD}"
                // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
                case 0xEF
                where i + 2 < utf8.count && utf8[i + 1] == 0xBF && (utf8[i + 2] == 0xBE || utf8[i + 2] == 0xBF):
                    entity = "\u{FFFD}"
                    length = 3
                default:
                    i += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                append(entity)
                i += length
                start = i
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
    }

    mutating func key(_ key: String) {
        tabs(depth)
        append("<key>")
        escaped(key)
        append("</key>\n")
    }

    package mutating func string(_ s: String) {
        tabs(depth)
        append("<string>")
        escaped(s)
        append("</string>\n")
    }

    mutating func integer(_ i: Int64) {
        tabs(depth)
        append("<integer>")
        DecimalDigits.append(i.magnitude, negative: i < 0, to: &bytes)
        append("</integer>\n")
    }

    mutating func integer(_ i: Int) { integer(Int64(i)) }

    mutating func unsignedInteger(_ u: UInt64) {
        tabs(depth)
        append("<integer>")
        DecimalDigits.append(u, negative: false, to: &bytes)
        append("</integer>\n")
    }

    mutating func bool(_ b: Bool) {
        tabs(depth)
        append(b ? "<true/>\n" : "<false/>\n")
    }

    mutating func data(_ contents: [UInt8]) {
        tabs(depth)
        append("<data>\n")
        let base64 = Data(contents).base64EncodedData()
        // Foundation indents the base64 lines (not the tags) by at most 8 tabs.
        let indent = min(depth, 8)
        let line = 76 - 8 * indent
        base64.withUnsafeBytes { all in
            var start = 0
            while start < all.count {
                let end = min(start + line, all.count)
                tabs(indent)
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: all[start..<end]))
                bytes.append(0x0A)
                start = end
            }
        }
        tabs(depth)
        append("</data>\n")
    }

    mutating func beginDictionary() { open("dict") }
    mutating func endDictionary() { close("dict") }
    mutating func beginArray() { open("array") }
    mutating func endArray() { close("array") }

    private mutating func open(_ tag: StaticString) {
        tabs(depth)
        append("<")
        append(tag)
        append(">\n")
        opened.append(bytes.count)
        depth += 1
    }

    /// An empty container is written as `<dict/>` or `<array/>`, as Foundation writes it.
    private mutating func close(_ tag: StaticString) {
        depth -= 1
        if opened.removeLast() == bytes.count {
            bytes.removeLast(2)  // the ">\n" of the opening tag
            append("/>\n")
        } else {
            tabs(depth)
            append("</")
            append(tag)
            append(">\n")
        }
    }
}

/// Writes a `DocumentValue` as an XML property list through `PropertyListStream`, dictionary keys
/// sorted by UTF-16 code unit as Foundation sorts them. (Foundation's `PropertyListEncoder` orders
/// non-ASCII keys by normalized comparison instead; every key vpnprov writes is an ASCII field name,
/// where all of Foundation's orders agree.)
enum PropertyListWriter {
    static func xml(_ value: DocumentValue) -> [UInt8] {
        var stream = PropertyListStream()
        value.write(into: &stream)
        return stream.finish()
    }
}

/// Writes JSON as it goes, byte for byte what Foundation's `JSONEncoder` writes with
/// `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]` (and `JSONSerialization` with the same
/// options): two-space indentation, `"key" : value`, `"` and `\` escaped, control characters as
/// `\b \f \n \r \t` or `\u00xx`, everything else (`/`, non-ASCII) as it is, data as base64 strings,
/// empty containers as `[` or `{`, an empty line, and the closing bracket.
///
/// Keys are written in the order given: a direct writer (the `.sswan` profile) gives them sorted by
/// UTF-8 byte, `JSONWriter` sorts a `DocumentValue`'s. Each value is announced by `key(_:)` in an
/// object or `item()` in an array.
struct JSONStream {
    private(set) var bytes: [UInt8] = []
    private var depth = 0
    /// Per open container: whether it has a member yet (the next one is preceded by a comma).
    private var hasMember: [Bool] = []

    init(capacity: Int = 2048) {
        bytes.reserveCapacity(capacity)
        hasMember.reserveCapacity(8)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private mutating func append(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A quoted, escaped string; a string with nothing to escape is copied in one piece.
    mutating func quoted(_ s: String) {
        bytes.append(0x22)
        var s = s
        s.withUTF8 { utf8 in
            var start = 0
            var i = 0
            while i < utf8.count {
                // Eight bytes at a time past those that need nothing.
                i = ByteScan.skip(utf8, from: i) { word in
                    ByteScan.hasLess(word, 0x20) || ByteScan.has(word, 0x22) || ByteScan.has(word, 0x5C)
                }
                guard i < utf8.count else { break }
                let b = utf8[i]
                guard b < 0x20 || b == 0x22 || b == 0x5C else {
                    i += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                i += 1
                start = i
                switch b {
                case 0x22: append("\\\"")
                case 0x5C: append("\\\\")
                case 0x08: append("\\b")
                case 0x0C: append("\\f")
                case 0x0A: append("\\n")
                case 0x0D: append("\\r")
                case 0x09: append("\\t")
                default:
                    append("\\u00")
                    bytes.append(Self.hex[Int(b >> 4)])
                    bytes.append(Self.hex[Int(b & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(0x22)
    }

    private mutating func nextMember() {
        if hasMember[hasMember.count - 1] { append(",\n") } else { hasMember[hasMember.count - 1] = true }
        for _ in 0..<depth { bytes.append(0x20) }
    }

    /// The next member of the open object: its key (then its value).
    mutating func key(_ key: String) {
        nextMember()
        quoted(key)
        append(" : ")
    }

    /// The next element of the open array (then its value).
    mutating func item() { nextMember() }

    package mutating func string(_ s: String) { quoted(s) }
    mutating func integer(_ i: Int64) { DecimalDigits.append(i.magnitude, negative: i < 0, to: &bytes) }
    mutating func unsignedInteger(_ u: UInt64) { DecimalDigits.append(u, negative: false, to: &bytes) }
    mutating func bool(_ b: Bool) { append(b ? "true" : "false") }
    mutating func data(_ contents: [UInt8]) { quoted(Data(contents).base64EncodedString()) }

    mutating func beginObject() { open(UInt8(ascii: "{")) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray() { open(UInt8(ascii: "[")) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        bytes.append(0x0A)
        hasMember.append(false)
        depth += 2
    }

    /// Members end with a newline before the bracket; an empty container gets an empty line.
    private mutating func close(_ bracket: UInt8) {
        hasMember.removeLast()
        depth -= 2
        bytes.append(0x0A)
        for _ in 0..<depth { bytes.append(0x20) }
        bytes.append(bracket)
    }
}

/// Writes a `DocumentValue` as JSON through `JSONStream`, keys sorted by UTF-8 byte as `JSONEncoder`
/// sorts them. (`JSONSerialization` orders keys with non-ASCII or control characters differently;
/// every key vpnprov writes is ASCII, where the two agree.)
enum JSONWriter {
    static func json(_ value: DocumentValue) -> [UInt8] {
        var stream = JSONStream()
        value.write(into: &stream)
        return stream.bytes
    }
}

/// What `DocumentValue.write(into:)` needs of a stream: its leaves, containers and keys.
protocol DocumentStream {
    mutating func string(_ s: String)
    mutating func integer(_ i: Int64)
    mutating func unsignedInteger(_ u: UInt64)
    mutating func bool(_ b: Bool)
    mutating func data(_ contents: [UInt8])
    mutating func beginArray()
    /// Before each element of an array.
    mutating func item()
    mutating func endArray()
    mutating func beginDictionary()
    mutating func key(_ key: String)
    mutating func endDictionary()
    /// Dictionary entries in the order Foundation writes this format's keys.
    static func ordered(_ entries: [(String, DocumentValue)]) -> [(String, DocumentValue)]
}

extension PropertyListStream: DocumentStream {
    /// An array element needs nothing before it in a plist.
    mutating func item() {}
    static func ordered(_ entries: [(String, DocumentValue)]) -> [(String, DocumentValue)] {
        DocumentValue.sortedByUTF16(entries)
    }
}

extension JSONStream: DocumentStream {
    mutating func beginDictionary() { beginObject() }
    mutating func endDictionary() { endObject() }
    static func ordered(_ entries: [(String, DocumentValue)]) -> [(String, DocumentValue)] {
        DocumentValue.sortedByUTF8(entries)
    }
}

extension DocumentValue {
    /// The value into `s`, dictionary keys in the stream's order.
    func write<S: DocumentStream>(into s: inout S) {
        switch self {
        case .string(let v): s.string(v)
        case .integer(let i): s.integer(i)
        case .unsignedInteger(let u): s.unsignedInteger(u)
        case .bool(let b): s.bool(b)
        case .data(let bytes): s.data(bytes)
        case .array(let items):
            s.beginArray()
            for item in items {
                s.item()
                item.write(into: &s)
            }
            s.endArray()
        case .dictionary(let entries):
            s.beginDictionary()
            for (key, item) in S.ordered(entries) {
                s.key(key)
                item.write(into: &s)
            }
            s.endDictionary()
        }
    }
}

/// Finding the few bytes a writer must escape in long runs of bytes it copies as they are: eight bytes
/// at a time, with the word tests of "Bit Twiddling Hacks" (S. E. Anderson, "Determine if a word has a
/// byte less than n", "... equal to n"), exact as yes-or-no answers. Profiles are mostly such runs; byte
/// by byte, the scan was 2.5 % of a fleet run (docs/benchmarks.md, "Why the code is shaped this way").
enum ByteScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether a byte of `word` is below `n` (n at most 128).
    @inline(__always) static func hasLess(_ word: UInt64, _ n: UInt8) -> Bool {
        (word &- ones &* UInt64(n)) & ~word & highs != 0
    }

    /// Whether a byte of `word` is `byte`.
    @inline(__always) static func has(_ word: UInt64, _ byte: UInt8) -> Bool {
        hasLess(word ^ (ones &* UInt64(byte)), 1)
    }

    /// The first position from `start` whose eight-byte word (or the short rest) `mayNeed` does not
    /// clear: every byte before it needs nothing.
    @inline(__always) static func skip(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ mayNeed: (UInt64) -> Bool
    ) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var i = start
        while i + 8 <= bytes.count {
            if mayNeed(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) { break }
            i += 8
        }
        return i
    }
}

/// Decimal digits written straight into a document's bytes, as `String(value)` spells them, without
/// making the string (every profile holds dozens of integers).
enum DecimalDigits {
    static func append(_ magnitude: UInt64, negative: Bool, to bytes: inout [UInt8]) {
        if negative { bytes.append(UInt8(ascii: "-")) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var value = magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            } while value != 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
