import VPNProvCrypto
import VPNProvSupport

/// Output paths packed into one byte buffer, with a small status each, instead of a `String` apiece: a
/// fleet's tree has hundreds of thousands of files, held from rendering to publishing, and as many
/// long-lived small allocations weigh on the run's memory and on every later allocation
/// (docs/benchmarks.md, "Why the code is shaped this way").
/// Reads as a collection of `String`s; order is insertion order.
package struct PathList: Sendable, Equatable, RandomAccessCollection, ExpressibleByArrayLiteral {
    /// What `OutputTree.Session.prepare` found for a path.
    struct Status: OptionSet, Sendable, Equatable {
        let rawValue: UInt8
        /// Missing or stale (compare mode), or written under a temporary name (write mode).
        static let changed = Status(rawValue: 1)
        /// Written under its temporary name (write mode).
        static let staged = Status(rawValue: 2)
        /// Written under its own name inside a staged folder, which is renamed into place whole (write
        /// mode).
        static let inStagedFolder = Status(rawValue: 4)
    }

    private var bytes: [UInt8] = []
    /// Where each path ends in `bytes` (it starts where the one before ends).
    private var ends: [UInt32] = []
    private var statuses: [UInt8] = []

    package init() {}

    package init(arrayLiteral paths: String...) {
        for path in paths { append(path) }
    }

    package init<S: Sequence>(_ paths: S) where S.Element == String {
        for path in paths { append(path) }
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { ends.count }

    package subscript(i: Int) -> String { String(decoding: bytes[range(i)], as: UTF8.self) }

    func status(_ i: Int) -> Status { Status(rawValue: statuses[i]) }

    func range(_ i: Int) -> Range<Int> { (i == 0 ? 0 : Int(ends[i - 1]))..<Int(ends[i]) }

    /// The UTF-8 bytes of path `i`, in place.
    func utf8(_ i: Int) -> ArraySlice<UInt8> { bytes[range(i)] }

    /// The names `x` of the paths `top/x/...` among `positions`: the nodes under `servers`, the users
    /// under `clients`. Paths of one folder are neighbours when the list is sorted, so each name is made once.
    func owners<S: Sequence>(under top: String, at positions: S) -> Set<String> where S.Element == Int {
        let prefix = Array((top + "/").utf8)
        var names = Set<String>()
        var last: [UInt8] = []
        for i in positions {
            let utf8 = utf8(i)
            guard utf8.starts(with: prefix) else { continue }
            let rest = utf8.dropFirst(prefix.count)
            let name = rest[..<(rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex)]
            guard !name.isEmpty, !name.elementsEqual(last) else { continue }
            last = Array(name)
            names.insert(String(decoding: last, as: UTF8.self))
        }
        return names
    }

    /// `owners(under:at:)` over every path.
    package func owners(under top: String) -> Set<String> { owners(under: top, at: indices) }

    mutating func append(_ path: String, _ status: Status = []) {
        var path = path
        path.withUTF8 { append(utf8: $0, status) }
    }

    mutating func append<C: Collection>(utf8 path: C, _ status: Status = []) where C.Element == UInt8 {
        bytes += path
        precondition(bytes.count <= UInt32.max, "output paths over 4 GiB")
        ends.append(UInt32(bytes.count))
        statuses.append(status.rawValue)
    }

    mutating func append(contentsOf other: PathList) {
        let base = UInt32(bytes.count)
        precondition(bytes.count + other.bytes.count <= UInt32.max, "output paths over 4 GiB")
        bytes += other.bytes
        ends += other.ends.lazy.map { $0 + base }
        statuses += other.statuses
    }

    /// memcmp-style order of paths `i` and `j`.
    func compare(_ i: Int, _ j: Int) -> Int32 {
        bytes.withUnsafeBufferPointer { compare(i, utf8: UnsafeBufferPointer(rebasing: $0[range(j)])) }
    }

    /// memcmp-style order of path `i` and `path`.
    func compare(_ i: Int, _ path: String) -> Int32 {
        var path = path
        return path.withUTF8 { compare(i, utf8: $0) }
    }

    /// memcmp-style order of path `i` and the path with these UTF-8 bytes.
    func compare(_ i: Int, utf8 path: UnsafeBufferPointer<UInt8>) -> Int32 {
        bytes.withUnsafeBufferPointer { compareUTF8(UnsafeBufferPointer(rebasing: $0[range(i)]), path) }
    }

    /// The positions of the paths, ordered by UTF-8 byte (ties in insertion order). A long list is
    /// sorted in two halves on two cores and merged (it is sorted at the end of a run, when nothing
    /// else is running).
    func sortedOrder() -> [Int32] {
        precondition(count <= Int32.max)
        let before: @Sendable (Int32, Int32) -> Bool = { a, b in
            let c = self.compare(Int(a), Int(b))
            return c != 0 ? c < 0 : a < b
        }
        guard count >= 100_000 else { return Array(0..<Int32(count)).sorted(by: before) }
        let half = Int32(count / 2)
        let halves = parallelMap(2) { k in (k == 0 ? Array(0..<half) : Array(half..<Int32(count))).sorted(by: before) }
        var order: [Int32] = []
        order.reserveCapacity(count)
        var i = 0
        var j = 0
        let (left, right) = (halves[0], halves[1])
        while i < left.count && j < right.count {
            if before(right[j], left[i]) {
                order.append(right[j])
                j += 1
            } else {
                order.append(left[i])
                i += 1
            }
        }
        order += left[i...]
        order += right[j...]
        return order
    }

    /// Whether the list, sorted by UTF-8 byte, holds `path` (binary search).
    func containsSorted(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { containsSorted(utf8: $0) }
    }

    func containsSorted(utf8 path: UnsafeBufferPointer<UInt8>) -> Bool { firstNotBefore(utf8: path, from: 0).found }

    /// The first position at or after `start` whose path does not sort before `path` (the list sorted by
    /// UTF-8 byte), and whether it is `path`.
    func firstNotBefore(utf8 path: UnsafeBufferPointer<UInt8>, from start: Int) -> (position: Int, found: Bool) {
        var low = start
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if compare(mid, utf8: path) < 0 { low = mid + 1 } else { high = mid }
        }
        return (low, low < count && compare(low, utf8: path) == 0)
    }

    /// The paths of `lines` (each call one path's UTF-8 bytes) the list, sorted by UTF-8 byte, does not
    /// hold. Lines in ascending order (a fleet's manifest has hundreds of thousands) are matched by one walk
    /// through the list; a line below the highest one so far is searched for.
    func missing(from lines: ((ArraySlice<UInt8>) -> Void) -> Void) -> [String] {
        var out: [String] = []
        // The highest line so far, whether the list holds it, and the first position past it.
        var highest: ArraySlice<UInt8>?
        var highestFound = false
        var next = 0
        lines { line in
            line.withUnsafeBufferPointer { path in
                let found: Bool
                if let h = highest, line.elementsEqual(h) {
                    found = highestFound
                } else if let h = highest, line.lexicographicallyPrecedes(h) {
                    found = containsSorted(utf8: path)
                } else {
                    // Every position before `next` holds a path at or below the highest line.
                    var position = next
                    if position >= count || compare(position, utf8: path) < 0 {
                        position = firstNotBefore(utf8: path, from: next).position
                    }
                    found = position < count && compare(position, utf8: path) == 0
                    next = found ? position + 1 : position
                    highest = line
                    highestFound = found
                }
                if !found { out.append(String(decoding: path, as: UTF8.self)) }
            }
        }
        return out
    }

    /// The bytes of all paths together.
    var utf8Count: Int { bytes.count }

    /// The paths at `positions`, in that order, with their statuses (in buffers of exactly their size).
    func subset<C: Collection>(_ positions: C) -> PathList where C.Element == Int32 {
        var out = PathList()
        out.bytes.reserveCapacity(positions.reduce(0) { $0 + range(Int($1)).count })
        out.ends.reserveCapacity(positions.count)
        out.statuses.reserveCapacity(positions.count)
        for i in positions { out.append(utf8: utf8(Int(i)), status(Int(i))) }
        return out
    }

    package static func == (a: PathList, b: PathList) -> Bool { a.elementsEqual(b) }
}

extension PathList: Encodable {
    /// An array of strings.
    package func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        for path in self { try container.encode(path) }
    }
}
