import Foundation
import Testing
import VPNProvTestHarness

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvOutputTree
@testable import VPNProvPKI
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates

/// PowerShell cannot be installed here (no Debian or PyPI package ships it), so the generated scripts are checked
/// with the test-side tokenizer written to the PowerShell language specification (PowerShellTokenizer): every
/// value the script carries must come back unchanged from a single-quoted literal, whatever quotes (straight and
/// typographic), backticks, `$`, `$( )` and comment markers it holds, and nothing of it may reach code or an
/// expandable string. The end-to-end tests tokenize and interpret every generated script as well.
@Suite struct WindowsScriptSyntaxTests {
    // MARK: the tokenizer against the language specification's rules

    @Test func verbatimStringsUndoubleEverySingleQuoteCharacter() throws {
        let tokens = try PowerShellTokenizer.tokenize("'it''s' 'a\u{2019}\u{2019}b' '\u{2018}\u{2018}' '$x `n \"'")
        #expect(
            tokens.map(\.kind) == [
                .verbatimString("it's"), .verbatimString("a\u{2019}b"), .verbatimString("\u{2018}"),
                .verbatimString("$x `n \""),
            ])
    }

    @Test func expandableStringsReportWhatTheyExpand() throws {
        let tokens = try PowerShellTokenizer.tokenize(
            #""a `"q`" ""b"" $name ${odd name} $($x.Length + (1)) $env:PATH" # c"#)
        guard case .expandableString(_, let vars) = tokens.first?.kind else {
            Issue.record("\(tokens)")
            return
        }
        #expect(vars == ["name", "odd name", "x", "env:PATH"])
        #expect(tokens.count == 2 && tokens[1].kind == .comment)
    }

    @Test func unterminatedConstructsAreErrors() {
        for text in ["'abc", "\"abc", "<# never closed", "\"$(unclosed\"", "@'\nno end\n"] {
            #expect(throws: PowerShellTokenizer.SyntaxError.self, "\(text.debugDescription)") {
                _ = try PowerShellTokenizer.tokenize(text)
            }
        }
        #expect(throws: PowerShellTokenizer.SyntaxError.self) {
            _ = try PowerShellStatements.split(try PowerShellTokenizer.tokenize("@{ a = (1 }"))
        }
    }

    @Test func commentsHereStringsAndContinuations() throws {
        let text = "<# block\n '# not a string #>\nWrite-Host `\n  -Object @'\nraw $x 'q'\n'@ # tail\n"
        let statements = try PowerShellStatements.split(try PowerShellTokenizer.tokenize(text))
        #expect(statements.count == 1)
        #expect(
            statements.first?.map(\.kind) == [
                .generic("Write-Host"), .parameter("Object"), .verbatimString("raw $x 'q'"),
            ])
    }

    // MARK: the generated script with hostile values

    static let deployment = "o'neil \u{2018}x\u{2019} \"q\" `t $(Get-Date) $env:USERNAME"
    static let user = "u'\"`$x\u{201B}"
    static let p12Password = "p'\u{2018}\u{2019}\u{201A}\u{201B}\"\u{201C}\u{201D}\u{201E}`$x$(y)#<#'@"

    static func hostileScript() throws -> String {
        let here = SourceLocation(file: "t.yaml", line: 1, column: 1)
        let nodes = [
            Node(
                name: "n'1$x", address: "vpn.example.com", id: .fqdn("vpn.example.com"),
                pool: CIDR(address: [10, 0, 0, 0], prefix: 24),
                pool6: CIDR(address: [0xfd] + Array(repeating: 0, count: 15), prefix: 112),
                services: [.ikev2Cert, .ikev2EAP], location: here)
        ]
        let users = [
            User(
                name: user, password: .generate, cert: true, id: .userFQDN("a@b.example"), nodes: ["n'1$x"],
                devices: [.windows], location: here)
        ]
        let inventory = Inventory(
            file: "t.yaml", name: deployment,
            pki: PKISettings(ca: CASettings(name: "ca 'x' $y", key: .ecdsaP256, days: 3650)),
            nodes: nodes, users: users)
        let materials = Materials(
            caCertificatePEM: "-----BEGIN CERTIFICATE-----\nAAECAwQ=\n-----END CERTIFICATE-----\n", caCommonName: "ca",
            caKeyType: .ecdsaP256,
            crlPEM: "", nodes: [:],
            users: [
                user: UserMaterials(
                    password: "pw'$x", p12: [1, 2, 3, 4], p12Password: p12Password, keyType: .ecdsaP256)
            ])
        let plan = ClientPlan.build(inventory: inventory, materials: materials)
        let file = try #require(
            try ClientRenderer.render(
                user: user, connections: plan.connections(of: user), deployment: DeploymentFacts(inventory),
                materials: materials, templates: try TemplateSet.builtin()
            )
            .first { $0.path.hasSuffix("-windows.ps1") })
        #expect(file.isPrivate)
        return String(decoding: file.contents, as: UTF8.self)
    }

    @Test func hostileValuesComeBackUnchangedFromSingleQuotedLiterals() throws {
        let script = try Self.hostileScript()
        let result = try WindowsScriptTranslator.interpret(script: script)
        #expect(result.userName == Self.user)
        #expect(
            result.connections.map(\.name) == [
                "\(Self.deployment) n'1$x ikev2-cert", "\(Self.deployment) n'1$x ikev2-eap",
            ])
        #expect(result.machineBundles.map(\.password) == [Self.p12Password])
        #expect(result.machineBundles.map(\.p12) == [Data([1, 2, 3, 4])])
        #expect(result.rootCertificates == [Data([0, 1, 2, 3, 4])])
        #expect(result.connections.allSatisfy { $0.routes == ["2000::/3"] && $0.ipsec != nil && !$0.splitTunneling })
        // The EAP password is not in the script (Windows asks for it).
        #expect(!script.contains("pw'$x"))
    }

    @Test func noValueReachesCodeOrAnExpandableString() throws {
        let tokens = try PowerShellTokenizer.tokenize(try Self.hostileScript())
        // Only the script's own variables are expanded in double-quoted strings.
        let allowed: Set<String> = ["StoreLocation", "certificate", "Name", "connection", "UserName", "PasswordFile"]
        for t in tokens {
            switch t.kind {
            case .expandableString(_, let vars):
                #expect(Set(vars).isSubset(of: allowed), "line \(t.line): expands \(vars)")
            case .generic(let g):
                #expect(!g.contains("Get-Date") && !g.contains("neil"), "line \(t.line): \(g) outside a literal")
            case .variable(let v):
                #expect(v != "env:USERNAME" && v != "x" && v != "y", "line \(t.line): $\(v) outside a literal")
            default: break
            }
        }
    }

    @Test func everyValueIsWrittenAsAVerbatimLiteral() throws {
        // Through the engine: the powershell syntax doubles each single-quote character and refuses control characters.
        let template = try Template(name: "t", text: "{{! syntax: powershell }}\n$v = {{v}}\n")
        for value in ["", "plain", "it's", "\u{2018}\u{2019}\u{201A}\u{201B}", "`$(x)\"", Self.p12Password] {
            let text = try template.render(["v": .string(value)])
            let tokens = try PowerShellTokenizer.tokenize(text)
            #expect(
                tokens.map(\.kind) == [.variable("v"), .punctuator("="), .verbatimString(value), .newline],
                "\(value.debugDescription)")
        }
        #expect(throws: (any Error).self) { try template.render(["v": .string("line\nbreak")]) }
        #expect(throws: (any Error).self) {
            _ = try Template(name: "t", text: "{{! syntax: powershell }}\n$v = '{{v}}'\n")
        }
    }
}
