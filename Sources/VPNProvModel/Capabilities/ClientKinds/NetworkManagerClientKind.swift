import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Linux desktops: NetworkManager with its strongSwan plugin (`networkmanager/*.nmconnection`).
enum NetworkManagerClientKind: ClientKind {
    package static var device: Device { .networkmanager }
    /// What charon-nm can express: IKEv2 only, and the server proves itself with a certificate exactly when
    /// the client uses EAP or a certificate, with a PSK when the client does (src/charon-nm/nm/nm_service.c),
    /// so ikev2-psk-eap (EAP with a PSK server) and the IKEv1 services cannot be set up.
    package static var services: [Service] { [.ikev2EAP, .ikev2Cert, .ikev2PSK] }
    static var speaker: String { "NetworkManager's strongSwan plugin" }
    /// Asked for by name: its keyfiles are installed as root into the machine's NetworkManager, and
    /// inventories written before it existed keep their output.
    static var isDefault: Bool { false }
    /// charon-nm reads the certificate and key as PEM files the README installs.
    package static var certificate: ClientCertificateForm {
        ClientCertificateForm(p12: false, openP12: false, pem: true, p12InFolder: false)
    }

    /// charon-nm takes strongSwan proposal strings (`ike`, `esp`): the node's own, all of them.
    package static func offer(for service: Service, proposals: Proposals) -> ProposalOffer? {
        ProposalOffer(ike: proposals.ike, esp: proposals.esp)
    }

    /// The keyfile blackholes IPv6 while connected.
    package static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String? { nil }

    /// The strongSwan plugin's keyfile has no PPK setting, and Debian 12's charon-nm (5.9) computes no ML-KEM.
    package static var quantumSafe: QuantumSafeSupport { [] }
}
