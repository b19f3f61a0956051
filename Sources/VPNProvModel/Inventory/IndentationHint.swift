import Foundation
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Hints for libyaml's indentation errors, which name the place the parser gave up rather than the
/// line that is wrong:
///
/// - a key dedented to an outer level in the middle of a mapping (`pool:` at column 3 among fields at
///   column 5) ends that mapping, so the next field, still at column 5, is reported as "mapping values
///   are not allowed in this context" one line later;
/// - a key indented deeper than the key before it, whose value is already given on its line
///   (`address: 192.0.2.1` then `  pool: ...`), gets the same message at the right line but no hint;
/// - a line between two indentation levels (column 4 between fields at 3 and 5) gets "did not find
///   expected key", and a value holding `: ` unquoted gets "mapping values are not allowed" too.
///
/// Only the source lines are read (spaces before the first character are the indentation: YAML
/// allows no tabs there); nothing is guessed unless the lines around the error show the pattern.
enum IndentationHint {
    struct Hint {
        /// The line to look at and the column its text starts at (1-based).
        var line: Int
        var column: Int
        var text: String
    }

    /// One source line: its indentation and text without the indentation.
    private struct Line {
        var number: Int
        var indent: Int
        var text: Substring
        /// Blank or a comment only: ignored when looking for the lines around an error.
        var significant: Bool { !text.isEmpty && !text.hasPrefix("#") }
        /// What the line starts with, as shown in a hint: its key (`pool:`), `-` for an item, else
        /// `...`. Nothing else of the line is shown (the file did not parse, so which lines hold
        /// secrets is unknown; keys are not secrets).
        var start: String {
            let key = text.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }
            if !key.isEmpty, key.count <= 64, text.dropFirst(key.count).first == ":" { return "\(key):" }
            return text.hasPrefix("-") ? "-" : "..."
        }
        /// A `key: value` line whose value is on the line, so nothing indented deeper can follow it.
        var hasInlineValue: Bool {
            var body = text
            if body.hasPrefix("- ") { body = body.dropFirst(2).drop { $0 == " " } }
            guard let colon = body.range(of: ": ") else { return false }
            let value = body[colon.upperBound...].drop { $0 == " " }
            return !value.isEmpty && !value.hasPrefix("#") && !value.hasPrefix("&") && !value.hasPrefix("|")
                && !value.hasPrefix(">")
        }
    }

    static func hint(
        for error: (message: String, line: Int, column: Int, otherLine: Int?, otherColumn: Int?), source: [UInt8]
    ) -> Hint? {
        let lines = split(source)
        guard error.line >= 1, error.line <= lines.count else { return nil }
        if error.message.hasPrefix("mapping values are not allowed") {
            return mappingValues(lines, line: error.line, column: error.column)
        }
        if error.message.hasPrefix("did not find expected key"), let otherLine = error.otherLine,
            let otherColumn = error.otherColumn
        {
            return betweenLevels(lines, line: error.line, mappingLine: otherLine, mappingColumn: otherColumn)
        }
        return nil
    }

    private static func split(_ source: [UInt8]) -> [Line] {
        var result: [Line] = []
        for (i, raw) in source.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            var text = Substring(String(decoding: raw, as: UTF8.self))
            if text.hasSuffix("\r") { text = text.dropLast() }
            let indent = text.prefix { $0 == " " }.count
            result.append(Line(number: i + 1, indent: indent, text: text.dropFirst(indent)))
        }
        return result
    }

    /// The nearest significant line before `line` (1-based), if any.
    private static func previous(_ lines: [Line], before line: Int) -> Line? {
        var i = line - 2
        while i >= 0 {
            if lines[i].significant { return lines[i] }
            i -= 1
        }
        return nil
    }

    private static func mappingValues(_ lines: [Line], line: Int, column: Int) -> Hint? {
        let here = lines[line - 1]
        // The error's colon after the line's first `: `: a plain value holding `: `.
        if let first = here.text.range(of: ": "),
            column - 1 - here.indent > here.text.distance(from: here.text.startIndex, to: first.lowerBound)
        {
            return Hint(
                line: line, column: here.indent + 1,
                text: "a plain value cannot contain ': ' on line \(line); put the value in quotes")
        }
        guard here.significant, let before = previous(lines, before: line), before.indent < here.indent,
            before.hasInlineValue
        else {
            return nil
        }
        // The line before is left of this one and of the line before it: it is the one dedented, and
        // it ended the mapping this line still belongs to.
        if let twoBefore = previous(lines, before: before.number), twoBefore.indent == here.indent {
            return Hint(
                line: before.number, column: before.indent + 1,
                text:
                    "check the indentation of line \(before.number): '\(before.start)' starts at column \(before.indent + 1), "
                    + "left of the keys around it (column \(here.indent + 1), lines \(twoBefore.number) and \(line)), "
                    + "which ends their mapping there; indent it to column \(here.indent + 1)")
        }
        return Hint(
            line: line, column: here.indent + 1,
            text:
                "check the indentation of line \(line): '\(here.start)' starts at column \(here.indent + 1), deeper than "
                + "'\(before.start)' on line \(before.number) (column \(before.indent + 1)), whose value is already on its line; "
                + "start it at column \(before.indent + 1) to make it a key of the same mapping")
    }

    private static func betweenLevels(_ lines: [Line], line: Int, mappingLine: Int, mappingColumn: Int) -> Hint? {
        let here = lines[line - 1]
        guard here.significant, here.indent + 1 > mappingColumn, let before = previous(lines, before: line),
            before.indent > here.indent
        else { return nil }
        return Hint(
            line: line, column: here.indent + 1,
            text:
                "check the indentation of line \(line): '\(here.start)' starts at column \(here.indent + 1), between the keys "
                + "of the mapping on line \(mappingLine) (column \(mappingColumn)) and '\(before.start)' on line \(before.number) "
                + "(column \(before.indent + 1)); line it up with one of them")
    }
}
