// How a template's output is parsed by whatever reads it, and therefore how every value must be
// written into it. Each template declares its syntax in its first line, e.g.
//     {{! syntax: swanctl }}
// so the choice cannot be forgotten and the engine never emits a value unescaped.

/// The target syntax of a template; decides how `{{value}}` is written.
public enum TemplateSyntax: String, Sendable, Hashable, CaseIterable {
    /// strongSwan settings files (swanctl.conf, strongswan.conf and their includes): every string value
    /// becomes a quoted string `"..."` with `\\`, `\"`, `\n`, `\r`, `\t` escapes; any other control
    /// character is refused (strongSwan's settings grammar, settings_lexer.l; docs/formats.md).
    case swanctl
    /// Plain text for people (READMEs): values are written as they are, but control characters
    /// (including newlines) are refused so a value cannot forge extra lines.
    case text
    /// PowerShell scripts: every string value becomes a verbatim (single-quoted) string literal, the
    /// only PowerShell string in which nothing is expanded (`$`, backtick and `"` are plain characters).
    /// The language specification's single-quote-character is any of U+0027, U+2018, U+2019, U+201A and
    /// U+201B, and one is written inside the literal by doubling it; control characters are refused.
    case powershell
    /// Ansible YAML (inventories, variable files): every string value becomes a double-quoted YAML
    /// scalar (`\\`, `\"`, `\n`, `\r`, `\t` escapes; other control characters refused). A value
    /// holding `{` is tagged `!unsafe`, so Ansible never evaluates it as a Jinja2 template
    /// (https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_advanced_syntax.html).
    case yaml

    /// One string value written in this syntax; nil when it holds a control character the syntax
    /// cannot carry (the caller names the variable in its error, never the value).
    func escape(_ value: String) -> String? {
        switch self {
        case .swanctl:
            // Most values need no escape: quote them as they are.
            if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) {
                return "\"" + value + "\""
            }
            var out = "\""
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
            out += "\""
            return out
        case .text:
            return value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) ? nil : value
        case .powershell:
            var out = "'"
            for scalar in value.unicodeScalars {
                if scalar.value < 0x20 || scalar.value == 0x7F { return nil }
                out.unicodeScalars.append(scalar)
                if Self.powerShellSingleQuotes.contains(scalar.value) { out.unicodeScalars.append(scalar) }
            }
            return out + "'"
        case .yaml:
            // YAML's double-quoted style takes the same escapes as swanctl's quoted strings.
            guard let quoted = TemplateSyntax.swanctl.escape(value) else { return nil }
            return value.contains("{") ? "!unsafe " + quoted : quoted
        }
    }

    /// PowerShell's single-quote-character: ' and the typographic quotes U+2018-U+201B.
    static let powerShellSingleQuotes: Set<UInt32> = [0x27, 0x2018, 0x2019, 0x201A, 0x201B]
}
