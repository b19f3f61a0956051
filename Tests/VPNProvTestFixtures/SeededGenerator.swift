/// SplitMix64: a small seeded PRNG so every run mutates the same way (a failure names its seed).
package struct SeededGenerator: RandomNumberGenerator {
    package var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The byte-level mutations of the mutation tests (of the loader and validator, and of the state files):
/// bit flips, interesting bytes, deleted ranges, duplicated, deleted, spliced, re-indented and swapped lines.
package enum Mutations {
    /// Inputs are bounded so one mutated inventory cannot take long by sheer size.
    package static let maxInputSize = 64 << 10

    /// Bytes that matter to YAML and to the inventory grammar, used for replacements and insertions.
    static let interesting: [UInt8] =
        Array(":-&*[]{}|>!#'\"\n\t ,?%@`\\0123456789abz.".utf8) + [0x00, 0x7F, 0xC3, 0xE2, 0xFF, 0x0D]

    package static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    }

    package static func joined(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        Array(lines.joined(separator: [0x0A]))
    }

    /// Applies one random mutation.
    package static func mutate(_ input: [UInt8], seeds: [[UInt8]], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        switch Int.random(in: 0..<9, using: &rng) {
        case 0 where !bytes.isEmpty:  // flip one bit
            let i = Int.random(in: 0..<bytes.count, using: &rng)
            bytes[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
        case 1 where !bytes.isEmpty:  // replace a byte with a syntactically interesting one
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] = interesting.randomElement(using: &rng)!
        case 2:  // insert an interesting byte
            bytes.insert(interesting.randomElement(using: &rng)!, at: Int.random(in: 0...bytes.count, using: &rng))
        case 3 where !bytes.isEmpty:  // delete a byte range
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            let end = min(bytes.count, start + Int.random(in: 1...32, using: &rng))
            bytes.removeSubrange(start..<end)
        case 4:  // duplicate a line (duplicate keys, repeated list items)
            var l = lines(bytes)
            let i = Int.random(in: 0..<l.count, using: &rng)
            l.insert(l[i], at: Int.random(in: 0...l.count, using: &rng))
            bytes = joined(l)
        case 5:  // delete a line
            var l = lines(bytes)
            if l.count > 1 { l.remove(at: Int.random(in: 0..<l.count, using: &rng)) }
            bytes = joined(l)
        case 6:  // splice a run of lines from another fixture
            let other = lines(seeds.randomElement(using: &rng)!)
            let start = Int.random(in: 0..<other.count, using: &rng)
            let end = min(other.count, start + Int.random(in: 1...8, using: &rng))
            var l = lines(bytes)
            l.insert(contentsOf: other[start..<end], at: Int.random(in: 0...l.count, using: &rng))
            bytes = joined(l)
        case 7:  // change a line's indentation
            var l = lines(bytes)
            let i = Int.random(in: 0..<l.count, using: &rng)
            if Bool.random(using: &rng) {
                l[i] = ArraySlice(Array(repeating: 0x20, count: Int.random(in: 1...4, using: &rng)) + l[i])
            } else {
                l[i] = l[i].drop { $0 == 0x20 }
            }
            bytes = joined(l)
        default:  // swap two lines
            var l = lines(bytes)
            if l.count > 1 {
                l.swapAt(Int.random(in: 0..<l.count, using: &rng), Int.random(in: 0..<l.count, using: &rng))
            }
            bytes = joined(l)
        }
        return bytes.count > maxInputSize ? Array(bytes.prefix(maxInputSize)) : bytes
    }
}
