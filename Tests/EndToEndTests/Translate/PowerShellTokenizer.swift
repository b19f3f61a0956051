import Foundation
import VPNProvTestHarness

/// A tokenizer for the part of PowerShell the generated Windows scripts use, written to the lexical grammar of
/// the PowerShell Language Specification 3.0, chapter 2 ("Lexical structure"; also about_Quoting_Rules,
/// about_Parsing, about_Special_Characters):
/// - comments: `#` to the end of the line (at the start of a token), `<# … #>` delimited comments;
/// - verbatim strings: a single-quote-character (U+0027, U+2018, U+2019, U+201A, U+201B) opens and closes them,
///   two single-quote-characters in a row stand for one, nothing else is special (`$`, backtick, `"`);
/// - expandable strings: a double-quote-character (U+0022, U+201C, U+201D, U+201E) opens and closes them, two
///   in a row stand for one, a backtick escapes the next character, `$name`, `${…}` and `$( … )` expand;
/// - here-strings `@'`…`'@` and `@"`…`"@` (the terminator at the start of a line);
/// - variables `$name`, `$scope:name`, `${…}`, the automatic `$_ $$ $? $^`; splats `@name`;
/// - parameters: a dash-character (U+002D, U+2013, U+2014, U+2015) followed by a letter, `_` or `?`;
/// - punctuators `{ } ( ) [ ] @{ @( $( ; , | & = ::` and newlines; a backtick before a newline continues the line;
/// - everything else up to a delimiter is a generic token (command names, numbers, type names, members).
/// It is deliberately strict: an unterminated string or comment and a character it does not place throw.
struct PowerShellTokenizer {
    enum Kind: Equatable {
        case newline
        case comment
        /// A verbatim string: the value after undoubling quotes.
        case verbatimString(String)
        /// An expandable string: the raw text between the quotes (escapes not applied) and the variables it expands.
        case expandableString(raw: String, variables: [String])
        case variable(String)
        case splat(String)
        case parameter(String)
        case punctuator(String)
        case generic(String)
    }

    struct Token: Equatable {
        var kind: Kind
        var line: Int
    }

    struct SyntaxError: Error, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    static let singleQuotes: Set<Character> = ["'", "\u{2018}", "\u{2019}", "\u{201A}", "\u{201B}"]
    static let doubleQuotes: Set<Character> = ["\"", "\u{201C}", "\u{201D}", "\u{201E}"]
    static let dashes: Set<Character> = ["-", "\u{2013}", "\u{2014}", "\u{2015}"]
    static let delimiters: Set<Character> = ["{", "}", "(", ")", "[", "]", ";", ",", "|", "&", "="]

    private let chars: [Character]
    private var i = 0
    private var line = 1
    private(set) var tokens: [Token] = []

    static func tokenize(_ text: String) throws -> [Token] {
        var t = PowerShellTokenizer(chars: Array(text))
        try t.run()
        return t.tokens
    }

    private init(chars: [Character]) { self.chars = chars }

    private func peek(_ k: Int = 0) -> Character? { i + k < chars.count ? chars[i + k] : nil }
    private func fail(_ message: String) -> SyntaxError { SyntaxError(line: line, message: message) }
    private mutating func emit(_ kind: Kind, line: Int? = nil) {
        tokens.append(Token(kind: kind, line: line ?? self.line))
    }

    private static func isNameChar(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "?" }

    private mutating func run() throws {
        while let c = peek() {
            let start = line
            if c == "\r" || c == "\n" {
                if c == "\r" && peek(1) == "\n" { i += 1 }
                i += 1
                emit(.newline, line: start)
                line += 1
            } else if c == " " || c == "\t" || c == "\u{FEFF}" || c == "\u{000B}" || c == "\u{000C}" || c == "\u{00A0}"
            {
                i += 1
            } else if c == "`" {
                // Line continuation: backtick + newline is whitespace; elsewhere it escapes one character.
                guard let n = peek(1) else { throw fail("backtick at the end of the file") }
                if n == "\n" || n == "\r" {
                    i += (n == "\r" && peek(2) == "\n") ? 3 : 2
                    line += 1
                } else {
                    try generic()
                }
            } else if c == "#" {
                while let d = peek(), d != "\n", d != "\r" { i += 1 }
                emit(.comment, line: start)
            } else if c == "<" && peek(1) == "#" {
                i += 2
                while true {
                    guard let d = peek() else { throw SyntaxError(line: start, message: "unterminated <# comment") }
                    if d == "#" && peek(1) == ">" {
                        i += 2
                        break
                    }
                    if d == "\n" { line += 1 }
                    i += 1
                }
                emit(.comment, line: start)
            } else if c == "@"
                && (peek(1).map { Self.singleQuotes.contains($0) || Self.doubleQuotes.contains($0) } ?? false)
                && (peek(2) == "\n" || peek(2) == "\r")
            {
                try hereString()
            } else if Self.singleQuotes.contains(c) {
                i += 1
                emit(.verbatimString(try verbatimBody(start: start)), line: start)
            } else if Self.doubleQuotes.contains(c) {
                i += 1
                let (raw, vars) = try expandableBody(start: start)
                emit(.expandableString(raw: raw, variables: vars), line: start)
            } else if c == "@" && (peek(1) == "{" || peek(1) == "(") {
                emit(.punctuator("@" + String(peek(1)!)))
                i += 2
            } else if c == "@", let n = peek(1), Self.isNameChar(n) {
                i += 1
                emit(.splat(name()))
            } else if c == "$" {
                try variable()
            } else if Self.delimiters.contains(c) {
                emit(.punctuator(String(c)))
                i += 1
            } else if c == ":" && peek(1) == ":" {
                emit(.punctuator("::"))
                i += 2
            } else if Self.dashes.contains(c), let n = peek(1), n.isLetter || n == "_" || n == "?" {
                i += 1
                var p = name()
                if peek() == ":" && peek(1) != ":" {
                    i += 1
                    p += ":"
                }
                emit(.parameter(p))
            } else {
                try generic()
            }
        }
    }

    private mutating func name() -> String {
        var s = ""
        while let c = peek(), Self.isNameChar(c) {
            s.append(c)
            i += 1
        }
        return s
    }

    private mutating func variable() throws {
        let start = line
        i += 1  // $
        guard let c = peek() else { throw fail("'$' at the end of the file") }
        if c == "(" {
            emit(.punctuator("$("), line: start)
            i += 1
        } else if c == "{" {
            i += 1
            var s = ""
            while true {
                guard let d = peek() else { throw SyntaxError(line: start, message: "unterminated ${ variable") }
                i += 1
                if d == "}" { break }
                if d == "`", let e = peek() {
                    s.append(e)
                    i += 1
                    continue
                }
                s.append(d)
            }
            emit(.variable(s), line: start)
        } else if c == "$" || c == "^" || c == "?" {
            i += 1
            emit(.variable(String(c)), line: start)
        } else if Self.isNameChar(c) {
            var s = name()
            if peek() == ":", let n = peek(1), Self.isNameChar(n) {  // scope or drive qualifier
                i += 1
                s += ":" + name()
            }
            emit(.variable(s), line: start)
        } else {
            throw fail("'$' not followed by a variable name")
        }
    }

    private mutating func generic() throws {
        var s = ""
        while let c = peek() {
            if c == " " || c == "\t" || c == "\n" || c == "\r" || Self.delimiters.contains(c)
                || Self.singleQuotes.contains(c)
                || Self.doubleQuotes.contains(c) || c == "$" || (c == "@" && s.isEmpty)
            {
                break
            }
            if c == ":" && peek(1) == ":" { break }
            if c == "`" {
                guard let n = peek(1) else { throw fail("backtick at the end of the file") }
                s.append(n)
                i += 2
                continue
            }
            s.append(c)
            i += 1
        }
        guard !s.isEmpty else { throw fail("unexpected character \(String(peek() ?? " ").debugDescription)") }
        emit(.generic(s))
    }

    /// `@'` / `@"` + newline … newline + `'@` / `"@`: the body is kept verbatim (an expandable here-string's
    /// variables are not needed by the scripts and not reported).
    private mutating func hereString() throws {
        let start = line
        let quote = chars[i + 1]
        let isVerbatim = Self.singleQuotes.contains(quote)
        i += 2
        if peek() == "\r" { i += 1 }
        i += 1  // newline
        line += 1
        var body = ""
        var atLineStart = true
        while true {
            guard let c = peek() else { throw SyntaxError(line: start, message: "unterminated here-string") }
            let closes = isVerbatim ? Self.singleQuotes.contains(c) : Self.doubleQuotes.contains(c)
            if atLineStart && closes && peek(1) == "@" {
                i += 2
                if body.hasSuffix("\n") { body.removeLast() }
                emit(isVerbatim ? .verbatimString(body) : .expandableString(raw: body, variables: []), line: start)
                return
            }
            atLineStart = c == "\n"
            if c == "\n" { line += 1 }
            body.append(c)
            i += 1
        }
    }

    private mutating func verbatimBody(start: Int) throws -> String {
        var s = ""
        while true {
            guard let c = peek() else { throw SyntaxError(line: start, message: "unterminated single-quoted string") }
            i += 1
            if Self.singleQuotes.contains(c) {
                if let n = peek(), Self.singleQuotes.contains(n) {
                    s.append(n)
                    i += 1
                    continue
                }
                return s
            }
            if c == "\n" { line += 1 }
            s.append(c)
        }
    }

    /// The raw body of an expandable string and the variables it expands (subexpressions are tokenized
    /// recursively so their strings and parentheses are checked too).
    private mutating func expandableBody(start: Int) throws -> (String, [String]) {
        var raw = ""
        var vars: [String] = []
        while true {
            guard let c = peek() else { throw SyntaxError(line: start, message: "unterminated double-quoted string") }
            if Self.doubleQuotes.contains(c) {
                if let n = peek(1), Self.doubleQuotes.contains(n) {
                    raw.append(c)
                    raw.append(n)
                    i += 2
                    continue
                }
                i += 1
                return (raw, vars)
            }
            if c == "`" {
                guard let n = peek(1) else {
                    throw SyntaxError(line: start, message: "unterminated double-quoted string")
                }
                raw.append(c)
                raw.append(n)
                i += 2
                continue
            }
            if c == "$", let n = peek(1) {
                if n == "(" {
                    // Subexpression: find the matching ')' with a nested tokenizer over the rest.
                    let rest = String(chars[(i + 2)...])
                    let (inner, consumed) = try Self.subexpression(rest, line: line)
                    vars += inner
                    raw += "$(" + String(chars[(i + 2)..<(i + 2 + consumed)])
                    i += 2 + consumed
                    continue
                }
                if n == "{" {
                    var j = i + 2
                    var name = ""
                    while j < chars.count, chars[j] != "}" {
                        name.append(chars[j])
                        j += 1
                    }
                    guard j < chars.count else {
                        throw SyntaxError(line: start, message: "unterminated ${ in a string")
                    }
                    vars.append(name)
                    raw += String(chars[i...j])
                    i = j + 1
                    continue
                }
                if Self.isNameChar(n) {
                    var j = i + 1
                    var name = ""
                    while j < chars.count, Self.isNameChar(chars[j]) {
                        name.append(chars[j])
                        j += 1
                    }
                    if j + 1 < chars.count, chars[j] == ":", Self.isNameChar(chars[j + 1]) {
                        name.append(":")
                        j += 1
                        while j < chars.count, Self.isNameChar(chars[j]) {
                            name.append(chars[j])
                            j += 1
                        }
                    }
                    vars.append(name)
                    raw += String(chars[i..<j])
                    i = j
                    continue
                }
            }
            if c == "\n" { line += 1 }
            raw.append(c)
            i += 1
        }
    }

    /// Tokenizes `text` up to the ')' that closes a `$(`; returns the variables used and the characters consumed
    /// including that ')'.
    static func subexpression(_ text: String, line: Int) throws -> ([String], Int) {
        var t = PowerShellTokenizer(chars: Array(text))
        t.line = line
        var depth = 1
        var vars: [String] = []
        while t.i < t.chars.count {
            let before = t.tokens.count
            try t.runOne()
            for token in t.tokens[before...] {
                switch token.kind {
                case .punctuator("("), .punctuator("$("), .punctuator("@("): depth += 1
                case .punctuator(")"): depth -= 1
                case .variable(let v): vars.append(v)
                case .expandableString(_, let vs): vars += vs
                default: break
                }
            }
            if depth == 0 { return (vars, t.i) }
        }
        throw SyntaxError(line: line, message: "unterminated $( subexpression in a string")
    }

    private mutating func runOne() throws {
        let target = tokens.count
        while peek() != nil && tokens.count == target {
            if let c = peek(), c == " " || c == "\t" {
                i += 1
                continue
            }
            if peek() == ")" {
                emit(.punctuator(")"))
                i += 1
                return
            }
            let c = peek()!
            if Self.singleQuotes.contains(c) {
                i += 1
                emit(.verbatimString(try verbatimBody(start: line)))
                return
            }
            if Self.doubleQuotes.contains(c) {
                i += 1
                let (raw, vars) = try expandableBody(start: line)
                emit(.expandableString(raw: raw, variables: vars))
                return
            }
            if c == "$" {
                try variable()
                return
            }
            if c == "(" {
                emit(.punctuator("("))
                i += 1
                return
            }
            if c == ":" && peek(1) == ":" {
                emit(.punctuator("::"))
                i += 2
                return
            }
            if Self.dashes.contains(c), let n = peek(1), n.isLetter {
                i += 1
                emit(.parameter(name()))
                return
            }
            if Self.delimiters.contains(c) {
                emit(.punctuator(String(c)))
                i += 1
                return
            }
            try generic()
        }
    }
}

/// Top-level statements of a tokenized script: tokens split at newlines and `;` outside brackets, comments
/// dropped. A statement keeps its nested blocks (function bodies, hashtables) as tokens.
enum PowerShellStatements {
    static func split(_ tokens: [PowerShellTokenizer.Token]) throws -> [[PowerShellTokenizer.Token]] {
        var statements: [[PowerShellTokenizer.Token]] = []
        var current: [PowerShellTokenizer.Token] = []
        var stack: [String] = []
        for t in tokens {
            switch t.kind {
            case .comment: continue
            case .newline, .punctuator(";"):
                if stack.isEmpty {
                    if !current.isEmpty { statements.append(current) }
                    current = []
                    continue
                }
            case .punctuator(let p) where ["{", "@{", "(", "@(", "$(", "["].contains(p):
                stack.append(p)
            case .punctuator(let p) where ["}", ")", "]"].contains(p):
                guard let open = stack.popLast() else {
                    throw PowerShellTokenizer.SyntaxError(line: t.line, message: "unbalanced '\(p)'")
                }
                let expected = open.hasSuffix("{") ? "}" : open.hasSuffix("(") ? ")" : "]"
                guard expected == p else {
                    throw PowerShellTokenizer.SyntaxError(line: t.line, message: "'\(open)' closed by '\(p)'")
                }
            default: break
            }
            current.append(t)
        }
        if !stack.isEmpty {
            throw PowerShellTokenizer.SyntaxError(line: tokens.last?.line ?? 0, message: "unclosed '\(stack.last!)'")
        }
        if !current.isEmpty { statements.append(current) }
        return statements
    }
}
