import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// A Linux machine with strongSwan's swanctl: `linux/swanctl/`, one connection per node and service.
enum LinuxClientKind: ClientKind {
    package static var device: Device { .linux }
    package static var services: [Service] { Service.allCases }
    static var speaker: String { "strongSwan's swanctl" }
    static var isDefault: Bool { true }
    /// swanctl reads the certificate and key from `x509/` and `private/`.
    package static var certificate: ClientCertificateForm {
        ClientCertificateForm(p12: false, openP12: false, pem: true, p12InFolder: false)
    }

    /// The node's own lists; for IKEv1 the server's own IKEv1 lists, same order: IKEv1 has no AEAD in
    /// Phase 1 (strongSwan drops `aes256gcm16-prfsha256-ecp256` to a bare `ecp256`), and in Aggressive Mode
    /// the KE sent with the first message is for the first proposal's group, so the first one must be the
    /// server's first choice or the responder fails with "unable to apply received KE value".
    package static func offer(for service: Service, proposals: Proposals) -> ProposalOffer? {
        if service.ikeVersion == 1 {
            return ProposalOffer(
                ike: IKEv1Proposals.ike(from: proposals.ike), esp: IKEv1Proposals.esp(from: proposals.esp))
        }
        return ProposalOffer(ike: proposals.ike, esp: proposals.esp)
    }

    /// A swanctl client has no setting for traffic outside its tunnels.
    package static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String? { "Linux (swanctl)" }

    /// swanctl from strongSwan 6.1 on (`proposals` with `ke1_`, `ppk_id` and a `ppk` secret); the user's README says so.
    package static var quantumSafe: QuantumSafeSupport { [.mlKEM, .mlKEM512, .ppk] }
}
