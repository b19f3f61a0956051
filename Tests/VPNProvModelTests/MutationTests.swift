import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures
import VPNProvTestSupport

/// Deterministic mutation testing of the loader and the validator: thousands of inventories
/// derived from the fixtures by byte flips, deletions, line duplications and splices go through
/// decode + validate in-process. Each must end in an inventory or an error diagnostic — a crash fails
/// the whole test run, a hang trips the time limit.
@Suite(.temporaries) struct MutationTests {
    /// Inputs are bounded so one mutated inventory cannot take long by sheer size.
    static let maxInputSize = Mutations.maxInputSize
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
                bytes = Mutations.mutate(bytes, seeds: seeds, using: &rng)
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
            return (0..<50).map { Mutations.mutate(seeds[$0 % seeds.count], seeds: seeds, using: &rng) }
        }
        #expect(run() == run())
    }
}
