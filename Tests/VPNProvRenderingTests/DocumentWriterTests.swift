import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvModel
@testable import VPNProvRendering

/// Differential tests of the direct plist and JSON writers: over generated values covering every
/// escape class (control characters, quotes, `<>&`, `]]>`, non-ASCII, the astral plane, empty
/// strings, extreme integers, empty and deeply nested containers, data of every length at every
/// indentation), the bytes must equal what Foundation's serializers make of the same values, and
/// what Foundation's encoders make of the Encodable documents vpnprov writes.
@Suite(.temporaries) struct DocumentWriterTests {
    /// The seeded generator of the mutation tests, so a failure names a reproducible seed.
    struct Generator {
        var seeded: SeededGenerator
        init(state: UInt64) { seeded = SeededGenerator(seed: state) }
        mutating func next() -> UInt64 { seeded.next() }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let pieces: [String] = [
        "", "a", "Z", "plain text", "\"", "'", "\\", "/", "<", ">", "&", "]]>", "<![CDATA[", "&amp;", "\u{0}", "\u{1}",
        "\u{8}",
        "\u{9}", "\u{A}", "\u{C}", "\u{D}", "\u{1B}", "\u{1F}", "\u{7F}", "\u{80}", "é", "Ä", "ß", "\u{2028}",
        "\u{2029}", "\u{FEFF}",
        "日本", "😀", "\u{10FFFF}", "👩‍👩‍👧", "e\u{301}", "-", "_", "0", " ", "  ", "#", "%", "{", "}", "[", "]",
    ]

    /// `pieces` with the characters XML 1.0 cannot carry (which the plist writer replaces, and the
    /// validator refuses before: `XMLSafetyTests`) swapped for other controls it can, index for index.
    static let xmlPieces: [String] = pieces.map { piece in
        piece.unicodeScalars.allSatisfy(TextCheck.xmlCanCarry) ? piece : "\u{7F}\u{9}"
    }

    static func string(_ g: inout Generator, xml: Bool = false) -> String {
        (0..<g.int(5)).map { _ in (xml ? xmlPieces : pieces)[g.int(pieces.count)] }.joined()
    }

    static func value(_ g: inout Generator, depth: Int, xml: Bool = false) -> DocumentValue {
        let kind = depth > 10 ? g.int(5) : g.int(8)
        switch kind {
        case 0: return .string(string(&g, xml: xml))
        case 1:
            let extremes: [Int64] = [0, -1, 1, Int64.max, Int64.min, 1410, -999_999_999_999]
            return .integer(g.int(2) == 0 ? extremes[g.int(extremes.count)] : Int64(bitPattern: g.next()))
        case 2: return .unsignedInteger(g.int(2) == 0 ? UInt64.max : g.next())
        case 3: return .bool(g.int(2) == 0)
        case 4:
            return .data(
                (0..<[0, 1, 2, 3, 38, 39, 40, 51, 57, 58, 200][g.int(11)]).map { _ in
                    UInt8(truncatingIfNeeded: g.next())
                })
        case 5, 6:
            var keys = Set<String>()
            var entries: [(String, DocumentValue)] = []
            for _ in 0..<g.int(5) {
                let key = string(&g, xml: xml)
                if keys.insert(key).inserted { entries.append((key, value(&g, depth: depth + 1, xml: xml))) }
            }
            return .dictionary(entries)
        default:
            return .array((0..<g.int(4)).map { _ in value(&g, depth: depth + 1, xml: xml) })
        }
    }

    /// The same values as Foundation objects (JSON has no data: base64 strings, as JSONEncoder writes them).
    static func foundation(_ v: DocumentValue, json: Bool) -> Any {
        switch v {
        case .string(let s): return s
        case .integer(let i): return NSNumber(value: i)
        case .unsignedInteger(let u): return NSNumber(value: u)
        case .bool(let b): return b
        case .data(let d): return json ? Data(d).base64EncodedString() : Data(d)
        case .array(let items): return items.map { foundation($0, json: json) }
        case .dictionary(let entries):
            var d: [String: Any] = [:]
            for (k, item) in entries { d[k] = foundation(item, json: json) }
            return d
        }
    }

    /// The same values as an Encodable, for Foundation's `JSONEncoder` (dictionary keys as they are).
    struct Dynamic: Encodable {
        var value: DocumentValue
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { return nil }
        }
        func encode(to encoder: Encoder) throws {
            switch value {
            case .string(let s):
                var c = encoder.singleValueContainer()
                try c.encode(s)
            case .integer(let i):
                var c = encoder.singleValueContainer()
                try c.encode(i)
            case .unsignedInteger(let u):
                var c = encoder.singleValueContainer()
                try c.encode(u)
            case .bool(let b):
                var c = encoder.singleValueContainer()
                try c.encode(b)
            case .data(let d):
                var c = encoder.singleValueContainer()
                try c.encode(Data(d))
            case .array(let items):
                var c = encoder.unkeyedContainer()
                for item in items { try c.encode(Dynamic(value: item)) }
            case .dictionary(let entries):
                var c = encoder.container(keyedBy: Key.self)
                for (k, item) in entries { try c.encode(Dynamic(value: item), forKey: Key(stringValue: k)) }
            }
        }
    }

    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Where two outputs of synthetic test values part (a short window of each, never whole documents).
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> String {
        let i = zip(a, b).prefix { $0 == $1 }.count
        func window(_ x: [UInt8]) -> String {
            String(decoding: x[max(0, i - 30)..<min(x.count, i + 30)], as: UTF8.self).debugDescription
        }
        return "at byte \(i): ours \(window(a)) vs Foundation's \(window(b))"
    }

    /// Where a value parsed by JSONSerialization differs from `value` (data as its base64 text); nil when it does not.
    /// Foundation's parser drops U+FEFF inside strings (JSONEncoder writes it, and other parsers keep it), so
    /// strings and keys are compared without it.
    static func mismatch(_ parsed: Any, _ value: DocumentValue, path: String) -> String? {
        func plain(_ s: String) -> String { s.replacingOccurrences(of: "\u{FEFF}", with: "") }
        func number(_ text: String) -> String? {
            (parsed as? NSNumber).map { "\($0)" == text ? nil : "\(path): \($0) != \(text)" } ?? "\(path): not a number"
        }
        switch value {
        case .string(let s): return (parsed as? String).map(plain) == plain(s) ? nil : "\(path): string"
        case .data(let d): return parsed as? String == Data(d).base64EncodedString() ? nil : "\(path): data"
        case .bool(let b): return (parsed as? Bool) == b ? nil : "\(path): bool \(parsed)"
        case .integer(let i): return number("\(i)")
        case .unsignedInteger(let u): return number("\(u)")
        case .array(let items):
            guard let list = parsed as? [Any], list.count == items.count else { return "\(path): array" }
            for (i, (p, item)) in zip(list, items).enumerated() {
                if let m = mismatch(p, item, path: "\(path)[\(i)]") { return m }
            }
            return nil
        case .dictionary(let entries):
            guard let parsedDict = parsed as? [String: Any] else { return "\(path): not a dictionary" }
            var dict: [String: Any] = [:]
            for (k, v) in parsedDict { dict[plain(k)] = v }
            // Keys that differ only by U+FEFF.
            guard Set(entries.map { plain($0.0) }).count == entries.count else { return nil }
            guard dict.count == entries.count else {
                return "\(path): dictionary of \(dict.count) for \(entries.count)"
            }
            for (key, item) in entries {
                guard let p = dict[plain(key)] else { return "\(path): missing key \(key.debugDescription)" }
                if let m = mismatch(p, item, path: "\(path).\(key.debugDescription)") { return m }
            }
            return nil
        }
    }

    /// Compared as Bools so a failure names the case, never dumps the bytes.
    @Test(arguments: 0..<4)
    func generatedDocumentsMatchFoundation(batch: Int) throws {
        var g = Generator(state: UInt64(batch) &* 7919 &+ 1)
        let encoder = Self.jsonEncoder()
        for round in 0..<150 {
            // A top-level dictionary, as every document vpnprov writes has; the plist one from the
            // same draws without the characters XML cannot carry.
            func document(_ g: inout Generator, xml: Bool) -> DocumentValue {
                var entries: [(String, DocumentValue)] = []
                var keys = Set<String>()
                for _ in 0..<(1 + g.int(6)) {
                    let key = Self.string(&g, xml: xml)
                    if keys.insert(key).inserted { entries.append((key, Self.value(&g, depth: 0, xml: xml))) }
                }
                return DocumentValue.dictionary(entries)
            }
            var xmlDraws = g
            let doc = document(&g, xml: false)
            let xmlDoc = document(&xmlDraws, xml: true)
            let plist = try PropertyListSerialization.data(
                fromPropertyList: Self.foundation(xmlDoc, json: false), format: .xml, options: 0)
            let plistSame = PropertyListWriter.xml(xmlDoc) == [UInt8](plist)
            #expect(
                plistSame,
                "plist differs from PropertyListSerialization (batch \(batch), round \(round)): \(Self.difference(PropertyListWriter.xml(xmlDoc), [UInt8](plist)))"
            )
            let ours = JSONWriter.json(doc)
            let theirs = [UInt8](try encoder.encode(Dynamic(value: doc)))
            #expect(
                ours == theirs,
                "JSON differs from JSONEncoder (batch \(batch), round \(round)): \(Self.difference(ours, theirs))")
            // And Foundation's JSON parser reads back exactly the values.
            let parsed = try JSONSerialization.jsonObject(with: Data(ours))
            #expect(
                Self.mismatch(parsed, doc, path: "") == nil,
                "JSONSerialization reads other values back (batch \(batch), round \(round)) at \(Self.mismatch(parsed, doc, path: "") ?? "")"
            )
        }
    }

    /// Data at every indentation (the base64 line length depends on it, capped at depth 8).
    @Test func dataLinesAtEveryDepth() throws {
        for depth in 0..<12 {
            for length in [0, 1, 9, 10, 12, 21, 27, 33, 39, 45, 51, 57, 58, 120] {
                var v = DocumentValue.data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37) })
                for _ in 0..<depth { v = .array([v]) }
                let doc = DocumentValue.dictionary([("k", v)])
                let plist = try PropertyListSerialization.data(
                    fromPropertyList: Self.foundation(doc, json: false), format: .xml, options: 0)
                let same = PropertyListWriter.xml(doc) == [UInt8](plist)
                #expect(same, "depth \(depth), \(length) bytes")
            }
        }
    }

    struct Sample: Encodable {
        var name: String
        var count: Int
        var flag: Bool
        var blob: Data
        var missing: String?
        var present: String?
        var list: [Inner]
        var empty: [Inner]
        var map: [String: Int]
        struct Inner: Encodable {
            var x: Int64
            var y: UInt64
            var s: String
        }
    }

    @Test func encodableDocumentsMatchFoundationsEncoders() throws {
        var g = Generator(state: 42)
        for _ in 0..<100 {
            let sample = Sample(
                name: Self.string(&g, xml: true), count: Int(bitPattern: UInt(truncatingIfNeeded: g.next())),
                flag: g.int(2) == 0,
                blob: Data((0..<g.int(90)).map { _ in UInt8(truncatingIfNeeded: g.next()) }), missing: nil,
                present: Self.string(&g, xml: true),
                list: (0..<g.int(3)).map { _ in
                    Sample.Inner(x: Int64(bitPattern: g.next()), y: g.next(), s: Self.string(&g, xml: true))
                }, empty: [],
                // Keys of Encodable documents are field names (ASCII): for non-ASCII keys Foundation's own
                // encoders and serializers disagree on the order (normalized vs. code-unit comparison).
                map: Dictionary(
                    uniqueKeysWithValues: (0..<g.int(4)).map { i in
                        ("\(Self.string(&g, xml: true).unicodeScalars.filter(\.isASCII))#\(i)", i)
                    }))
            let plistEncoder = PropertyListEncoder()
            plistEncoder.outputFormat = .xml
            let doc = try DocumentEncoder.encode(sample)
            let theirs = [UInt8](try plistEncoder.encode(sample))
            #expect(PropertyListWriter.xml(doc) == theirs, "\(Self.difference(PropertyListWriter.xml(doc), theirs))")
            let jsonSame = JSONWriter.json(doc) == [UInt8](try Self.jsonEncoder().encode(sample))
            #expect(jsonSame)
        }
    }

    @Test func floatingPointIsRefused() {
        struct F: Encodable { var f = 1.5 }
        #expect(throws: EncodingError.self) { try DocumentEncoder.encode(F()) }
    }
}

/// The word tests the writers skip unescaped runs with: as yes-or-no answers they must agree with
/// looking at each byte, or a byte that needs escaping would be copied as it is.
@Suite struct ByteScanTests {
    /// Words of random bytes, and words of one byte value in every position among harmless ones.
    static func words() -> [UInt64] {
        var g = SeededGenerator(seed: 0x5EED_B17E)
        var out = (0..<20_000).map { _ in g.next() }
        for value in 0...255 {
            for position in 0..<8 {
                var word = [UInt8](repeating: UInt8(ascii: "a"), count: 8)
                word[position] = UInt8(value)
                out.append(word.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
            }
        }
        return out
    }

    static func bytes(_ word: UInt64) -> [UInt8] { withUnsafeBytes(of: word) { Array($0) } }

    @Test func wordTestsAgreeWithEachByte() {
        for word in Self.words() {
            let bytes = Self.bytes(word)
            for n: UInt8 in [1, 0x20, 0x80] {
                #expect(ByteScan.hasLess(word, n) == bytes.contains { $0 < n }, "hasLess \(word) \(n)")
            }
            for b: UInt8 in [0x00, 0x22, 0x26, 0x3C, 0x3E, 0x5C, 0x80, 0xEF, 0xFF] {
                #expect(ByteScan.has(word, b) == bytes.contains(b), "has \(word) \(b)")
            }
        }
    }

    @Test func skipStopsAtOrBeforeTheFirstByteToEscape() {
        let special: (UInt8) -> Bool = { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
        for length in 0..<26 {
            for position in 0..<max(length, 1) {
                for value in [0x00, 0x1F, 0x22, 0x5C, 0x20, 0x7F, 0xEF] as [UInt8] {
                    var buffer = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    if position < length { buffer[position] = value }
                    let stop = buffer.withUnsafeBufferPointer { pointer in
                        ByteScan.skip(pointer, from: 0) {
                            ByteScan.hasLess($0, 0x20) || ByteScan.has($0, 0x22) || ByteScan.has($0, 0x5C)
                        }
                    }
                    let first = buffer.firstIndex(where: special) ?? length
                    #expect(stop <= first, "length \(length), byte \(value) at \(position): skipped to \(stop)")
                    // Only whole words are skipped: what is left is a word holding the byte, or a short rest.
                    #expect(first == length ? length - stop < 8 : first - stop < 8)
                }
            }
        }
    }
}

/// Integers are written digit by digit into the document: the same text `String` makes of them.
@Suite struct DecimalDigitsTests {
    @Test func digitsAreStringsDigits() {
        var g = SeededGenerator(seed: 0xD1_6175)
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, Int64.max, Int64.min, Int64.min + 1]
        values += (0..<2_000).map { _ in Int64(bitPattern: g.next()) >> Int64(g.next() % 64) }
        for value in values {
            var bytes: [UInt8] = []
            DecimalDigits.append(value.magnitude, negative: value < 0, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
        var bytes: [UInt8] = []
        DecimalDigits.append(UInt64.max, negative: false, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == String(UInt64.max))
    }
}
