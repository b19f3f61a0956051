import Foundation
import Testing
@testable import VPNProvKit

/// The Apple renderer writes XML property lists itself (for speed); they must be the bytes
/// Foundation's PropertyListSerialization writes for the same values.
@Suite struct PropertyListTests {
    static func foundation(_ value: Any) throws -> [UInt8] {
        [UInt8](try PropertyListSerialization.data(fromPropertyList: value, format: .xml, options: 0))
    }

    @Test func scalarsEscapesAndEmptyCollections() throws {
        let value: [String: Any] = [
            "b": "text with <tags> & \"quotes\" and 'apostrophes'",
            "a": 0,
            "Z": -42,
            "big": Int.max,
            "yes": true,
            "no": false,
            "empty dict": [String: Any](),
            "empty array": [Any](),
            "unicode": "Grüße, 東京 🚀",
            "nested": ["IPv4": ["OverridePrimary": 1]],
            "list": ["x", 1, false, ["k": "v"], [1, 2]] as [Any],
            "a&b<c>": "key escaping",
        ]
        #expect(try XMLPropertyList.data(value) == Self.foundation(value))
    }

    @Test func dataOfEveryLengthModuloThreeAtEveryDepth() throws {
        // Base64 lines get shorter by 8 characters per indentation level (capped at 8 levels).
        for length in [0, 1, 2, 3, 38, 39, 40, 41, 57, 58, 300, 1553] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ 11) }
            var value: Any = Data(bytes)
            for depth in 0..<11 {
                #expect(try XMLPropertyList.data(value) == Self.foundation(value), "length \(length), depth \(depth)")
                value = depth % 2 == 0 ? ["k": value] as [String: Any] : [value] as [Any]
            }
        }
    }

    @Test func rendererProfileIsFoundationsBytes() throws {
        let inventory = ClientFixtures.inventory()
        let materials = ClientFixtures.materials()
        let files = try ClientRenderer.render(inventory: inventory, materials: materials, templates: try TemplateSet.builtin())
        let profiles = files.filter { $0.path.hasSuffix(".mobileconfig") }
        #expect(!profiles.isEmpty)
        for file in profiles {
            // Parsed back and written again by Foundation: the same bytes.
            let parsed = try PropertyListSerialization.propertyList(from: Data(file.contents), options: [], format: nil)
            #expect(try Self.foundation(parsed) == file.contents, "\(file.path)")
        }
    }

    @Test func unsupportedValuesAreErrors() {
        #expect(throws: XMLPropertyList.UnsupportedValue.self) { try XMLPropertyList.data(["d": Date(timeIntervalSince1970: 0)]) }
    }
}
