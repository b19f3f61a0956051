import Foundation
import VPNProvCrypto
import VPNProvSupport

/// Lets `generate` and `check` recognise a user whose files are already right without rendering
/// them again: rendering thousands of profiles is most of a run's cost, and most runs change few
/// users.
///
/// `out/.vpnprov-cache` records, per user, a fingerprint of everything their files are rendered from
/// and the SHA-256 and mode of each file. A user is *fresh* when the fingerprint is unchanged and
/// every recorded file on disk still has that digest and mode (so an edited, deleted or re-moded
/// file is noticed exactly as by a full comparison). The file is derived from contents only, so the
/// same inventory and state give the same bytes. A missing or unreadable cache only means rendering
/// everything, never a wrong result.
package struct RenderCache: Sendable {
    static let fileName = ".vpnprov-cache"
    static let header = "vpnprov-cache 1"

    package struct File: Sendable, Hashable {
        package var path: String
        var sha256: SHA256Value
        var isPrivate: Bool
        /// The file's SHA-256 in lower-case hexadecimal (what the hand-off compares the file it reads with).
        package var sha256Hex: String { sha256.hex.lowercased() }
    }

    /// A SHA-256 value held inline (32 bytes, no heap allocation): a fleet's cache holds one per file.
    struct SHA256Value: Sendable, Hashable {
        var words: (UInt64, UInt64, UInt64, UInt64)

        init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

        init(_ bytes: [UInt8]) {
            precondition(bytes.count == 32)
            func word(_ i: Int) -> UInt64 { bytes[(i * 8)..<(i * 8 + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
            words = (word(0), word(1), word(2), word(3))
        }

        /// From 64 hexadecimal digits; nil for anything else.
        init?<S: Collection>(hex: S) where S.Element == UInt8 {
            guard hex.count == 64, let value = Array(hex).withUnsafeBufferPointer({ Self(hexDigits: $0.baseAddress!) })
            else { return nil }
            self = value
        }

        /// From the 64 hexadecimal digits at `digits`; nil when one is not a digit. Eight digits at a
        /// time, as bytes of one 64-bit word: a no-op run reads every digest of the cache (64,000 at 2,000
        /// users) and one digit at a time this was 6 % of its CPU (docs/benchmarks.md, "Why the code is
        /// shaped this way").
        init?(hexDigits digits: UnsafePointer<UInt8>) {
            let raw = UnsafeRawPointer(digits)
            var invalid: UInt64 = 0
            /// The value of the 16 digits at `at`, the first the most significant.
            func word(_ at: Int) -> UInt64 {
                UInt64(Self.nibbles(raw.loadUnaligned(fromByteOffset: at, as: UInt64.self), invalid: &invalid)) << 32
                    | UInt64(
                        Self.nibbles(raw.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self), invalid: &invalid))
            }
            let words = (word(0), word(16), word(32), word(48))
            guard invalid == 0 else { return nil }
            self.words = words
        }

        /// The eight hexadecimal digits in the bytes of `loaded` (eight bytes read from memory, so read
        /// little-endian the first digit is the lowest byte) as one 32-bit value; sets a bit of `invalid`
        /// for a byte that is not a digit.
        @inline(__always)
        private static func nibbles(_ loaded: UInt64, invalid: inout UInt64) -> UInt32 {
            let word = UInt64(littleEndian: loaded)
            let high: UInt64 = 0x8080_8080_8080_8080
            // Each byte below 0x80, so adding at most 0x7F to it never carries into the next byte; bit 7
            // of each sum then answers one comparison for that byte.
            func atLeast(_ x: UInt64, _ low: UInt8) -> UInt64 {
                (x &+ 0x0101_0101_0101_0101 &* UInt64(0x80 - low)) & high
            }
            func above(_ x: UInt64, _ top: UInt8) -> UInt64 {
                (x &+ 0x0101_0101_0101_0101 &* UInt64(0x7F - top)) & high
            }
            let ascii = word & ~high
            let decimal = atLeast(ascii, 0x30) & ~above(ascii, 0x39)
            let lower = ascii | 0x2020_2020_2020_2020
            let letter = atLeast(lower, 0x61) & ~above(lower, 0x66)
            invalid |= (word & high) | ((decimal | letter) ^ high)
            // '0'–'9' are 0x30–0x39 and 'a'–'f'/'A'–'F' 0x61–0x66/0x41–0x46: the low four bits, plus 9 for
            // a letter (bit 6 set).
            let value = (word & 0x0F0F_0F0F_0F0F_0F0F) &+ ((word >> 6) & 0x0101_0101_0101_0101) &* 9
            // Two digits to a byte (the first the high half), in the low byte of each 16-bit lane.
            let pairs = ((value & 0x000F_000F_000F_000F) << 4) | ((value >> 8) & 0x000F_000F_000F_000F)
            func byte(_ lane: Int) -> UInt32 { UInt32(truncatingIfNeeded: (pairs >> (16 * lane)) & 0xFF) }
            return byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3)
        }

        /// Upper-case hexadecimal, as the cache file has always written digests.
        var hex: String {
            var out: [UInt8] = []
            appendHex(to: &out)
            return String(decoding: out, as: UTF8.self)
        }

        /// `hex`, appended as 64 bytes (the digit of each nibble by arithmetic, not from a table: a
        /// global table is reached through its lazy initialisation on every digit of a fleet's
        /// hundreds of thousands of digests; docs/benchmarks.md, "Why the code is shaped this way").
        func appendHex(to out: inout [UInt8]) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
                func put(_ word: UInt64, at start: Int) {
                    for k in 0..<16 {
                        let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * k)) & 0xF
                        buffer[start + k] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
                    }
                }
                put(words.0, at: 0)
                put(words.1, at: 16)
                put(words.2, at: 32)
                put(words.3, at: 48)
                out += buffer
            }
        }

        static func == (a: SHA256Value, b: SHA256Value) -> Bool { a.words == b.words }
        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    /// A user's files packed into one buffer: for each, its digest (32 bytes), whether it is private
    /// (1 byte), its path's length (4 bytes) and its path. Packed instead of a `File` apiece (with a
    /// `String` each): a fleet's cache has hundreds of thousands of files, held from rendering to the
    /// end of the run (docs/benchmarks.md, "Why the code is shaped this way").
    package struct FileList: Sendable, Hashable, Sequence, ExpressibleByArrayLiteral {
        private var bytes: [UInt8] = []
        private(set) var count = 0

        init() {}

        package init(arrayLiteral files: File...) { self.init(files) }

        /// Files already packed as this list packs them (`count` of them in `packed`).
        init(packed: [UInt8], count: Int) {
            bytes = packed
            self.count = count
        }

        init<S: Sequence>(_ files: S) where S.Element == File {
            for file in files { append(file) }
        }

        mutating func append(_ file: File) {
            var path = file.path
            path.withUTF8 { append(sha256: file.sha256, isPrivate: file.isPrivate, path: $0) }
        }

        mutating func append<C: Collection>(sha256: SHA256Value, isPrivate: Bool, path: C) where C.Element == UInt8 {
            withUnsafeBytes(of: sha256.words) { bytes += $0 }
            bytes.append(isPrivate ? 1 : 0)
            withUnsafeBytes(of: UInt32(path.count).littleEndian) { bytes += $0 }
            bytes += path
            count += 1
        }

        package mutating func append(contentsOf other: FileList) {
            bytes += other.bytes
            count += other.count
        }

        /// Room for files with `pathBytes` bytes of paths between them.
        mutating func reserveCapacity(files: Int, pathBytes: Int) {
            bytes.reserveCapacity(bytes.count + files * 37 + pathBytes)
        }

        /// The buffer cut to its size (a fleet's cache holds 20,000 of them to the end of the run).
        mutating func shrinkToFit() { bytes = bytes.withUnsafeBufferPointer { Array($0) } }

        /// Calls `body` with each file in order, its path as UTF-8 bytes in place.
        func forEachFile(
            _ body: (_ sha256: SHA256Value, _ isPrivate: Bool, _ path: UnsafeBufferPointer<UInt8>) -> Void
        ) {
            _ = allFiles { sha256, isPrivate, path in
                body(sha256, isPrivate, path)
                return true
            }
        }

        /// Calls `body` with each file in order (its path as UTF-8 bytes in place) until it returns
        /// false; whether it never did.
        func allFiles(_ body: (_ sha256: SHA256Value, _ isPrivate: Bool, _ path: UnsafeBufferPointer<UInt8>) -> Bool)
            -> Bool
        {
            bytes.withUnsafeBufferPointer { buffer in
                var at = 0
                while at < buffer.count {
                    let raw = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[at...]))
                    let words = raw.loadUnaligned(as: (UInt64, UInt64, UInt64, UInt64).self)
                    let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 33, as: UInt32.self)))
                    let start = at + 37
                    guard
                        body(
                            SHA256Value(words: words), buffer[at + 32] != 0,
                            UnsafeBufferPointer(rebasing: buffer[start..<(start + length)]))
                    else { return false }
                    at = start + length
                }
                return true
            }
        }

        package func makeIterator() -> Array<File>.Iterator {
            var files: [File] = []
            files.reserveCapacity(count)
            forEachFile { sha256, isPrivate, path in
                files.append(File(path: String(decoding: path, as: UTF8.self), sha256: sha256, isPrivate: isPrivate))
            }
            return files.makeIterator()
        }

        /// The same files ordered by path (UTF-8 byte order); itself when already so.
        func sortedByPath() -> FileList {
            var previous: UnsafeBufferPointer<UInt8>?
            var inOrder = true
            forEachFile { _, _, path in
                if inOrder, let p = previous, !p.lexicographicallyPrecedes(path) { inOrder = false }
                previous = path
            }
            if inOrder { return self }
            return FileList(self.sorted { $0.path.precedesByUTF8($1.path) })
        }
    }

    package struct Entry: Sendable, Hashable {
        package var fingerprint: String
        package var files: FileList
        /// Position of the first file among all `file` lines of the cache file it was read from (its
        /// files follow in order): the key into `.vpnprov-stat`. -1 for an entry not read from a file.
        var firstOrdinal: Int32 = -1

        package init(fingerprint: String, files: FileList) {
            self.fingerprint = fingerprint
            self.files = files
        }

        init(fingerprint: String, files: FileList, firstOrdinal: Int32) {
            self.init(fingerprint: fingerprint, files: files)
            self.firstOrdinal = firstOrdinal
        }
    }

    package var entries: [String: Entry] = [:]

    /// Parses the cache file; anything unexpected gives an empty cache. Lines are read in place with
    /// fixed field positions (a fleet's cache has hundreds of thousands), never split into arrays.
    init(bytes: [UInt8]?) {
        guard let bytes else { return }
        entries = bytes.withUnsafeBufferPointer { Self.parse($0) } ?? [:]
    }

    /// The entries of a cache file, nil for anything unexpected. A `file` line is
    /// `file <64 hex digits> <0600|0644> <path>`; a `user` line `user <name> <fingerprint>`.
    private static func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> [String: Entry]? {
        guard let base = buffer.baseAddress else { return nil }
        let end = buffer.count
        var parsed: [String: Entry] = [:]
        var current: (name: String, entry: Entry)?
        // One growing buffer for the user being read, copied once at its exact size when the user ends
        // (instead of growing each user's own buffer and then shrinking it).
        var packed: [UInt8] = []
        var packedCount = 0
        func finish() {
            guard var item = current else { return }
            item.entry.files = FileList(packed: packed.withUnsafeBufferPointer { Array($0) }, count: packedCount)
            parsed[item.name] = item.entry
            packed.removeAll(keepingCapacity: true)
            packedCount = 0
        }
        func text(_ from: Int, _ to: Int) -> String {
            String(decoding: UnsafeBufferPointer(start: base + from, count: to - from), as: UTF8.self)
        }
        func matches(_ at: Int, _ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            return end - at >= count && memcmp(base + at, literal.utf8Start, count) == 0
        }
        var ordinal: Int32 = 0
        var start = 0
        var first = true
        while start < end {
            let lineEnd =
                memchr(base + start, 0x0A, end - start).map {
                    UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base
                } ?? end
            defer { start = lineEnd + 1 }
            let length = lineEnd - start
            if length == 0 { continue }
            if first {
                guard Self.header.utf8.elementsEqual(UnsafeBufferPointer(start: base + start, count: length)) else {
                    return nil
                }
                first = false
                continue
            }
            if matches(start, "file "), current != nil {
                // "file " (5), 64 digits, " ", "0600"/"0644", " ", a path of at least one byte.
                guard length > 75, base[start + 69] == 0x20, base[start + 74] == 0x20,
                    let digest = SHA256Value(hexDigits: base + start + 5)
                else { return nil }
                let isPrivate: Bool
                if matches(start + 70, "0600") {
                    isPrivate = true
                } else if matches(start + 70, "0644") {
                    isPrivate = false
                } else {
                    return nil
                }
                withUnsafeBytes(of: digest.words) { packed += $0 }
                packed.append(isPrivate ? 1 : 0)
                withUnsafeBytes(of: UInt32(length - 75).littleEndian) { packed += $0 }
                packed += UnsafeBufferPointer(start: base + start + 75, count: length - 75)
                packedCount += 1
                ordinal += 1
            } else if matches(start, "user ") {
                // Exactly two fields after "user", separated by one space, neither empty.
                let nameStart = start + 5
                guard let space = memchr(base + nameStart, 0x20, lineEnd - nameStart) else { return nil }
                let nameEnd = UnsafePointer(space.assumingMemoryBound(to: UInt8.self)) - base
                guard nameEnd > nameStart, nameEnd + 1 < lineEnd,
                    memchr(base + nameEnd + 1, 0x20, lineEnd - nameEnd - 1) == nil
                else { return nil }
                finish()
                current = (
                    text(nameStart, nameEnd),
                    Entry(fingerprint: text(nameEnd + 1, lineEnd), files: FileList(), firstOrdinal: ordinal)
                )
            } else {
                return nil
            }
        }
        if first { return nil }
        finish()
        return parsed
    }

    package init(entries: [String: Entry]) { self.entries = entries }

    /// Deterministic text: users and files sorted, in one array (`publish` streams a fleet's cache to
    /// its file with `write` instead).
    var bytes: [UInt8] {
        var out: [UInt8] = []
        _ = write(pieceSize: .max) { piece in
            out += piece
            return true
        }
        return out
    }

    /// The entries in the order `write` writes them: users sorted by name, each with its files sorted
    /// by path (the stat records' order).
    func ordered() -> [(name: String, files: FileList)] {
        entries.keys.sorted().map { ($0, entries[$0]!.files.sortedByPath()) }
    }

    /// `bytes` handed to `body` in pieces of about `pieceSize` bytes, in order, so a fleet's cache
    /// (tens of MB) can go to a file without being in memory at once. Stops at the first piece `body`
    /// refuses (returns false), and then returns false.
    func write(pieceSize: Int = 1 << 20, _ body: ([UInt8]) -> Bool) -> Bool {
        var out: [UInt8] = []
        out.reserveCapacity(min(pieceSize, 1 << 20) + 4096)
        out += Self.header.utf8
        out.append(0x0A)
        for (name, files) in ordered() {
            out += "user ".utf8
            out += name.utf8
            out.append(0x20)
            out += entries[name]!.fingerprint.utf8
            out.append(0x0A)
            files.forEachFile { sha256, isPrivate, path in
                out += "file ".utf8
                sha256.appendHex(to: &out)
                out += (isPrivate ? " 0600 " : " 0644 ").utf8
                out += path
                out.append(0x0A)
            }
            if out.count >= pieceSize {
                guard body(out) else { return false }
                out.removeAll(keepingCapacity: true)
            }
        }
        return out.isEmpty || body(out)
    }

    package static func entry(fingerprint: String, files: [OutputFile]) -> Entry {
        Entry(fingerprint: fingerprint, files: Self.files(files))
    }

    /// Each file's path, digest and mode, ordered by path.
    package static func files(_ files: [OutputFile]) -> FileList {
        var list = FileList()
        list.reserveCapacity(files: files.count, pathBytes: files.reduce(0) { $0 + $1.path.utf8.count })
        for file in files.sorted(by: { $0.path.precedesByUTF8($1.path) }) {
            list.append(
                File(path: file.path, sha256: SHA256Value(Digest.sha256(file.contents)), isPrivate: file.isPrivate))
        }
        return list
    }
}
