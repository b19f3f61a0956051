import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport

/// `out/.vpnprov-stat`: what each file of the render cache looked like on disk (inode, size, mode,
/// change time) when vpnprov last wrote or verified it, so a run can trust an untouched file without
/// reading and hashing it (a fleet's tree is hundreds of MB). The same idea as git's index.
///
/// A file is trusted only when all of those are unchanged *and* its change time is older than this
/// file itself: any write, rename or chmod moves the change time, which a program cannot set back,
/// and a change in the same clock tick as the recording is treated as possibly unrecorded
/// ("racy") and the file is hashed. Records are by position: record *i* is the *i*-th `file` line of
/// the render cache, whose SHA-256 the header names, so a stat file that belongs to another cache is
/// ignored. It is machine-local bookkeeping (an inode means nothing on another machine): unlike every
/// other file of the tree it is not derived from the inputs, it is never compared by `check`, and
/// losing it only costs one run the time to hash the tree.
package struct StatCache: Sendable {
    static let fileName = ".vpnprov-stat"
    static let magic = "vpnprov-stat 1 "
    static let recordSize = 32

    struct Record: Sendable, Equatable {
        var inode: UInt64
        var size: Int64
        var changedSeconds: Int64
        var changedNanoseconds: UInt32
        var mode: UInt32

        init(_ st: stat) {
            inode = UInt64(st.st_ino)
            size = Int64(st.st_size)
            changedSeconds = Int64(st.st_ctim.tv_sec)
            changedNanoseconds = UInt32(truncatingIfNeeded: st.st_ctim.tv_nsec)
            mode = UInt32(st.st_mode)
        }
    }

    private let bytes: [UInt8]
    private let count: Int
    private let offset: Int
    /// The stat file's own modification time: records changed at or after it are not trusted.
    private let writtenSeconds: Int64
    private let writtenNanoseconds: Int64

    /// The records of `bytes` when they belong to the cache with this digest; nil otherwise.
    init?(bytes: [UInt8], cacheDigest: String, written: timespec) {
        guard let newline = bytes.firstIndex(of: 0x0A) else { return nil }
        let header = String(decoding: bytes[..<newline], as: UTF8.self)
        guard header.hasPrefix(Self.magic) else { return nil }
        let fields = header.dropFirst(Self.magic.count).split(separator: " ")
        // A hint, never trusted blindly: a count whose records would not fit (or whose byte size
        // overflows) makes the whole file void instead of a trap.
        guard fields.count == 2, fields[0] == cacheDigest, let count = Int(fields[1]), count >= 0 else { return nil }
        let (size, overflow) = count.multipliedReportingOverflow(by: Self.recordSize)
        guard !overflow, bytes.count - (newline + 1) == size else { return nil }
        self.bytes = bytes
        self.count = count
        offset = newline + 1
        writtenSeconds = Int64(written.tv_sec)
        writtenNanoseconds = Int64(written.tv_nsec)
    }

    private func record(_ i: Int) -> Record {
        var r = Record(stat())
        bytes.withUnsafeBytes { raw in
            let base = offset + i * Self.recordSize
            func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
                T(littleEndian: raw.loadUnaligned(fromByteOffset: base + at, as: T.self))
            }
            r.inode = load(0, UInt64.self)
            r.size = load(8, Int64.self)
            r.changedSeconds = load(16, Int64.self)
            r.changedNanoseconds = load(24, UInt32.self)
            r.mode = load(28, UInt32.self)
        }
        return r
    }

    /// Whether the file at `ordinal`, now described by `st`, is as recorded and was recorded after its
    /// last change.
    func trusts(_ st: stat, ordinal: Int) -> Bool {
        guard ordinal >= 0, ordinal < count else { return false }
        let now = Record(st)
        guard record(ordinal) == now else { return false }
        return (now.changedSeconds, Int64(now.changedNanoseconds)) < (writtenSeconds, writtenNanoseconds)
    }

    /// The stat file for the render cache `cache`: one record per `file` line, in order, from the files
    /// below `root` as they are now; nil when one of them cannot be examined. The files are examined
    /// on all cores, in runs of neighbouring paths that share directory descriptors.
    static func encode(cache: [UInt8], root: Int32) -> [UInt8]? {
        let filePrefix = Array("file ".utf8)
        var paths: [Range<Int>] = []
        var start = 0
        while start < cache.count {
            let end = cache[start...].firstIndex(of: 0x0A) ?? cache.count
            let line = cache[start..<end]
            start = end + 1
            guard line.starts(with: filePrefix) else { continue }
            // "file <digest> <mode> <path>": the path is everything after the third space.
            var at = line.startIndex
            for _ in 0..<3 {
                guard let space = line[at...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
                at = space + 1
            }
            paths.append(at..<line.endIndex)
        }
        let ranges = paths
        return encode(
            count: ranges.count, path: { cache[ranges[$0]] }, cacheDigest: hexString(Digest.sha256(cache)), root: root)
    }

    /// The stat file for the render cache with SHA-256 `cacheDigest` whose `file` lines name, in order,
    /// the paths (UTF-8) `path(0)`, ..., `path(count - 1)`; nil when one of them cannot be examined.
    /// Paths are read as bytes, each directory opened once per run of files in it (a fleet has
    /// 64,000 files in 11,000 directories), with `checkRelativePath`'s rules.
    static func encode(
        count: Int, path: @Sendable (Int) -> ArraySlice<UInt8>, cacheDigest: String, root: Int32
    ) -> [UInt8]? {
        records(count: count, path: path, root: root).map { file(records: $0, count: count, cacheDigest: cacheDigest) }
    }

    /// The stat file made of `records` (`count` of them, from `records(count:path:root:)`) for the render
    /// cache with SHA-256 `cacheDigest`.
    static func file(records: [UInt8], count: Int, cacheDigest: String) -> [UInt8] {
        var out = Array("\(magic)\(cacheDigest) \(count)\n".utf8)
        out.reserveCapacity(out.count + records.count)
        out += records
        return out
    }

    /// Appends `r` as the stat file holds it (little-endian, `recordSize` bytes).
    private static func put(_ r: Record, into part: inout [UInt8]) {
        func put<T: FixedWidthInteger>(_ v: T) {
            withUnsafeBytes(of: v.littleEndian) { part.append(contentsOf: $0) }
        }
        put(r.inode)
        put(r.size)
        put(r.changedSeconds)
        put(r.changedNanoseconds)
        put(r.mode)
    }

    /// The records of the files at `path(0)`, ..., `path(count - 1)` (UTF-8), in order; nil when one of
    /// them cannot be examined.
    static func records(count: Int, path: @Sendable (Int) -> ArraySlice<UInt8>, root: Int32) -> [UInt8]? {
        // Each run of paths makes its own part of the records, on all cores; the parts are joined in order.
        let perRun = 1024
        let runs = parallelMap((count + perRun - 1) / perRun) { k -> [UInt8]? in
            let examiner = Examiner(root: root)
            defer { examiner.close() }
            let range = (k * perRun)..<min(count, (k + 1) * perRun)
            var part: [UInt8] = []
            part.reserveCapacity(range.count * recordSize)
            for i in range {
                guard let record = path(i).withUnsafeBufferPointer({ examiner.record($0) }) else { return nil }
                put(record, into: &part)
            }
            return part
        }
        return joined(runs, capacity: count * recordSize)
    }

    /// The records of the files of `cache`, in the order of its `file` lines, and how many; nil when one
    /// of them cannot be examined. `written` holds the records taken as files were written whole in a
    /// staged folder, each folder's in path order under its first path: an entry whose files are
    /// exactly such a folder's (its first path finds them, and as many) takes them as they are.
    static func records(of cache: RenderCache, root: Int32, written: [String: [Record]]) -> (
        records: [UInt8], count: Int
    )? {
        let entries = cache.ordered()
        let count = entries.reduce(0) { $0 + $1.files.count }
        // Runs of users on all cores; the parts are joined in order.
        let perRun = 32
        let runs = parallelMap((entries.count + perRun - 1) / perRun) { k -> [UInt8]? in
            let examiner = Examiner(root: root)
            defer { examiner.close() }
            var part: [UInt8] = []
            for (_, files) in entries[(k * perRun)..<min(entries.count, (k + 1) * perRun)] {
                var first: String?
                _ = files.allFiles { _, _, path in
                    first = String(decoding: path, as: UTF8.self)
                    return false
                }
                if let first, let known = written[first], known.count == files.count {
                    for record in known { put(record, into: &part) }
                    continue
                }
                let ok = files.allFiles { _, _, path in
                    guard let record = examiner.record(path) else { return false }
                    put(record, into: &part)
                    return true
                }
                guard ok else { return nil }
            }
            return part
        }
        return joined(runs, capacity: count * recordSize).map { ($0, count) }
    }

    private static func joined(_ runs: [[UInt8]?], capacity: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(capacity)
        for part in runs {
            guard let part else { return nil }
            out += part
        }
        return out
    }

    /// Reads files' status by path below `root` (with `checkRelativePath`'s rules, never following a
    /// link), each directory opened once per run of files in it (`DirectoryCache.place(utf8:)`).
    private struct Examiner {
        let directories: OutputTree.DirectoryCache

        init(root: Int32) { directories = OutputTree.DirectoryCache(root: root, create: false) }

        func close() { directories.closeAll() }

        /// The record of the file at `path` (UTF-8); nil when it cannot be examined.
        func record(_ path: UnsafeBufferPointer<UInt8>) -> Record? {
            guard let place = try? directories.place(utf8: path) else { return nil }
            return OutputTree.withCString(UnsafeBufferPointer(rebasing: path[place.nameStart...])) { name in
                var st = stat()
                return fstatat(place.dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? Record(st) : nil
            }
        }
    }
}
