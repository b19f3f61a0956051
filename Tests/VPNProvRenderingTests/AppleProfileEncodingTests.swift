import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvRendering

/// Profiles are written directly from typed values; the bytes must be
/// exactly what PropertyListSerialization writes for the same property list (the format Apple's
/// tools produce), with the plist types Apple's schema asks for.
@Suite(.temporaries) struct AppleProfileEncodingTests {
    static func sample() -> AppleProfile {
        let sa = AppleProfile.SecurityAssociation(
            DiffieHellmanGroup: 19, EncryptionAlgorithm: "AES-256-GCM", IntegrityAlgorithm: "SHA2-256",
            LifeTimeInMinutes: 1440)
        var vpn = AppleProfile.Payload(
            PayloadDescription: "a <b> & \"c\" 'd' \u{e9}\u{1F600}", PayloadDisplayName: "", PayloadIdentifier: "x.vpn",
            PayloadType: "com.apple.vpn.managed", PayloadUUID: "U2", PayloadVersion: 1, UserDefinedName: "n",
            VPNType: "IKEv2")
        vpn.IKEv2 = AppleProfile.IKEv2(
            AuthName: "alice", AuthPassword: "p&<>", AuthenticationMethod: "Certificate",
            ChildSecurityAssociationParameters: sa,
            DeadPeerDetectionRate: "Medium", DisableMOBIKE: 0, DisableRedirect: 0, EnableCertificateRevocationCheck: 0,
            EnablePFS: 1,
            ExtendedAuthEnabled: 1, IKESecurityAssociationParameters: sa, LocalIdentifier: "",
            RemoteAddress: "vpn.example.com",
            RemoteIdentifier: "vpn.example.com", UseConfigurationAttributeInternalIPSubnet: 0)
        // Quantum-safe keys: a post-quantum key exchange in the IKE SA, a PPK (data) with its identifier.
        vpn.IKEv2?.IKESecurityAssociationParameters.PostQuantumKeyExchangeMethods = [36]
        vpn.IKEv2?.PPK = Array("ppk bytes & <more>".utf8)
        vpn.IKEv2?.PPKIdentifier = "ppk-alice"
        vpn.IKEv2?.PPKMandatory = 1
        var ipsec = AppleProfile.Payload(
            PayloadDescription: "d", PayloadDisplayName: "d", PayloadIdentifier: "x.ipsec",
            PayloadType: "com.apple.vpn.managed",
            PayloadUUID: "U3", PayloadVersion: 1, VPNType: "IPSec")
        ipsec.IPSec = AppleProfile.IPSec(
            AuthenticationMethod: "SharedSecret", LocalIdentifier: "group", LocalIdentifierType: "KeyID",
            RemoteAddress: "192.0.2.1",
            SharedSecret: Data("s#\"\\".utf8), XAuthEnabled: 1, XAuthName: "bob", XAuthPassword: "pw")
        ipsec.IPv4 = AppleProfile.IPv4(OverridePrimary: 1)
        let ca = AppleProfile.Payload(
            PayloadCertificateFileName: "ca.cer", PayloadContent: Data((0..<1553).map { UInt8($0 % 256) }),
            PayloadDescription: "ca",
            PayloadDisplayName: "ca", PayloadIdentifier: "x.ca", PayloadType: "com.apple.security.root",
            PayloadUUID: "U1", PayloadVersion: 1)
        return AppleProfile(
            PayloadContent: [ca, vpn, ipsec], PayloadDescription: "all", PayloadDisplayName: "all",
            PayloadIdentifier: "x",
            PayloadOrganization: "o", PayloadRemovalDisallowed: false, PayloadType: "Configuration", PayloadUUID: "U0",
            PayloadVersion: 1)
    }

    @Test func matchesPropertyListSerializationByteForByte() throws {
        let ours = Self.sample().xml()
        let parsed = try PropertyListSerialization.propertyList(from: Data(ours), format: nil)
        let theirs = try PropertyListSerialization.data(fromPropertyList: parsed, format: .xml, options: 0)
        #expect(ours == [UInt8](theirs))
    }

    @Test func writesTheSchemaTypesAndLeavesOutAbsentKeys() throws {
        let decoded = try #require(
            try PropertyListSerialization.propertyList(from: Data(Self.sample().xml()), format: nil) as? [String: Any])
        #expect(decoded["PayloadVersion"] as? Int == 1)
        #expect(decoded["PayloadRemovalDisallowed"] as? Bool == false)
        let payloads = try #require(decoded["PayloadContent"] as? [[String: Any]])
        #expect(payloads[0]["PayloadContent"] is Data)
        #expect(payloads[0]["VPNType"] == nil && payloads[0]["Password"] == nil)
        let ikev2 = try #require(payloads[1]["IKEv2"] as? [String: Any])
        #expect(ikev2["EnablePFS"] as? Int == 1)
        #expect(ikev2["SharedSecret"] == nil && ikev2["CertificateType"] == nil)
        #expect((ikev2["IKESecurityAssociationParameters"] as? [String: Any])?["DiffieHellmanGroup"] as? Int == 19)
        let ipsec = try #require(payloads[2]["IPSec"] as? [String: Any])
        #expect(ipsec["SharedSecret"] as? Data == Data("s#\"\\".utf8))
        #expect((payloads[2]["IPv4"] as? [String: Any])?["OverridePrimary"] as? Int == 1)
    }
}
