import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvCLI

/// Text diagnostics quote inventory values, and CI logs read stderr: nothing an inventory holds may
/// print a terminal escape, break a line, reorder what a reader sees, or start a line a CI runner
/// reads as a workflow command (`::error::`).
@Suite(.temporaries) struct TextDiagnosticSafetyTests {
    /// Inventories whose crl_url (read by the loader), proposal and user key (checked by the
    /// validator) carry ESC sequences, line breaks, C1 controls, line separators, bidi overrides and
    /// forged GitHub workflow commands (YAML escapes: the files themselves hold none of these).
    static let hostile = [
        #"""
        vpnprov: 1
        name: acme
        pki:
          crl_url: "\e[1A\n::warning file=x::forged\u0085::error::nel"
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.70.0.0/24

        """#,
        #"""
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.70.0.0/24
            proposals:
              ike: ["aes256-sha256-modp2048\e[2J\n::error file=inventory.yaml,line=1::forged"]
        users:
          "bob\e]8;;http://evil\a\u2028::error::sep\u202Eevil\x9b31m":
            password: gen

        """#,
    ]

    /// Every scalar the printer must never print raw.
    static func unprintable(_ text: String) -> [Unicode.Scalar] {
        text.unicodeScalars.filter { $0 != "\n" && DiagnosticPrinter.isUnprintable($0) }
    }

    /// Lines (split on every line break a log viewer may honour) that start, after blanks, with `::`.
    static func workflowCommandLines(_ text: String) -> [Substring] {
        text.split(whereSeparator: { $0.isNewline }).filter {
            $0.drop(while: { $0 == " " || $0 == "\t" }).hasPrefix("::")
        }
    }

    @Test func hostileInventoryValuesAreEscapedInTextDiagnostics() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var err = ""
        for (i, text) in Self.hostile.enumerated() {
            let path = dir + "/inventory-\(i).yaml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let result = vpnprov(["validate", path])
            #expect(result.code == 1)
            err += result.err
        }
        // The findings are there, about the hostile values…
        #expect(err.contains("[invalid-proposal]"), "\(err)")
        #expect(err.contains("[invalid-name]"), "\(err)")
        #expect(err.contains("'pki.crl_url' must be"), "\(err)")
        // …with each unprintable character written as an escape…
        #expect(err.contains(#"modp2048\u{1B}[2J\u{A}::error file=inventory.yaml"#), "\(err)")
        #expect(err.contains(#"'\u{1B}[1A\u{A}::warning file=x::forged\u{85}::error::nel'"#), "\(err)")
        // …and none raw, and no line a CI runner would read as a workflow command.
        #expect(Self.unprintable(err).isEmpty, "\(Self.unprintable(err).map { String($0.value, radix: 16) })")
        #expect(Self.workflowCommandLines(err).isEmpty, "\(Self.workflowCommandLines(err))")
    }

    @Test func everyUnprintableClassIsEscaped() {
        let printer = DiagnosticPrinter()
        let message = "x\u{1B}\u{7F}\u{85}\u{9F}\u{2028}\u{2029}\u{202E}\u{2066}\u{200F}\u{061C}\t\r y"
        let text = printer.render([.error(.invalidValue, message, at: nil)])
        #expect(
            text
                == #"vpnprov: error: x\u{1B}\u{7F}\u{85}\u{9F}\u{2028}\u{2029}\u{202E}\u{2066}\u{200F}\u{61C}\u{9}\u{D} y [invalid-value]"#
                + "\n")
    }

    @Test func aLineStartingWithTwoColonsIsNeutralised() {
        // A message cannot start a line (the location comes first), but a file name given on the
        // command line and a source line shown as the excerpt can.
        let file = "::error::forged.yaml"
        let source = Array("a: 1\n  ::error::forged\n".utf8)
        let printer = DiagnosticPrinter(sources: [file: source])
        let text = printer.render([.error(.invalidValue, "m", at: SourceLocation(file: file, line: 2, column: 3))])
        #expect(text == #"\u{3A}:error::forged.yaml:2:3: error: m [invalid-value]"# + "\n  ?:error::forged\n  ^\n")
        #expect(Self.workflowCommandLines(text).isEmpty)
    }
}
