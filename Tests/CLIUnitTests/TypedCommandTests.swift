import Testing
import VPNProvTestFixtures

@testable import VPNProvCLI

/// Commands read their options through an `Option` enum of their own (docs/architecture.md, "A command"):
/// the table help, the manual page and the completions print is made from those enums, so what a
/// command reads and what it documents cannot drift apart.
@Suite struct TypedCommandTests {
    static func declared<C: Command>(_: C.Type) -> [String] { C.Option.declarations.map(\.name) }

    @Test func everyCommandsTableIsItsOptionEnum() {
        for type in CommandLineTool.commands where ObjectIdentifier(type) != ObjectIdentifier(AccountsCommand.self) {
            let table = type.configuration.options.map(\.name)
            #expect(table == Self.declared(type), "\(type.configuration.name)")
        }
    }

    /// The dispatcher reads `--format` and `--quiet` of every command (and of every `accounts` action,
    /// through the group).
    @Test func everyCommandDeclaresFormatAndQuiet() {
        for type in CommandLineTool.commands {
            let names = Self.declared(type)
            #expect(names.contains("format") && names.contains("quiet"), "\(type.configuration.name)")
        }
    }

    /// `accounts` lists its own options, then every action's (each once), then `--format` and `--quiet`;
    /// its help names every action.
    @Test func theAccountsTableIsTheGroupsAndItsActionsOptions() {
        let table = AccountsCommand.configuration.options.map(\.name)
        var actionOptions: [String] = []
        for type in AccountsCommand.subcommands {
            for name in type.configuration.options.map(\.name) where !actionOptions.contains(name) {
                actionOptions.append(name)
            }
            #expect(
                AccountsCommand.configuration.discussion?.contains("'\(type.configuration.name)") == true,
                "\(type.configuration.name)")
        }
        #expect(table == ["inventory", "state", "database"] + actionOptions + ["format", "quiet"])
        #expect(Set(Self.declared(AccountsCommand.self)) == ["inventory", "state", "database", "format", "quiet"])
        #expect(AccountsCommand.actions.count == Set(AccountsCommand.actions).count)
    }
}
