import Foundation
import Testing
@testable import VPNProvKit

/// Profiles are encoded with Foundation's PropertyListEncoder; the bytes must be exactly what
/// PropertyListSerialization writes for the same dictionary (the format Apple's tools produce).
@Suite struct PropertyListValueTests {
    @Test func matchesPropertyListSerializationByteForByte() throws {
        let profile: [String: Any] = [
            "PayloadContent": [
                ["PayloadType": "com.apple.vpn.managed", "Flag": 1, "Off": false, "On": true,
                 "Text": "a <b> & \"c\" 'd' \u{e9}\u{1F600}", "Empty": "", "List": [String](),
                 "Nested": ["Z": 1, "A": ["x", "y"], "m": [String: Any]()]],
                ["PayloadContent": Data((0..<1553).map { UInt8($0 % 256) }), "PayloadType": "com.apple.security.root"],
            ],
            "PayloadVersion": 1,
            "PayloadRemovalDisallowed": false,
        ]
        let expected = try PropertyListSerialization.data(fromPropertyList: profile, format: .xml, options: 0)
        #expect(try PropertyListValue.xml(profile) == [UInt8](expected))
        // And it reads back as the same types.
        let decoded = try #require(
            try PropertyListSerialization.propertyList(from: Data(PropertyListValue.xml(profile)), format: nil) as? [String: Any])
        #expect(decoded["PayloadVersion"] as? Int == 1)
        #expect(decoded["PayloadRemovalDisallowed"] as? Bool == false)
    }

    @Test func refusesNonPropertyListValues() {
        #expect(throws: EncodingError.self) { try PropertyListValue.xml(["Date": Date(timeIntervalSince1970: 0)]) }
    }
}
