import Foundation

/// A property-list value that Foundation's `PropertyListEncoder` writes exactly as
/// `PropertyListSerialization` would (XML, dictionary keys sorted), but without the CoreFoundation
/// round trip that costs ~15× more on Linux. Profiles are built as `[String: Any]` of the types
/// Apple's schema uses (String, Int, Bool, Data, arrays, dictionaries) and encoded through this.
enum PropertyListValue: Encodable {
    case string(String)
    case integer(Int)
    case boolean(Bool)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([(key: String, value: PropertyListValue)])

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Converts a profile built from plist types; anything else is a programming error reported as such.
    init(_ value: Any) throws {
        switch value {
        case let v as String: self = .string(v)
        case let v as Bool: self = .boolean(v)
        case let v as Int: self = .integer(v)
        case let v as Data: self = .data(v)
        // No [UInt8] case: an empty array of any element type would cast to it (bytes are Data).
        case let v as [Any]: self = .array(try v.map(PropertyListValue.init))
        case let v as [String: Any]:
            // Sorted like PropertyListSerialization (the keys are Apple's ASCII names).
            self = .dictionary(try v.keys.sorted().map { ($0, try PropertyListValue(v[$0]!)) })
        default:
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "not a property-list type: \(type(of: value))"))
        }
    }

    func encode(to encoder: Encoder) throws {
        switch self {
        case .string(let v):
            var c = encoder.singleValueContainer()
            try c.encode(v)
        case .integer(let v):
            var c = encoder.singleValueContainer()
            try c.encode(v)
        case .boolean(let v):
            var c = encoder.singleValueContainer()
            try c.encode(v)
        case .data(let v):
            var c = encoder.singleValueContainer()
            try c.encode(v)
        case .array(let values):
            var c = encoder.unkeyedContainer()
            for v in values { try c.encode(v) }
        case .dictionary(let pairs):
            var c = encoder.container(keyedBy: Key.self)
            for (key, v) in pairs { try c.encode(v, forKey: Key(stringValue: key)) }
        }
    }

    /// XML property list bytes of `value` via Foundation's `PropertyListEncoder`.
    static func xml(_ value: [String: Any]) throws -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        return [UInt8](try encoder.encode(PropertyListValue(value)))
    }
}
