import Testing
import VPNProvTestFixtures

@testable import VPNProvCLI

/// Commands are one table (`CommandName`) and read their options through an `Option` enum of their own and the
/// groups declared once (`SharedOption`; `--format` and `--quiet` for all) (docs/architecture.md, "A command"): the
/// table help, the manual page and the completions print is made from those, so what a command reads and what it
/// documents cannot drift apart.
@Suite struct TypedCommandTests {
    /// Each case of the table names the type whose configuration names that case, so `vpnprov NAME` runs the
    /// command that calls itself NAME.
    @Test func everyCommandOfTheTableNamesItsOwnCase() {
        for name in CommandName.allCases {
            #expect(name.command.configuration.name == name.rawValue, "\(name)")
        }
        for name in AccountsActionName.allCases {
            #expect(name.action.configuration.name == name.rawValue, "\(name)")
        }
        #expect(CommandLineTool.commands.count == CommandName.allCases.count)
        #expect(Set(CommandLineTool.commandNames).count == CommandName.allCases.count)
    }

    /// A command's table is its own options, then the shared ones it takes in their one order, then `--format` and
    /// `--quiet`, which the dispatcher reads for every command (`accounts` below).
    @Test func everyCommandsTableIsItsOwnOptionsThenTheGroups() {
        let shared = SharedOption.allCases.map(\.declaration.name)
        for type in CommandLineTool.commands where type != AccountsCommand.self {
            let table = type.configuration.options.map(\.name)
            let own = type.ownOptions
            #expect(Array(table.prefix(own.count)) == own, "\(type.configuration.name)")
            let rest = Array(table.dropFirst(own.count))
            #expect(Array(rest.suffix(2)) == ["format", "quiet"], "\(type.configuration.name)")
            let groups = Array(rest.dropLast(2))
            #expect(groups == shared.filter(groups.contains), "\(type.configuration.name): \(groups)")
        }
    }

    /// `--format` takes the formats the configuration lists, and nothing else.
    @Test func formatTakesTheFormatsTheCommandLists() throws {
        for type in CommandLineTool.commands {
            let configuration = type.configuration
            let option = try #require(configuration.options.first { $0.name == "format" })
            #expect(option.valueName == configuration.formats.map(\.rawValue).joined(separator: "|"))
            #expect(option.completion == .choices(configuration.formats.map(\.rawValue)))
            #expect(configuration.formats.first == .text)
        }
        #expect(ValidateCommand.configuration.formats == [.text, .json, .sarif])
        #expect(CheckCommand.configuration.formats == [.text, .json, .sarif])
        #expect(GenerateCommand.configuration.formats == [.text, .json])
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
        #expect(AccountsOption.declarations.map(\.name) == ["inventory", "state", "database"])
        #expect(AccountsCommand.actions.count == Set(AccountsCommand.actions).count)
    }
}

extension Command {
    /// The names of the options the command declares itself.
    static var ownOptions: [String] { Option.declarations.map(\.name) }
}
