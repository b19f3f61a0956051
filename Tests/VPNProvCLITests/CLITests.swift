import Foundation
import Testing
import VPNProvEngine
import VPNProvSupport
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvCLI

@Suite(.temporaries) struct CLITests {
    var badDir: String { InventoryFixtures.root.appendingPathComponent("bad").path }
    var goodDir: String { InventoryFixtures.root.appendingPathComponent("good").path }

    @Test func versionAndTopLevelHelp() {
        let version = vpnprov(["--version"])
        #expect(version.code == 0)
        #expect(version.out == "vpnprov \(CommandLineTool.version)\n")
        let help = vpnprov(["--help"])
        #expect(help.code == 0)
        for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "SUBCOMMANDS:"] { #expect(help.out.contains(section)) }
        for command in ["validate", "generate", "check", "revoke", "init"] {
            #expect(help.out.contains("  \(command) "))
        }
        let none = vpnprov([])
        #expect(none.code == 2)
        #expect(none.err.contains("USAGE:"))
    }

    @Test(arguments: ["validate", "generate", "check", "revoke", "init"])
    func everyCommandHasHelpWithSections(_ command: String) {
        for flag in ["--help", "-h"] {
            let r = vpnprov([command, flag])
            #expect(r.code == 0)
            for section in ["OVERVIEW:", "USAGE: vpnprov \(command)", "OPTIONS:", "-h, --help"] {
                #expect(r.out.contains(section))
            }
            #expect(r.out.contains("ARGUMENTS:"))
        }
        #expect(vpnprov(["help", command]).out == vpnprov([command, "--help"]).out)
    }

    @Test func unknownFlagIsAUsageErrorWithHint() {
        let r = vpnprov(["validate", "--fromat", "json"])
        #expect(r.code == 2)
        #expect(r.err.contains("unknown option '--fromat'; did you mean '--format'?"))
        #expect(r.err.contains("See 'vpnprov validate --help'"))
        #expect(r.out.isEmpty)
    }

    @Test func unknownCommandIsAUsageErrorWithHint() {
        let r = vpnprov(["genrate"])
        #expect(r.code == 2)
        #expect(r.err.contains("did you mean 'generate'?"))
    }

    @Test func badOptionValuesAndArgumentCounts() {
        #expect(vpnprov(["validate", "--format", "xml", "x.yaml"]).code == 2)
        #expect(vpnprov(["validate", "--format"]).code == 2)
        #expect(vpnprov(["validate", "a.yaml", "b.yaml"]).code == 2)
        #expect(vpnprov(["validate", "--strict=yes"]).code == 2)
        #expect(vpnprov(["generate", "--out", "a", "--out", "b"]).code == 2)
        let revoke = vpnprov(["revoke"])
        #expect(revoke.code == 2)
        #expect(revoke.err.contains("missing argument <user>"))
    }

    @Test func missingInventoryIsAUsageError() throws {
        let dir = try temporaryDirectory()
        let given = vpnprov(["validate", "nope.yaml"], in: dir)
        #expect(given.code == 2)
        #expect(given.err.contains("'nope.yaml' not found"))
        let defaulted = vpnprov(["validate"], in: dir)
        #expect(defaulted.code == 2)
        #expect(defaulted.err.contains("tried inventory.yaml, inventory.yml"))
        let directory = vpnprov(["validate", "."], in: dir)
        #expect(directory.code == 2)
    }

    @Test func validateGoodInventoryExitsZero() {
        let r = vpnprov(["validate", "crlf.yaml"], in: goodDir)
        #expect(r.code == 0)
        #expect(r.out == "crlf.yaml: ok (1 node, 1 user)\n")
        #expect(r.err.isEmpty)
    }

    /// "ok" is said only of an inventory without findings: with warnings the verdict counts them and comes
    /// after them (standard error first, then the one line on standard output), and every count agrees
    /// with its number.
    @Test func validateWithWarningsSaysNoErrorsAndCountsThem() throws {
        let dir = try temporaryDirectory()
        let inventory = """
            vpnprov: 1
            name: acme
            nodes:
              fra-1:
                address: 203.0.113.10
                pool: 10.10.0.0/24
                services: [ikev2-psk]
                psk: gen
            users:
              alice:
                password: gen

            """
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["validate"], in: dir)
        #expect(r.code == 0)
        #expect(r.err.contains("[weak-psk-service]"), "\(r.err)")
        let warnings = r.err.components(separatedBy: ": warning: ").count - 1
        #expect(warnings > 1)
        #expect(r.err.hasSuffix("\n\(warnings) warnings\n"), "\(r.err)")
        #expect(r.out == "inventory.yaml: no errors, \(warnings) warnings (1 node, 1 user)\n", "\(r.out)")
        #expect(!r.out.contains("ok"))
        // Without findings, "ok".
        let clean = vpnprov(["validate", "crlf.yaml"], in: goodDir)
        #expect(clean.err.isEmpty && clean.out == "crlf.yaml: ok (1 node, 1 user)\n")
        // generate's summary: one node, one user, never "1 nodes".
        let generated = vpnprov(["generate"], in: dir)
        #expect(generated.code == 0, "\(generated.err)")
        #expect(generated.err.contains("vpnprov: out: 1 node, 1 user; "), "\(generated.err)")
        #expect(!generated.err.contains("1 nodes") && !generated.err.contains("1 users"))
    }

    @Test func pluralAgreesWithItsCount() {
        #expect(Plural.count(0, "node") == "0 nodes")
        #expect(Plural.count(1, "node") == "1 node")
        #expect(Plural.count(2, "file") == "2 files")
        #expect(Plural.count(1, "entry", plural: "entries") == "1 entry")
        #expect(Plural.count(3, "entry", plural: "entries") == "3 entries")
    }

    @Test func validateBadInventoryPrintsGCCStyleWithCaret() {
        let r = vpnprov(["validate", "tier-on.yaml"], in: badDir)
        #expect(r.code == 1)
        #expect(r.out.isEmpty)
        #expect(
            r.err == """
                tier-on.yaml:7:11: error: node 'fra-1': 'tier' must be one of free or pro, found 'on' [invalid-value]
                    tier: on
                          ^
                1 error

                """)
    }

    @Test func duplicateKeyPrintsANote() {
        let r = vpnprov(["validate", "duplicate-node-key.yaml"], in: badDir)
        #expect(r.code == 1)
        #expect(r.err.contains("duplicate-node-key.yaml:8:5: error: duplicate key 'address' [duplicate-key]"))
        #expect(r.err.contains("duplicate-node-key.yaml:6:5: note: first defined here"))
    }

    @Test func jsonFormatIsOneDocumentWithTheDiagnostics() throws {
        let r = vpnprov(["validate", "--format", "json", "bad-service.yaml"], in: badDir)
        #expect(r.code == 1)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(doc["vpnprov"] as? Int == 1)
        #expect(doc["command"] as? String == "validate")
        #expect(doc["ok"] as? Bool == false)
        let array = try #require(doc["diagnostics"] as? [[String: Any]])
        #expect(array.count == 1)
        #expect(array[0]["code"] as? String == "invalid-value")
        #expect(array[0]["line"] as? Int == 7)
        #expect(array[0]["column"] as? Int == 27)
        #expect(array[0]["file"] as? String == "bad-service.yaml")
        #expect(array[0]["severity"] as? String == "error")
        #expect((array[0]["message"] as? String)?.contains("ikve2-cert") == true)
        // The human text stays on stderr, as in text format.
        #expect(r.err.contains("bad-service.yaml:7:27: error:"))
        #expect(r.err.hasSuffix("1 error\n"))

        let clean = vpnprov(["validate", "--format=json", "minimal.yaml"], in: goodDir)
        #expect(clean.code == 0)
        let cleanDoc = try #require(try JSONSerialization.jsonObject(with: Data(clean.out.utf8)) as? [String: Any])
        #expect(cleanDoc["ok"] as? Bool == true)
        #expect((cleanDoc["diagnostics"] as? [Any])?.isEmpty == true)
        #expect((cleanDoc["inventory"] as? [String: Any])?["file"] as? String == "minimal.yaml")
        #expect(clean.err.contains("minimal.yaml: ok"))
    }

    @Test func strictMakesWarningsFail() throws {
        let dir = try temporaryDirectory()
        let text =
            "vpnprov: 1\nname: x\nnodes:\n  a:\n    address: 192.0.2.1\n    pool: 10.1.0.0/24\n    services: [ikev2-eap, ikev2-eap]\n"
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let normal = vpnprov(["validate"], in: dir)
        #expect(normal.code == 0)
        #expect(normal.err.contains("warning: node 'a': 'services': 'ikev2-eap' is listed twice [duplicate-entry]"))
        #expect(normal.err.hasSuffix("1 warning\n"))
        let strict = vpnprov(["validate", "--strict"], in: dir)
        #expect(strict.code == 1)
        #expect(strict.err.contains("1 warning (warnings are errors with --strict)"))
    }

    @Test func initWritesAStarterThatValidatesAndNeverOverwrites() throws {
        let dir = try temporaryDirectory()
        let first = vpnprov(["init", "site"], in: dir)
        #expect(first.code == 0)
        #expect(first.out.contains("wrote site/inventory.yaml"))
        let text = try String(contentsOfFile: dir + "/site/inventory.yaml", encoding: .utf8)
        #expect(text.contains("# "))
        let validated = vpnprov(["validate", "site/inventory.yaml", "--strict"], in: dir)
        #expect(validated.code == 0)
        #expect(validated.err.isEmpty)
        // A user appended with `>>` starts on a line of its own and is read.
        #expect(text.hasSuffix("\n"))
        let handle = try #require(FileHandle(forWritingAtPath: dir + "/site/inventory.yaml"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("  bob:\n    password: gen\n".utf8))
        try handle.close()
        let appended = vpnprov(["validate", "site/inventory.yaml", "--strict"], in: dir)
        #expect(appended.code == 0, "\(appended.err)")
        #expect(appended.out.contains("(1 node, 2 users)"), "\(appended.out)")

        try "keep me".write(toFile: dir + "/site/inventory.yaml", atomically: true, encoding: .utf8)
        let again = vpnprov(["init", "site"], in: dir)
        #expect(again.code == 2)
        #expect(again.err.contains("already exists"))
        #expect(try String(contentsOfFile: dir + "/site/inventory.yaml", encoding: .utf8) == "keep me")

        let here = vpnprov(["init"], in: dir)
        #expect(here.code == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/inventory.yaml"))
        #expect(vpnprov(["validate"], in: dir).code == 0)
    }

    @Test func pipelineCommandsParseTheirOptionsAndReachTheHook() throws {
        let dir = try temporaryDirectory()
        #expect(vpnprov(["init"], in: dir).code == 0)
        let generate = try GenerateCommand(
            ParsedArguments.parse(
                ["--out", "o", "--state=/s", "--format", "json", "--strict"], for: GenerateCommand.configuration))
        let console = Console.capturing().0
        let format = try OutputOption.format(
            ParsedArguments.parse(["--format", "json"], for: GenerateCommand.configuration),
            for: GenerateCommand.configuration)
        let context = CommandContext(
            console: console, environment: ["A": "b"], currentDirectory: dir, now: testNow,
            output: CommandOutput(command: "generate", format: format, console: console))
        let options = try generate.options(context)
        #expect(options.inventory == "inventory.yaml")
        #expect(options.inventoryPath == dir + "/inventory.yaml")
        #expect(options.outDirectory == dir + "/o")
        #expect(options.stateDirectory == "/s")
        #expect(options.templatesDirectory == nil)
        #expect(context.output.format == .json)
        #expect(options.strict)
        #expect(options.environment == ["A": "b"])
        #expect(options.now == testNow)

        let defaults = try GenerateCommand(ParsedArguments.parse([], for: GenerateCommand.configuration)).options(
            context)
        #expect(defaults.stateDirectory == dir + "/state")
        #expect(defaults.outDirectory == dir + "/out")

        #expect(vpnprov(["generate", "--templates", "missing"], in: dir).code == 2)
        #expect(vpnprov(["check", "--bogus"], in: dir).err.contains("vpnprov check --help"))
        #expect(vpnprov(["revoke", "alice", "nope.yaml"], in: dir).code == 2)
    }
}
