import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvRendering

/// The Apple profile and the `.sswan` file are written straight into a stream, keys in the order the
/// writer lists them. Over generated profiles (every optional present or absent, strings of every
/// escape class, data of every length) the bytes must be what Foundation's own encoders write for the
/// same `Encodable` values, and what its serializers write for the same values as Foundation objects
/// (or, for JSON, read back).
@Suite(.temporaries) struct DirectProfileWriterTests {
    typealias G = DocumentWriterTests.Generator

    static func maybe<T>(_ g: inout G, _ make: (inout G) -> T) -> T? { g.int(2) == 0 ? nil : make(&g) }
    /// Strings for the Apple profile: without the characters XML cannot carry (the writer replaces
    /// those, and the validator refuses them first: `XMLSafetyTests`).
    static func text(_ g: inout G) -> String { DocumentWriterTests.string(&g, xml: true) }
    /// Strings for the JSON profile: every piece.
    static func jsonText(_ g: inout G) -> String { DocumentWriterTests.string(&g) }
    static func int(_ g: inout G) -> Int { [0, 1, 19, 1440, -1, Int.max, Int.min][g.int(7)] }
    static func data(_ g: inout G) -> Data {
        Data((0..<[0, 1, 2, 57, 58, 1553][g.int(6)]).map { _ in UInt8(truncatingIfNeeded: g.next()) })
    }

    static func sa(_ g: inout G) -> AppleProfile.SecurityAssociation {
        AppleProfile.SecurityAssociation(
            DiffieHellmanGroup: int(&g), EncryptionAlgorithm: text(&g), IntegrityAlgorithm: text(&g),
            LifeTimeInMinutes: int(&g))
    }

    static func rules(_ g: inout G) -> [AppleProfile.OnDemandRule] {
        (0..<g.int(3)).map { _ in
            AppleProfile.OnDemandRule(
                Action: text(&g), InterfaceTypeMatch: maybe(&g, text),
                SSIDMatch: maybe(&g) { g in (0..<g.int(3)).map { _ in text(&g) } })
        }
    }

    static func ikev2(_ g: inout G) -> AppleProfile.IKEv2 {
        AppleProfile.IKEv2(
            AuthName: maybe(&g, text), AuthPassword: maybe(&g, text), AuthenticationMethod: text(&g),
            CertificateType: maybe(&g, text),
            ChildSecurityAssociationParameters: sa(&g), DeadPeerDetectionRate: text(&g), DisableMOBIKE: int(&g),
            DisableRedirect: int(&g),
            DisconnectOnIdle: maybe(&g, int), DisconnectOnIdleTimer: maybe(&g, int),
            EnableCertificateRevocationCheck: int(&g),
            EnablePFS: int(&g), ExcludeLocalNetworks: maybe(&g, int), ExtendedAuthEnabled: int(&g),
            IKESecurityAssociationParameters: sa(&g),
            IncludeAllNetworks: maybe(&g, int), LocalIdentifier: text(&g), OnDemandEnabled: maybe(&g, int),
            OnDemandRules: maybe(&g, rules),
            PayloadCertificateUUID: maybe(&g, text), RemoteAddress: text(&g), RemoteIdentifier: text(&g),
            ServerCertificateIssuerCommonName: maybe(&g, text), SharedSecret: maybe(&g, text),
            UseConfigurationAttributeInternalIPSubnet: int(&g))
    }

    static func ipsec(_ g: inout G) -> AppleProfile.IPSec {
        AppleProfile.IPSec(
            AuthenticationMethod: text(&g), DisconnectOnIdle: maybe(&g, int), DisconnectOnIdleTimer: maybe(&g, int),
            LocalIdentifier: maybe(&g, text), LocalIdentifierType: maybe(&g, text), OnDemandEnabled: maybe(&g, int),
            OnDemandRules: maybe(&g, rules), RemoteAddress: text(&g), SharedSecret: maybe(&g, data),
            XAuthEnabled: int(&g),
            XAuthName: text(&g), XAuthPassword: text(&g))
    }

    static func payload(_ g: inout G) -> AppleProfile.Payload {
        AppleProfile.Payload(
            Password: maybe(&g, text), PayloadCertificateFileName: maybe(&g, text), PayloadContent: maybe(&g, data),
            PayloadDescription: text(&g), PayloadDisplayName: text(&g), PayloadIdentifier: text(&g),
            PayloadType: text(&g),
            PayloadUUID: text(&g), PayloadVersion: int(&g), UserDefinedName: maybe(&g, text), VPNType: maybe(&g, text),
            IKEv2: maybe(&g, ikev2), IPSec: maybe(&g, ipsec),
            IPv4: maybe(&g) { g in AppleProfile.IPv4(OverridePrimary: int(&g)) })
    }

    static func profile(_ g: inout G) -> AppleProfile {
        AppleProfile(
            PayloadContent: (0..<g.int(5)).map { _ in payload(&g) }, PayloadDescription: text(&g),
            PayloadDisplayName: text(&g),
            PayloadIdentifier: text(&g), PayloadOrganization: text(&g), PayloadRemovalDisallowed: g.int(2) == 0,
            PayloadType: text(&g),
            PayloadUUID: text(&g), PayloadVersion: int(&g))
    }

    static func sswan(_ g: inout G) -> AndroidProfileRenderer.Profile {
        typealias P = AndroidProfileRenderer.Profile
        return P(
            uuid: jsonText(&g), name: jsonText(&g), type: jsonText(&g),
            remote: P.Remote(addr: jsonText(&g), id: jsonText(&g), cert: jsonText(&g)),
            local: P.Local(
                id: maybe(&g, jsonText), eapID: maybe(&g, jsonText), sharedSecret: maybe(&g, jsonText),
                p12: maybe(&g, jsonText)),
            ikeProposal: maybe(&g, jsonText), espProposal: maybe(&g, jsonText),
            splitTunneling: maybe(&g) { g in P.SplitTunneling(blockIPv6: g.int(2) == 0) })
    }

    @Test(arguments: 0..<4)
    func appleProfilesAreWhatFoundationWrites(batch: Int) throws {
        var g = G(state: UInt64(batch) &* 104_729 &+ 3)
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        var absent = 0
        for round in 0..<60 {
            let profile = Self.profile(&g)
            let ours = profile.xml()
            let theirs = [UInt8](try encoder.encode(profile))
            let same = ours == theirs
            #expect(same, "batch \(batch), round \(round): \(DocumentWriterTests.difference(ours, theirs))")
            // And what Foundation's serializer writes for the same values as Foundation objects.
            let objects = DocumentWriterTests.foundation(try DocumentEncoder.encode(profile), json: false)
            let serialized = [UInt8](
                try PropertyListSerialization.data(fromPropertyList: objects, format: .xml, options: 0))
            let sameSerialized = ours == serialized
            #expect(
                sameSerialized, "batch \(batch), round \(round): \(DocumentWriterTests.difference(ours, serialized))")
            if profile.PayloadContent.contains(where: { $0.IKEv2 == nil }) { absent += 1 }
        }
        #expect(absent > 0)
    }

    @Test(arguments: 0..<4)
    func sswanProfilesAreWhatFoundationWrites(batch: Int) throws {
        var g = G(state: UInt64(batch) &* 7_901 &+ 11)
        let encoder = DocumentWriterTests.jsonEncoder()
        for round in 0..<150 {
            let profile = Self.sswan(&g)
            let ours = profile.json()
            let theirs = [UInt8](try encoder.encode(profile)) + [0x0A]
            let same = ours == theirs
            #expect(same, "batch \(batch), round \(round): \(DocumentWriterTests.difference(ours, theirs))")
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(ours)) as? [String: Any])
            #expect((parsed["remote"] as? [String: Any])?.count == 3)
            #expect(parsed["split-tunneling"] != nil || profile.splitTunneling == nil)
        }
    }

    /// An empty dictionary or array is written the way Foundation writes it.
    @Test func emptyContainersMatchFoundation() throws {
        let profile = AppleProfile(
            PayloadContent: [], PayloadDescription: "", PayloadDisplayName: "", PayloadIdentifier: "",
            PayloadOrganization: "",
            PayloadRemovalDisallowed: true, PayloadType: "", PayloadUUID: "", PayloadVersion: 0)
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        let same = profile.xml() == [UInt8](try encoder.encode(profile))
        #expect(same)
        #expect(String(decoding: profile.xml(), as: UTF8.self).contains("<array/>"))
    }
}
