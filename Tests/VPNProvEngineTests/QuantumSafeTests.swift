import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// Quantum-safe tunnels (docs/quantum-safe.md): `quantum_safe:` checked at its lines, what the nodes and the Linux
/// clients get, the consistency check's reading of additional key exchanges, the catalogue's entry, and
/// `rotate-ppk`. The tunnels themselves, with strongSwan 6.1, are in EndToEndTests/QuantumSafeTunnelTests.
@Suite(.temporaries) struct QuantumSafeTests {
    /// q1 requires ML-KEM-768 and a PPK; q2 admits classical clients and takes a PPK where a client has one.
    static func inventory(q1: String = "{ml_kem: [mlkem768], ppk: required}", bobDevices: String = "[linux, apple]")
        -> String
    {
        """
        vpnprov: 1
        name: pq
        nodes:
          q1:
            address: 192.0.2.1
            pool: 10.9.0.0/24
            services: [ikev2-cert, ikev2-eap]
            quantum_safe: \(q1)
          q2:
            address: 192.0.2.2
            pool: 10.9.1.0/24
            services: [ikev2-eap, ipsec-xauth-psk]
            psk: gen
          q3:
            address: 192.0.2.3
            pool: 10.9.2.0/24
            services: [ikev2-eap]
            quantum_safe:
              ml_kem: [mlkem768, mlkem1024]
              classical_fallback: true
              ppk: optional
        users:
          alice:
            password: gen
            cert: true
            devices: [linux]
          bob:
            password: gen
            devices: \(bobDevices)
            nodes: [q2, q3]

        """
    }

    static func findings(_ text: String) -> [Diagnostic] {
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        return decoded.diagnostics + (decoded.inventory.map { Validator.validate($0) } ?? [])
    }

    static func line(of needle: String, in text: String) -> Int? {
        text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(needle) }.map { $0 + 1 }
    }

    /// `user`'s PPK as the state holds it.
    static func ppk(of user: String, _ dir: String) throws -> String? {
        let json = try JSONSerialization.jsonObject(
            with: try #require(FileManager.default.contents(atPath: dir + "/state/secrets.json")))
        return ((json as? [String: Any])?["ppks"] as? [String: String])?[user]
    }

    @Test func eachBadValueIsReportedAtItsLine() {
        #expect(Self.findings(Self.inventory()).filter { $0.severity == .error } == [])
        for (q1, code) in [
            ("{ml_kem: [mlkem999]}", "invalid-value"),
            ("{ml_kem: []}", "invalid-value"),
            ("{ml_kem: [mlkem768], classical_fallback: perhaps}", "type-mismatch"),
            ("{ppk: sometimes}", "invalid-value"),
            ("{classical_fallback: true}", "missing-key"),
            ("{ml_kem: [mlkem768], kyber: true}", "unknown-key"),
        ] {
            let text = Self.inventory(q1: q1)
            let found = Self.findings(text).filter { $0.severity == .error }
            #expect(found.map(\.code.rawValue) == [code], "\(q1): \(found.map(\.message))")
            #expect(found.first?.location?.line == Self.line(of: "quantum_safe: \(q1)", in: text), "\(q1)")
        }
    }

    @Test func aNodeMayNotAskWhatItsClientsOrServicesCannotDo() {
        // An Android device on a node that requires ML-KEM (its profile carries none): at the node's quantum_safe.
        let apple = Self.inventory(bobDevices: "[android]").replacingOccurrences(
            of: "    nodes: [q2, q3]", with: "    nodes: [q1, q2, q3]")
        let device = Self.findings(apple).filter { $0.code == .quantumSafeDevice }
        #expect(
            device.count == 1 && device.first?.message.contains("android ('bob')") == true, "\(device.map(\.message))")
        #expect(device.first?.location?.line == Self.line(of: "quantum_safe: {ml_kem", in: apple))
        // The same device on q3, which admits classical clients: nothing; an Apple device on q1 (its profile carries
        // both): nothing.
        #expect(!Self.findings(Self.inventory(bobDevices: "[android]")).contains { $0.code == .quantumSafeDevice })
        let appleOnQ1 = Self.inventory(bobDevices: "[apple]").replacingOccurrences(
            of: "    nodes: [q2, q3]", with: "    nodes: [q1, q2, q3]")
        #expect(!Self.findings(appleOnQ1).contains { $0.code == .quantumSafeDevice })
        // IKEv1 on a quantum-safe node.
        let v1 = Self.inventory().replacingOccurrences(
            of: "services: [ikev2-cert, ikev2-eap]\n",
            with: "services: [ikev2-cert, ikev2-eap, ipsec-xauth-psk]\n    psk: gen\n")
        #expect(Self.findings(v1).map(\.code).contains(.quantumSafeIKEv1))
        // A required PPK on a node of RADIUS accounts (none of which has a PPK).
        let radius =
            Self.inventory(q1: "{ppk: required}").replacingOccurrences(
                of: "    quantum_safe: {ppk: required}\n",
                with: "    quantum_safe: {ppk: required}\n    accounts: radius\n"
            )
            .replacingOccurrences(
                of: "nodes:\n",
                with:
                    "accounts:\n  database: env:DB\n  radius_database: env:RDB\n  servers:\n    rad-1: { address: 192.0.2.11 }\nnodes:\n"
            )
        #expect(
            Self.findings(radius).map(\.code).contains(.quantumSafeRadius), "\(Self.findings(radius).map(\.message))")
    }

    /// What each client kind's generated configuration carries (its description's `quantumSafe`), with the source of
    /// each row in the description; a new kind without its row fails here.
    @Test func eachClientKindSaysWhatItCarries() {
        let expected: [Device: QuantumSafeSupport] = [
            .apple: [.mlKEM, .ppk], .android: [.mlKEM, .mlKEM512], .linux: [.mlKEM, .mlKEM512, .ppk],
            .windows: [], .networkmanager: [],
        ]
        for device in Device.allCases {
            #expect(device.kind.quantumSafe == expected[device], "\(device)")
        }
        // Apple computes no ML-KEM-512: a node offering only that requires what Apple lacks.
        let only512 = QuantumSafe(mlKEM: [.mlkem512], classicalFallback: false, ppk: nil)
        #expect(!only512.admits(Device.apple.kind.quantumSafe) && only512.admits(Device.linux.kind.quantumSafe))
        #expect(
            QuantumSafe(mlKEM: [.mlkem512, .mlkem1024], classicalFallback: false, ppk: nil)
                .methods(for: Device.apple.kind.quantumSafe) == [.mlkem1024])
    }

    /// strongSwan's selection of additional key exchanges (proposal.c, select_algo): a side without transforms for a
    /// slot takes `none`.
    @Test func additionalKeyExchangesMatchAsStrongSwanSelectsThem() {
        let classical = ["aes256gcm16-prfsha256-ecp256"]
        let hybrid = ["aes256gcm16-prfsha256-ecp256-ke1_mlkem768"]
        let optional = ["aes256gcm16-prfsha256-ecp256-ke1_mlkem768-ke1_none"]
        let other = ["aes256gcm16-prfsha256-ecp256-ke1_mlkem1024"]
        func match(_ c: [String], _ s: [String]) -> Bool { Proposal.intersects(c, s, purpose: .ike, withGroups: true) }
        #expect(match(hybrid, hybrid) && match(hybrid, optional) && match(classical, optional))
        #expect(!match(classical, hybrid) && !match(hybrid, classical) && !match(other, hybrid))
        // The inventory's own proposals still take none.
        #expect(throws: ProposalError.self) { try Proposal.parse(hybrid[0], purpose: .ike) }
    }

    @Test func nodesAndLinuxClientsGetWhatTheNodeAsks() throws {
        let dir = try temporaryDirectory("pq")
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let run = vpnprov(["generate", "--quiet"], in: dir)
        try #require(run.code == 0, "\(run.err)")
        func read(_ path: String) throws -> String { try String(contentsOfFile: dir + "/out/" + path, encoding: .utf8) }
        let q1 = try read("servers/q1/swanctl/swanctl.conf")
        #expect(
            q1.contains(
                "proposals = \"aes256gcm16-prfsha256-ecp256-ke1_mlkem768, aes256-sha256-modp2048-ke1_mlkem768\""))
        #expect(q1.components(separatedBy: "ppk_required = yes").count == 3, "both IKEv2 connections require the PPK")
        let q3 = try read("servers/q3/swanctl/swanctl.conf")
        #expect(q3.contains("-ke1_mlkem768-ke1_mlkem1024-ke1_none") && !q3.contains("ppk_required"))
        let q2 = try read("servers/q2/swanctl/swanctl.conf")
        #expect(!q2.contains("ke1_") && !q2.contains("ppk"))
        // Each node files the PPKs of exactly the users who may use it.
        let secrets1 = try read("servers/q1/swanctl/conf.d/secrets.conf")
        let secrets3 = try read("servers/q3/swanctl/conf.d/secrets.conf")
        #expect(secrets1.contains("id = \"ppk-alice\"") && !secrets1.contains("ppk-bob"))
        #expect(secrets3.contains("id = \"ppk-alice\"") && secrets3.contains("id = \"ppk-bob\""))
        #expect(!(try read("servers/q2/swanctl/conf.d/secrets.conf")).contains("ppk-"))
        // alice's Linux client asks for ML-KEM (never for none) and sends her PPK; the same key as the nodes'.
        let linux = try read("clients/alice/linux/swanctl/swanctl.conf")
        #expect(linux.contains("ke1_mlkem768-ke1_mlkem1024\"") && !linux.contains("ke1_none"))
        #expect(linux.contains("ppk_id = \"ppk-alice\"") && linux.contains("ppk_required = yes"))
        let clientSecrets = try read("clients/alice/linux/swanctl/conf.d/secrets.conf")
        let ppkSection = try #require(clientSecrets.range(of: "ppk-1 {")).upperBound
        let key = try #require(
            clientSecrets[ppkSection...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("secret = ") })
        #expect(key.hasPrefix("secret = ") && secrets1.contains(key), "\(key)")
        // bob's Apple profile on q3, with the types Apple's schema gives these keys (apple/device-management,
        // com.apple.vpn.managed, IKEv2: PPK <data>, PPKIdentifier <string>, PPKMandatory <integer> 0 or 1) and its
        // documentation (IKESecurityAssociationParameters.PostQuantumKeyExchangeMethods: up to seven integers of
        // 0, 36, 37, one per additional exchange); q2's payloads carry none of them.
        let profile = try #require(
            FileManager.default.contents(atPath: dir + "/out/clients/bob/bob.mobileconfig"))
        let plist = try #require(
            try PropertyListSerialization.propertyList(from: profile, format: nil) as? [String: Any])
        let vpns = (plist["PayloadContent"] as? [[String: Any]] ?? []).filter {
            $0["PayloadType"] as? String == "com.apple.vpn.managed" && $0["VPNType"] as? String == "IKEv2"
        }
        let byNode = Dictionary(
            vpns.map { (($0["PayloadIdentifier"] as? String ?? "").contains(".q3.") ? "q3" : "q2", $0) },
            uniquingKeysWith: { first, _ in first })
        let q3IKEv2 = try #require(byNode["q3"]?["IKEv2"] as? [String: Any])
        #expect((q3IKEv2["PPK"] as? Data).map { String(decoding: $0, as: UTF8.self) } == (try Self.ppk(of: "bob", dir)))
        #expect(q3IKEv2["PPKIdentifier"] as? String == "ppk-bob")
        #expect(q3IKEv2["PPKMandatory"] as? Int == 0, "q3's PPK is optional")
        let ikeSA = try #require(q3IKEv2["IKESecurityAssociationParameters"] as? [String: Any])
        #expect(ikeSA["PostQuantumKeyExchangeMethods"] as? [Int] == [36], "q3's first method Apple computes")
        let childSA = try #require(q3IKEv2["ChildSecurityAssociationParameters"] as? [String: Any])
        #expect(childSA["PostQuantumKeyExchangeMethods"] == nil, "no additional exchange on Child SA rekeys")
        let q2IKEv2 = try #require(byNode["q2"]?["IKEv2"] as? [String: Any])
        #expect(q2IKEv2["PPK"] == nil && q2IKEv2["PPKIdentifier"] == nil && q2IKEv2["PPKMandatory"] == nil)
        #expect(
            (q2IKEv2["IKESecurityAssociationParameters"] as? [String: Any])?["PostQuantumKeyExchangeMethods"] == nil)
        // The catalogue says what an app must set.
        let catalog = try JSONSerialization.jsonObject(with: Data(read("catalog/servers.json").utf8)) as? [String: Any]
        let entries = catalog?["servers"] as? [[String: Any]] ?? []
        func entry(_ id: String) -> [String: Any]? { entries.first { $0["id"] as? String == id } }
        let q1e = try #require(entry("q1-ikev2-eap")?["quantumSafe"] as? [String: Any])
        #expect(q1e["additionalKeyExchangeMethods"] as? [Int] == [36] && q1e["ppk"] as? String == "required")
        #expect(q1e["classicalFallback"] as? Bool == false)
        let q3e = try #require(entry("q3-ikev2-eap")?["quantumSafe"] as? [String: Any])
        #expect(q3e["additionalKeyExchangeMethods"] as? [Int] == [36, 37] && q3e["classicalFallback"] as? Bool == true)
        #expect(entry("q2-ikev2-eap")?["quantumSafe"] == nil && entry("q2-ipsec-xauth-psk")?["quantumSafe"] == nil)
        // The seed's four-field code sets neither: usable on q3, not on q1.
        #expect(entry("q1-ikev2-eap")?["fourFieldModel"] as? Bool == false)

        // rotate-ppk: a new key, on the nodes and in the client, the old one gone.
        let rotated = vpnprov(["rotate-ppk", "alice", "--quiet"], in: dir)
        #expect(rotated.code == 0, "\(rotated.err)")
        let after = try read("servers/q1/swanctl/conf.d/secrets.conf")
        #expect(!after.contains(key) && after.contains("id = \"ppk-alice\""))
        #expect(!(try read("clients/alice/linux/swanctl/conf.d/secrets.conf")).contains(key))
        let refused = vpnprov(["rotate-ppk", "carol", "--quiet"], in: dir)
        #expect(refused.code != 0 && refused.err.contains("carol"), "\(refused.err)")
        // A secret never printed.
        #expect(!run.out.contains(key) && !run.err.contains(key) && !rotated.err.contains(key))
    }
}
