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
            // UTF-16 order differs from code-point order here: U+1F680 sorts before U+E000 and U+FF21.
            "\u{E000}": 1, "\u{1F680}": 2, "\u{FF21}": 3, "x\u{E001}": 4, "x\u{1F600}": 5,
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

/// The `.sswan` writer must be JSONEncoder's bytes.
@Suite struct ProfileJSONTests {
    static func foundation(_ profile: AndroidProfileRenderer.Profile) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return [UInt8](try encoder.encode(profile)) + [0x0A]
    }

    @Test func everyFieldAndEveryEscape() throws {
        let awkward = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self) + "\"\\/ Grüße 東京 🚀 <&>"
        let full = AndroidProfileRenderer.Profile(
            uuid: "u", name: awkward, type: "ikev2-cert",
            remote: .init(addr: "a/b", id: awkward, cert: "MII+/="),
            local: .init(id: "x@y", eapID: "e", sharedSecret: awkward, p12: "p"),
            ikeProposal: "aes256-sha256-modp2048", espProposal: "aes256gcm16")
        #expect(full.prettyJSON() == (try Self.foundation(full)))
        let sparse = AndroidProfileRenderer.Profile(
            uuid: "", name: "", type: "", remote: .init(addr: "", id: "", cert: ""), local: .init(), ikeProposal: nil, espProposal: nil)
        #expect(sparse.prettyJSON() == (try Self.foundation(sparse)))
    }
}
