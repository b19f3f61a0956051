import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Windows' built-in IKEv2 client, set up by a PowerShell script (`<user>-windows.ps1`).
enum WindowsClientKind: ClientKind {
    package static var device: Device { .windows }
    /// EAP-MSCHAPv2 or a machine certificate. It has no IKEv2 PSK authentication (`Add-VpnConnection` knows
    /// a PSK only for L2TP) and no IKEv1 XAuth.
    package static var services: [Service] { [.ikev2EAP, .ikev2Cert] }
    static var speaker: String { "Windows' built-in client" }
    static var isDefault: Bool { true }
    /// The script imports the p12 (inside it) with its password into LocalMachine\My.
    package static var certificate: ClientCertificateForm {
        ClientCertificateForm(p12: true, openP12: false, pem: false, p12InFolder: false)
    }

    /// The one pair the script pins, from `WindowsIPsec` (set by the client plan).
    package static func offer(for service: Service, proposals: Proposals) -> ProposalOffer? { nil }

    /// Its VPN cmdlets have no IPv6 block.
    package static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String? {
        "Windows (its VPN cmdlets have no IPv6 block)"
    }

    /// Windows' IKEv2 client has neither ML-KEM nor PPKs.
    package static var quantumSafe: QuantumSafeSupport { [] }
}
