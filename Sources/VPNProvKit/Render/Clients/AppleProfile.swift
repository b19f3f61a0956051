import Foundation

/// The configuration profile as typed values, in Apple's key names and plist types (Apple's schema,
/// https://github.com/apple/device-management, `mdm/profiles/com.apple.vpn.managed.yaml`): integer 0/1
/// flags, IPSec SharedSecret and certificates as data, IKEv2 SharedSecret as string. Written as an
/// XML property list by `PropertyListWriter`: the bytes Foundation's encoder would write (dictionary
/// keys sorted, absent optionals left out), proven by `DocumentWriterTests` and the goldens.
struct AppleProfile: Encodable {
    var PayloadContent: [Payload]
    var PayloadDescription: String
    var PayloadDisplayName: String
    var PayloadIdentifier: String
    var PayloadOrganization: String
    var PayloadRemovalDisallowed: Bool
    var PayloadType: String
    var PayloadUUID: String
    var PayloadVersion: Int

    /// One payload: the CA (`com.apple.security.root`), the user's PKCS#12
    /// (`com.apple.security.pkcs12`) or a VPN (`com.apple.vpn.managed`); each sets its own keys.
    struct Payload: Encodable {
        var Password: String?
        var PayloadCertificateFileName: String?
        var PayloadContent: Data?
        var PayloadDescription: String
        var PayloadDisplayName: String
        var PayloadIdentifier: String
        var PayloadType: String
        var PayloadUUID: String
        var PayloadVersion: Int
        var UserDefinedName: String?
        var VPNType: String?
        var IKEv2: IKEv2?
        var IPSec: IPSec?
        var IPv4: IPv4?
    }

    struct IKEv2: Encodable {
        var AuthName: String?
        var AuthPassword: String?
        var AuthenticationMethod: String
        var CertificateType: String?
        var ChildSecurityAssociationParameters: SecurityAssociation
        var DeadPeerDetectionRate: String
        var DisableMOBIKE: Int
        var DisableRedirect: Int
        var DisconnectOnIdle: Int?
        var DisconnectOnIdleTimer: Int?
        var EnableCertificateRevocationCheck: Int
        var EnablePFS: Int
        var ExcludeLocalNetworks: Int?
        var ExtendedAuthEnabled: Int
        var IKESecurityAssociationParameters: SecurityAssociation
        var IncludeAllNetworks: Int?
        var LocalIdentifier: String
        var OnDemandEnabled: Int?
        var OnDemandRules: [OnDemandRule]?
        var PayloadCertificateUUID: String?
        var RemoteAddress: String
        var RemoteIdentifier: String
        var ServerCertificateIssuerCommonName: String?
        var SharedSecret: String?  // a string in the IKEv2 dictionary
        var UseConfigurationAttributeInternalIPSubnet: Int
    }

    struct SecurityAssociation: Encodable {
        var DiffieHellmanGroup: Int
        var EncryptionAlgorithm: String
        var IntegrityAlgorithm: String
        var LifeTimeInMinutes: Int
    }

    /// One `OnDemandRules` element; the device evaluates them in order and the first match wins.
    struct OnDemandRule: Encodable {
        var Action: String
        var InterfaceTypeMatch: String?
        var SSIDMatch: [String]?
    }

    struct IPSec: Encodable {
        var AuthenticationMethod: String
        var DisconnectOnIdle: Int?
        var DisconnectOnIdleTimer: Int?
        var LocalIdentifier: String?
        var LocalIdentifierType: String?
        var OnDemandEnabled: Int?
        var OnDemandRules: [OnDemandRule]?
        var RemoteAddress: String
        var SharedSecret: Data?  // data in the IPSec dictionary; absent for hybrid
        var XAuthEnabled: Int
        var XAuthName: String
        var XAuthPassword: String
    }

    struct IPv4: Encodable {
        var OverridePrimary: Int
    }

    /// XML property list bytes.
    func xml() throws -> [UInt8] {
        PropertyListWriter.xml(try DocumentEncoder.encode(self))
    }
}
