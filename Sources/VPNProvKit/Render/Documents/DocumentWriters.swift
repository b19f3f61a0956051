import Foundation

/// Writes a `DocumentValue` as an XML property list, byte for byte what Foundation's
/// `PropertyListEncoder` (XML) and `PropertyListSerialization` write for the same values: tab
/// indentation, keys sorted, `<`, `>` and `&` escaped (nothing else), data as base64 in lines of
/// 76 − 8 × indent characters indented by that many tabs (indent counted up to 8), empty containers as `<dict/>`/`<array/>`.
/// `DocumentWriterTests` proves the equality over generated values of every escape class. (Foundation's
/// `PropertyListEncoder` orders non-ASCII keys by normalized comparison instead; every key vpnprov
/// writes is an ASCII field name, where all of Foundation's orders agree.)
enum PropertyListWriter {
    static let header = Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """.utf8)

    static func xml(_ value: DocumentValue) -> [UInt8] {
        var out = header
        out.reserveCapacity(4096)
        write(value, indent: 0, into: &out)
        out += Array("</plist>\n".utf8)
        return out
    }

    private static func tabs(_ n: Int, _ out: inout [UInt8]) {
        for _ in 0..<n { out.append(0x09) }
    }

    private static func append(_ s: String, _ out: inout [UInt8]) { out.append(contentsOf: s.utf8) }

    private static func escaped(_ s: String, _ out: inout [UInt8]) {
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "<"): append("&lt;", &out)
            case UInt8(ascii: ">"): append("&gt;", &out)
            case UInt8(ascii: "&"): append("&amp;", &out)
            default: out.append(b)
            }
        }
    }

    private static func write(_ value: DocumentValue, indent: Int, into out: inout [UInt8]) {
        tabs(indent, &out)
        switch value {
        case .string(let s):
            append("<string>", &out)
            escaped(s, &out)
            append("</string>\n", &out)
        case .integer(let i):
            append("<integer>\(i)</integer>\n", &out)
        case .unsignedInteger(let u):
            append("<integer>\(u)</integer>\n", &out)
        case .bool(let b):
            append(b ? "<true/>\n" : "<false/>\n", &out)
        case .data(let bytes):
            append("<data>\n", &out)
            let base64 = Array(Data(bytes).base64EncodedString().utf8)
            // Foundation indents the base64 lines (not the tags) by at most 8 tabs.
            let line = 76 - 8 * min(indent, 8)
            var start = 0
            while start < base64.count {
                let end = min(start + line, base64.count)
                tabs(min(indent, 8), &out)
                out.append(contentsOf: base64[start..<end])
                out.append(0x0A)
                start = end
            }
            tabs(indent, &out)
            append("</data>\n", &out)
        case .array(let items):
            if items.isEmpty {
                append("<array/>\n", &out)
                return
            }
            append("<array>\n", &out)
            for item in items { write(item, indent: indent + 1, into: &out) }
            tabs(indent, &out)
            append("</array>\n", &out)
        case .dictionary(let entries):
            if entries.isEmpty {
                append("<dict/>\n", &out)
                return
            }
            append("<dict>\n", &out)
            for (key, item) in DocumentValue.sortedByUTF16(entries) {
                tabs(indent + 1, &out)
                append("<key>", &out)
                escaped(key, &out)
                append("</key>\n", &out)
                write(item, indent: indent + 1, into: &out)
            }
            tabs(indent, &out)
            append("</dict>\n", &out)
        }
    }
}

/// Writes a `DocumentValue` as JSON, byte for byte what Foundation's `JSONEncoder` writes with
/// `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]` (and `JSONSerialization` with the same
/// options): two-space indentation, `"key" : value`, keys sorted by UTF-8 byte, `"` and `\` escaped, control
/// characters as `\b \f \n \r \t` or `\u00xx`, everything else (`/`, non-ASCII) as it is, data as
/// base64 strings, empty containers as `[` or `{`, an empty line, and the closing bracket.
/// (`JSONSerialization` orders keys with non-ASCII or control characters differently; every key vpnprov
/// writes is ASCII, where the two agree.)
enum JSONWriter {
    static func json(_ value: DocumentValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(2048)
        write(value, indent: 0, into: &out)
        return out
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func spaces(_ n: Int, _ out: inout [UInt8]) {
        for _ in 0..<n { out.append(0x20) }
    }

    static func string(_ s: String, _ out: inout [UInt8]) {
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x08: out += [0x5C, UInt8(ascii: "b")]
            case 0x0C: out += [0x5C, UInt8(ascii: "f")]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20: out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            default: out.append(b)
            }
        }
        out.append(0x22)
    }

    private static func write(_ value: DocumentValue, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .string(let s): string(s, &out)
        case .integer(let i): out.append(contentsOf: String(i).utf8)
        case .unsignedInteger(let u): out.append(contentsOf: String(u).utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .data(let bytes): string(Data(bytes).base64EncodedString(), &out)
        case .array(let items):
            out.append(contentsOf: "[\n".utf8)
            if items.isEmpty { out.append(0x0A) }
            for (i, item) in items.enumerated() {
                spaces(indent + 2, &out)
                write(item, indent: indent + 2, into: &out)
                out.append(contentsOf: (i == items.count - 1 ? "\n" : ",\n").utf8)
            }
            spaces(indent, &out)
            out.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            out.append(contentsOf: "{\n".utf8)
            if entries.isEmpty { out.append(0x0A) }
            let sorted = DocumentValue.sortedByUTF8(entries)
            for (i, (key, item)) in sorted.enumerated() {
                spaces(indent + 2, &out)
                string(key, &out)
                out.append(contentsOf: " : ".utf8)
                write(item, indent: indent + 2, into: &out)
                out.append(contentsOf: (i == sorted.count - 1 ? "\n" : ",\n").utf8)
            }
            spaces(indent, &out)
            out.append(UInt8(ascii: "}"))
        }
    }
}
