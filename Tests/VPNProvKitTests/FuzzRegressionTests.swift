import Foundation
import Testing
@testable import VPNProvKit

/// One test per crash found by fuzzing or by MutationTests: the input that crashed, which
/// must now end in diagnostics.
@Suite struct FuzzRegressionTests {
    static func decodeAndValidate(_ text: String) -> [Diagnostic] {
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "crash.yaml")
        guard let inventory = result.inventory else { return result.diagnostics }
        return result.diagnostics + Validator.validate(inventory)
    }

    /// SecretPolicy.estimate looped over `1...(n / 2)`, a trap for a one-character secret.
    @Test(arguments: ["x", "7"])
    func oneCharacterLiteralSecretIsWeakNotACrash(_ secret: String) {
        let diagnostics = Self.decodeAndValidate("""
            vpnprov: 1
            name: acme
            nodes:
              fra-1:
                address: 192.0.2.1
                services: [ikev2-psk]
                psk: "\(secret)"
            """)
        #expect(diagnostics.contains { $0.location?.line == 7 && $0.severity == .error })
        #expect(!diagnostics.contains { $0.message.contains("\"\(secret)\"") })
    }

    /// The excerpt of a diagnostic on a 15 MiB line decoded the whole line (and lowercased it to look
    /// for secret keys): 10+ s and 300 MB for `vpnprov validate` on a huge scalar. Only the start is read.
    @Test func excerptReadsOnlyTheStartOfAHugeLine() {
        let bytes = Array("a: 1\nb: ".utf8) + Array(repeating: UInt8(ascii: "x"), count: 15 << 20) + [0x0A]
        let line = DiagnosticPrinter.sourceLine(bytes, 2)
        #expect(line?.hasPrefix("b: xxx") == true)
        #expect((line?.utf8.count ?? .max) <= DiagnosticPrinter.maxExcerptBytes)
        #expect(DiagnosticPrinter.sourceLine(bytes, 1) == "a: 1")
        #expect(DiagnosticPrinter.sourceLine(bytes, 3) == "")
    }
}
