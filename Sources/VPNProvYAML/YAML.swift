internal import CYAML

/// A position in a YAML source: 1-based line and column (columns count characters, not bytes).
package struct YAMLMark: Sendable, Hashable, CustomStringConvertible {
    package var line: Int
    package var column: Int
    package init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }
    package var description: String { "\(line):\(column)" }
}

/// One node of a loaded YAML document, with the position where it starts.
/// Aliases are already resolved (the aliased node appears again, with the anchor's position).
package struct YAMLNode: Sendable, Hashable {
    /// One `key: value` entry of a mapping, in source order.
    package struct Pair: Sendable, Hashable {
        package var key: YAMLNode
        package var value: YAMLNode
        package init(key: YAMLNode, value: YAMLNode) {
            self.key = key
            self.value = value
        }
    }

    package enum Kind: Sendable, Hashable {
        /// A scalar's text; `plain` is true when it was written unquoted (not quoted, not a block scalar).
        case scalar(String, plain: Bool)
        case sequence([YAMLNode])
        case mapping([Pair])
    }

    package var kind: Kind
    /// Where the node starts (1-based).
    package var line: Int
    package var column: Int
    /// Where the node ends (1-based; the position just after its last character).
    package var endLine: Int
    var endColumn: Int

    package init(kind: Kind, line: Int, column: Int, endLine: Int? = nil, endColumn: Int? = nil) {
        self.kind = kind
        self.line = line
        self.column = column
        self.endLine = endLine ?? line
        self.endColumn = endColumn ?? column
    }

    package var mark: YAMLMark { YAMLMark(line: line, column: column) }

    /// The scalar's text, or nil for collections.
    package var scalar: String? {
        if case .scalar(let s, _) = kind { return s }
        return nil
    }

    /// True for a plain scalar YAML reads as null: empty, `~`, `null`, `Null`, `NULL`.
    package var isNull: Bool {
        guard case .scalar(let s, let plain) = kind, plain else { return false }
        return s.isEmpty || s == "~" || s == "null" || s == "Null" || s == "NULL"
    }

    /// A short human name of the node's kind, for messages ("a mapping", "a list", "a string").
    var kindDescription: String {
        switch kind {
        case .scalar: return isNull ? "null" : "a scalar"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    /// Hashes what `hasSameContent` compares (text and structure, not positions or quoting style).
    func hashContent(into hasher: inout Hasher) {
        switch kind {
        case .scalar(let s, _):
            hasher.combine(0)
            hasher.combine(s)
        case .sequence(let items):
            hasher.combine(1)
            hasher.combine(items.count)
            for item in items { item.hashContent(into: &hasher) }
        case .mapping(let pairs):
            hasher.combine(2)
            hasher.combine(pairs.count)
            for pair in pairs {
                pair.key.hashContent(into: &hasher)
                pair.value.hashContent(into: &hasher)
            }
        }
    }

    /// Structural equality ignoring positions and quoting style (what YAML means by "the same key").
    func hasSameContent(as other: YAMLNode) -> Bool {
        switch (kind, other.kind) {
        case (.scalar(let a, _), .scalar(let b, _)):
            return a == b
        case (.sequence(let a), .sequence(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.hasSameContent(as: $1) }
        case (.mapping(let a), .mapping(let b)):
            return a.count == b.count
                && zip(a, b).allSatisfy { $0.key.hasSameContent(as: $1.key) && $0.value.hasSameContent(as: $1.value) }
        default:
            return false
        }
    }
}

/// Why a YAML document could not be loaded. `mark` is where the problem is; `otherMark` points at
/// the other party when there is one (the first definition of a duplicated key).
package struct YAMLError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, Hashable {
        /// libyaml rejected the text (scanner/parser error), or an unknown alias.
        case syntax
        /// The stream holds more than one document.
        case multipleDocuments
        /// A mapping has the same key twice.
        case duplicateKey
        /// Alias expansion would produce too many nodes.
        case aliasLimit
        /// Collections nested too deeply.
        case depthLimit
        /// The bytes are not valid UTF-8.
        case invalidUTF8
        /// A NUL byte or another character YAML does not allow.
        case invalidCharacter
        /// A single scalar is larger than the limit.
        case scalarTooLong
        /// An explicit tag (`!!str`, `!custom`): the schema reads every value by the type it expects.
        case tag
    }

    package var kind: Kind
    package var message: String
    package var mark: YAMLMark?
    package var otherMark: YAMLMark?

    package init(_ kind: Kind, _ message: String, at mark: YAMLMark?, other: YAMLMark? = nil) {
        self.kind = kind
        self.message = message
        self.mark = mark
        self.otherMark = other
    }

    package var description: String {
        (mark.map { "\($0): " } ?? "") + message
    }
}

/// Loads one YAML document with libyaml's event API into `YAMLNode`s, with limits that make
/// hostile input (alias bombs, deep nesting, huge scalars) fail fast with bounded memory.
package struct YAMLLoader: Sendable {
    package struct Limits: Sendable, Hashable {
        /// Total nodes produced, counting every alias expansion.
        var maxNodes: Int = 1_000_000
        /// Number of alias references.
        package var maxAliases: Int = 10_000
        /// Nesting depth of collections.
        var maxDepth: Int = 256
        /// Bytes in one scalar.
        var maxScalarBytes: Int = 1 << 20
        package init() {}
    }

    package var limits: Limits

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Loads the single document of `bytes` (UTF-8, optional BOM). Nil when the stream has no document
    /// (empty, or only comments).
    package static func load(bytes: [UInt8]) throws(YAMLError) -> YAMLNode? {
        try YAMLLoader().load(bytes: bytes)
    }

    package func load(bytes: [UInt8]) throws(YAMLError) -> YAMLNode? {
        try Self.checkEncoding(bytes)
        // libyaml skips a BOM only when it detects the encoding itself; the encoding is fixed to UTF-8
        // here, so drop the BOM first (it takes no column).
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        var builder = Builder(limits: limits, source: text)
        return try builder.run()
    }

    // MARK: - Encoding pre-check

    /// Rejects invalid UTF-8, NUL and other characters YAML forbids, with their position. libyaml reports
    /// these as reader errors without a line and column, so the check runs first.
    static func checkEncoding(_ bytes: [UInt8]) throws(YAMLError) {
        var i = 0
        var line = 1
        var column = 1
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            let here = YAMLMark(line: line, column: column)
            if b < 0x80 {
                if b == 0x0A {
                    line += 1
                    column = 1
                } else if b == 0x0D {
                    if i + 1 < n, bytes[i + 1] == 0x0A { i += 1 }
                    line += 1
                    column = 1
                } else if b == 0 {
                    throw YAMLError(.invalidCharacter, "NUL byte (0x00) is not allowed in YAML", at: here)
                } else if b < 0x20 && b != 0x09 || b == 0x7F {
                    throw YAMLError(.invalidCharacter, "control character \(hex(b)) is not allowed in YAML", at: here)
                } else {
                    column += 1
                }
                i += 1
                continue
            }
            let (scalar, length) = try decodeSequence(bytes, at: i, here)
            if (0x80...0x9F).contains(scalar) && scalar != 0x85 || scalar == 0xFFFE || scalar == 0xFFFF {
                throw YAMLError(
                    .invalidCharacter,
                    "character U+\(String(scalar, radix: 16, uppercase: true)) is not allowed in YAML", at: here)
            }
            if scalar == 0xFEFF {
                throw YAMLError(.invalidCharacter, "byte order mark is only allowed at the start of the file", at: here)
            }
            column += 1
            i += length
        }
    }

    /// The scalar of the multi-byte UTF-8 sequence at `i` and its length: validates the lead byte, the length,
    /// the continuation bytes, overlongs and surrogates.
    private static func decodeSequence(_ bytes: [UInt8], at i: Int, _ here: YAMLMark) throws(YAMLError) -> (
        UInt32, Int
    ) {
        let b = bytes[i]
        let length: Int
        var scalar: UInt32
        switch b {
        case 0xC2...0xDF:
            length = 2
            scalar = UInt32(b & 0x1F)
        case 0xE0...0xEF:
            length = 3
            scalar = UInt32(b & 0x0F)
        case 0xF0...0xF4:
            length = 4
            scalar = UInt32(b & 0x07)
        default:
            throw YAMLError(.invalidUTF8, "invalid UTF-8: byte \(hex(b)) cannot start a character", at: here)
        }
        guard i + length <= bytes.count else {
            throw YAMLError(.invalidUTF8, "invalid UTF-8: character cut off at end of file", at: here)
        }
        for k in 1..<length {
            let c = bytes[i + k]
            guard c & 0xC0 == 0x80 else {
                throw YAMLError(.invalidUTF8, "invalid UTF-8: byte \(hex(c)) is not a continuation byte", at: here)
            }
            scalar = scalar << 6 | UInt32(c & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw YAMLError(.invalidUTF8, "invalid UTF-8: malformed sequence starting with \(hex(b))", at: here)
        }
        return (scalar, length)
    }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0x0F)])
    }
}

// MARK: - Event-driven tree builder

private struct Builder {
    let limits: YAMLLoader.Limits
    let source: [UInt8]

    /// A collection being built (innermost last). Mutated in place so appends stay O(1).
    private struct Frame {
        var isMapping: Bool
        var start: YAMLMark
        var anchor: String?
        var items: [YAMLNode] = []
        var pairs: [YAMLNode.Pair] = []
        var pendingKey: YAMLNode?
        /// Nodes in this collection's expansion, itself included.
        var nodes = 1
        /// Scalar keys seen so far, for duplicate detection.
        var seen: [String: YAMLMark] = [:]
        /// Collection keys seen so far by content hash (indices into `pairs`).
        var seenComplex: [Int: [Int]] = [:]
    }

    private var stack: [Frame] = []
    /// Anchored nodes with their expanded size.
    private var anchors: [String: (node: YAMLNode, size: Int)] = [:]
    private var totalNodes = 0
    private var aliasCount = 0
    private var root: YAMLNode?
    private var documents = 0

    init(limits: YAMLLoader.Limits, source: [UInt8]) {
        self.limits = limits
        self.source = source
    }

    mutating func run() throws(YAMLError) -> YAMLNode? {
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            throw YAMLError(.syntax, "cannot initialise the YAML parser (out of memory)", at: nil)
        }
        defer { yaml_parser_delete(parser) }
        let input = UnsafeMutablePointer<UInt8>.allocate(capacity: max(source.count, 1))
        defer { input.deallocate() }
        if !source.isEmpty {
            input.initialize(from: source, count: source.count)
        }
        yaml_parser_set_input_string(parser, input, source.count)
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)

        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(parser, &event) == 1 else {
                throw Self.parserError(parser.pointee)
            }
            defer { yaml_event_delete(&event) }
            if event.type == YAML_STREAM_END_EVENT { break }
            try handle(event)
        }
        return root
    }

    private static func mark(_ m: yaml_mark_t) -> YAMLMark {
        YAMLMark(line: Int(m.line) + 1, column: Int(m.column) + 1)
    }

    private static func string(_ p: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        guard let p else { return nil }
        return String(cString: UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))
    }

    private static func parserError(_ p: yaml_parser_t) -> YAMLError {
        let problem =
            string(UnsafeMutableRawPointer(mutating: p.problem)?.assumingMemoryBound(to: yaml_char_t.self))
            ?? "unknown error"
        let context = string(UnsafeMutableRawPointer(mutating: p.context)?.assumingMemoryBound(to: yaml_char_t.self))
        switch p.error {
        case YAML_MEMORY_ERROR:
            return YAMLError(.syntax, "out of memory while parsing YAML", at: nil)
        case YAML_READER_ERROR:
            return YAMLError(.invalidCharacter, "invalid input: \(problem)", at: nil)
        default:
            let text = context.map { "\(problem) (\($0))" } ?? problem
            let m = mark(p.problem_mark)
            let ctx = context == nil ? nil : mark(p.context_mark)
            return YAMLError(.syntax, text, at: m, other: ctx == m ? nil : ctx)
        }
    }

    private var depth: Int { stack.count }

    /// An explicit tag is an error: `vpnprov: !!str 1` must not quietly read as the integer 1, and a
    /// custom tag means nothing to the schema. The tag is shown as written (`!!str` for the standard
    /// `tag:yaml.org,2002:` ones).
    private static func refuseTag(_ tag: UnsafeMutablePointer<yaml_char_t>?, at mark: YAMLMark) throws(YAMLError) {
        guard let full = string(tag) else { return }
        let standard = "tag:yaml.org,2002:"
        var shown = full.hasPrefix(standard) ? "!!" + full.dropFirst(standard.count) : full
        if shown.unicodeScalars.count > 40
            || shown.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        {
            shown =
                String(
                    shown.unicodeScalars.prefix(40).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
                + "..."
        }
        throw YAMLError(
            .tag,
            "YAML tag '\(shown)' is not supported: vpnprov reads every value by the type the schema expects; remove the tag",
            at: mark)
    }

    private mutating func handle(_ event: yaml_event_t) throws(YAMLError) {
        let start = Self.mark(event.start_mark)
        let end = Self.mark(event.end_mark)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                throw YAMLError(
                    .multipleDocuments, "the file holds more than one YAML document; an inventory is one document",
                    at: start)
            }
        case YAML_SCALAR_EVENT:
            try addScalar(event, start: start, end: end)
        case YAML_ALIAS_EVENT:
            let name = Self.string(event.data.alias.anchor) ?? ""
            guard let target = anchors[name] else {
                throw YAMLError(.syntax, "unknown alias '*\(name)' (no anchor '&\(name)' before it)", at: start)
            }
            aliasCount += 1
            guard aliasCount <= limits.maxAliases else {
                throw YAMLError(.aliasLimit, "more than \(limits.maxAliases) alias references", at: start)
            }
            try count(target.size, at: start)
            try add(target.node, size: target.size)
        case YAML_SEQUENCE_START_EVENT:
            guard depth < limits.maxDepth else {
                throw YAMLError(.depthLimit, "collections nested deeper than \(limits.maxDepth) levels", at: start)
            }
            try Self.refuseTag(event.data.sequence_start.tag, at: start)
            try count(1, at: start)
            stack.append(Frame(isMapping: false, start: start, anchor: Self.string(event.data.sequence_start.anchor)))
        case YAML_MAPPING_START_EVENT:
            guard depth < limits.maxDepth else {
                throw YAMLError(.depthLimit, "collections nested deeper than \(limits.maxDepth) levels", at: start)
            }
            try Self.refuseTag(event.data.mapping_start.tag, at: start)
            try count(1, at: start)
            stack.append(Frame(isMapping: true, start: start, anchor: Self.string(event.data.mapping_start.anchor)))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            guard let frame = stack.popLast() else { return }
            let kind: YAMLNode.Kind = frame.isMapping ? .mapping(frame.pairs) : .sequence(frame.items)
            let node = YAMLNode(
                kind: kind, line: frame.start.line, column: frame.start.column, endLine: end.line, endColumn: end.column
            )
            let size = frame.nodes
            if let anchor = frame.anchor { anchors[anchor] = (node, size) }
            try add(node, size: size)
        default:
            break
        }
    }

    /// A scalar: untagged, within the size limit, recorded under its anchor.
    private mutating func addScalar(_ event: yaml_event_t, start: YAMLMark, end: YAMLMark) throws(YAMLError) {
        let s = event.data.scalar
        try Self.refuseTag(s.tag, at: start)
        guard s.length <= limits.maxScalarBytes else {
            throw YAMLError(
                .scalarTooLong,
                "scalar of \(s.length) bytes is longer than the limit of \(limits.maxScalarBytes) bytes", at: start)
        }
        let text: String
        if let value = s.value, s.length > 0 {
            text = String(decoding: UnsafeBufferPointer(start: value, count: Int(s.length)), as: UTF8.self)
        } else {
            text = ""
        }
        let node = YAMLNode(
            kind: .scalar(text, plain: s.style == YAML_PLAIN_SCALAR_STYLE),
            line: start.line, column: start.column, endLine: end.line, endColumn: end.column)
        try count(1, at: start)
        if let anchor = Self.string(s.anchor) { anchors[anchor] = (node, 1) }
        try add(node, size: 1)
    }

    /// Counts produced nodes (aliases count their whole expansion) against the limit.
    private mutating func count(_ n: Int, at mark: YAMLMark) throws(YAMLError) {
        totalNodes += n
        if totalNodes > limits.maxNodes {
            throw YAMLError(
                .aliasLimit, "document expands to more than \(limits.maxNodes) nodes (alias bomb?)", at: mark)
        }
    }

    /// Attaches a finished node to the innermost open collection (or makes it the root).
    private mutating func add(_ node: YAMLNode, size: Int) throws(YAMLError) {
        guard !stack.isEmpty else {
            root = node
            return
        }
        let top = stack.count - 1
        stack[top].nodes += size
        if !stack[top].isMapping {
            stack[top].items.append(node)
        } else if let key = stack[top].pendingKey {
            stack[top].pairs.append(YAMLNode.Pair(key: key, value: node))
            stack[top].pendingKey = nil
        } else {
            // A new key: reject duplicates, naming both places.
            if let text = node.scalar {
                if let first = stack[top].seen[text] {
                    throw YAMLError(
                        .duplicateKey, "duplicate key '\(Self.shortened(text))'", at: node.mark, other: first)
                }
                stack[top].seen[text] = node.mark
            } else {
                var hasher = Hasher()
                node.hashContent(into: &hasher)
                let hash = hasher.finalize()
                for index in stack[top].seenComplex[hash, default: []]
                where stack[top].pairs[index].key.hasSameContent(as: node) {
                    throw YAMLError(
                        .duplicateKey, "duplicate key (\(node.kindDescription))", at: node.mark,
                        other: stack[top].pairs[index].key.mark)
                }
                stack[top].seenComplex[hash, default: []].append(stack[top].pairs.count)
            }
            stack[top].pendingKey = node
        }
    }

    private static func shortened(_ s: String) -> String {
        s.count > 60 ? String(s.prefix(57)) + "..." : s
    }
}
