import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Inventories, materials from the deterministic test PKI and golden-file helpers for the client
/// renderer, catalogue and consistency tests.
package enum ClientFixtures {
    package static let file = "inventory/test.yaml"
    package static func loc(_ line: Int, _ column: Int = 3) -> VPNProvModel.SourceLocation {
        VPNProvModel.SourceLocation(file: file, line: line, column: column)
    }

    package static func pem(_ label: String, type: String = "CERTIFICATE") -> String {
        let body = Data("fake \(label) DER bytes for tests".utf8).base64EncodedString()
        return "-----BEGIN \(type)-----\n\(body)\n-----END \(type)-----\n"
    }

    /// fra-1 offers every service (group, IPv6 pool); ams-1 (an IPv4 address) only ikev2-eap and
    /// IKEv1 without a group. alice: certificate + password, every device; bob: password, Android
    /// only, fra-1 only; carol: revoked.
    package static func inventory() -> Inventory {
        let fra = Node(
            name: "fra-1", address: "fra-1.vpn.example.com", id: .fqdn("fra-1.vpn.example.com"), region: "eu-central",
            country: "de", tier: .free, pool: CIDR(address: [10, 10, 0, 0], prefix: 24),
            pool6: CIDR(address: [0xfd, 0, 0, 0x10] + Array(repeating: 0, count: 12), prefix: 112),
            services: Service.allCases, psk: .generate, group: "acme",
            proposals: Proposals(
                ike: ["aes256gcm16-prfsha256-ecp256", "aes256-sha256-modp2048"], esp: ["aes256gcm16", "aes256-sha256"]),
            dns: ["1.1.1.1"], location: loc(10),
            fieldLocations: [
                "id": loc(12, 9), "proposals": loc(5), "services": loc(18, 15), "psk": loc(19, 10),
                "group": loc(20, 12),
            ])
        let ams = Node(
            name: "ams-1", address: "192.0.2.10", id: .ipv4("192.0.2.10"), region: "eu-west", country: "NL", tier: .pro,
            pool: CIDR(address: [10, 20, 0, 0], prefix: 24), services: [.ikev2EAP, .ipsecXauthPSK], psk: .generate,
            proposals: Proposals(ike: ["aes256-sha256-modp2048"], esp: ["aes256-sha256-modp2048-modpnone"]),
            location: loc(22), fieldLocations: ["id": loc(23, 9)])
        let alice = User(
            name: "alice", password: .generate, cert: true, id: .userFQDN("alice@acme.example"),
            nodes: ["fra-1", "ams-1"],
            location: loc(30), fieldLocations: ["password": loc(31, 15), "id": loc(33, 9), "cert": loc(32, 11)])
        let bob = User(
            name: "bob", password: .generate, id: .userFQDN("bob@acme.example"), nodes: ["fra-1"], devices: [.android],
            location: loc(35), fieldLocations: ["password": loc(36, 15)])
        let carol = User(
            name: "carol", password: .generate, id: .userFQDN("carol@acme.example"), nodes: ["fra-1"], revoked: true,
            location: loc(40))
        return Inventory(
            file: file, name: "acme",
            pki: PKISettings(ca: CASettings(name: "acme VPN Root CA", key: .rsa2048, days: 3650)),
            nodes: [fra, ams], users: [alice, bob, carol])
    }

    /// Real materials from the deterministic test PKI (`GoldenPKI`): goldens hold real certificate,
    /// CRL and PKCS#12 bytes.
    package static func materials() -> Materials {
        let inventory = inventory()
        func node(_ name: String) -> Node { inventory.nodes.first { $0.name == name }! }
        let alice = inventory.users.first { $0.name == "alice" }!
        return Materials(
            caCertificatePEM: GoldenPKI.ca.pem, caCommonName: GoldenPKI.caName, caKeyType: .rsa2048,
            crlPEM: GoldenPKI.crlPEM(revokedUsers: ["carol"]),
            nodes: [
                "fra-1": NodeMaterials(
                    certificatePEM: GoldenPKI.serverCertificatePEM(node("fra-1"), in: inventory),
                    privateKeyPEM: GoldenPKI.keyPEM("server"),
                    psk: "fra psk with \"quotes\" & <tags>"),
                "ams-1": NodeMaterials(
                    certificatePEM: GoldenPKI.serverCertificatePEM(node("ams-1"), in: inventory),
                    privateKeyPEM: GoldenPKI.keyPEM("server"),
                    psk: "ams-psk-0123456789"),
            ],
            users: [
                "alice": UserMaterials(
                    password: "alice pass # }{", certificatePEM: GoldenPKI.clientCertificatePEM(alice, in: inventory),
                    privateKeyPEM: GoldenPKI.keyPEM("client"), p12: GoldenPKI.storedP12,
                    p12Password: GoldenPKI.p12Password,
                    keyType: .rsa2048,
                    openP12: GoldenPKI.storedOpenP12),
                "bob": UserMaterials(password: "bob-password-123"),
            ])
    }

    /// Every secret in `materials()`, to assert what must never appear in public files.
    package static let secrets = [
        "fra psk with", "ams-psk-0123456789", "alice pass", "p12-secret-alice", "bob-password-123",
    ]

    /// The server configuration the server plan produces for these nodes (connection order
    /// cert, eap, psk-eap, psk, IKEv1 main, IKEv1 aggressive), as a ServerView.
    package static func serverViews(_ inventory: Inventory, materials: Materials) -> [ServerView] {
        inventory.nodes.map { node in
            var conns: [ServerConnectionView] = []
            func v2(_ name: String, _ local: AuthMethod, _ remote: ServerRoundView, certreq: Bool = false)
                -> ServerConnectionView
            {
                ServerConnectionView(
                    name: name, version: 2, aggressive: nil, localAuth: local, localID: node.id, remote: [remote],
                    ikeProposals: node.proposals.ike,
                    espProposals: AppleSA.serverESPProposals(from: node.proposals, pfs: node.apple.pfs ?? true),
                    sendCertreq: certreq)
            }
            func v1(_ name: String, aggressive: Bool, id: IdentityPattern) -> ServerConnectionView {
                ServerConnectionView(
                    name: name, version: 1, aggressive: aggressive, localAuth: .psk, localID: node.id,
                    remote: [ServerRoundView(auth: .psk, id: id), ServerRoundView(auth: .xauth, id: .any)],
                    ikeProposals: ["aes256-sha256-modp2048", "aes128-sha1-modp2048"],
                    espProposals: ["aes256-sha256", "aes128-sha1"],
                    sendCertreq: false)
            }
            let s = Set(node.services)
            if s.contains(.ikev2Cert) {
                conns.append(v2("ikev2-cert", .pubkey, ServerRoundView(auth: .pubkey, id: .any), certreq: true))
            }
            if s.contains(.ikev2EAP) {
                conns.append(v2("ikev2-eap", .pubkey, ServerRoundView(auth: .eapMSCHAPv2, id: .any, eapID: .any)))
            }
            if s.contains(.ikev2PSKEAP) {
                conns.append(
                    v2(
                        "ikev2-psk-eap", .psk,
                        ServerRoundView(
                            auth: .eapMSCHAPv2, id: .exactly(.fqdn("psk-eap.\(inventory.name)")), eapID: .any)))
            }
            if s.contains(.ikev2PSK) { conns.append(v2("ikev2-psk", .psk, ServerRoundView(auth: .psk, id: .any))) }
            if s.contains(.ipsecXauthPSK) {
                conns.append(v1("ipsec-xauth-psk-main", aggressive: false, id: .any))
                if let group = node.group {
                    conns.append(v1("ipsec-xauth-psk-aggressive", aggressive: true, id: .exactly(.keyID(group))))
                }
            }
            if s.contains(.ipsecXauthHybrid) {
                conns.append(
                    ServerConnectionView(
                        name: "ipsec-xauth-hybrid-aggressive", version: 1, aggressive: true, localAuth: .pubkey,
                        localID: node.id, remote: [ServerRoundView(auth: .xauth, id: .any)],
                        ikeProposals: ["aes256-sha256-modp2048", "aes128-sha1-modp2048"],
                        espProposals: ["aes256-sha256", "aes128-sha1"],
                        sendCertreq: false))
            }
            let users = inventory.users.filter { !$0.revoked && $0.nodes.contains(node.name) }.map(\.name)
            return ServerView(
                node: node.name, connections: conns,
                pskIdentities: node.services.contains(where: \.needsPSK) ? [node.id] : [],
                passwordUsers: users, caCertificatePEM: materials.caCertificatePEM)
        }
    }
}

/// Byte-for-byte golden comparison. VPNPROV_RECORD=1 rewrites the goldens and fails on purpose.
package enum Golden {
    package static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden")
    }

    package static func check(
        _ files: [OutputFile], against directory: String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let dir = root.appendingPathComponent(directory)
        if ProcessInfo.processInfo.environment["VPNPROV_RECORD"] == "1" {
            try? FileManager.default.removeItem(at: dir)
            for file in files {
                let url = dir.appendingPathComponent(file.path)
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(file.contents).write(to: url)
            }
            Issue.record(
                "recorded \(files.count) golden files under \(directory); unset VPNPROV_RECORD and run again",
                sourceLocation: sourceLocation)
            return
        }
        let expected = (FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? [])
            .filter { path in
                var isDir: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: dir.appendingPathComponent(path).path, isDirectory: &isDir)
                return !isDir.boolValue
            }
            .sorted()
        #expect(
            files.map(\.path).sorted() == expected, "file list differs from the goldens in \(directory)",
            sourceLocation: sourceLocation)
        for file in files {
            let data = FileManager.default.contents(atPath: dir.appendingPathComponent(file.path).path)
            // Compared as a Bool so a failure never prints file contents (goldens may hold secrets).
            let same = data.map { [UInt8]($0) } == file.contents
            #expect(
                same, "\(file.path) differs from its golden (VPNPROV_RECORD=1 re-records)",
                sourceLocation: sourceLocation)
        }
    }
}
