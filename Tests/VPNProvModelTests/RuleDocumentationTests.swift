import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// docs/diagnostics.md's tables of rule codes are made from the codes' declarations (`RuleCode.declaration`): each
/// table stands between `<!-- rules: SECTION -->` and `<!-- end rules -->`, one row per code in the order of
/// `RuleCode.allCases`. A code added, removed or reworded without the page following fails here;
/// `VPNPROV_RECORD=1` writes the tables into the page (and fails on purpose, as the goldens do).
@Suite struct RuleDocumentationTests {
    static let path = Repository.root + "/docs/diagnostics.md"

    /// One section's table in Markdown.
    static func table(_ section: RuleDeclaration.Section) -> String {
        var lines =
            section == .run
            ? ["| code | severity | exit | meaning |", "|---|---|---|---|"]
            : ["| code | severity | meaning |", "|---|---|---|"]
        for code in RuleCode.allCases where code.declaration.section == section {
            let declaration = code.declaration
            var severity = declaration.severities.map(\.rawValue).joined(separator: ", ")
            if declaration.acknowledgeable { severity += " (acknowledgeable)" }
            let exit = declaration.exit.map { String($0.rawValue) } ?? "—"
            let cells = section == .run ? [severity, exit, declaration.help] : [severity, declaration.help]
            lines.append("| `\(code.rawValue)` | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// `page` with every table between its markers made from the declarations; nil when a marker is missing.
    static func generated(_ page: String) -> String? {
        var out = page
        for section in RuleDeclaration.Section.allCases {
            let open = "<!-- rules: \(section.rawValue) -->\n"
            let close = "<!-- end rules -->"
            guard let start = out.range(of: open),
                let end = out.range(of: close, range: start.upperBound..<out.endIndex)
            else { return nil }
            out.replaceSubrange(start.upperBound..<end.lowerBound, with: table(section) + "\n")
        }
        return out
    }

    @Test func theTablesOfDiagnosticsMdAreTheDeclarations() throws {
        let page = try String(contentsOfFile: Self.path, encoding: .utf8)
        let expected = try #require(
            Self.generated(page), "docs/diagnostics.md lacks a '<!-- rules: SECTION -->' ... '<!-- end rules -->' pair")
        if ProcessInfo.processInfo.environment["VPNPROV_RECORD"] == "1" {
            try expected.write(toFile: Self.path, atomically: true, encoding: .utf8)
            Issue.record("wrote the rule tables of docs/diagnostics.md; unset VPNPROV_RECORD and run again")
            return
        }
        #expect(page == expected, "docs/diagnostics.md's rule tables are stale: VPNPROV_RECORD=1 rewrites them")
    }

    /// Outside its generated tables the page names codes in prose only: a table row written by hand would not follow
    /// the declarations.
    @Test func noRuleTableIsWrittenByHand() throws {
        var page = try String(contentsOfFile: Self.path, encoding: .utf8)
        for section in RuleDeclaration.Section.allCases {
            guard let start = page.range(of: "<!-- rules: \(section.rawValue) -->"),
                let end = page.range(of: "<!-- end rules -->", range: start.upperBound..<page.endIndex)
            else { continue }
            page.removeSubrange(start.lowerBound..<end.upperBound)
        }
        let rows = page.split(separator: "\n").filter { $0.hasPrefix("| `") }
        let codes = Set(RuleCode.allCases.map { "`\($0.rawValue)`" })
        #expect(rows.filter { row in codes.contains { row.contains($0) } }.isEmpty)
    }

    /// The codes of a section follow each other, so the cases of `RuleCode` read in the page's order.
    @Test func eachSectionsCodesAreTogether() {
        let sections = RuleCode.allCases.map(\.declaration.section)
        var seen: [RuleDeclaration.Section] = []
        for section in sections where seen.last != section { seen.append(section) }
        #expect(seen == RuleDeclaration.Section.allCases)
    }

    /// Every declaration says something, and only a warning can be acknowledged; a run's error says how it exits.
    @Test func everyDeclarationIsComplete() {
        for code in RuleCode.allCases {
            let declaration = code.declaration
            #expect(!declaration.help.isEmpty && !declaration.severities.isEmpty, "\(code)")
            #expect(!declaration.acknowledgeable || declaration.severities.contains(.warning), "\(code)")
            #expect(
                (declaration.exit != nil) == (declaration.section == .run && declaration.severities.contains(.error)),
                "\(code)")
        }
    }

    /// SARIF's description is the help as a sentence of plain text: no Markdown left, links as their files.
    @Test func thePlainHelpIsASentenceWithoutMarkdown() {
        #expect(
            RuleCode.acmeSettingsMissing.declaration.plainHelp
                == "A node says certificate: acme, or handoff: is written, but there is no acme: section, or it has "
                + "no email (docs/acme.md).")
        #expect(RuleCode.invalidName.declaration.plainHelp.contains(#"containing /, \ or .."#))
        // Code keeps its case where it starts the sentence.
        #expect(RuleCode.weakPSKService.declaration.plainHelp.hasPrefix("ikev2-psk / ikev2-psk-eap: anyone"))
        for code in RuleCode.allCases {
            let text = code.declaration.plainHelp
            #expect(!text.contains("`") && !text.contains("](") && text.hasSuffix("."), "\(code): \(text)")
        }
    }
}
