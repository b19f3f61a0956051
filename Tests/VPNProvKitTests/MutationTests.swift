import Foundation
import Testing

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvOutputTree
@testable import VPNProvPKI
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates
@testable import VPNProvTestSupport

/// SplitMix64: a small seeded PRNG so every run mutates the same way (a failure names its seed).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Deterministic mutation testing of the loader and the validator: thousands of inventories
/// derived from the fixtures by byte flips, deletions, line duplications and splices go through
/// decode + validate in-process. Each must end in an inventory or an error diagnostic — a crash fails
/// the whole test run, a hang trips the time limit.
@Suite(.temporaries) struct MutationTests {
    /// Inputs are bounded so one mutated inventory cannot take long by sheer size.
    static let maxInputSize = 64 << 10
    static let inputCount = 5_000

    /// The seeds: the example inventory and every good and bad fixture small enough to mutate.
    /// The good ones (example + good fixtures) come first; `goodCount` says how many.
    static func seeds() throws -> (all: [[UInt8]], goodCount: Int) {
        var goodCount = 0
        var seeds: [[UInt8]] = [
            Array(try Data(contentsOf: InventoryFixtures.repository.appendingPathComponent("inventory/example.yaml")))
        ]
        for kind in ["good", "bad"] {
            for name in InventoryFixtures.names(kind) {
                let bytes = try InventoryFixtures.bytes(kind, name)
                if bytes.count <= maxInputSize { seeds.append(bytes) }
            }
            if kind == "good" { goodCount = seeds.count }
        }
        return (seeds, goodCount)
    }

    /// Bytes that matter to YAML and to the inventory grammar, used for replacements and insertions.
    static let interesting: [UInt8] =
        Array(":-&*[]{}|>!#'\"\n\t ,?%@`\\0123456789abz.".utf8) + [0x00, 0x7F, 0xC3, 0xE2, 0xFF, 0x0D]

    static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    }

    static func joined(_ lines: [ArraySlice<UInt8>]) -> [UInt8] {
        Array(lines.joined(separator: [0x0A]))
    }

    /// Lines as YAML counts them: CR LF, CR, LF, NEL, LS and PS each end one.
    static func yamlLineCount(_ bytes: [UInt8]) -> Int {
        var count = 1
        var previous: Unicode.Scalar = "\0"
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            switch scalar {
            case "\n": if previous != "\r" { count += 1 }
            case "\r", "\u{85}", "\u{2028}", "\u{2029}": count += 1
            default: break
            }
            previous = scalar
        }
        return count
    }

    /// Applies one random mutation.
    static func mutate(_ input: [UInt8], seeds: [[UInt8]], using rng: inout SeededGenerator) -> [UInt8] {
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

    @Test
    func mutatedInventoriesEndInAnInventoryOrAnError() throws {
        let watch = Deadline.start("5,000 inventory mutants", seconds: 600)
        defer { watch.finish() }
        let (seeds, goodCount) = try Self.seeds()
        var rng = SeededGenerator(seed: 0x76_70_6E_70_72_6F_76)  // "vpnprov"
        var decoded = 0
        var rejected = 0
        var codes = Set<String>()
        for n in 0..<Self.inputCount {
            // Three in four start from a valid inventory, so many mutants get through to the validator.
            var bytes = n % 4 == 3 ? seeds[n % seeds.count] : seeds[n % goodCount]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                bytes = Self.mutate(bytes, seeds: seeds, using: &rng)
            }
            let result = InventoryLoader.decode(bytes: bytes, file: "mutant.yaml")
            var diagnostics = result.diagnostics
            if let inventory = result.inventory {
                decoded += 1
                diagnostics += Validator.validate(inventory)
            } else {
                rejected += 1
                #expect(diagnostics.hasErrors, "mutant \(n): no inventory and no error diagnostic")
            }
            // Locations point into the input (one line past the end for "unexpected end").
            let lineCount = Self.yamlLineCount(bytes)
            for d in diagnostics {
                codes.insert(d.code.rawValue)
                #expect(!d.message.isEmpty, "mutant \(n): empty message for [\(d.code)]")
                if let location = d.location {
                    #expect(location.file == "mutant.yaml")
                    #expect(
                        (1...lineCount + 1).contains(location.line),
                        "mutant \(n): [\(d.code)] at line \(location.line) of \(lineCount)")
                    #expect(location.column >= 1, "mutant \(n): [\(d.code)] at column \(location.column)")
                }
            }
        }
        // The mutations must reach both sides and many rules, or the test tests little.
        #expect(decoded > Self.inputCount / 10, "only \(decoded) mutants decoded")
        #expect(rejected > Self.inputCount / 10, "only \(rejected) mutants were rejected")
        #expect(codes.count > 30, "mutants reached only \(codes.count) rule codes")
    }

    @Test func mutationIsDeterministic() throws {
        let seeds = try Self.seeds().all
        func run() -> [[UInt8]] {
            var rng = SeededGenerator(seed: 42)
            return (0..<50).map { Self.mutate(seeds[$0 % seeds.count], seeds: seeds, using: &rng) }
        }
        #expect(run() == run())
    }
}
