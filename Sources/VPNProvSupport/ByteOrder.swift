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
}

/// memcmp-style order of two byte strings (negative, zero or positive), a shorter prefix first.
package func compareUTF8(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Int32 {
    let n = Swift.min(x.count, y.count)
    let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
    return c != 0 ? c : (x.count < y.count ? -1 : (x.count > y.count ? 1 : 0))
}
