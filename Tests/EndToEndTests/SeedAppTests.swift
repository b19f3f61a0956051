import Foundation
import Testing
import VPNProvTestHarness

/// The seed iOS app's own model, end to end against real strongSwan: every catalogue entry marked
/// `fourFieldModel` works when configured exactly as the seed's code does from its four fields (IKEv2 and IPSec,
/// with and without PSK, on an IPv4 node and a DNS-name node); an unmarked entry configured that way does not;
/// the IKEv1 hybrid service works through the generated clients (Apple, Linux) and refuses a wrong XAuth password
/// and a server certificate the device does not trust; and the IKEv1 connection order does not decide anything.
/// Each test generates its deployment and starts its charon pairs itself, so the tests run side by side.
@Suite(.strongSwan)
struct SeedAppTests {
    static func catalogue(_ d: GeneratedDeployment) throws -> [[String: Any]] {
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: d.out.appendingPathComponent("catalog/servers.json")))
        guard let servers = (json as? [String: Any])?["servers"] as? [[String: Any]] else {
            throw HarnessError("no servers")
        }
        return servers
    }

    static func credentials(_ d: GeneratedDeployment, node: String) throws -> SeedAppTranslator.Credentials {
        let ca = try Data(contentsOf: try d.node(node).directory.appendingPathComponent("swanctl/x509ca/ca.pem"))
        let psk = node == "seed-v4" ? Inventories.seedV4PSK : Inventories.seedDNSPSK
        return .init(username: "sam", password: Inventories.samPassword, psk: psk, caPEM: ca)
    }

    @Test(
        "The seed app's code path: every fourFieldModel entry (and, with the CA installed, every certificate entry) connects and pings, on an IPv4 and a DNS-name node"
    )
    func fourFieldEntriesConnect() throws {
        try StrongSwanEnvironment.require()
        try fourFieldEntriesConnect(.host)
    }

    @Test("The seed app's code path on strongSwan 6.0 as on 5.9", .strongSwan6)
    func fourFieldEntriesConnectOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try fourFieldEntriesConnect(.trixie)
    }

    /// An entry the seed's code sets up from its four fields on a device that holds what `needsOnDevice` names
    /// of the deployment's own (its CA, from a profile), which the emulation installs: `fourFieldModel`, or the
    /// same four fields on a node whose certificate the device must first learn to trust.
    static func usableWithTheCA(_ entry: [String: Any]) -> Bool {
        if entry["fourFieldModel"] as? Bool == true { return true }
        let needs = entry["needsOnDevice"] as? [String] ?? []
        return needs == ["ca-certificate"] && ["ikev2-eap", "ipsec-xauth-hybrid"].contains(entry["service"] as? String)
    }

    private func fourFieldEntriesConnect(_ builds: BuildPair) throws {
        let seed = try Inventories.generateSeed()
        let servers = try Self.catalogue(seed)
        var proven: [String] = []
        // What a device that never installed a profile trusts: public roots only, none of them the deployment's.
        let publicRoot = try Data(
            contentsOf: URL(fileURLWithPath: try StrongSwanPKI.make(name: "a public root").caCert))
        for node in seed.nodes {
            let entries = servers.filter { $0["node"] as? String == node.name }
            let marked = entries.filter { $0["fourFieldModel"] as? Bool == true }.compactMap {
                $0["service"] as? String
            }
            // The seed's nodes hold certificates of the deployment CA: only the PSK entries need nothing on the
            // device; the certificate entries need the CA (an app alone cannot install it).
            #expect(Set(marked) == ["ikev2-psk-eap", "ipsec-xauth-psk"], "\(node.name): marked \(marked)")
            let usable = entries.filter(Self.usableWithTheCA).compactMap { $0["service"] as? String }
            #expect(
                Set(usable) == ["ikev2-eap", "ikev2-psk-eap", "ipsec-xauth-psk", "ipsec-xauth-hybrid"],
                "\(node.name): usable with the CA installed \(usable)")
            let nut = try NodeUnderTest.start(seed, node: node.name, builds: builds)
            defer { nut.teardown() }
            let credentials = try Self.credentials(seed, node: node.name)
            for entry in entries {
                let service = entry["service"] as? String ?? "?"
                let label = "seed app → \(node.name) \(service)"
                let setup = try SeedAppTranslator.translate(entry: entry, credentials: credentials)
                if Self.usableWithTheCA(entry) {
                    do {
                        let ikeVersion = entry["protocol"] as? String == "IKEv2" ? 2 : 1
                        let proof = try nut.prove(.translated(setup), label: label, ikeVersion: ikeVersion)
                        let peer = proof.serverPeerConfig ?? "?"
                        #expect(
                            ikeVersion == 2 ? peer == service : peer.hasPrefix(service + "-"),
                            "\(label): server chose \(peer)")
                        proven.append("\(node.name) \(service)")
                    } catch {
                        Issue.record("\(error)")
                    }
                    if service == "ikev2-eap" {
                        // The same four fields on a device with only public roots: this node's certificate comes from
                        // the deployment CA (needsOnDevice says so), and the device refuses it.
                        var publicOnly = credentials
                        publicOnly.caPEM = publicRoot
                        let untrusted = try SeedAppTranslator.translate(entry: entry, credentials: publicOnly)
                        _ = try nut.refuse(.translated(untrusted), label: "\(label), only a public root")
                        #expect(nut.client.logContains("no trusted"), "\(label): refused for another reason")
                    }
                } else {
                    // ikev2-psk and ikev2-cert: the seed's code (extended authentication always on) never reaches
                    // their connection: refused, or (ikev2-cert, whose four fields read like ikev2-eap's) an EAP
                    // tunnel on the node's ikev2-eap connection instead.
                    #expect(["ikev2-psk", "ikev2-cert"].contains(service), "\(label): unexpectedly unmarked")
                    let peer: String
                    do {
                        peer = try nut.prove(.translated(setup), label: label, ikeVersion: 2).serverPeerConfig ?? "?"
                    } catch {
                        peer = "refused"
                    }
                    #expect(peer != service, "\(label): the seed's code reached \(service)")
                    print("e2e seed app: unmarked \(node.name) \(service) configured the seed's way: \(peer)")
                }
            }
        }
        // IKEv2 and IPSec, with and without PSK, on both nodes.
        #expect(proven.count == 8, "\(builds): proven: \(proven)")
        print(
            "e2e seed app on strongSwan \(builds): \(proven.count) four-field handshakes proven (\(proven.joined(separator: ", ")))"
        )
    }

    @Test(
        "ipsec-xauth-hybrid through the generated Apple and Linux clients; wrong XAuth password and untrusted server refused"
    )
    func hybridThroughGeneratedClients() throws {
        try StrongSwanEnvironment.require()
        try hybridThroughGeneratedClients(.host)
    }

    @Test("ipsec-xauth-hybrid on strongSwan 6.0 as on 5.9: generated Apple and Linux clients, refusals", .strongSwan6)
    func hybridThroughGeneratedClientsOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try hybridThroughGeneratedClients(.trixie)
    }

    private func hybridThroughGeneratedClients(_ builds: BuildPair) throws {
        let seed = try Inventories.generateSeed(label: "seed-hybrid")
        let cases = try seed.clientCases().filter { $0.service == "ipsec-xauth-hybrid" }
        let kinds = Set(cases.map { "\($0.kind.rawValue) \($0.node)" })
        // Apple devices check a hybrid server against the address they dial: a profile only for the IPv4 node.
        #expect(kinds == ["apple seed-v4", "linux seed-v4", "linux seed-dns"], "cases: \(kinds.sorted())")
        let apple = try #require(cases.first { $0.kind == .apple })
        do {
            // A server certificate the device does not trust: the profile's root payload is another CA. First, on a
            // fresh client daemon (loaded CA certificates stay loaded for later clients).
            let nut = try NodeUnderTest.start(seed, node: "seed-v4", builds: builds)
            defer { nut.teardown() }
            let other = try StrongSwanPKI.make(name: "Somebody Else's CA", keyType: "rsa")
            let others = try apple.appleOthers.map { p -> [String: Any] in
                guard p["PayloadType"] as? String == "com.apple.security.root" else { return p }
                var q = p
                q["PayloadContent"] = try StrongSwanPKI.der(ofPEM: other.caCert)
                return q
            }
            let untrusted = try AppleProfileTranslator.translate(
                vpnPayload: try #require(apple.applePayload), otherPayloads: others)
            let clientMark = nut.client.log.utf8.count
            _ = try nut.refuse(.translated(untrusted), label: "hybrid untrusted server")
            let clientLog = NodeUnderTest.since(clientMark, nut.client.log)
            #expect(clientLog.contains("no trusted RSA public key found for '192.0.2.1'"), "client log:\n\(clientLog)")
        }
        for node in seed.nodes {
            let nut = try NodeUnderTest.start(seed, node: node.name, builds: builds)
            defer { nut.teardown() }
            for c in cases where c.node == node.name {
                let proof = try nut.prove(try c.make(), label: c.label, ikeVersion: 1)
                #expect(
                    proof.serverPeerConfig == "ipsec-xauth-hybrid-aggressive",
                    "\(c.label): \(proof.serverPeerConfig ?? "?")")
                #expect(
                    proof.serverLog.contains("XAuth authentication of 'sam' successful"),
                    "\(c.label):\n\(proof.serverLog)")
            }
        }

        let nut = try NodeUnderTest.start(seed, node: "seed-v4", builds: builds)
        defer { nut.teardown() }
        // Wrong XAuth password.
        var payload = try #require(apple.applePayload)
        var ipsec = try #require(payload["IPSec"] as? [String: Any])
        ipsec["XAuthPassword"] = "Wr0ng #password\" 9Tz"
        payload["IPSec"] = ipsec
        let wrong = try AppleProfileTranslator.translate(vpnPayload: payload, otherPayloads: apple.appleOthers)
        let wrongLog = try nut.refuse(.translated(wrong), label: "hybrid wrong XAuth password")
        #expect(wrongLog.contains("XAuth authentication of 'sam' failed"), "server log:\n\(wrongLog)")

    }

    @Test(
        "IKEv1 connection order: with the hybrid connection first or last, PSK-XAuth and hybrid clients reach their own"
    )
    func ikev1OrderDoesNotDecide() throws {
        try StrongSwanEnvironment.require()
        try ikev1OrderDoesNotDecide(.host)
    }

    @Test("IKEv1 connection order on strongSwan 6.0 as on 5.9: it does not decide", .strongSwan6)
    func ikev1OrderDoesNotDecideOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try ikev1OrderDoesNotDecide(.trixie)
    }

    private func ikev1OrderDoesNotDecide(_ builds: BuildPair) throws {
        let seed = try Inventories.generateSeed(label: "seed-order")
        // seed-v4 has a group (PSK-XAuth in Aggressive Mode, like hybrid), seed-dns none (PSK-XAuth in Main Mode).
        let expected: [String: Set<String>] = [
            "seed-v4": [
                "apple ipsec-xauth-psk", "apple ipsec-xauth-hybrid", "linux ipsec-xauth-psk",
                "linux ipsec-xauth-hybrid",
            ],
            "seed-dns": ["apple ipsec-xauth-psk", "linux ipsec-xauth-psk", "linux ipsec-xauth-hybrid"],
        ]
        // The generated order (hybrid last), then the hybrid connection moved before the PSK-XAuth ones.
        let hybridFirst: (String) -> String = { conf in
            guard let start = conf.range(of: "\n   # \"IKEv1 Hybrid"),
                let end = conf.range(of: "\n   }\n", range: start.upperBound..<conf.endIndex),
                let psk = conf.range(of: "\n   # \"IKEv1 Main Mode")
            else { return conf }
            let block = String(conf[start.lowerBound..<end.upperBound])
            var moved = conf
            moved.removeSubrange(start.lowerBound..<end.upperBound)
            moved.insert(contentsOf: block, at: moved.range(of: String(conf[psk]))!.lowerBound)
            return moved
        }
        for (node, kinds) in expected.sorted(by: { $0.key > $1.key }) {
            let cases = try seed.clientCases().filter { $0.node == node && $0.service.hasPrefix("ipsec") }
            #expect(Set(cases.map { "\($0.kind.rawValue) \($0.service)" }) == kinds, "\(node)")
            for (order, edit) in [("hybrid last", nil), ("hybrid first", hybridFirst)]
                as [(String, ((String) -> String)?)]
            {
                let nut = try NodeUnderTest.start(seed, node: node, builds: builds, editConf: edit)
                defer { nut.teardown() }
                let names = try GeneratedDeployment.connectionNames(inFile: nut.node.confFile).filter {
                    $0.hasPrefix("ipsec")
                }
                let hybridIndex = try #require(names.firstIndex(of: "ipsec-xauth-hybrid-aggressive"))
                #expect(
                    order == "hybrid first" ? hybridIndex == 0 : hybridIndex == names.count - 1,
                    "\(node) \(order): \(names)")
                for c in cases {
                    let proof = try nut.prove(try c.make(), label: "\(order): \(c.label)", ikeVersion: 1)
                    let peer = proof.serverPeerConfig ?? "?"
                    #expect(peer.hasPrefix(c.service + "-"), "\(order): \(c.label): server chose \(peer)")
                }
            }
        }
    }
}
