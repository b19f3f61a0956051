import Foundation

/// XML property lists byte for byte as `PropertyListSerialization.data(fromPropertyList:format: .xml)`
/// writes them (CoreFoundation's XML writer: tab indentation, dictionary keys in code-point order,
/// `<`, `>` and `&` escaped, data as base64 in lines of 76 characters less 8 per indentation level),
/// without going through CoreFoundation objects, which on Linux costs milliseconds per profile.
/// Takes the values the Apple renderer builds: String, Int, Bool, Data, arrays and
/// dictionaries of those. ClientRendererTests compare it with PropertyListSerialization.
enum XMLPropertyList {
    struct UnsupportedValue: Error, CustomStringConvertible {
        var type: String
        var description: String { "a property list cannot hold a value of type \(type)" }
    }

    static func data(_ root: Any) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 * 1024)
        out += Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """.utf8)
        try append(root, indent: 0, to: &out)
        out += Array("</plist>\n".utf8)
        return out
    }

    private static func tabs(_ n: Int, _ out: inout [UInt8]) {
        for _ in 0..<n { out.append(0x09) }
    }

    private static func literal(_ text: StaticString, _ out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func escaped(_ text: String, _ out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "&") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
                switch byte {
                case UInt8(ascii: "<"): literal("&lt;", &out)
                case UInt8(ascii: ">"): literal("&gt;", &out)
                default: literal("&amp;", &out)
                }
                start = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
    }

    private static func append(_ value: Any, indent: Int, to out: inout [UInt8]) throws {
        switch value {
        case let s as String:
            tabs(indent, &out)
            literal("<string>", &out)
            escaped(s, &out)
            literal("</string>\n", &out)
        case let b as Bool:
            tabs(indent, &out)
            literal(b ? "<true/>\n" : "<false/>\n", &out)
        case let i as Int:
            tabs(indent, &out)
            literal("<integer>", &out)
            out += Array(String(i).utf8)
            literal("</integer>\n", &out)
        case let d as Data:
            base64(Array(d), indent: indent, &out)
        case let dict as [String: Any]:
            tabs(indent, &out)
            if dict.isEmpty {
                literal("<dict/>\n", &out)
                return
            }
            literal("<dict>\n", &out)
            // CFStringCompare without options: UTF-16 code-unit order.
            for key in dict.keys.sorted(by: precedes) {
                tabs(indent + 1, &out)
                literal("<key>", &out)
                escaped(key, &out)
                literal("</key>\n", &out)
                try append(dict[key]!, indent: indent + 1, to: &out)
            }
            tabs(indent, &out)
            literal("</dict>\n", &out)
        case let array as [Any]:
            tabs(indent, &out)
            if array.isEmpty {
                literal("<array/>\n", &out)
                return
            }
            literal("<array>\n", &out)
            for element in array { try append(element, indent: indent + 1, to: &out) }
            tabs(indent, &out)
            literal("</array>\n", &out)
        default:
            throw UnsupportedValue(type: "\(type(of: value))")
        }
    }

    /// UTF-16 code-unit order. It is UTF-8 byte order unless the first differing bytes include one
    /// from 0xEE up (U+E000 and above), where the two orders can differ.
    private static func precedes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        let order: Bool? = a.withUTF8 { x in
            b.withUTF8 { y -> Bool? in
                for i in 0..<min(x.count, y.count) where x[i] != y[i] {
                    if x[i] >= 0xEE || y[i] >= 0xEE { return nil }
                    return x[i] < y[i]
                }
                return x.count < y.count
            }
        }
        return order ?? a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// CoreFoundation's `_XMLPlistAppendDataUsingBase64`: lines of 76 - 8 * min(indent, 8)
    /// characters, indented like the tags but by at most 8 tabs.
    private static func base64(_ bytes: [UInt8], indent: Int, _ out: inout [UInt8]) {
        tabs(indent, &out)
        literal("<data>\n", &out)
        let lineLength = 76 - 8 * min(indent, 8)
        var line: [UInt8] = []
        line.reserveCapacity(lineLength + 4)
        func flush() {
            tabs(min(indent, 8), &out)
            out += line
            out.append(0x0A)
            line.removeAll(keepingCapacity: true)
        }
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            line.append(alphabet[Int(n >> 18 & 0x3F)])
            line.append(alphabet[Int(n >> 12 & 0x3F)])
            line.append(alphabet[Int(n >> 6 & 0x3F)])
            line.append(alphabet[Int(n & 0x3F)])
            if line.count >= lineLength { flush() }
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            line.append(alphabet[Int(n >> 18 & 0x3F)])
            line.append(alphabet[Int(n >> 12 & 0x3F)])
            line.append(UInt8(ascii: "="))
            line.append(UInt8(ascii: "="))
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            line.append(alphabet[Int(n >> 18 & 0x3F)])
            line.append(alphabet[Int(n >> 12 & 0x3F)])
            line.append(alphabet[Int(n >> 6 & 0x3F)])
            line.append(UInt8(ascii: "="))
        default:
            break
        }
        if !line.isEmpty { flush() }
        tabs(indent, &out)
        literal("</data>\n", &out)
    }
}
