import Glibc

extension String {
    /// Whether `self` sorts before `other` by UTF-8 byte, the order vpnprov writes names and paths in
    /// (the same on every machine and for every normalization, unlike `<`). Compares the bytes in
    /// place, with no array made per comparison: sorting a fleet's users makes a great many of them
    /// (docs/benchmarks.md, "Why the code is shaped this way").
    package func precedesByUTF8(_ other: String) -> Bool {
        var a = self
        var b = other
        return a.withUTF8 { x in b.withUTF8 { y in compareUTF8(x, y) < 0 } }
    }

    /// Whether `needle`'s bytes occur in `self`'s, compared in place (Foundation's `contains`, which
    /// an import of Foundation selects, searches by character through `NSString`).
    package func containsUTF8(_ needle: String) -> Bool {
        var haystack = self
        var needle = needle
        return haystack.withUTF8 { h in
            needle.withUTF8 { n in
                guard let first = n.first else { return true }
                var at = 0
                while h.count - at >= n.count {
                    guard let hit = memchr(h.baseAddress! + at, Int32(first), h.count - at - n.count + 1) else {
                        return false
                    }
                    at = UnsafeRawPointer(hit) - UnsafeRawPointer(h.baseAddress!)
                    if memcmp(h.baseAddress! + at, n.baseAddress!, n.count) == 0 { return true }
                    at += 1
                }
                return false
            }
        }
    }
}

/// memcmp-style order of two byte strings (negative, zero or positive), a shorter prefix first.
package func compareUTF8(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int32 {
    let n = Swift.min(x.count, y.count)
    let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
    return c != 0 ? c : (x.count < y.count ? -1 : (x.count > y.count ? 1 : 0))
}
