import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// A property-list or JSON document as plain values: what `PropertyListWriter` and `JSONWriter`
/// serialize. Dictionaries keep their keys in encoding order; the writers sort them.
enum DocumentValue: Equatable {
    case string(String)
    case integer(Int64)
    case unsignedInteger(UInt64)
    case bool(Bool)
    case data([UInt8])
    case array([DocumentValue])
    case dictionary([(String, DocumentValue)])

    static func == (a: DocumentValue, b: DocumentValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.integer(let x), .integer(let y)): return x == y
        case (.unsignedInteger(let x), .unsignedInteger(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.data(let x), .data(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        // Values of different kinds, spelled out so that a new kind must say how it compares.
        case (.string, _), (.integer, _), (.unsignedInteger, _), (.bool, _), (.data, _), (.array, _), (.dictionary, _):
            return false
        }
    }

    /// Dictionary keys in the order Foundation's property-list writer uses: by UTF-16 code unit.
    static func sortedByUTF16(_ entries: [(String, DocumentValue)]) -> [(String, DocumentValue)] {
        entries.sorted { $0.0.utf16.lexicographicallyPrecedes($1.0.utf16) }
    }

    /// Dictionary keys in the order Foundation's `JSONEncoder` uses: by UTF-8 byte.
    static func sortedByUTF8(_ entries: [(String, DocumentValue)]) -> [(String, DocumentValue)] {
        entries.sorted { $0.0.precedesByUTF8($1.0) }
    }
}

/// An `Encoder` that turns an `Encodable` value into a `DocumentValue`, the way Foundation's
/// property-list and JSON encoders see it: `Data` is a leaf (not an array of bytes), absent
/// optionals are left out (`encodeIfPresent`), floating-point values are refused (no document
/// vpnprov writes has one).
struct DocumentEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> DocumentValue {
        let box = DocumentBox()
        try box.encode(value, codingPath: [])
        return box.value
    }
}

/// A node of the tree while it is being encoded (containers hand out references to their children).
final class DocumentBox {
    enum Kind { case empty, leaf, dictionary, array }

    var kind = Kind.empty
    var leaf = DocumentValue.bool(false)
    /// Dictionary keys (parallel to `children`); empty for arrays.
    var keys: [String] = []
    var children: [DocumentBox] = []

    var value: DocumentValue {
        switch kind {
        case .empty: return .dictionary([])
        case .leaf: return leaf
        case .dictionary:
            var entries: [(String, DocumentValue)] = []
            entries.reserveCapacity(keys.count)
            for i in keys.indices { entries.append((keys[i], children[i].value)) }
            return .dictionary(entries)
        case .array: return .array(children.map(\.value))
        }
    }

    func set(_ value: DocumentValue) {
        kind = .leaf
        leaf = value
    }

    func become(_ kind: Kind) {
        if self.kind != kind {
            self.kind = kind
            keys = []
            children = []
        }
    }

    func encode<T: Encodable>(_ value: T, codingPath: [CodingKey]) throws {
        switch value {
        case let v as String: set(.string(v))
        case let v as Data: set(.data([UInt8](v)))
        case let v as Bool: set(.bool(v))
        case let v as Int: set(.integer(Int64(v)))
        case let v as Int64: set(.integer(v))
        case let v as Int32: set(.integer(Int64(v)))
        case let v as Int16: set(.integer(Int64(v)))
        case let v as Int8: set(.integer(Int64(v)))
        case let v as UInt: set(.unsignedInteger(UInt64(v)))
        case let v as UInt64: set(.unsignedInteger(v))
        case let v as UInt32: set(.unsignedInteger(UInt64(v)))
        case let v as UInt16: set(.unsignedInteger(UInt64(v)))
        case let v as UInt8: set(.unsignedInteger(UInt64(v)))
        case is Double, is Float:
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: codingPath, debugDescription: "floating-point values are not written")
            )
        default:
            try value.encode(to: DocumentEncoderImpl(box: self, codingPath: codingPath))
        }
    }

    func child(forKey key: String) -> DocumentBox {
        become(.dictionary)
        if let i = keys.firstIndex(of: key) { return children[i] }
        let box = DocumentBox()
        keys.append(key)
        children.append(box)
        return box
    }

    func appendChild() -> DocumentBox {
        become(.array)
        let box = DocumentBox()
        children.append(box)
        return box
    }
}

private struct DocumentEncoderImpl: Encoder {
    let box: DocumentBox
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        box.become(.dictionary)
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        box.become(.array)
        return UnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleContainer(box: box, codingPath: codingPath) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: DocumentBox
    let codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        throw EncodingError.invalidValue(
            Optional<Int>.none as Any,
            EncodingError.Context(codingPath: codingPath + [key], debugDescription: "null is not written"))
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try box.child(forKey: key.stringValue).encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = box.child(forKey: key.stringValue)
        child.become(.dictionary)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = box.child(forKey: key.stringValue)
        child.become(.array)
        return UnkeyedContainer(box: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder {
        DocumentEncoderImpl(box: box.child(forKey: "super"), codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> Encoder {
        DocumentEncoderImpl(box: box.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.init(intValue) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: DocumentBox
    let codingPath: [CodingKey]
    var count: Int { box.children.count }

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(
            Optional<Int>.none as Any,
            EncodingError.Context(codingPath: codingPath, debugDescription: "null is not written"))
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = IndexKey(count)
        try box.appendChild().encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let key = IndexKey(count)
        let child = box.appendChild()
        child.become(.dictionary)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let key = IndexKey(count)
        let child = box.appendChild()
        child.become(.array)
        return UnkeyedContainer(box: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder { DocumentEncoderImpl(box: box.appendChild(), codingPath: codingPath) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let box: DocumentBox
    let codingPath: [CodingKey]

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(
            Optional<Int>.none as Any,
            EncodingError.Context(codingPath: codingPath, debugDescription: "null is not written"))
    }

    mutating func encode<T: Encodable>(_ value: T) throws { try box.encode(value, codingPath: codingPath) }
}
