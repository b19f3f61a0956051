import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// The strongSwan VPN Client app for Android: one `.sswan` profile per node and service.
enum AndroidClientKind: ClientKind {
    package static var device: Device { .android }
    /// The app's profile types: EAP-MSCHAPv2 and a user certificate, both against a server certificate.
    package static var services: [Service] { [.ikev2EAP, .ikev2Cert] }
    static var speaker: String { "the Android app" }
    static var isDefault: Bool { true }
    /// The .sswan file embeds the passwordless p12; the folder's p12 with its password is for importing by hand.
    package static var certificate: ClientCertificateForm {
        ClientCertificateForm(p12: true, openP12: true, pem: false, p12InFolder: true)
    }

    /// The app sends the node's first IKE and first ESP proposal.
    package static func offer(for service: Service, proposals: Proposals) -> ProposalOffer? {
        ProposalOffer(ike: Array(proposals.ike.prefix(1)), esp: Array(proposals.esp.prefix(1)))
    }

    /// The profile sets `split-tunneling.block-ipv6` on such nodes.
    package static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String? { nil }

    /// The strongSwan app computes ML-KEM (all three parameter sets, through its OpenSSL) from version 2.6.1 when its
    /// profile's `ike-proposal` names it (android_service.c takes that one proposal; the release note of 2.6.1);
    /// it has no PPK setting.
    package static var quantumSafe: QuantumSafeSupport { [.mlKEM, .mlKEM512] }
}
