import Testing
import VPNProvModel
import VPNProvRendering
import VPNProvTestFixtures

/// Everything about client kinds is derived from one description per kind (`ClientKind`). Each table here is
/// the rule written out plainly, row by row, from what the client itself documents, so a description that
/// says less or more than its client does fails one of these instead of silently changing a user's connections.
@Suite struct ClientKindTests {
    @Test func eachDescriptionIsItsOwnKinds() {
        for device in Device.allCases { #expect(device.kind.device == device) }
    }

    /// The services each client speaks. The strongSwan Android app: IKEv2 only, with EAP or a certificate, no
    /// pre-shared key (its documented VPN types). Windows' built-in client (`Add-VpnConnection
    /// -AuthenticationMethod`): EAP or a machine certificate for IKEv2, no PSK. NetworkManager's strongSwan
    /// plugin: IKEv2 with a certificate, EAP or a PSK (its `method` setting), no IKEv1. Apple: IKEv2 by
    /// certificate, EAP or shared secret, EAP after a PSK, and IKEv1 ("IPSec") with XAuth over a PSK or hybrid.
    /// swanctl: every one.
    @Test func servicesEachKindSpeaks() {
        let table: [Service: [Device]] = [
            .ikev2Cert: [.apple, .android, .linux, .windows, .networkmanager],
            .ikev2EAP: [.apple, .android, .linux, .windows, .networkmanager],
            .ikev2PSK: [.apple, .linux, .networkmanager],
            .ikev2PSKEAP: [.apple, .linux],
            .ipsecXauthPSK: [.apple, .linux],
            .ipsecXauthHybrid: [.apple, .linux],
        ]
        for service in Service.allCases { #expect(service.devices == table[service], "\(service.rawValue)") }
        for device in Device.allCases {
            for service in Service.allCases {
                #expect(device.speaks(service) == table[service]!.contains(device), "\(device) \(service)")
            }
        }
    }

    /// The `device-without-service` warning's hint for each kind: what that client speaks (the table above), said
    /// for the clients that speak less than the node may offer; Apple and swanctl speak every service.
    @Test func hintForEachKind() {
        let hints: [Device: String] = [
            .apple: "",
            .android: " (the Android app speaks ikev2-eap and ikev2-cert)",
            .linux: "",
            .windows: " (Windows' built-in client speaks ikev2-eap and ikev2-cert)",
            .networkmanager: " (NetworkManager's strongSwan plugin speaks ikev2-eap, ikev2-cert and ikev2-psk)",
        ]
        for device in Device.allCases { #expect(device.servicesHint == hints[device], "\(device)") }
    }

    @Test func defaultDevicesAreEveryKindButNetworkManager() {
        #expect(Device.defaults == [.apple, .android, .linux, .windows])
    }

    /// The certificate form each client takes: a PKCS#12 for Apple (the profile's PKCS#12 payload), Android
    /// (the app imports one; the `.sswan` file embeds it without a password) and Windows
    /// (`Import-PfxCertificate`); PEM files for swanctl (`x509/`, `private/`) and NetworkManager (the keyfile
    /// names the files); the p12 beside the profile for the two whose users import it by hand (Apple, Android).
    @Test func certificateFormsOfEachKind() {
        func kinds(_ form: (ClientCertificateForm) -> Bool) -> [Device] {
            Device.allCases.filter { form($0.kind.certificate) }
        }
        #expect(kinds(\.p12) == [.apple, .android, .windows])
        #expect(kinds(\.openP12) == [.android])
        #expect(kinds(\.pem) == [.linux, .networkmanager])
        #expect(kinds(\.p12InFolder) == [.apple, .android])
    }

    /// The proposals each kind sends for the node's proposals: swanctl and NetworkManager (its `proposal` and
    /// `esp` settings) the node's list; the Android app one proposal of each (the `.sswan` file's `ike-proposal`
    /// and `esp-proposal` hold one); Apple and Windows none of their own for IKEv2 (their own parameter sets);
    /// IKEv1 the node's list in IKEv1 form, Apple's IPSec its fixed four.
    @Test func proposalsEachKindSends() {
        let proposals = Proposals(
            ike: ["aes256gcm16-prfsha256-ecp256", "aes256-sha256-modp2048"], esp: ["aes256gcm16", "aes256-sha256"])
        let all = ProposalOffer(ike: proposals.ike, esp: proposals.esp)
        let first = ProposalOffer(ike: ["aes256gcm16-prfsha256-ecp256"], esp: ["aes256gcm16"])
        let ikev1 = ProposalOffer(
            ike: IKEv1Proposals.ike(from: proposals.ike), esp: IKEv1Proposals.esp(from: proposals.esp))
        let appleIPSec = ProposalOffer(
            ike: ["aes256-sha256-modp2048", "aes128-sha256-modp2048", "aes256-sha1-modp2048", "aes128-sha1-modp2048"],
            esp: ["aes256-sha256", "aes128-sha256", "aes256-sha1", "aes128-sha1"])
        let v2: [Device: ProposalOffer?] = [
            .apple: nil, .android: first, .linux: all, .windows: nil, .networkmanager: all,
        ]
        #expect(Set(v2.keys) == Set(Device.allCases), "a kind without its row here")
        for device in Device.allCases {
            #expect(device.kind.offer(for: .ikev2EAP, proposals: proposals) == (v2[device] ?? nil), "\(device)")
        }
        #expect(Device.apple.kind.offer(for: .ipsecXauthPSK, proposals: proposals) == appleIPSec)
        #expect(Device.linux.kind.offer(for: .ipsecXauthHybrid, proposals: proposals) == ikev1)
    }

    /// What the `ipv6-leak` warning names per kind (IKEv2, IKEv1, IKEv2 with the Apple kill switch on): Apple's
    /// IKEv2 leaks unless `IncludeAllNetworks` is on, its IPSec has no such switch; swanctl routes only what its
    /// policies name; Windows' VPN cmdlets have no IPv6 block; the Android app (an Android VpnService, which blocks
    /// what it does not route) and NetworkManager are not named.
    @Test func whatLeaksIPv6ForEachKind() {
        let leaks: [Device: [String?]] = [
            .apple: [
                "Apple IKEv2 (apple.include_all_networks is off)", "Apple IPSec (ipsec-xauth-psk has no kill switch)",
                nil,
            ],
            .android: [nil, nil, nil],
            .linux: ["Linux (swanctl)", "Linux (swanctl)", "Linux (swanctl)"],
            .windows: Array(repeating: "Windows (its VPN cmdlets have no IPv6 block)", count: 3),
            .networkmanager: [nil, nil, nil],
        ]
        #expect(Set(leaks.keys) == Set(Device.allCases), "a kind without its row here")
        for device in Device.allCases {
            let found = [
                device.kind.ipv6Leak(service: .ikev2EAP) { false },
                device.kind.ipv6Leak(service: .ipsecXauthPSK) { false },
                device.kind.ipv6Leak(service: .ikev2EAP) { true },
            ]
            #expect(found == leaks[device], "\(device)")
        }
    }

    /// The rendering layer's registry names each kind's own renderer, and the README's parts come in
    /// `Device` order (Apple, Android, swanctl, Windows, NetworkManager), as the README had them.
    @Test func eachKindHasItsRenderer() {
        let renderers: [Device: String] = [
            .apple: "AppleProfileRenderer", .android: "AndroidProfileRenderer", .linux: "LinuxClientRenderer",
            .windows: "WindowsClientRenderer", .networkmanager: "NetworkManagerClientRenderer",
        ]
        for device in Device.allCases { #expect(String(describing: device.renderer) == renderers[device], "\(device)") }
        #expect(Device.allCases == [.apple, .android, .linux, .windows, .networkmanager])
    }
}
