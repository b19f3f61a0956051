import VPNProvSupport

// How a template's output is parsed by whatever reads it, and therefore how every value must be
// written into it. Each template declares its syntax in its first line, e.g.
//     {{! syntax: swanctl }}
// so the choice cannot be forgotten and the engine never emits a value unescaped.

/// The target syntax of a template; decides how `{{value}}` is written.
package enum TemplateSyntax: String, Sendable, Hashable, CaseIterable {
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
    /// nftables rulesets (`nft -f`): values are written bare and may hold only `A-Z a-z 0-9 . : / _ -`
    /// (addresses, prefixes, numbers, interface names — the template puts quotes where nft wants
    /// them); anything else is refused, so no value can open a block, start a comment, end a
    /// statement or close a quoted name.
    case nftables
    /// FreeRADIUS 3 configuration files: every string value becomes a double-quoted string, and may
    /// not hold a quote, a backslash, `$` or a backtick (FreeRADIUS expands `${...}` and `$ENV{...}`
    /// inside double quotes and treats the others specially) or a control character.
    case freeradius

    /// One string value written in this syntax; nil when it holds a control character the syntax
    /// cannot carry (the caller names the variable in its error, never the value).
    func escape(_ value: String) -> String? {
        var out: [UInt8] = []
        return write(value, into: &out) ? String(decoding: out, as: UTF8.self) : nil
    }

    /// Appends `value` written in this syntax to `out`; false (with `out` partly written) when it holds
    /// a control character the syntax cannot carry. Works on UTF-8 bytes: every character it treats
    /// specially is ASCII, and no byte of a multi-byte sequence is below 0x80.
    func write(_ value: String, into out: inout [UInt8]) -> Bool {
        var value = value
        return value.withUTF8 { write(utf8: $0, into: &out) }
    }

    private func write(utf8 v: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) -> Bool {
        let isControl = Self.isControl
        switch self {
        case .swanctl:
            return Self.writeSwanctlQuoted(v, into: &out)
        case .text:
            if v.contains(where: isControl) { return false }
            out.append(contentsOf: v)
            return true
        case .powershell:
            return Self.writePowerShellQuoted(v, into: &out)
        case .nftables:
            let allowed = v.allSatisfy { b in
                (b >= 0x30 && b <= 0x3A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E
                    || b == 0x2F
                    || b == 0x5F || b == 0x2D
            }
            if !allowed || v.isEmpty { return false }
            out.append(contentsOf: v)
            return true
        case .freeradius:
            let refused: Set<UInt8> = [0x22, 0x24, 0x27, 0x5C, 0x60]
            if v.contains(where: { isControl($0) || refused.contains($0) }) { return false }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: v)
            out.append(UInt8(ascii: "\""))
            return true
        case .yaml:
            // YAML's double-quoted style takes the same escapes as swanctl's quoted strings.
            if v.contains(UInt8(ascii: "{")) { out += "!unsafe ".utf8 }
            return TemplateSyntax.swanctl.write(utf8: v, into: &out)
        }
    }

    private static func isControl(_ b: UInt8) -> Bool { b < 0x20 || b == 0x7F }

    /// A swanctl (and YAML) double-quoted string: backslash escapes for \\, ", newline, return and tab.
    private static func writeSwanctlQuoted(_ v: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "\""))
        var start = 0
        for i in 0..<v.count {
            let escape: UInt8
            switch v[i] {
            case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
            case UInt8(ascii: "\""): escape = UInt8(ascii: "\"")
            case 0x0A: escape = UInt8(ascii: "n")
            case 0x0D: escape = UInt8(ascii: "r")
            case 0x09: escape = UInt8(ascii: "t")
            case let b where isControl(b): return false
            default: continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: v[start..<i]))
            out.append(UInt8(ascii: "\\"))
            out.append(escape)
            start = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: v[start...]))
        out.append(UInt8(ascii: "\""))
        return true
    }

    /// A PowerShell single-quoted string: ' and the quotes PowerShell reads as ' (U+2018...U+201B) doubled.
    private static func writePowerShellQuoted(_ v: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "'"))
        var start = 0
        var i = 0
        while i < v.count {
            let b = v[i]
            if isControl(b) { return false }
            // ' is doubled, and so are U+2018...U+201B (UTF-8 E2 80 98...9B).
            var quote = 0
            if b == UInt8(ascii: "'") {
                quote = 1
            } else if b == 0xE2, i + 2 < v.count, v[i + 1] == 0x80, (0x98...0x9B).contains(v[i + 2]) {
                quote = 3
            }
            if quote == 0 {
                i += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: v[start..<(i + quote)]))
            start = i
            i += quote
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: v[start...]))
        out.append(UInt8(ascii: "'"))
        return true
    }
}
