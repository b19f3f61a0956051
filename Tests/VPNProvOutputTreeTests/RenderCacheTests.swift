import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvCrypto
@testable import VPNProvOutputTree

/// The render cache file reads back exactly what was written, and anything unexpected reads as empty
/// (an unreadable cache only means rendering everything again).
@Suite(.temporaries) struct RenderCacheTests {
    static let sample = RenderCache(entries: [
        "alice": .init(
            fingerprint: "f1",
            files: [
                .init(
                    path: "clients/alice/b file.sswan",
                    sha256: .init(hex: Array(String(repeating: "a", count: 64).utf8))!, isPrivate: true),
                .init(
                    path: "clients/alice/README", sha256: .init(hex: Array(String(repeating: "b", count: 64).utf8))!,
                    isPrivate: false),
            ]),
        "@servers": .init(
            fingerprint: "f2",
            files: [
                .init(
                    path: "catalog/servers.json", sha256: .init(hex: Array(String(repeating: "c", count: 64).utf8))!,
                    isPrivate: false)
            ]),
        "empty": .init(fingerprint: "f3", files: []),
    ])

    @Test func roundTrips() {
        let bytes = Self.sample.bytes
        let read = RenderCache(bytes: bytes)
        #expect(read.entries.count == 3)
        for (name, entry) in Self.sample.entries {
            #expect(read.entries[name]?.fingerprint == entry.fingerprint)
            #expect(Set(read.entries[name]?.files ?? []) == Set(entry.files))
        }
        #expect(RenderCache(bytes: read.bytes).bytes == bytes)
    }

    /// The cache written in pieces (as `publish` streams it to its file) is the same bytes however it
    /// is cut, a refused piece stops it, and the paths come in the order of its `file` lines.
    @Test func writtenInPiecesIsTheSameBytes() {
        let bytes = Self.sample.bytes
        for size in [1, 40, 100, 1 << 20, .max] {
            var pieces: [[UInt8]] = []
            #expect(
                Self.sample.write(pieceSize: size) {
                    pieces.append($0)
                    return true
                })
            #expect(Array(pieces.joined()) == bytes, "piece size \(size)")
            #expect(size > bytes.count || pieces.count > 1)
        }
        var calls = 0
        #expect(
            !Self.sample.write(pieceSize: 1) { _ in
                calls += 1
                return false
            })
        #expect(calls == 1)
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("file ") }
        // `ordered()` gives the `file` lines' order (the stat records').
        var paths: [String] = []
        for (_, files) in Self.sample.ordered() {
            files.forEachFile { _, _, path in paths.append(String(decoding: path, as: UTF8.self)) }
        }
        #expect(paths == lines.map { String($0.split(separator: " ", maxSplits: 3)[3]) })
        #expect(paths.count == 3)
    }

    @Test func anythingUnexpectedReadsAsEmpty() {
        let good = Self.sample.bytes
        for bad in [
            [UInt8](), Array("not a cache\n".utf8), Array("vpnprov-cache 1\nfile x 0600 a\n".utf8),
            Array("vpnprov-cache 1\nuser a f\nsomething else\n".utf8), Array(good.dropFirst()),
        ] {
            #expect(RenderCache(bytes: bad).entries.isEmpty)
        }
        #expect(RenderCache(bytes: nil).entries.isEmpty)
    }

    @Test func digestsRoundTripThroughHex() {
        let bytes = (0..<32).map { UInt8($0 * 7 + 1) }
        let value = RenderCache.SHA256Value(bytes)
        #expect(value.hex == hexString(bytes))
        #expect(RenderCache.SHA256Value(hex: Array(value.hex.utf8)) == value)
        #expect(RenderCache.SHA256Value(hex: Array(value.hex.lowercased().utf8)) == value)
        #expect(RenderCache.SHA256Value(hex: Array(("g" + value.hex.dropFirst()).utf8)) == nil)
        #expect(RenderCache.SHA256Value(hex: Array(value.hex.dropLast().utf8)) == nil)
    }

    /// Digits are read eight at a time as one word: every byte value at every position is taken exactly
    /// when it is a hexadecimal digit, with its value, whatever its neighbours.
    @Test func everyByteAtEveryPositionOfAHexDigest() {
        let digits = Array("0123456789abcdefABCDEF".utf8)
        let value = RenderCache.SHA256Value((0..<32).map { UInt8(truncatingIfNeeded: $0 * 37 + 5) })
        let hex = Array(value.hex.utf8)
        var wrong: [String] = []
        for position in 0..<64 {
            for byte in 0...255 {
                var edited = hex
                edited[position] = UInt8(byte)
                let expected: RenderCache.SHA256Value?
                if digits.contains(UInt8(byte)) {
                    var bytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 37 + 5) }
                    let nibble = UInt8(Int(String(UnicodeScalar(UInt8(byte))), radix: 16)!)
                    let shift: UInt8 = position % 2 == 0 ? 4 : 0
                    bytes[position / 2] = bytes[position / 2] & ~(0xF << shift) | nibble << shift
                    expected = RenderCache.SHA256Value(bytes)
                } else {
                    expected = nil
                }
                if RenderCache.SHA256Value(hex: edited) != expected { wrong.append("byte \(byte) at \(position)") }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(10))")
    }
}
