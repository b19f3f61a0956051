import Testing
import VPNProvModel
import VPNProvRendering
import VPNProvTestFixtures

/// Everything about client kinds is derived from one description per kind (VPNProvModel/Capabilities/ClientKinds/):
/// these pin the derived tables to what was written out by hand before them, so a description that says
/// less or more than its kind did changes one of these, not silently a user's connections.
@Suite struct ClientKindTests {
    @Test func eachDescriptionIsItsOwnKinds() {
        for device in Device.allCases { #expect(device.kind.device == device) }
    }

    /// `Service.devices`, as the if-chain of ClientCapabilities.swift had it.
    @Test func serviceDevicesAreTheTableTheyReplaced() {
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

    /// The `device-without-service` warning's hints, as ServiceRules wrote them.
    @Test func hintsAreTheTextsTheyReplaced() {
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

    /// Consistency's certificate rule (p12 for Apple, Android and Windows, the open p12 for Android, PEM for
    /// Linux and NetworkManager) and the client renderer's p12 in the folder (Apple and Android).
    @Test func certificateFormsAreTheRulesTheyReplaced() {
        func kinds(_ form: (ClientCertificateForm) -> Bool) -> [Device] {
            Device.allCases.filter { form($0.kind.certificate) }
        }
        #expect(kinds(\.p12) == [.apple, .android, .windows])
        #expect(kinds(\.openP12) == [.android])
        #expect(kinds(\.pem) == [.linux, .networkmanager])
        #expect(kinds(\.p12InFolder) == [.apple, .android])
    }

    /// The proposals each kind sends, as the client plan's switch had them.
    @Test func offersAreTheOnesTheyReplaced() {
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

    /// What the `ipv6-leak` warning names per kind (IKEv2, IKEv1, IKEv2 with the Apple kill switch on), as
    /// ClientRules' switch had it.
    @Test func ipv6LeaksAreTheOnesTheyReplaced() {
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
