import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvCLI

/// The tools the install checks hand the generated files to. In CI (`VPNPROV_REQUIRE_E2E=1`, set by
/// .ci/run after scripts/install-test-deps) a missing one fails the test; elsewhere the test is skipped.
enum InstallCheckTools {
    static func path(_ tool: String) -> String? {
        ["/usr/bin", "/bin", "/usr/local/bin"].map { $0 + "/" + tool }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static func available(_ tool: String) -> Bool {
        path(tool) != nil || ProcessInfo.processInfo.environment["VPNPROV_REQUIRE_E2E"] == "1"
    }
}

/// The manual page and the completion scripts come from the command tables `--help` prints
/// (HelpDocuments): every command and option is in each of them, each is accepted by its own
/// checker (the shells, mandoc), and the shells complete what the parser accepts.
@Suite(.temporaries) struct HelpDocumentsTests {
    static let configurations = CommandLineTool.commands.map { $0.configuration }

    /// A temporary directory holding `files` (name -> text), removed by `body`'s caller.
    static func withFiles<T>(_ files: [String: String], _ body: (String) throws -> T) throws -> T {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (name, text) in files { try text.write(toFile: dir + "/" + name, atomically: true, encoding: .utf8) }
        return try body(dir)
    }

    static func script(_ shell: String) throws -> String { try #require(HelpDocuments.completionScript(shell)) }

    /// The lines between `start` and the first line after it that matches `end`.
    static func block(_ text: String, from start: String, to end: (String) -> Bool) -> [String] {
        let lines = text.components(separatedBy: "\n")
        guard let first = lines.firstIndex(of: start) else { return [] }
        let rest = lines[(first + 1)...]
        return Array(rest.prefix { !end($0) })
    }

    @Test func theHiddenOptionsPrintTheDocumentsAndAreNotInTheHelp() {
        let manual = vpnprov(["--generate-manual"])
        #expect(manual.code == 0 && manual.out == HelpDocuments.manual && manual.err.isEmpty)
        for shell in HelpDocuments.shells {
            let r = vpnprov(["--generate-completion-script", shell])
            #expect(r.code == 0 && r.out == HelpDocuments.completionScript(shell))
        }
        for bad in [
            ["--generate-completion-script", "csh"], ["--generate-completion-script"],
            ["--generate-completion-script", "bash", "x"],
        ] {
            let r = vpnprov(bad)
            #expect(r.code == 2 && r.err.contains("bash, zsh, fish"), "\(bad)")
        }
        #expect(!vpnprov(["--help"]).out.contains("generate-"))
        #expect(HelpDocuments.completionScript("csh") == nil)
    }

    @Test func everyCommandOptionAndArgumentIsInTheManualPage() {
        let manual = HelpDocuments.manual
        let synopsis = Self.block(manual, from: ".SH SYNOPSIS") { $0.hasPrefix(".SH") }.joined(separator: "\n")
        for c in Self.configurations {
            #expect(synopsis.contains("\\fB\(HelpDocuments.escape(c.name))\\fR"), "\(c.name) not in SYNOPSIS")
            let section = Self.block(manual, from: ".SS \(HelpDocuments.escape(c.name))") {
                $0.hasPrefix(".SS") || $0.hasPrefix(".SH")
            }
            let text = section.joined(separator: "\n")
            #expect(text.hasPrefix(HelpDocuments.roff(c.abstract)), "\(c.name): abstract")
            if let discussion = c.discussion {
                #expect(text.contains(HelpDocuments.roff(discussion)), "\(c.name): discussion")
            }
            // Exactly the command's options, each with its help, then -h/--help.
            let labels = section.filter {
                $0.hasPrefix(".B \\-\\-") || $0.hasPrefix(".BI \"\\-\\-") || $0.hasPrefix(".BR \\-h")
            }
            let expected =
                c.options.map { o in
                    o.valueName.map { ".BI \"\\-\\-\(HelpDocuments.escape(o.name)) \" \(HelpDocuments.escape($0))" }
                        ?? ".B \\-\\-\(HelpDocuments.escape(o.name))"
                } + [".BR \\-h \", \" \\-\\-help"]
            #expect(labels == expected, "\(c.name): options in the manual page")
            for o in c.options {
                #expect(text.contains(HelpDocuments.roff(o.help)), "\(c.name) --\(o.name): help text")
            }
            for a in c.arguments {
                #expect(
                    text.contains(".I \(HelpDocuments.escape(a.name))\n\(HelpDocuments.roff(a.help))"),
                    "\(c.name) <\(a.name)>")
            }
        }
        for o in CommandLineTool.topLevelOptions {
            #expect(manual.contains(".B \\-\\-\(o.name)\n\(HelpDocuments.roff(o.help))"))
        }
        for (code, meaning) in ExitCode.meanings {
            #expect(manual.contains(".B \(code)\n\(HelpDocuments.roff(meaning))"))
        }
        #expect(manual.contains("vpnprov \(CommandLineTool.version)"))
    }

    /// The words a command's bash block offers for `--`, its `case $prev` options, its zsh specs
    /// and its fish lines: exactly the command's options, plus help.
    @Test func everyCompletionScriptOffersExactlyEachCommandsOptions() throws {
        let bash = try Self.script("bash")
        let zsh = try Self.script("zsh")
        let fish = try Self.script("fish")
        let commandNames = Self.configurations.map(\.name)
        for c in Self.configurations {
            let options = c.options.map { "--" + $0.name }
            let valued = c.options.filter { $0.valueName != nil }.map { "--" + $0.name }

            let bashBlock = Self.block(bash, from: "    \(c.name))") {
                $0.range(of: #"^    [a-z-]+\)$"#, options: .regularExpression) != nil || $0 == "    esac"
            }
            let offered = try #require(bashBlock.first { $0.contains("_vpnprov_words '--") }, "bash: \(c.name)")
            #expect(
                offered.trimmingCharacters(in: .whitespaces)
                    == "_vpnprov_words '\((options + ["--help", "-h"]).joined(separator: " "))'", "bash: \(c.name)")
            #expect(
                bashBlock.filter { $0.range(of: #"^        --[a-z-]+\)$"#, options: .regularExpression) != nil }
                    .map { String($0.trimmingCharacters(in: .whitespaces).dropLast()) } == valued,
                "bash: \(c.name) option values")

            let zshBlock = Self.block(zsh, from: "        \(c.name))") { $0.hasSuffix(";;") }
            let zshOptions = zshBlock.compactMap { line -> String? in
                guard let r = line.range(of: #"'--[a-z-]+"#, options: .regularExpression) else { return nil }
                return String(line[r].dropFirst())
            }
            #expect(zshOptions == options, "zsh: \(c.name)")
            #expect(zshBlock.last?.contains("{-h,--help}") == true, "zsh: \(c.name) help")
            for (i, a) in c.arguments.enumerated() {
                #expect(
                    zshBlock.contains { $0.contains("'\(i + 1)\(a.isOptional ? "::" : ":")\(a.name):") },
                    "zsh: \(c.name) <\(a.name)>")
            }

            let fishLines = fish.components(separatedBy: "\n").filter {
                $0.contains("-n '__fish_vpnprov_using \(c.name)'")
            }
            let fishOptions = fishLines.compactMap { line -> String? in
                guard let r = line.range(of: #" -l [a-z-]+"#, options: .regularExpression) else { return nil }
                return "--" + line[r].dropFirst(4)
            }
            #expect(fishOptions == options + ["--help"], "fish: \(c.name)")
        }
        // Every command (and help) is offered first, in each shell.
        #expect(bash.contains("_vpnprov_words '" + (commandNames + ["help"]).joined(separator: " ") + "'\n"))
        #expect(bash.contains("_vpnprov_words '--version --help -h'\n"))
        for name in commandNames + ["help"] {
            #expect(zsh.contains("        '\(name):"), "zsh: \(name)")
            #expect(fish.contains("-n __fish_vpnprov_needs_command -a \(name) -d "), "fish: \(name)")
        }
    }

    /// What every shell offers for a command line (sorted): the commands, each command's options
    /// exactly, the values of --format, the commands after `help`.
    static func expectCompletions(_ complete: (String) throws -> [String]) throws {
        #expect(try complete("vpnprov ") == (configurations.map(\.name) + ["help"]).sorted())
        #expect(try complete("vpnprov check --format ") == ["json", "sarif", "text"])
        #expect(try complete("vpnprov help rotate-p") == ["rotate-password", "rotate-ppk", "rotate-psk"])
        for c in configurations {
            #expect(
                try complete("vpnprov \(c.name) --") == (c.options.map { "--" + $0.name } + ["--help"]).sorted(),
                "\(c.name)")
        }
    }

    @Test func bashAcceptsItsScriptAndCompletesWhatTheParserAccepts() throws {
        let script = try Self.script("bash")
        try Self.withFiles(["vpnprov.bash": script]) { dir in
            #expect(try runTool(["bash", "-n", dir + "/vpnprov.bash"]).status == 0)
            try FileManager.default.createDirectory(atPath: dir + "/prod-out", withIntermediateDirectories: true)
            try "x".write(toFile: dir + "/prod.yaml", atomically: true, encoding: .utf8)
            // Each line: the words (the last one is being completed) -> what bash offers.
            func complete(_ words: [String]) throws -> [String] {
                let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
                let r = try runTool(
                    [
                        "bash", "-c",
                        "source ./vpnprov.bash; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _vpnprov; printf '%s\\n' \"${COMPREPLY[@]}\"",
                    ], in: dir)
                #expect(r.status == 0, "\(r.output)")
                return r.output.split(separator: "\n").map(String.init).sorted()
            }
            try Self.expectCompletions { try complete($0.components(separatedBy: " ")) }
            #expect(try complete(["vpnprov", "help", "un"]) == ["unrevoke"])
            #expect(try complete(["vpnprov", "-"]) == ["--help", "--version", "-h"])
            #expect(try complete(["vpnprov", "generate", "--format", "=", ""]) == ["json", "text"])
            #expect(try complete(["vpnprov", "generate", "--out", "prod-"]) == ["prod-out"])
            #expect(try complete(["vpnprov", "generate", "pro"]) == ["prod-out", "prod.yaml"])
            // revoke USER [INVENTORY]: nothing to offer for the user, files for the inventory.
            #expect(try complete(["vpnprov", "revoke", "--state", "prod-out", ""]) == [])
            #expect(try complete(["vpnprov", "revoke", "--state", "prod-out", "alice", "prod."]) == ["prod.yaml"])
            for c in Self.configurations {
                // What bash offers, the parser accepts.
                for word in try complete(["vpnprov", c.name, "--"]) where word != "--help" {
                    let option = try #require(c.options.first { "--" + $0.name == word })
                    let required = c.arguments.filter { !$0.isOptional }.map { _ in "x" }
                    let arguments =
                        required + [word]
                        + (option.valueName.map { [$0.split(separator: "|").first.map(String.init) ?? "x"] } ?? [])
                    do {
                        _ = try ParsedArguments.parse(arguments, for: c)
                    } catch {
                        Issue.record("\(c.name) \(arguments): \(error)")
                    }
                }
            }
        }
    }

    /// Completes `$2` in an interactive zsh on a pseudo-terminal (zsh/zpty) whose fpath starts with
    /// `$1`, and prints each candidate offered (compadd, wrapped) as `<<candidate>>`. The markers are
    /// typed quoted (`::EN""D::`) so that the terminal's echo of the typed lines never looks like
    /// their output: reading stops only after the completion has run.
    static let zshCapture = #"""
        zmodload zsh/zpty
        zpty z zsh -f -i
        zpty -w z "PS1=''; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -d $1/zcompdump"
        zpty -w z 'compadd () { builtin compadd -O __hits "$@"; (( $#__hits )) && print -l -- "<<"${^__hits}">>"; builtin compadd "$@" }'
        zpty -w z 'bindkey "^I" complete-word; print -- ::STA""RT::'
        zpty -w z "$2"$'\t'
        zpty -w z $'\C-u'
        zpty -w z 'print -- ::EN""D::'
        out=
        while zpty -r z line; do
            out+=$line
            [[ $out == *::START::*::END::* ]] && break
        done
        print -r -- "$out" | tr -d '\r' | grep -o '<<[^>]*>>' | sort -u
        zpty -d z

        """#

    @Test(.enabled(if: InstallCheckTools.available("zsh")))
    func zshAcceptsItsScriptAndCompletesWhatTheParserAccepts() throws {
        try Self.withFiles(["_vpnprov": try Self.script("zsh"), "capture.zsh": Self.zshCapture]) { dir in
            let syntax = try runTool(["zsh", "-n", dir + "/_vpnprov"])
            #expect(syntax.status == 0, "\(syntax.output)")
            // compinit reads the #compdef line of every function on fpath.
            let registered = try runTool([
                "zsh", "-f", "-c",
                "fpath=(\(dir) $fpath); autoload -Uz compinit; compinit -u -d \(dir)/zcompdump; print -r -- $_comps[vpnprov]",
            ])
            #expect(registered.status == 0 && registered.output == "_vpnprov\n", "\(registered.output)")
            func complete(_ line: String) throws -> [String] {
                let r = try runTool(["timeout", "60", "zsh", "-f", dir + "/capture.zsh", dir, line], in: dir)
                #expect(r.status == 0, "\(r.output)")
                // Only candidates: the terminal also echoes the lines typed.
                return r.output.split(separator: "\n").compactMap { item -> String? in
                    guard item.hasPrefix("<<"), item.hasSuffix(">>"),
                        item.range(of: #"^<<[A-Za-z0-9._/-]+>>$"#, options: .regularExpression) != nil
                    else { return nil }
                    return String(item.dropFirst(2).dropLast(2))
                }.sorted()
            }
            #expect(try complete("vpnprov -") == ["--help", "--version", "-h"])
            try Self.expectCompletions(complete)
        }
    }

    @Test(.enabled(if: InstallCheckTools.available("fish")))
    func fishAcceptsItsScriptAndCompletesWhatTheParserAccepts() throws {
        try Self.withFiles(["vpnprov.fish": try Self.script("fish")]) { dir in
            let syntax = try runTool(["fish", "--no-execute", dir + "/vpnprov.fish"])
            #expect(syntax.status == 0, "\(syntax.output)")
            func complete(_ line: String) throws -> [String] {
                let r = try runTool(
                    ["fish", "--no-config", "-c", "source vpnprov.fish; complete -C '\(line)'"], in: dir)
                #expect(r.status == 0, "\(r.output)")
                return r.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }.sorted()
            }
            try Self.expectCompletions(complete)
        }
    }

    @Test(.enabled(if: InstallCheckTools.available("mandoc")))
    func theManualPageIsCleanForMandocAndRendersEveryUsage() throws {
        try Self.withFiles(["vpnprov.1": HelpDocuments.manual]) { dir in
            let lint = try runTool(["mandoc", "-T", "lint", "-W", "warning", dir + "/vpnprov.1"])
            #expect(lint.status == 0 && lint.output.isEmpty, "\(lint.output)")
            let rendered = try runTool(
                ["mandoc", "-T", "ascii", "-O", "width=200", dir + "/vpnprov.1"], environment: ["LC_ALL": "C"])
            #expect(rendered.status == 0)
            // Bold and underlining are backspace sequences in ascii output.
            let text = rendered.output.replacingOccurrences(of: ".\u{8}", with: "", options: .regularExpression)
            for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS"] {
                #expect(text.contains("\n\(section)\n"), "\(section)")
            }
            // Compared with whitespace runs as one space: mandoc wraps a usage longer than the page.
            func words(_ text: String) -> String {
                text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
            }
            let flowing = words(text)
            for c in Self.configurations {
                // The usage as `vpnprov COMMAND --help` prints it, without its <> around placeholders.
                let usage = c.usage.replacingOccurrences(of: "<", with: "").replacingOccurrences(of: ">", with: "")
                #expect(flowing.contains(words(usage)), "\(c.name): \(usage)")
            }
        }
    }
}

/// scripts/install: into a temporary prefix, with the binary this test run built.
@Suite(.temporaries) struct InstallScriptTests {
    static let root = Repository.root

    @Test func installsTheBinaryManualAndCompletionsIntoAPrefixAndTheBinaryRuns() throws {
        let binary = VPNProvBinary.path
        try #require(
            FileManager.default.isExecutableFile(atPath: binary),
            "the vpnprov binary is not built: run `swift build` first")
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let prefix = base + "/prefix with space"
        let install = try runTool([Self.root + "/scripts/install", "--prefix", prefix, "--binary", binary])
        #expect(install.status == 0, "\(install.output)")
        #expect(install.output.contains("installed vpnprov \(CommandLineTool.version) into \(prefix)"))

        let expected: [(path: String, mode: Int, contents: String?)] = [
            ("bin/vpnprov", 0o755, nil),
            ("share/man/man1/vpnprov.1", 0o644, HelpDocuments.manual),
            ("share/bash-completion/completions/vpnprov", 0o644, HelpDocuments.completionScript("bash")),
            ("share/zsh/site-functions/_vpnprov", 0o644, HelpDocuments.completionScript("zsh")),
            ("share/fish/vendor_completions.d/vpnprov.fish", 0o644, HelpDocuments.completionScript("fish")),
        ]
        for file in expected {
            let path = prefix + "/" + file.path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == file.mode, "\(file.path)")
            if let contents = file.contents {
                #expect(try String(contentsOfFile: path, encoding: .utf8) == contents, "\(file.path)")
            }
        }
        // Nothing else, no temporary file left behind.
        let all = (FileManager.default.enumerator(atPath: prefix)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: prefix + "/" + $0, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
        #expect(all.sorted() == expected.map(\.path).sorted())

        // The installed binary runs from its new place.
        let version = try runTool([prefix + "/bin/vpnprov", "--version"])
        #expect(version.status == 0 && version.output == "vpnprov \(CommandLineTool.version)\n")
        let help = try runTool([prefix + "/bin/vpnprov", "help", "generate"])
        #expect(help.status == 0 && help.output.contains("USAGE: vpnprov generate"))
        // man finds the page by name under the prefix.
        if InstallCheckTools.available("man") {
            let page = try runTool(
                ["man", "-M", prefix + "/share/man", "vpnprov"],
                environment: ["MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100"])
            #expect(page.status == 0 && page.output.contains("rotate-password"), "\(page.output.prefix(300))")
        }
        // bash loads the installed completion.
        let bash = try runTool([
            "bash", "-c", "source '\(prefix)/share/bash-completion/completions/vpnprov' && complete -p vpnprov",
        ])
        #expect(bash.status == 0 && bash.output.contains("-F _vpnprov vpnprov"))

        // Again, over the first installation, with DESTDIR: the same files under DESTDIR + prefix.
        let staged = try runTool(
            [Self.root + "/scripts/install", "--prefix=/opt/vpnprov", "--binary=\(binary)"],
            environment: ["DESTDIR": base + "/stage"])
        #expect(staged.status == 0, "\(staged.output)")
        #expect(FileManager.default.isExecutableFile(atPath: base + "/stage/opt/vpnprov/bin/vpnprov"))
        #expect(FileManager.default.fileExists(atPath: base + "/stage/opt/vpnprov/share/man/man1/vpnprov.1"))
    }

    @Test func refusesARelativePrefixAndAnUnknownArgument() throws {
        for arguments in [["--prefix", "relative/dir", "--binary", "/bin/true"], ["--frobnicate"], ["--prefix"]] {
            let r = try runTool([Self.root + "/scripts/install"] + arguments)
            #expect(r.status == 2, "\(arguments): \(r.output)")
        }
    }
}
