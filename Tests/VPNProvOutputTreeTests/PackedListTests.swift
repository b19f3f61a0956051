import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvOutputTree

/// The packed path and file lists read back what was put in, in order, and sort and search like the
/// `String`s they replace.
@Suite(.temporaries) struct PackedListTests {
    /// Paths with shared prefixes, prefixes of each other, empty, non-ASCII and astral ones, and
    /// duplicates, from a fixed seed.
    static func samplePaths(count: Int, seed: UInt64) -> [String] {
        var rng = SeededGenerator(seed: seed)
        let parts = ["clients", "servers", "a", "ab", "a b", "é", "e\u{301}", "😀", "README", "x.sswan", "", "z"]
        return (0..<count).map { _ in
            (0..<Int(rng.next() % 4)).map { _ in parts[Int(rng.next() % UInt64(parts.count))] }.joined(separator: "/")
        }
    }

    @Test func pathsReadBackInOrderWithTheirStatuses() {
        let paths = Self.samplePaths(count: 500, seed: 1)
        var list = PathList()
        var other = PathList()
        for (i, path) in paths.enumerated() {
            let status: PathList.Status = i % 3 == 0 ? [] : (i % 3 == 1 ? .changed : [.changed, .staged])
            if i < 200 { list.append(path, status) } else { other.append(path, status) }
        }
        list.append(contentsOf: other)
        #expect(Array(list) == paths)
        #expect(list.count == paths.count)
        for i in paths.indices {
            let expected: PathList.Status = i % 3 == 0 ? [] : (i % 3 == 1 ? .changed : [.changed, .staged])
            #expect(list.status(i) == expected)
            #expect(Array(list.utf8(i)) == Array(paths[i].utf8))
        }
        #expect(PathList(paths) == list)
        #expect(PathList(paths.dropLast()) != list)
    }

    @Test func sortsAndSearchesByUTF8Bytes() {
        let paths = Self.samplePaths(count: 2000, seed: 2)
        let list = PathList(paths)
        let order = list.sortedOrder()
        let expected = paths.indices.sorted { a, b in
            paths[a].utf8.lexicographicallyPrecedes(paths[b].utf8)
                || (paths[a].utf8.elementsEqual(paths[b].utf8) && a < b)
        }
        #expect(order.map(Int.init) == expected)
        let sorted = list.subset(order)
        for path in Self.samplePaths(count: 300, seed: 3) + ["", "clients/zz", "\u{10FFFF}"] {
            // By bytes, as the file system sees names ("é" precomposed and decomposed are two paths).
            #expect(
                sorted.containsSorted(path) == paths.contains { $0.utf8.elementsEqual(path.utf8) },
                "path \(path.debugDescription)")
        }
        #expect(Array(list.subset(order.prefix(10))) == expected.prefix(10).map { paths[$0] })
        #expect(sorted.utf8Count == paths.reduce(0) { $0 + $1.utf8.count })
        // For ASCII paths the byte order is `String`'s order.
        let ascii = paths.filter { $0.allSatisfy(\.isASCII) }
        let asciiList = PathList(ascii)
        #expect(asciiList.sortedOrder().map { ascii[Int($0)] } == ascii.sorted())
    }

    /// A list long enough to be sorted in two halves and merged sorts as a single sort would.
    @Test func aLongListSortsInHalvesAsInOne() {
        let paths = Self.samplePaths(count: 120_000, seed: 5)
        let order = PathList(paths).sortedOrder()
        let utf8 = paths.map { Array($0.utf8) }
        let expected = utf8.indices.sorted { a, b in
            utf8[a].lexicographicallyPrecedes(utf8[b]) || (utf8[a] == utf8[b] && a < b)
        }
        #expect(order.map(Int.init) == expected)
    }

    /// The paths of a manifest the list does not hold are found the same whether the manifest is in
    /// order (one walk), shuffled, reversed, has duplicates or mixes in lines below its highest one.
    @Test func manifestLinesMissingFromTheListAreFoundInAnyOrder() {
        var rng = SeededGenerator(seed: 6)
        let listed = Self.samplePaths(count: 3000, seed: 7)
        let list = PathList(listed)
        let sorted = list.subset(list.sortedOrder())
        let held = Set(listed.map { Array($0.utf8) })
        let manifest =
            Self.samplePaths(count: 3000, seed: 8).filter { !$0.isEmpty } + listed.filter { !$0.isEmpty }.prefix(2000)
        let inOrder = manifest.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let orders: [[String]] = [
            inOrder, Array(inOrder.reversed()), manifest.shuffled(using: &rng), inOrder + inOrder,
            // Mostly ascending, with a few lines from earlier in the order mixed in.
            inOrder.enumerated().flatMap { i, line in i % 50 == 49 ? [line, inOrder[i / 3]] : [line] },
        ]
        for (k, lines) in orders.enumerated() {
            let found = sorted.missing { body in for line in lines { body(Array(line.utf8)[...]) } }
            let expected = lines.filter { !held.contains(Array($0.utf8)) }
            let same = found == expected
            #expect(same, "order \(k): \(found.count) found, \(expected.count) expected")
        }
    }

    @Test func encodesAsAnArrayOfStrings() throws {
        let list: PathList = ["b", "a/é", ""]
        let data = try JSONEncoder().encode(list)
        #expect(try JSONDecoder().decode([String].self, from: data) == ["b", "a/é", ""])
    }

    @Test func cachedFilesReadBackAndSortByPath() {
        let paths = Self.samplePaths(count: 300, seed: 4)
        let files = paths.enumerated().map { i, path in
            RenderCache.File(
                path: path,
                sha256: RenderCache.SHA256Value(
                    Array(repeating: UInt8(i & 0xFF), count: 16) + Array(repeating: UInt8(i >> 8), count: 16)),
                isPrivate: i % 2 == 0)
        }
        let list = RenderCache.FileList(files)
        #expect(Array(list) == files)
        #expect(list.count == files.count)
        let sorted = list.sortedByPath()
        #expect(Array(sorted) == files.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) })
        // Already in order: the same list.
        #expect(sorted.sortedByPath() == sorted)
        var joined = RenderCache.FileList(files.prefix(100))
        joined.append(contentsOf: RenderCache.FileList(files.dropFirst(100)))
        #expect(joined == list)
        var seen: [String] = []
        list.forEachFile { _, _, path in seen.append(String(decoding: path, as: UTF8.self)) }
        #expect(seen == paths)
    }
}
