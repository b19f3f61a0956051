import Foundation

/// What a rule code is, declared once beside every other code (`RuleCode.declaration`): which table of
/// docs/diagnostics.md lists it (where in a run it fires), the severities it reports, whether `acknowledge:` may
/// name it, the exit status of a run it stops, and its help text. SARIF output carries the help as the rule's
/// description, `Diagnostic` checks every finding's severity against it, `Acknowledgements` reads from it which
/// warnings can be acknowledged, and the documentation's tables are made from it.
package struct RuleDeclaration: Sendable, Hashable {
    /// Where in a run a rule fires: one table of docs/diagnostics.md each.
    package enum Section: String, CaseIterable, Sendable, Hashable {
        /// Reading the inventory: YAML and schema (every command that reads one).
        case reading
        /// The rule checks of the validator (`validate`, and before `generate`, `check` and the other commands).
        case rules
        /// The consistency check of client and server plans (`generate`, `check`).
        case consistency
        /// The state, secrets and the run itself (`generate`, `check`, `revoke`, the lifecycle and hand-off
        /// commands).
        case run
    }

    /// The exit status of a run that an error of the rule stops.
    package enum Exit: Int32, Sendable, Hashable {
        /// The inventory (or what it asks for) is wrong.
        case failure = 1
        /// The command cannot run as asked.
        case usage = 2
        /// The environment or the state is unusable.
        case environment = 3
    }

    package var section: Section
    /// The severities its findings have, in the order the documentation names them.
    package var severities: [Severity]
    /// Its warnings are about a node, a user or the deployment and may be acknowledged (`acknowledge:`).
    package var acknowledgeable: Bool
    /// For a rule of the run that stops it: the exit status (nil for the other sections and for warnings).
    package var exit: Exit?
    /// What the rule means and what to do about it: a phrase in Markdown, as the documentation's table shows it.
    package var help: String

    /// An error of reading the inventory.
    static func reading(_ help: String) -> RuleDeclaration { reading(.error, help) }

    /// A finding of reading the inventory with this severity.
    static func reading(_ severity: Severity, _ help: String) -> RuleDeclaration {
        RuleDeclaration(section: .reading, severities: [severity], acknowledgeable: false, help: help)
    }

    /// A rule check of the validator with one severity.
    static func rule(_ severity: Severity, _ help: String) -> RuleDeclaration {
        RuleDeclaration(section: .rules, severities: [severity], acknowledgeable: false, help: help)
    }

    /// A rule check of the validator that reports errors and warnings.
    static func rule(_ first: Severity, _ second: Severity, _ help: String) -> RuleDeclaration {
        RuleDeclaration(section: .rules, severities: [first, second], acknowledgeable: false, help: help)
    }

    /// A rule check's warning that `acknowledge:` may name (`alsoError`: the rule reports errors too, which cannot
    /// be acknowledged).
    static func acknowledgeable(alsoError: Bool = false, _ help: String) -> RuleDeclaration {
        RuleDeclaration(
            section: .rules, severities: alsoError ? [.error, .warning] : [.warning], acknowledgeable: true, help: help)
    }

    /// A finding of the consistency check: always an error.
    static func consistency(_ help: String) -> RuleDeclaration {
        RuleDeclaration(section: .consistency, severities: [.error], acknowledgeable: false, help: help)
    }

    /// A rule of the run: an error that stops it with `exit`, and with `alsoWarning` a warning too.
    static func run(_ exit: Exit, alsoWarning: Bool = false, _ help: String) -> RuleDeclaration {
        RuleDeclaration(
            section: .run, severities: alsoWarning ? [.error, .warning] : [.error], acknowledgeable: false,
            exit: exit, help: help)
    }

    /// A warning of the run (it does not stop it).
    static func runWarning(_ help: String) -> RuleDeclaration {
        RuleDeclaration(section: .run, severities: [.warning], acknowledgeable: false, help: help)
    }

    /// The help as a sentence of plain text (SARIF's rule description): the Markdown's backticks dropped, each
    /// link written as its file under docs/, the first word upper case (unless it is code: `ikev2-psk`) and a full
    /// stop at the end.
    package var plainHelp: String {
        var text = ""
        var rest = Substring(help)
        while let open = rest.firstIndex(of: "[") {
            text += rest[..<open]
            let afterOpen = rest[rest.index(after: open)...]
            guard let close = afterOpen.range(of: "]("), let end = afterOpen[close.upperBound...].firstIndex(of: ")")
            else {
                text += "["
                rest = afterOpen
                continue
            }
            text += "docs/" + afterOpen[close.upperBound..<end]
            rest = afterOpen[afterOpen.index(after: end)...]
        }
        text += rest
        text = text.replacingOccurrences(of: "`", with: "").replacingOccurrences(of: "\\\\", with: "\\")
        if !help.hasPrefix("`"), let first = text.first, first.isLowercase {
            text = first.uppercased() + text.dropFirst()
        }
        if text.last != "." { text += "." }
        return text
    }
}
