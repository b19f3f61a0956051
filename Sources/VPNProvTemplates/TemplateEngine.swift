import VPNProvSupport

// A small logic-less template engine (a subset of mustache) whose output is always escaped for the
// template's declared syntax.
//
//   {{! syntax: swanctl }}   first line of every template: its TemplateSyntax (required)
//   {{name}} {{a.b}} {{.}}   a value, escaped for the syntax (never raw: {{{x}}} and {{&x}} are refused)
//   {{#name}}...{{/name}}    loop over a list / render once if true, non-empty, or an object
//   {{^name}}...{{/name}}    render once if false, empty or an empty list
//   {{! comment }}           nothing
//
// A name that is not in the context is an error, never an empty string. A line holding only a
// section, inverted, closing or comment tag (and blanks) disappears entirely, newline included
// (mustache's standalone-line rule), so templates can be indented naturally.

/// Why a template could not be parsed or rendered. Messages name variables, never their values.
package struct TemplateError: Error, Hashable, CustomStringConvertible {
    package enum Kind: Error, Hashable {
        case missingHeader
        case unknownSyntax(String)
        case unclosedTag
        case unsupportedTag(String)
        case invalidName(String)
        case unclosedSection(String)
        case unexpectedClose(String)
        case mismatchedClose(expected: String, found: String)
        case quotedTag(String)
        case missingVariable(String)
        case notPrintable(String)
        case controlCharacter(name: String)
        case invalidIdentifier(name: String)
    }

    package var template: String
    package var line: Int
    package var column: Int
    package var kind: Kind

    package var description: String {
        let what: String
        switch kind {
        case .missingHeader: what = "template must start with a syntax header, e.g. {{! syntax: swanctl }}"
        case .unknownSyntax(let s):
            what =
                "unknown template syntax '\(s)' (known: \(TemplateSyntax.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .unclosedTag: what = "tag opened with {{ is never closed with }}"
        case .unsupportedTag(let t):
            what = "unsupported tag '{{\(t)}}' (values are always escaped; no partials or delimiters)"
        case .invalidName(let n): what = "invalid variable name '\(n)'"
        case .unclosedSection(let n): what = "section '\(n)' is never closed"
        case .unexpectedClose(let n): what = "closing tag '\(n)' without an open section"
        case .mismatchedClose(let e, let f): what = "closing tag '\(f)' does not match open section '\(e)'"
        case .quotedTag(let n): what = "value '\(n)' is inside quotes; the engine quotes values itself"
        case .missingVariable(let n): what = "no value named '\(n)'"
        case .notPrintable(let n): what = "'\(n)' is a section value (list, object or bool), not printable"
        case .controlCharacter(let n): what = "value of '\(n)' contains a control character this syntax cannot carry"
        case .invalidIdentifier(let n): what = "identifier '\(n)' must match [A-Za-z0-9_-]+"
        }
        return "\(template):\(line):\(column): \(what)"
    }
}

/// A parsed template, ready to render any number of contexts.
package struct Template: Sendable {
    package let name: String
    package let syntax: TemplateSyntax

    /// Not `indirect` (a nested section is an array already): the render loop reads every part of
    /// every file, and a box per part was one more reference to follow and count each time.
    fileprivate enum Part: Sendable {
        case text([UInt8])
        case variable(path: [String], offset: Int)
        case section(path: [String], inverted: Bool, body: [Part], offset: Int)
    }

    private let parts: [Part]
    private let source: [UInt8]
    /// The template text as loaded (fingerprints of what was rendered from it).
    package var sourceBytes: [UInt8] { source }

    /// Parses `text`; `name` is used in error messages (e.g. "server/swanctl.conf.tmpl").
    package init(name: String, text: String) throws(TemplateError) {
        self.name = name
        let bytes = Array(text.utf8)
        self.source = bytes
        let tokens = try Template.tokenize(bytes, name: name)
        guard case .tag(let first)? = tokens.first, first.kind == .comment,
            let header = Template.header(first.content)
        else { throw TemplateError(template: name, line: 1, column: 1, kind: .missingHeader) }
        guard let syntax = TemplateSyntax(rawValue: header) else {
            throw TemplateError(template: name, line: 1, column: 1, kind: .unknownSyntax(header))
        }
        self.syntax = syntax
        let cleaned = Template.applyStandaloneRule(tokens)
        if syntax == .swanctl || syntax == .powershell {
            // `key = "{{v}}"` would emit `""v""` (PowerShell: `'{{v}}'` -> `''v''`): catch it at parse time.
            let quotes: Set<UInt8> =
                syntax == .swanctl ? [UInt8(ascii: "\"")] : [UInt8(ascii: "\""), UInt8(ascii: "'")]
            for case .tag(let tag) in cleaned where tag.kind == .variable {
                if tag.offset > 0 && quotes.contains(bytes[tag.offset - 1]) {
                    let (l, c) = Template.position(of: tag.offset, in: bytes)
                    throw TemplateError(template: name, line: l, column: c, kind: .quotedTag(tag.content))
                }
            }
        }
        self.parts = try Template.build(cleaned, name: name, source: bytes)
    }

    /// Renders the template with `context` (normally an `.object`) as the root.
    package func render(_ context: TemplateValue) throws(TemplateError) -> String {
        String(decoding: try renderBytes(context), as: UTF8.self)
    }

    /// `render`'s text as UTF-8 bytes (what the file holds): the template and every value are text, so
    /// the bytes are valid UTF-8 and a file's contents need not go through a `String` and back.
    package func renderBytes(_ context: TemplateValue) throws(TemplateError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(source.count * 2)
        var stack = [context]
        try render(parts, stack: &stack, into: &out)
        return out
    }

    // MARK: - Tokens

    private enum TagKind: Equatable { case variable, section, inverted, close, comment }
    private struct Tag {
        var kind: TagKind
        var content: String  // name (trimmed) or comment text
        var offset: Int  // byte offset of "{{"
    }
    private enum Token {
        case text([UInt8])
        case tag(Tag)
    }

    private static func tokenize(_ b: [UInt8], name: String) throws(TemplateError) -> [Token] {
        var tokens: [Token] = []
        var i = 0
        var textStart = 0
        let open = UInt8(ascii: "{")
        let close = UInt8(ascii: "}")
        while i + 1 < b.count {
            guard b[i] == open && b[i + 1] == open else {
                i += 1
                continue
            }
            if i > textStart { tokens.append(.text(Array(b[textStart..<i]))) }
            let tagStart = i
            var j = i + 2
            while j + 1 < b.count && !(b[j] == close && b[j + 1] == close) { j += 1 }
            guard j + 1 < b.count else {
                let (l, c) = position(of: tagStart, in: b)
                throw TemplateError(template: name, line: l, column: c, kind: .unclosedTag)
            }
            let raw = String(decoding: b[(i + 2)..<j], as: UTF8.self)
            let trimmed = raw.trimmingBlanks()
            let kind: TagKind
            var content = trimmed
            switch trimmed.first {
            case "#": kind = .section
            case "^": kind = .inverted
            case "/": kind = .close
            case "!": kind = .comment
            case "{", "&", ">", "=", "<", "$":
                let (l, c) = position(of: tagStart, in: b)
                throw TemplateError(template: name, line: l, column: c, kind: .unsupportedTag(trimmed))
            default: kind = .variable
            }
            if kind != .variable { content = String(trimmed.dropFirst()).trimmingBlanks() }
            if kind == .comment { content = String(raw.trimmingBlanks().dropFirst()) }
            if kind != .comment && !isValidName(content) {
                let (l, c) = position(of: tagStart, in: b)
                throw TemplateError(template: name, line: l, column: c, kind: .invalidName(content))
            }
            tokens.append(.tag(Tag(kind: kind, content: content, offset: tagStart)))
            i = j + 2
            textStart = i
        }
        if textStart < b.count { tokens.append(.text(Array(b[textStart...]))) }
        return tokens
    }

    private static func header(_ comment: String) -> String? {
        let c = comment.trimmingBlanks()
        guard c.hasPrefix("syntax:") else { return nil }
        return String(c.dropFirst("syntax:".count)).trimmingBlanks()
    }

    private static func isValidName(_ s: String) -> Bool {
        if s == "." { return true }
        let segments = s.split(separator: ".", omittingEmptySubsequences: false)
        return !segments.isEmpty
            && segments.allSatisfy { seg in
                !seg.isEmpty && seg.unicodeScalars.allSatisfy { $0.isASCIIAlnum || $0 == "_" || $0 == "-" }
            }
    }

    /// Mustache standalone rule: a section/inverted/close/comment tag alone on its line (only blanks
    /// around it) removes the blanks before it and the rest of the line including the newline.
    private static func applyStandaloneRule(_ tokens: [Token]) -> [Token] {
        let nl = UInt8(ascii: "\n")
        func isBlank(_ s: ArraySlice<UInt8>) -> Bool { s.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        var dropPrefix = Array(repeating: false, count: tokens.count)  // up to and including first newline
        var dropSuffix = Array(repeating: false, count: tokens.count)  // after the last newline
        for (k, token) in tokens.enumerated() {
            guard case .tag(let tag) = token, tag.kind != .variable else { continue }
            // Before: start of template, or a text whose last line so far is blank and which is
            // either the first token or contains a newline.
            var beforeOK = false
            if k == 0 {
                beforeOK = true
            } else if case .text(let t) = tokens[k - 1] {
                if let last = t.lastIndex(of: nl) {
                    beforeOK = isBlank(t[(last + 1)...])
                } else {
                    beforeOK = k - 1 == 0 && isBlank(t[...])
                }
            }
            guard beforeOK else { continue }
            var afterOK = false
            if k == tokens.count - 1 {
                afterOK = true
            } else if case .text(let t) = tokens[k + 1] {
                if let first = t.firstIndex(of: nl) {
                    afterOK = isBlank(t[..<first])
                } else {
                    afterOK = k + 1 == tokens.count - 1 && isBlank(t[...])
                }
            }
            guard afterOK else { continue }
            if k > 0 { dropSuffix[k - 1] = true }
            if k + 1 < tokens.count { dropPrefix[k + 1] = true }
        }
        var out: [Token] = []
        for (k, token) in tokens.enumerated() {
            guard case .text(let t) = token, dropPrefix[k] || dropSuffix[k] else {
                out.append(token)
                continue
            }
            var start = 0
            var end = t.count
            if dropPrefix[k] { start = t.firstIndex(of: nl).map { $0 + 1 } ?? t.count }
            if dropSuffix[k] { end = t.lastIndex(of: nl).map { $0 + 1 } ?? 0 }
            if start < end { out.append(.text(Array(t[start..<end]))) }
        }
        return out
    }

    private static func build(_ tokens: [Token], name: String, source: [UInt8]) throws(TemplateError) -> [Part] {
        // Stack of open sections: (tag, parts collected so far in the enclosing level).
        var stack: [(tag: Tag, outer: [Part])] = []
        var current: [Part] = []
        for token in tokens {
            switch token {
            case .text(let t):
                current.append(.text(t))
            case .tag(let tag):
                switch tag.kind {
                case .comment: continue
                case .variable:
                    current.append(.variable(path: path(tag.content), offset: tag.offset))
                case .section, .inverted:
                    stack.append((tag, current))
                    current = []
                case .close:
                    guard let (openTag, outer) = stack.popLast() else {
                        let (l, c) = position(of: tag.offset, in: source)
                        throw TemplateError(template: name, line: l, column: c, kind: .unexpectedClose(tag.content))
                    }
                    guard openTag.content == tag.content else {
                        let (l, c) = position(of: tag.offset, in: source)
                        throw TemplateError(
                            template: name, line: l, column: c,
                            kind: .mismatchedClose(expected: openTag.content, found: tag.content))
                    }
                    let section = Part.section(
                        path: path(openTag.content), inverted: openTag.kind == .inverted, body: current,
                        offset: openTag.offset)
                    current = outer
                    current.append(section)
                }
            }
        }
        if let (openTag, _) = stack.last {
            let (l, c) = position(of: openTag.offset, in: source)
            throw TemplateError(template: name, line: l, column: c, kind: .unclosedSection(openTag.content))
        }
        return current
    }

    private static func path(_ name: String) -> [String] {
        name == "." ? ["."] : name.split(separator: ".").map(String.init)
    }

    fileprivate static func position(of offset: Int, in b: [UInt8]) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        for k in 0..<min(offset, b.count) where b[k] == UInt8(ascii: "\n") {
            line += 1
            lineStart = k + 1
        }
        // Columns count characters, not bytes.
        let column = String(decoding: b[lineStart..<min(offset, b.count)], as: UTF8.self).count + 1
        return (line, column)
    }

    // MARK: - Rendering

    private func fail(_ offset: Int, _ kind: TemplateError.Kind) -> TemplateError {
        let (l, c) = Template.position(of: offset, in: source)
        return TemplateError(template: name, line: l, column: c, kind: kind)
    }

    /// `[A-Za-z0-9_-]`: what an identifier value may hold.
    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
    }

    private func lookup(_ path: [String], in stack: [TemplateValue], offset: Int) throws(TemplateError) -> TemplateValue
    {
        if path.count == 1 && path[0] == "." { return stack[stack.count - 1] }
        // Members are read from the values in place (`member`), not from copies of them.
        var found: TemplateValue?
        var level = stack.count - 1
        while level >= 0 {
            if let v = stack[level].member(path[0]) {
                found = v
                break
            }
            level -= 1
        }
        guard var value = found else { throw fail(offset, .missingVariable(path.joined(separator: "."))) }
        for key in path.dropFirst() {
            guard let v = value.member(key) else { throw fail(offset, .missingVariable(path.joined(separator: "."))) }
            value = v
        }
        return value
    }

    private func render(_ parts: [Part], stack: inout [TemplateValue], into out: inout [UInt8]) throws(TemplateError) {
        for part in parts {
            switch part {
            case .text(let t):
                out += t
            case .variable(let path, let offset):
                // The dotted name is only spelled out for an error: this loop runs for every value
                // of every profile of a fleet.
                switch try lookup(path, in: stack, offset: offset) {
                case .string(let s):
                    guard syntax.write(s, into: &out) else {
                        throw fail(offset, .controlCharacter(name: path.joined(separator: ".")))
                    }
                case .identifier(let s):
                    guard !s.isEmpty, s.utf8.allSatisfy({ Template.isIdentifierByte($0) }) else {
                        throw fail(offset, .invalidIdentifier(name: path.joined(separator: ".")))
                    }
                    out.append(contentsOf: s.utf8)
                case .int(let n):
                    out.append(contentsOf: String(n).utf8)
                case .bool, .list, .object:
                    throw fail(offset, .notPrintable(path.joined(separator: ".")))
                }
            case .section(let path, let inverted, let body, let offset):
                let value = try lookup(path, in: stack, offset: offset)
                if inverted {
                    if !value.isTruthy { try render(body, stack: &stack, into: &out) }
                    continue
                }
                guard value.isTruthy else { continue }
                switch value {
                case .list(let items):
                    for item in items {
                        stack.append(item)
                        defer { stack.removeLast() }
                        try render(body, stack: &stack, into: &out)
                    }
                case .bool:
                    try render(body, stack: &stack, into: &out)
                default:
                    stack.append(value)
                    defer { stack.removeLast() }
                    try render(body, stack: &stack, into: &out)
                }
            }
        }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIIAlnum: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}

extension String {
    fileprivate func trimmingBlanks() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
