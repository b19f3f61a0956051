import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// The configuration profile as typed values, in Apple's key names and plist types (Apple's schema,
/// https://github.com/apple/device-management, `mdm/profiles/com.apple.vpn.managed.yaml`): integer 0/1
/// flags, IPSec SharedSecret and certificates as data, IKEv2 SharedSecret as string. Written as an
/// XML property list straight into a `PropertyListStream`, keys in sorted order and absent optionals
/// left out: the bytes Foundation's encoder writes for the same `Encodable` value, which
/// `DirectProfileWriterTests` proves against `PropertyListEncoder` and `PropertyListSerialization`
/// (the `Encodable` conformance is what those tests compare with).
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
        /// The user's post-quantum preshared key (RFC 8784; iOS 18, macOS 15), its PPK_ID, and whether the
        /// device refuses a server that does not take it (`PPKMandatory`, 0 or 1; Apple's default 1).
        var PPK: [UInt8]?
        var PPKIdentifier: String?
        var PPKMandatory: Int?
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
        /// One ML-KEM method per additional key exchange, ADDKE1 first (iOS / macOS 26: 36 ML-KEM-768,
        /// 37 ML-KEM-1024); absent for a classical SA.
        var PostQuantumKeyExchangeMethods: [Int]? = nil
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
    func xml() -> [UInt8] {
        var s = PropertyListStream(capacity: 8192 + 2048 * PayloadContent.count)
        s.beginDictionary()
        s.key("PayloadContent")
        s.beginArray()
        for payload in PayloadContent { payload.write(to: &s) }
        s.endArray()
        s.key("PayloadDescription")
        s.string(PayloadDescription)
        s.key("PayloadDisplayName")
        s.string(PayloadDisplayName)
        s.key("PayloadIdentifier")
        s.string(PayloadIdentifier)
        s.key("PayloadOrganization")
        s.string(PayloadOrganization)
        s.key("PayloadRemovalDisallowed")
        s.bool(PayloadRemovalDisallowed)
        s.key("PayloadType")
        s.string(PayloadType)
        s.key("PayloadUUID")
        s.string(PayloadUUID)
        s.key("PayloadVersion")
        s.integer(PayloadVersion)
        s.endDictionary()
        return s.finish()
    }
}

// The direct writers: keys in the order Foundation sorts them (by UTF-16 code unit; all are ASCII),
// absent optionals left out as `encodeIfPresent` leaves them out.
extension PropertyListStream {
    fileprivate mutating func key(_ key: String, _ value: String?) {
        if let value {
            self.key(key)
            string(value)
        }
    }

    fileprivate mutating func key(_ key: String, _ value: Int?) {
        if let value {
            self.key(key)
            integer(value)
        }
    }

    fileprivate mutating func key(_ key: String, _ rules: [AppleProfile.OnDemandRule]?) {
        guard let rules else { return }
        self.key(key)
        beginArray()
        for rule in rules {
            beginDictionary()
            self.key("Action", rule.Action)
            self.key("InterfaceTypeMatch", rule.InterfaceTypeMatch)
            if let ssids = rule.SSIDMatch {
                self.key("SSIDMatch")
                beginArray()
                for ssid in ssids { string(ssid) }
                endArray()
            }
            endDictionary()
        }
        endArray()
    }

    fileprivate mutating func key(_ key: String, _ sa: AppleProfile.SecurityAssociation) {
        self.key(key)
        beginDictionary()
        self.key("DiffieHellmanGroup", sa.DiffieHellmanGroup)
        self.key("EncryptionAlgorithm", sa.EncryptionAlgorithm)
        self.key("IntegrityAlgorithm", sa.IntegrityAlgorithm)
        self.key("LifeTimeInMinutes", sa.LifeTimeInMinutes)
        if let methods = sa.PostQuantumKeyExchangeMethods {
            self.key("PostQuantumKeyExchangeMethods")
            beginArray()
            for method in methods { integer(method) }
            endArray()
        }
        endDictionary()
    }
}

extension AppleProfile.Payload {
    fileprivate func write(to s: inout PropertyListStream) {
        s.beginDictionary()
        if let d = IKEv2 {
            s.key("IKEv2")
            d.write(to: &s)
        }
        if let d = IPSec {
            s.key("IPSec")
            d.write(to: &s)
        }
        if let d = IPv4 {
            s.key("IPv4")
            s.beginDictionary()
            s.key("OverridePrimary", d.OverridePrimary)
            s.endDictionary()
        }
        s.key("Password", Password)
        s.key("PayloadCertificateFileName", PayloadCertificateFileName)
        if let content = PayloadContent {
            s.key("PayloadContent")
            s.data([UInt8](content))
        }
        s.key("PayloadDescription", PayloadDescription)
        s.key("PayloadDisplayName", PayloadDisplayName)
        s.key("PayloadIdentifier", PayloadIdentifier)
        s.key("PayloadType", PayloadType)
        s.key("PayloadUUID", PayloadUUID)
        s.key("PayloadVersion", PayloadVersion)
        s.key("UserDefinedName", UserDefinedName)
        s.key("VPNType", VPNType)
        s.endDictionary()
    }
}

extension AppleProfile.IKEv2 {
    fileprivate func write(to s: inout PropertyListStream) {
        s.beginDictionary()
        s.key("AuthName", AuthName)
        s.key("AuthPassword", AuthPassword)
        s.key("AuthenticationMethod", AuthenticationMethod)
        s.key("CertificateType", CertificateType)
        s.key("ChildSecurityAssociationParameters", ChildSecurityAssociationParameters)
        s.key("DeadPeerDetectionRate", DeadPeerDetectionRate)
        s.key("DisableMOBIKE", DisableMOBIKE)
        s.key("DisableRedirect", DisableRedirect)
        s.key("DisconnectOnIdle", DisconnectOnIdle)
        s.key("DisconnectOnIdleTimer", DisconnectOnIdleTimer)
        s.key("EnableCertificateRevocationCheck", EnableCertificateRevocationCheck)
        s.key("EnablePFS", EnablePFS)
        s.key("ExcludeLocalNetworks", ExcludeLocalNetworks)
        s.key("ExtendedAuthEnabled", ExtendedAuthEnabled)
        s.key("IKESecurityAssociationParameters", IKESecurityAssociationParameters)
        s.key("IncludeAllNetworks", IncludeAllNetworks)
        s.key("LocalIdentifier", LocalIdentifier)
        s.key("OnDemandEnabled", OnDemandEnabled)
        s.key("OnDemandRules", OnDemandRules)
        // Keys in byte order, as Apple's tools write them: "PPK…" before "Payload…".
        if let ppk = PPK {
            s.key("PPK")
            s.data(ppk)
        }
        s.key("PPKIdentifier", PPKIdentifier)
        s.key("PPKMandatory", PPKMandatory)
        s.key("PayloadCertificateUUID", PayloadCertificateUUID)
        s.key("RemoteAddress", RemoteAddress)
        s.key("RemoteIdentifier", RemoteIdentifier)
        s.key("ServerCertificateIssuerCommonName", ServerCertificateIssuerCommonName)
        s.key("SharedSecret", SharedSecret)
        s.key("UseConfigurationAttributeInternalIPSubnet", UseConfigurationAttributeInternalIPSubnet)
        s.endDictionary()
    }
}

extension AppleProfile.IPSec {
    fileprivate func write(to s: inout PropertyListStream) {
        s.beginDictionary()
        s.key("AuthenticationMethod", AuthenticationMethod)
        s.key("DisconnectOnIdle", DisconnectOnIdle)
        s.key("DisconnectOnIdleTimer", DisconnectOnIdleTimer)
        s.key("LocalIdentifier", LocalIdentifier)
        s.key("LocalIdentifierType", LocalIdentifierType)
        s.key("OnDemandEnabled", OnDemandEnabled)
        s.key("OnDemandRules", OnDemandRules)
        s.key("RemoteAddress", RemoteAddress)
        if let secret = SharedSecret {
            s.key("SharedSecret")
            s.data([UInt8](secret))
        }
        s.key("XAuthEnabled", XAuthEnabled)
        s.key("XAuthName", XAuthName)
        s.key("XAuthPassword", XAuthPassword)
        s.endDictionary()
    }
}
