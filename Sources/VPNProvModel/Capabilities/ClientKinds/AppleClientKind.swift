import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// iPhone, iPad and Mac: one configuration profile (`<user>.mobileconfig`) with an IKEv2 or a Cisco
/// "IPSec" (IKEv1) payload per node and service. Apple's built-in client sets up every service (a hybrid
/// node whose identity is not an IP address is left out by the client plan: the device checks the server
/// against the address it dials).
enum AppleClientKind: ClientKind {
    package static var device: Device { .apple }
    package static var services: [Service] { Service.allCases }
    static var speaker: String { "Apple's built-in client" }
    static var isDefault: Bool { true }
    /// The profile carries the p12 as a `com.apple.security.pkcs12` payload with its password; the folder's
    /// copy is for the macOS Keychain and other apps.
    package static var certificate: ClientCertificateForm {
        ClientCertificateForm(p12: true, openP12: false, pem: false, p12InFolder: true)
    }

    /// What Apple devices offer for Cisco "IPSec" (IKEv1). Apple does not document it and a profile
    /// cannot set it; this is the set hwdsl2/setup-ipsec-vpn's tested server accepts (docs/decisions.md, "Clients").
    static let ipsecOffer = ProposalOffer(
        ike: ["aes256-sha256-modp2048", "aes128-sha256-modp2048", "aes256-sha1-modp2048", "aes128-sha1-modp2048"],
        esp: ["aes256-sha256", "aes128-sha256", "aes256-sha1", "aes128-sha1"])

    /// IKEv1: `ipsecOffer`; IKEv2: the one pair the profile pins, from `AppleSA` (set by the client plan).
    package static func offer(for service: Service, proposals: Proposals) -> ProposalOffer? {
        service.ikeVersion == 1 ? ipsecOffer : nil
    }

    /// "IPSec" (IKEv1) has no IncludeAllNetworks; IKEv2 drops IPv6 with it (the kill switch).
    package static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String? {
        if service.ikeVersion == 1 { return "Apple IPSec (\(service.rawValue) has no kill switch)" }
        return killSwitch() ? nil : "Apple IKEv2 (apple.include_all_networks is off)"
    }

    /// Apple's IKEv2 profile keys (apple/device-management, com.apple.vpn.managed): `PPK`, `PPKIdentifier` and
    /// `PPKMandatory` from iOS 18 / macOS 15; `PostQuantumKeyExchangeMethods` in the SA parameters (one method per
    /// additional exchange: 36 ML-KEM-768, 37 ML-KEM-1024, no 512) from iOS / macOS 26. An older device ignores
    /// them and connects classically, where the node allows that.
    package static var quantumSafe: QuantumSafeSupport { [.mlKEM, .ppk] }
}
