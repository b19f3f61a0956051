import Foundation
import Testing
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvTemplates

@Suite(.temporaries) struct TemplateEngineTests {
    func render(_ text: String, _ context: TemplateValue) throws -> String {
        try Template(name: "t", text: text).render(context)
    }

    func kind(_ body: () throws -> Void) -> TemplateError.Kind? {
        do {
            try body()
            return nil
        } catch let error as TemplateError {
            return error.kind
        } catch {
            return nil
        }
    }

    @Test func swanctlValuesAreAlwaysQuotedAndEscaped() throws {
        let out = try render("{{! syntax: swanctl }}\nsecret = {{v}}\n", ["v": "a\"b\\c#d}{ e\n\r\tf"])
        #expect(out == "secret = \"a\\\"b\\\\c#d}{ e\\n\\r\\tf\"\n")
    }

    @Test func swanctlRefusesOtherControlCharactersWithoutShowingTheValue() throws {
        for bad in ["x\u{0}y", "x\u{1b}y", "x\u{7f}y"] {
            do {
                _ = try render("{{! syntax: swanctl }}\nsecret = {{pw}}\n", ["pw": .string(bad)])
                Issue.record("accepted a control character")
            } catch let error as TemplateError {
                #expect(error.kind == .controlCharacter(name: "pw"))
                #expect(error.line == 2 && error.column == 10)
                #expect(!error.description.contains(bad))
            }
        }
    }

    @Test func textSyntaxWritesValuesAsIsButRefusesNewlines() throws {
        #expect(try render("{{! syntax: text }}\nhi {{n}}!\n", ["n": "a\"b\\c#d}{"]) == "hi a\"b\\c#d}{!\n")
        #expect(
            kind { _ = try render("{{! syntax: text }}\n{{n}}\n", ["n": "a\nb"]) } == .controlCharacter(name: "n"))
    }

    @Test func identifiersAndIntsAreBareAndIdentifiersAreChecked() throws {
        #expect(
            try render("{{! syntax: swanctl }}\n{{s}} { v = {{n}} }", ["s": .identifier("eap-u0001"), "n": 2])
                == "eap-u0001 { v = 2 }")
        #expect(
            kind { _ = try render("{{! syntax: swanctl }}\n{{s}} {}", ["s": .identifier("eap-a:b")]) }
                == .invalidIdentifier(name: "s"))
    }

    @Test func missingVariablesAreErrorsNotEmptyStrings() {
        #expect(kind { _ = try render("{{! syntax: text }}\n{{nope}}", [:]) } == .missingVariable("nope"))
        #expect(kind { _ = try render("{{! syntax: text }}\n{{#nope}}x{{/nope}}", [:]) } == .missingVariable("nope"))
        #expect(kind { _ = try render("{{! syntax: text }}\n{{a.b}}", ["a": ["c": "x"]]) } == .missingVariable("a.b"))
    }

    @Test func sectionsLoopBranchAndInvert() throws {
        let t =
            "{{! syntax: text }}\n{{#items}}[{{name}}]{{/items}}{{#on}}on{{/on}}{{^off}}!off{{/off}}{{^items}}none{{/items}}"
        #expect(try render(t, ["items": [["name": "a"], ["name": "b"]], "on": true, "off": false]) == "[a][b]on!off")
        #expect(try render(t, ["items": [], "on": false, "off": true]) == "none")
        // A non-empty string section pushes the string: {{.}} is it; outer names stay visible.
        #expect(try render("{{! syntax: text }}\n{{#s}}<{{.}}{{x}}>{{/s}}", ["s": "v", "x": "X"]) == "<vX>")
        #expect(try render("{{! syntax: text }}\n{{#s}}<{{.}}>{{/s}}", ["s": ""]) == "")
        #expect(try render("{{! syntax: text }}\n{{o.p.q}}", ["o": ["p": ["q": "deep"]]]) == "deep")
    }

    @Test func standaloneTagLinesLeaveNoBlankLines() throws {
        let t = """
            {{! syntax: swanctl }}
            {{! a comment line }}
            a {
              {{#items}}
              x = {{.}}
              {{/items}}
              {{^items}}
              none = 1
              {{/items}}
            }

            """
        #expect(try render(t, ["items": ["1", "2"]]) == "a {\n  x = \"1\"\n  x = \"2\"\n}\n")
        #expect(try render(t, ["items": []]) == "a {\n  none = 1\n}\n")
        // Tags sharing a line with text are not standalone: the line stays.
        #expect(try render("{{! syntax: text }}\nx {{#b}}y{{/b}}\nz", ["b": true]) == "x y\nz")
    }

    @Test func parseErrors() {
        #expect(kind { _ = try Template(name: "t", text: "no header {{x}}") } == .missingHeader)
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: toml }}\n") } == .unknownSyntax("toml"))
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{{raw}}}") } == .unsupportedTag("{raw"))
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{&raw}}") } == .unsupportedTag("&raw"))
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{#a}}x") } == .unclosedSection("a"))
        #expect(
            kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{#a}}x{{/b}}") }
                == .mismatchedClose(expected: "a", found: "b"))
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\nx{{/b}}") } == .unexpectedClose("b"))
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{a") } == .unclosedTag)
        #expect(kind { _ = try Template(name: "t", text: "{{! syntax: text }}\n{{a b}}") } == .invalidName("a b"))
        // In swanctl syntax a tag inside quotes would be double-quoted: refused.
        #expect(
            kind { _ = try Template(name: "t", text: "{{! syntax: swanctl }}\nid = \"{{id}}\"\n") } == .quotedTag("id"))
    }

    @Test func sectionValuesAreNotPrintable() {
        #expect(kind { _ = try render("{{! syntax: text }}\n{{l}}", ["l": ["a"]]) } == .notPrintable("l"))
        #expect(kind { _ = try render("{{! syntax: text }}\n{{b}}", ["b": true]) } == .notPrintable("b"))
    }

    @Test func errorPositionsPointAtTheTag() {
        do {
            _ = try Template(name: "t", text: "{{! syntax: text }}\nline two\n  ab {{missing}}").render([:])
            Issue.record("rendered")
        } catch {
            #expect(error.line == 3 && error.column == 6)
            #expect(error.description == "t:3:6: no value named 'missing'")
        }
    }
}

@Suite(.temporaries) struct TemplateSetTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The built-in copy (BuiltinTemplates.swift) must be byte-for-byte the files in templates/.
    @Test func builtinTemplatesMatchTheRepositoryTemplates() throws {
        let dir = Self.repoRoot.appendingPathComponent("templates")
        let files = (FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".tmpl") }.sorted()
        #expect(files == BuiltinTemplates.files.keys.sorted(), "run scripts/embed-templates")
        for name in files {
            let onDisk = try Data(contentsOf: dir.appendingPathComponent(name))
            #expect(
                Array(onDisk) == Array(BuiltinTemplates.files[name, default: ""].utf8),
                "\(name): run scripts/embed-templates")
        }
    }

    @Test func everyBuiltinTemplateParses() throws {
        let set = try TemplateSet.builtin()
        #expect(set.templates.count == BuiltinTemplates.files.count)
        #expect(try set.template("server/swanctl.conf.tmpl").syntax == .swanctl)
        #expect(try set.template("server/README.tmpl").syntax == .text)
    }

    @Test func directoryOverridesSomeTemplatesAndRefusesUnknownOnes() throws {
        let dir = URL(fileURLWithPath: try temporaryDirectory("tmpl"))
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("server"), withIntermediateDirectories: true)
        try "{{! syntax: text }}\ncustom {{node}}\n".write(
            to: dir.appendingPathComponent("server/README.tmpl"), atomically: true, encoding: .utf8)
        let set = try TemplateSet.load(directory: dir.path)
        #expect(set.origins["server/README.tmpl"] == dir.appendingPathComponent("server/README.tmpl").path)
        #expect(set.origins["server/swanctl.conf.tmpl"] == "built-in")
        #expect(try set.template("server/README.tmpl").render(["node": "n1"]) == "custom n1\n")

        try "{{! syntax: text }}\n".write(
            to: dir.appendingPathComponent("server/READNE.tmpl"), atomically: true, encoding: .utf8)
        #expect(throws: TemplateSetError.self) { try TemplateSet.load(directory: dir.path) }
        #expect(throws: TemplateSetError.self) { try TemplateSet.load(directory: dir.path + "/nonexistent") }
    }

    @Test func brokenOverrideFailsAtLoad() throws {
        let dir = URL(fileURLWithPath: try temporaryDirectory("tmpl"))
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("server"), withIntermediateDirectories: true)
        try "no header\n".write(to: dir.appendingPathComponent("server/README.tmpl"), atomically: true, encoding: .utf8)
        do {
            _ = try TemplateSet.load(directory: dir.path)
            Issue.record("loaded a template without header")
        } catch {
            guard case .invalid(let e) = error.kind else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(e.kind == .missingHeader)
        }
    }
}

/// The escapes work on UTF-8 bytes; here each is compared with the rule written out per Unicode scalar,
/// over generated strings of every escape class and PowerShell's typographic quotes.
@Suite(.temporaries) struct TemplateEscapeTests {
    static func reference(_ syntax: TemplateSyntax, _ value: String) -> String? {
        let controls = value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        switch syntax {
        case .text:
            return controls ? nil : value
        case .swanctl, .yaml:
            var out = ""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\\": out += "\\\\"
                case "\"": out += "\\\""
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                default:
                    if scalar.value < 0x20 || scalar.value == 0x7F { return nil }
                    out.unicodeScalars.append(scalar)
                }
            }
            let quoted = "\"" + out + "\""
            return syntax == .yaml && value.contains("{") ? "!unsafe " + quoted : quoted
        case .powershell:
            if controls { return nil }
            var out = "'"
            for scalar in value.unicodeScalars {
                out.unicodeScalars.append(scalar)
                if [0x27, 0x2018, 0x2019, 0x201A, 0x201B].contains(scalar.value) { out.unicodeScalars.append(scalar) }
            }
            return out + "'"
        case .nftables:
            let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:/_-".unicodeScalars)
            return !value.isEmpty && value.unicodeScalars.allSatisfy { allowed.contains($0) } ? value : nil
        case .freeradius:
            let refused = Set("\"'\\$`".unicodeScalars)
            if controls || value.unicodeScalars.contains(where: refused.contains) { return nil }
            return "\"" + value + "\""
        }
    }

    @Test(arguments: TemplateSyntax.allCases)
    func byteEscapesMatchTheRulePerScalar(syntax: TemplateSyntax) {
        var g = DocumentWriterTests.Generator(state: 77)
        let extra = [
            "\u{2018}", "\u{2019}", "\u{201A}", "\u{201B}", "\u{201C}", "\u{2017}", "\u{E2}", "{", "'", "''", "\u{85}",
        ]
        var refused = 0
        var changed = 0
        for _ in 0..<3000 {
            let value = (0..<g.int(6)).map { _ in
                g.int(3) == 0
                    ? extra[g.int(extra.count)] : DocumentWriterTests.pieces[g.int(DocumentWriterTests.pieces.count)]
            }.joined()
            let expected = Self.reference(syntax, value)
            #expect(syntax.escape(value) == expected)
            if expected == nil { refused += 1 } else if expected != value { changed += 1 }
        }
        // text and nftables write a value as it is or not at all.
        #expect(refused > 0 && (syntax == .text || syntax == .nftables || changed > 0))
    }
}

@Suite(.temporaries) struct TemplateObjectTests {
    @Test func membersAreLookedUpReplacedAndRemovedAndOrderDoesNotMatter() {
        var a: TemplateObject = ["x": .string("1"), "y": .int(2)]
        let b: TemplateObject = ["y": .int(2), "x": .string("1")]
        #expect(a == b && a.hashValue == b.hashValue)
        a["x"] = .string("3")
        #expect(a["x"] == .string("3") && a.count == 2 && a != b)
        a["x"] = nil
        #expect(a["x"] == nil && a.count == 1 && a["y"] == .int(2))
        let later: TemplateValue = ["k": "first", "k": "second"]
        #expect(later == .object(["k": "second"]))
    }
}

@Suite(.temporaries) struct ByteOrderTests {
    /// The in-place comparison is the UTF-8 byte order, also where `<` (Unicode order) disagrees.
    @Test func precedesByUTF8IsTheByteOrder() {
        var g = DocumentWriterTests.Generator(state: 5)
        var disagreesWithLess = 0
        for _ in 0..<5000 {
            let a = DocumentWriterTests.string(&g)
            let b = DocumentWriterTests.string(&g)
            let expected = Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
            #expect(a.precedesByUTF8(b) == expected)
            if expected != (a < b) { disagreesWithLess += 1 }
        }
        #expect(disagreesWithLess > 0)
        #expect(!"".precedesByUTF8("") && "".precedesByUTF8("a") && "a".precedesByUTF8("ab") && "Z".precedesByUTF8("a"))
    }
}
