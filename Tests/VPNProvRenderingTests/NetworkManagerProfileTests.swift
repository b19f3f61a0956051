import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates
import VPNProvTestFixtures

@testable import VPNProvRendering

/// The NetworkManager keyfiles (`networkmanager` device): which services get one, what the `[vpn]` keys say,
/// the secret's escaping, file modes, the README's install commands, the IPv6 blackhole, and the validator's
/// `networkmanager-service` error. The real NetworkManager and charon-nm load and connect them in
/// EndToEndTests/NetworkManagerTests.
@Suite(.temporaries) struct NetworkManagerProfileTests {
    /// ClientFixtures with alice on a NetworkManager desktop as well.
    let inventory = ClientFixtures.inventory().with { $0.users[0].devices.append(.networkmanager) }
    let materials = ClientFixtures.materials()

    func files() throws -> [String: OutputFile] {
        let files = try Render.clients(inventory, materials)
        return Dictionary(uniqueKeysWithValues: files.map { ($0.path, $0) })
    }

    func text(_ file: OutputFile?) throws -> String { String(decoding: try #require(file).contents, as: UTF8.self) }

    @Test func oneKeyfilePerServiceThePluginCanSetUp() throws {
        let files = try files()
        let mine = files.keys.filter { $0.hasPrefix("clients/alice/networkmanager/") }.sorted()
        #expect(
            mine == [
                "clients/alice/networkmanager/acme-ams-1-ikev2-eap.nmconnection",
                "clients/alice/networkmanager/acme-fra-1-ikev2-cert.nmconnection",
                "clients/alice/networkmanager/acme-fra-1-ikev2-eap.nmconnection",
                "clients/alice/networkmanager/acme-fra-1-ikev2-psk.nmconnection",
                "clients/alice/networkmanager/alice.key",
                "clients/alice/networkmanager/alice.pem",
                "clients/alice/networkmanager/ca.pem",
            ])
        for path in mine {
            let isPrivate = path.hasSuffix(".nmconnection") || path.hasSuffix(".key")
            #expect(files[path]?.isPrivate == isPrivate, "\(path)")
        }
        // Nobody else asked for it (the device is not among the defaults).
        #expect(!files.keys.contains { $0.hasPrefix("clients/bob/networkmanager/") })
        #expect(!Device.defaults.contains(.networkmanager))
        #expect(
            try Render.clients(inventory, materials)
                == Render.clients(inventory, materials))
    }

    @Test func theVPNKeysAreWhatCharonNMReads() throws {
        let files = try files()
        let eap = try text(files["clients/alice/networkmanager/acme-fra-1-ikev2-eap.nmconnection"])
        let dir = "/etc/NetworkManager/vpnprov/acme/alice"
        for line in [
            "[connection]", "id=acme fra-1 ikev2-eap", "type=vpn", "autoconnect=false",
            "service-type=org.freedesktop.NetworkManager.strongswan", "address=fra-1.vpn.example.com",
            "certificate=\(dir)/ca.pem", "remote-identity=fra-1.vpn.example.com", "method=eap", "user=alice",
            "local-identity=alice@acme.example", "virtual=yes", "proposal=yes",
            "ike=aes256gcm16-prfsha256-ecp256;aes256-sha256-modp2048", "esp=aes256gcm16;aes256-sha256",
            "password-flags=0", "[vpn-secrets]", "password=alice pass # }{", "[ipv6]", "method=auto",
        ] {
            #expect(eap.split(separator: "\n").contains(Substring(line)), "missing \(line):\n\(eap)")
        }
        // fra-1 has an IPv6 pool: IPv6 goes through the tunnel, no blackhole.
        #expect(!eap.contains("blackhole"))
        let cert = try text(files["clients/alice/networkmanager/acme-fra-1-ikev2-cert.nmconnection"])
        for line in [
            "method=cert", "cert-source=file", "usercert=\(dir)/alice.pem", "userkey=\(dir)/alice.key",
            "password-flags=4",
        ] {
            #expect(cert.split(separator: "\n").contains(Substring(line)), "missing \(line):\n\(cert)")
        }
        #expect(!cert.contains("[vpn-secrets]"))
        let psk = try text(files["clients/alice/networkmanager/acme-fra-1-ikev2-psk.nmconnection"])
        #expect(psk.contains("\nmethod=psk\n") && psk.contains("\npassword=fra psk with \"quotes\" & <tags>\n"))
        #expect(!psk.contains("\ncertificate=") && !psk.contains("\nuser="))
        // ams-1 has no IPv6 pool: a blackhole default route while connected.
        let ams = try text(files["clients/alice/networkmanager/acme-ams-1-ikev2-eap.nmconnection"])
        #expect(ams.hasSuffix("[ipv6]\nmethod=auto\nroute1=::/0,::,1\nroute1_options=type=blackhole\n"))
        #expect(ams.contains("\nesp=aes256-sha256-modp2048-modpnone\n"))
    }

    @Test func secretsAreEscapedAsGLibReadsThem() {
        let escaped = NetworkManagerClientRenderer.escaped
        #expect(escaped(" a\\b\nc\td\r ") == "\\sa\\\\b\\nc\\td\\r\\s")
        #expect(escaped("in side;#=") == "in side;#=")
    }

    @Test func theReadmeInstallsAsRootAndHoldsNoSecret() throws {
        let readme = try text(try files()["clients/alice/README"])
        for line in [
            "    install -d -m 0755 -o root -g root /etc/NetworkManager/vpnprov/acme/alice",
            "    install -m 0644 -o root -g root networkmanager/ca.pem networkmanager/alice.pem /etc/NetworkManager/vpnprov/acme/alice/",
            "    install -m 0600 -o root -g root networkmanager/alice.key /etc/NetworkManager/vpnprov/acme/alice/",
            "    install -m 0600 -o root -g root networkmanager/*.nmconnection /etc/NetworkManager/system-connections/",
            "    nmcli connection load /etc/NetworkManager/system-connections/acme-fra-1-ikev2-psk.nmconnection",
            "    acme ams-1 ikev2-eap",
        ] {
            #expect(readme.split(separator: "\n").contains(Substring(line)), "missing \(line):\n\(readme)")
        }
        for secret in ClientFixtures.secrets { #expect(!readme.contains(secret)) }
    }

    @Test func plannedOffersAreTheNodesProposalsAndConsistent() {
        let plan = ClientPlan.build(inventory: inventory, materials: materials)
        let nm = plan.connections.filter { $0.devices.contains(.networkmanager) }
        #expect(
            nm.map { "\($0.node) \($0.service.rawValue)" } == [
                "fra-1 ikev2-cert", "fra-1 ikev2-eap", "fra-1 ikev2-psk", "ams-1 ikev2-eap",
            ])
        for c in nm {
            let node = inventory.nodes.first { $0.name == c.node }!
            #expect(c.offers[.networkmanager] == ProposalOffer(ike: node.proposals.ike, esp: node.proposals.esp))
            #expect(!c.ipv6LeakingDevices.contains(.networkmanager))
        }
        let views = ClientFixtures.serverViews(inventory, materials: materials)
        let d = Consistency.check(plan: plan, servers: views, inventory: inventory, materials: materials)
        #expect(d.isEmpty, "\(d.map(\.message))")
        // A node whose ESP proposals no longer meet what the keyfile pins is caught for the NetworkManager client too.
        let broken = views.map { v in
            var v = v
            v.connections = v.connections.map { c in
                var c = c
                if c.name == "ikev2-psk" { c.espProposals = ["chacha20poly1305"] }
                return c
            }
            return v
        }
        let found = Consistency.check(plan: plan, servers: broken, inventory: inventory, materials: materials)
        #expect(found.contains { $0.code == .espProposalMismatch && $0.message.hasPrefix("networkmanager ") })
    }

    @Test func aNodeThePluginCannotUseIsAnErrorAtTheUsersDevices() {
        // ams-1 offers ikev2-eap and ipsec-xauth-psk: fine. Without ikev2-eap only IKEv1 is left.
        #expect(!Validator.validate(inventory).contains { $0.code == .networkManagerService })
        let ikev1Only = inventory.with { $0.nodes[1].services = [.ipsecXauthPSK] }
        let d = Validator.validate(ikev1Only).filter { $0.code == .networkManagerService }
        #expect(d.count == 1)
        #expect(d.first?.severity == .error)
        #expect(
            d.first?.message.contains("user 'alice'") == true && d.first?.message.contains("node 'ams-1'") == true
                && d.first?.message.contains("ipsec-xauth-psk") == true)
        // A certificate-only user on an ikev2-psk-eap + ikev2-cert node: the certificate service works.
        let certOnly = inventory.with {
            $0.nodes[1].services = [.ikev2PSKEAP, .ikev2Cert]
            $0.users[0].password = nil
        }
        #expect(!Validator.validate(certOnly).contains { $0.code == .networkManagerService })
        // Without the device nobody is hurt.
        let without = ikev1Only.with { $0.users[0].devices.removeAll { $0 == .networkmanager } }
        #expect(!Validator.validate(without).contains { $0.code == .networkManagerService })
    }
}
