import Foundation
import Testing
import VPNProvTestHarness

/// Unit tests of the profile -> strongSwan client translation, on small hand-made dictionaries.
@Suite struct TranslationTests {
    static func ikev2EAPPayload(_ extra: [String: Any] = [:]) -> [String: Any] {
        var ikev2: [String: Any] = [
            "RemoteAddress": "vpn.example.com", "RemoteIdentifier": "vpn.example.com", "LocalIdentifier": "alice",
            "AuthenticationMethod": "Certificate", "ExtendedAuthEnabled": 1, "AuthName": "alice",
            "AuthPassword": "alice pw # \"quoted\"",
        ]
        ikev2.merge(extra) { $1 }
        return [
            "PayloadType": "com.apple.vpn.managed", "PayloadVersion": 1, "PayloadIdentifier": "x.vpn",
            "PayloadUUID": "6F1C5A4E-3B2D-4C1E-9F00-000000000001", "UserDefinedName": "Test", "VPNType": "IKEv2",
            "IKEv2": ikev2,
        ]
    }

    @Test func eapPayloadBecomesEAPClient() throws {
        let setup = try AppleProfileTranslator.translate(vpnPayload: Self.ikev2EAPPayload())
        let conf = setup.swanctlConf
        #expect(conf.contains("auth = eap-mschapv2\n"))
        #expect(conf.contains("eap_id = \"alice\"\n"))
        #expect(conf.contains("id = \"vpn.example.com\"\n"))
        // Apple schema defaults: one proposal AES-256 / SHA2-256 / group 14, 1440 minutes.
        #expect(conf.contains("proposals = aes256-sha256-prfsha256-modp2048\n"))
        #expect(conf.contains("esp_proposals = aes256-sha256\n"))
        #expect(conf.contains("rekey_time = 1440m\n"))
        #expect(conf.contains("dpd_delay = 600s\n"))
        // The password travels as base64, never as quoted text.
        #expect(conf.contains("secret = 0s" + Data("alice pw # \"quoted\"".utf8).base64EncodedString() + "\n"))
        #expect(!conf.contains("alice pw"))
    }

    @Test func saParametersGiveTheSingleProposal() throws {
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: Self.ikev2EAPPayload([
                "IKESecurityAssociationParameters": [
                    "EncryptionAlgorithm": "AES-256-GCM", "IntegrityAlgorithm": "SHA2-384", "DiffieHellmanGroup": 20,
                    "LifeTimeInMinutes": 60,
                ] as [String: Any],
                "ChildSecurityAssociationParameters": [
                    "EncryptionAlgorithm": "AES-128", "IntegrityAlgorithm": "SHA1-96", "DiffieHellmanGroup": 31,
                ] as [String: Any],
                "EnablePFS": 1, "DeadPeerDetectionRate": "High", "DisableMOBIKE": 1,
            ]))
        #expect(setup.swanctlConf.contains("proposals = aes256gcm16-prfsha384-ecp384\n"))
        #expect(setup.swanctlConf.contains("esp_proposals = aes128-sha1-curve25519\n"))
        #expect(setup.swanctlConf.contains("rekey_time = 60m\n"))
        #expect(setup.swanctlConf.contains("dpd_delay = 60s\n"))
        #expect(setup.swanctlConf.contains("mobike = no\n"))
    }

    @Test func childDefaultsToIKEParameters() throws {
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: Self.ikev2EAPPayload([
                "IKESecurityAssociationParameters": ["EncryptionAlgorithm": "AES-256-GCM", "DiffieHellmanGroup": 19]
                    as [String: Any]
            ]))
        #expect(setup.swanctlConf.contains("proposals = aes256gcm16-prfsha256-ecp256\n"))
        #expect(setup.swanctlConf.contains("esp_proposals = aes256gcm16\n"))
    }

    @Test func unknownKeysFail() {
        #expect(throws: TranslationError.self) {
            try AppleProfileTranslator.translate(vpnPayload: Self.ikev2EAPPayload(["SomethingNew": 1]))
        }
        #expect(throws: TranslationError.self) {
            try AppleProfileTranslator.translate(
                vpnPayload: Self.ikev2EAPPayload([
                    "IKESecurityAssociationParameters": ["EncryptionAlgorithm": "AES-256", "Foo": 1] as [String: Any]
                ]))
        }
        #expect(throws: TranslationError.self) {
            try AppleProfileTranslator.translate(
                vpnPayload: Self.ikev2EAPPayload([
                    "IKESecurityAssociationParameters": ["DiffieHellmanGroup": 99] as [String: Any]
                ]))
        }
    }

    @Test func booleanWhereSchemaWantsIntegerFails() throws {
        // A real plist round trip: <true/> for ExtendedAuthEnabled is a generator bug.
        var payload = Self.ikev2EAPPayload()
        var ikev2 = payload["IKEv2"] as! [String: Any]
        ikev2["ExtendedAuthEnabled"] = true
        payload["IKEv2"] = ikev2
        let profile: [String: Any] = [
            "PayloadType": "Configuration", "PayloadVersion": 1, "PayloadIdentifier": "x",
            "PayloadUUID": "6F1C5A4E-3B2D-4C1E-9F00-000000000000", "PayloadContent": [payload],
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: profile, format: .xml, options: 0)
        #expect(throws: TranslationError.self) { try AppleProfileTranslator.translate(profileData: data) }
        // …while <integer>1</integer> passes.
        ikev2["ExtendedAuthEnabled"] = 1
        payload["IKEv2"] = ikev2
        let good = try PropertyListSerialization.data(
            fromPropertyList: ["PayloadType": "Configuration", "PayloadContent": [payload]] as [String: Any],
            format: .xml, options: 0)
        #expect(try AppleProfileTranslator.translate(profileData: good).count == 1)
    }

    @Test func certificatePayloadUsesPKCS12() throws {
        let payload = Self.ikev2EAPPayload([
            "ExtendedAuthEnabled": 0, "PayloadCertificateUUID": "P12-UUID", "LocalIdentifier": "dave@example.com",
        ])
        let p12: [String: Any] = [
            "PayloadType": "com.apple.security.pkcs12", "PayloadUUID": "P12-UUID", "PayloadVersion": 1,
            "PayloadIdentifier": "x.p12", "PayloadContent": Data([1, 2, 3]), "Password": "pw",
        ]
        let root: [String: Any] = [
            "PayloadType": "com.apple.security.root", "PayloadUUID": "CA-UUID", "PayloadContent": Data([4]),
        ]
        let setup = try AppleProfileTranslator.translate(vpnPayload: payload, otherPayloads: [p12, root])
        #expect(setup.files["pkcs12/client.p12"] == Data([1, 2, 3]))
        #expect(setup.files["x509ca/root-1.der"] == Data([4]))
        #expect(setup.swanctlConf.contains("auth = pubkey\n"))
        #expect(setup.swanctlConf.contains("file = \"client.p12\"\n"))
        #expect(throws: TranslationError.self) {
            try AppleProfileTranslator.translate(vpnPayload: payload, otherPayloads: [root])
        }
    }

    static func ipsecPayload(group: String? = "vpngroup") -> [String: Any] {
        var ipsec: [String: Any] = [
            "RemoteAddress": "vpn.example.com", "AuthenticationMethod": "SharedSecret",
            "SharedSecret": Data("group secret".utf8), "XAuthEnabled": 1, "XAuthName": "bob", "XAuthPassword": "bob pw",
        ]
        if let group {
            ipsec["LocalIdentifier"] = group
            ipsec["LocalIdentifierType"] = "KeyID"
        }
        return [
            "PayloadType": "com.apple.vpn.managed", "PayloadUUID": "U", "VPNType": "IPSec", "IPSec": ipsec,
            "IPv4": ["OverridePrimary": 1] as [String: Any],
        ]
    }

    @Test func ipsecGroupMeansAggressiveKeyID() throws {
        let conf = try AppleProfileTranslator.translate(vpnPayload: Self.ipsecPayload()).swanctlConf
        #expect(conf.contains("aggressive = yes\n"))
        #expect(conf.contains("id = \"keyid:vpngroup\"\n"))
        #expect(conf.contains("xauth_id = \"bob\"\n"))
        #expect(conf.contains("secret = 0s" + Data("group secret".utf8).base64EncodedString() + "\n"))
        let main = try AppleProfileTranslator.translate(vpnPayload: Self.ipsecPayload(group: nil)).swanctlConf
        #expect(main.contains("aggressive = no\n"))
        #expect(!main.contains("keyid:"))
    }

    @Test func sswanEAPAndStrictness() throws {
        let profile: [String: Any] = [
            "uuid": "6f1c5a4e-3b2d-4c1e-9f00-000000000002", "name": "n", "type": "ikev2-eap",
            "remote": ["addr": "vpn.example.com", "id": "vpn.example.com", "cert": Data([9]).base64EncodedString()]
                as [String: Any],
            "local": ["eap_id": "alice", "shared_secret": "pw"] as [String: Any],
            "ike-proposal": "aes256gcm16-prfsha256-ecp256", "esp-proposal": "aes256gcm16",
        ]
        let json = try JSONSerialization.data(withJSONObject: profile)
        let setup = try SswanTranslator.translate(json: json, inputs: DeviceInputs(remoteAddress: "192.0.2.1"))
        #expect(setup.swanctlConf.contains("remote_addrs = \"192.0.2.1\"\n"))
        #expect(setup.swanctlConf.contains("proposals = \"aes256gcm16-prfsha256-ecp256\"\n"))
        #expect(setup.swanctlConf.contains("eap_id = \"alice\"\n"))
        #expect(setup.files["x509ca/remote.der"] == Data([9]))
        var bad = profile
        bad["local"] = ["eap_id": "alice", "password": "pw"] as [String: Any]  // not a key the app reads
        #expect(throws: TranslationError.self) { try SswanTranslator.translate(profile: bad) }
        bad = profile
        bad["type"] = "ikev2-psk"  // the app would silently make this ikev2-eap
        #expect(throws: TranslationError.self) { try SswanTranslator.translate(profile: bad) }
    }

    @Test func sswanBlockIPv6BecomesTheDevicesPolicy() throws {
        var profile: [String: Any] = [
            "uuid": "6f1c5a4e-3b2d-4c1e-9f00-000000000002", "name": "n", "type": "ikev2-eap",
            "remote": ["addr": "vpn.example.com"] as [String: Any],
            "local": ["eap_id": "alice", "shared_secret": "pw"] as [String: Any],
        ]
        #expect(try SswanTranslator.translate(profile: profile).device.blockIPv6 == .none)
        profile["split-tunneling"] = ["block-ipv6": true] as [String: Any]
        #expect(try SswanTranslator.translate(profile: profile).device.blockIPv6 == .all)
        profile["split-tunneling"] = ["block-ipv4": true] as [String: Any]
        #expect(throws: TranslationError.self) { try SswanTranslator.translate(profile: profile) }
        profile["split-tunneling"] = ["block-ipv6": true, "block-v6": true] as [String: Any]  // not a key the app reads
        #expect(throws: TranslationError.self) { try SswanTranslator.translate(profile: profile) }
    }

    @Test func appleKillSwitchOnDemandAndIdleAreHonoured() throws {
        #expect(try AppleProfileTranslator.translate(vpnPayload: Self.ikev2EAPPayload()).device.blockIPv6 == .none)
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: Self.ikev2EAPPayload([
                "IncludeAllNetworks": 1, "ExcludeLocalNetworks": 1, "OnDemandEnabled": 1,
                "OnDemandRules": [
                    ["Action": "Disconnect", "InterfaceTypeMatch": "WiFi", "SSIDMatch": ["Home"]] as [String: Any],
                    ["Action": "Connect"] as [String: Any],
                ],
                "DisconnectOnIdle": 1, "DisconnectOnIdleTimer": 600, "EnableCertificateRevocationCheck": 1,
            ]))
        #expect(setup.device.blockIPv6 == .exceptLocalNetworks)
        #expect(setup.onDemand?.action(interface: "WiFi", ssid: "Home") == "Disconnect")
        #expect(setup.onDemand?.action(interface: "WiFi", ssid: "Cafe") == "Connect")
        #expect(setup.onDemand?.action(interface: "Cellular") == "Connect")
        #expect(setup.swanctlConf.contains("inactivity = 600s\n"))
        #expect(setup.swanctlConf.contains("revocation = relaxed\n") && setup.revocationCheck)
        let all = try AppleProfileTranslator.translate(vpnPayload: Self.ikev2EAPPayload(["IncludeAllNetworks": 1]))
        #expect(all.device.blockIPv6 == .all)  // macOS default: local networks go into the tunnel too
        for bad: [String: Any] in [
            ["OnDemandEnabled": 1, "OnDemandRules": [["Action": "Maybe"] as [String: Any]]],
            ["OnDemandEnabled": 1, "OnDemandRules": [["Action": "Connect", "SSIDMatches": ["x"]] as [String: Any]]],
            ["OnDemandEnabled": 1],
            ["DisconnectOnIdle": 1],
            ["IncludeAllNetwork": 1],
        ] {
            #expect(throws: TranslationError.self, "\(bad)") {
                try AppleProfileTranslator.translate(vpnPayload: Self.ikev2EAPPayload(bad))
            }
        }
    }

    @Test func quotingOfValues() throws {
        #expect(try SwanctlWriter.quote("a\"b\\c#d") == "\"a\\\"b\\\\c#d\"")
        #expect(throws: TranslationError.self) { try SwanctlWriter.quote("a\u{1}b") }
    }
}

/// Translated device profiles complete a real handshake against the hand-written server.
@Suite(.serialized, .strongSwan)
struct TranslatedProfileTunnelTests {
    private func run(_ setup: ClientSetup, label: String) throws {
        try StrongSwanEnvironment.require()
        let (serverDir, settings) = try SharedFixturePKI.serverDirectory()
        let s = try TunnelScenario.start(serverSettingsIncludes: [settings])
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: serverDir.confFile)
        let dir = try setup.write(label: label)
        try s.client.loadAllCleanly(confFile: dir.confFile)
        let tunnel = try s.connect(child: setup.childName, ike: setup.connectionName)
        let ping = try s.pingThroughTunnel(tunnel)
        #expect(ping.succeeded, "\(ping)")
    }

    private func caRoot() throws -> [String: Any] {
        let m = try SharedFixturePKI.get()
        return [
            "PayloadType": "com.apple.security.root", "PayloadUUID": "CA",
            "PayloadContent": try StrongSwanPKI.der(ofPEM: m.pki.caCert),
        ]
    }

    @Test func appleIKEv2EAP() throws {
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: TranslationTests.ikev2EAPPayload([
                "IKESecurityAssociationParameters": ["EncryptionAlgorithm": "AES-256-GCM", "DiffieHellmanGroup": 19]
                    as [String: Any]
            ]),
            otherPayloads: [try caRoot()], inputs: DeviceInputs(remoteAddress: "192.0.2.1"))
        try run(setup, label: "apple-eap")
    }

    @Test func appleIKEv2CertificateFromPKCS12Payload() throws {
        let m = try SharedFixturePKI.get()
        let p12: [String: Any] = [
            "PayloadType": "com.apple.security.pkcs12", "PayloadUUID": "P12",
            "PayloadContent": try m.pki.pkcs12(cert: m.client.cert, key: m.client.key, password: "p12 pw"),
            "Password": "p12 pw",
        ]
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: TranslationTests.ikev2EAPPayload([
                "ExtendedAuthEnabled": 0, "PayloadCertificateUUID": "P12", "LocalIdentifier": HandWritten.certClientID,
            ]),
            otherPayloads: [p12, try caRoot()], inputs: DeviceInputs(remoteAddress: "192.0.2.1"))
        try run(setup, label: "apple-cert")
    }

    @Test func appleIKEv2SharedSecret() throws {
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: TranslationTests.ikev2EAPPayload([
                "AuthenticationMethod": "SharedSecret", "ExtendedAuthEnabled": 0, "SharedSecret": HandWritten.psk,
                "LocalIdentifier": HandWritten.pskClientID,
            ]),
            inputs: DeviceInputs(remoteAddress: "192.0.2.1"))
        try run(setup, label: "apple-psk")
    }

    @Test func appleIPSecGroupXAuth() throws {
        let setup = try AppleProfileTranslator.translate(
            vpnPayload: TranslationTests.ipsecPayload(), inputs: DeviceInputs(remoteAddress: "192.0.2.1"))
        try run(setup, label: "apple-ipsec")
    }

    @Test func sswanEAP() throws {
        let m = try SharedFixturePKI.get()
        let profile: [String: Any] = [
            "uuid": "6f1c5a4e-3b2d-4c1e-9f00-000000000003", "name": "n", "type": "ikev2-eap",
            "remote": [
                "addr": "vpn.example.com", "cert": try StrongSwanPKI.der(ofPEM: m.pki.caCert).base64EncodedString(),
            ]
                as [String: Any],
            "local": ["eap_id": HandWritten.eapUser, "shared_secret": HandWritten.eapPassword] as [String: Any],
            "ike-proposal": "aes256gcm16-prfsha256-ecp256", "esp-proposal": "aes256gcm16",
        ]
        try run(
            try SswanTranslator.translate(profile: profile, inputs: DeviceInputs(remoteAddress: "192.0.2.1")),
            label: "sswan-eap")
    }

    @Test func sswanCert() throws {
        let m = try SharedFixturePKI.get()
        let p12 = try m.pki.pkcs12(cert: m.client.cert, key: m.client.key, password: "p12 pw")
        let profile: [String: Any] = [
            "uuid": "6f1c5a4e-3b2d-4c1e-9f00-000000000004", "name": "n", "type": "ikev2-cert",
            "remote": [
                "addr": "vpn.example.com", "id": "vpn.example.com",
                "cert": try StrongSwanPKI.der(ofPEM: m.pki.caCert).base64EncodedString(),
            ] as [String: Any],
            "local": ["id": HandWritten.certClientID, "p12": p12.base64EncodedString()] as [String: Any],
        ]
        try run(
            try SswanTranslator.translate(
                profile: profile, inputs: DeviceInputs(remoteAddress: "192.0.2.1", p12Password: "p12 pw")),
            label: "sswan-cert")
    }
}
