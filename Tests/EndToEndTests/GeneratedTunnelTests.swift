import Foundation
import Testing
import VPNProvCrypto
import VPNProvSupport
import VPNProvTestHarness

/// The project's main promise, proven with real strongSwan: every client configuration `vpnprov generate` writes
/// (Apple payloads and Android .sswan profiles translated into the strongSwan client they amount to, Linux
/// swanctl directories as written) completes a handshake against its generated node and carries IPv4 (and IPv6
/// where the node has an IPv6 pool) through the tunnel; and wrong credentials are refused for the right reason.
/// Each test generates its deployment and starts its charon pairs itself, so the tests run side by side: one
/// after another, the suite's chain (the two matrices above all) was the last thing of the whole run to end.
@Suite(.strongSwan)
struct GeneratedTunnelTests {
    /// Handshakes and refusals proven, for the summary line CI logs show.
    struct Tally {
        var handshakes = 0
        var refusals = 0
        /// "kind service peer-config", e.g. "apple ipsec-xauth-psk ipsec-xauth-psk-main".
        var covered: Set<String> = []
        /// Handshakes per client kind.
        var byKind: [String: Int] = [:]
        /// Client kinds whose "no IPv6 outside the tunnel" was proven (node without pool6), with counts.
        var ipv6Blocked: [String: Int] = [:]
        var kinds: String { byKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
    }

    /// The matrix tests' lines, so whichever finishes last prints one line with both versions' counts.
    final class MatrixSummary: Sendable {
        static let shared = MatrixSummary()
        private let lines = Locked<[String: String]>([:])

        func record(_ build: String, _ line: String) {
            let all = lines.withLock {
                $0[build] = line
                return $0
            }
            if StrongSwanBuild.all.allSatisfy({ all[$0.name] != nil }) {
                print("e2e summary: " + StrongSwanBuild.all.compactMap { all[$0.name] }.joined(separator: " | "))
            }
        }
    }

    /// What strongSwan must have negotiated / been configured with for an inventory's proposals.
    struct ExpectedProposals {
        var ikeEncryption: String
        var ikeDHGroup: String
        /// The server's "configured proposals:" log line for IKEv2 (cfg level 2).
        var configuredIKEv2: String
    }

    static let exampleProposals = ExpectedProposals(
        ikeEncryption: "AES_GCM_16", ikeDHGroup: "ECP_256",
        configuredIKEv2: "configured proposals: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_256/ECP_256, "
            + "IKE:AES_CBC_256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048")
    static let labProposals = ExpectedProposals(
        ikeEncryption: "AES_GCM_16", ikeDHGroup: "ECP_384",
        configuredIKEv2: "configured proposals: IKE:AES_GCM_16_128/PRF_HMAC_SHA2_384/ECP_384, "
            + "IKE:AES_CBC_256/HMAC_SHA2_256_128/PRF_HMAC_SHA2_256/MODP_2048")

    /// The service × client kind combinations a full run must prove, both IKEv1 modes included.
    static let requiredCombinations = [
        "apple ikev2-cert ikev2-cert", "apple ikev2-eap ikev2-eap", "apple ikev2-psk ikev2-psk",
        "apple ikev2-psk-eap ikev2-psk-eap", "apple ipsec-xauth-psk ipsec-xauth-psk-aggressive",
        "apple ipsec-xauth-psk ipsec-xauth-psk-main",
        "android ikev2-cert ikev2-cert", "android ikev2-eap ikev2-eap",
        "linux ikev2-cert ikev2-cert", "linux ikev2-eap ikev2-eap", "linux ikev2-psk ikev2-psk",
        "linux ikev2-psk-eap ikev2-psk-eap", "linux ipsec-xauth-psk ipsec-xauth-psk-aggressive",
        "linux ipsec-xauth-psk ipsec-xauth-psk-main",
        "windows ikev2-cert ikev2-cert", "windows ikev2-eap ikev2-eap",
    ]

    @Test(
        "Generated matrix on strongSwan 5.9 (the host): every client of example.yaml and the lab inventory connects; bad ones are refused"
    )
    func matrix() throws {
        try StrongSwanEnvironment.require()
        let line = try fullMatrix(.host)
        print("e2e: \(line)")
        MatrixSummary.shared.record(StrongSwanBuild.host.name, line)
    }

    @Test(
        "Generated matrix on strongSwan 6.0 (Debian 13 tree) as on 5.9, and mixed pairs: 6.0 server with 5.9 clients and the reverse",
        .strongSwan6)
    func matrixOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        var line = try fullMatrix(.trixie)
        // Mixed pairs: the lab inventory has every service × client kind (both IKEv1 modes), so it is the whole
        // matrix again with the server of one version and the clients of the other.
        for builds in [BuildPair(server: .trixie, client: .host), BuildPair(server: .host, client: .trixie)] {
            var tally = Tally()
            let lab = try Inventories.generateLab(label: "lab-mixed")
            try proveAll(lab, proposals: Self.labProposals, builds: builds, tally: &tally)
            try expectCoversEveryCombination(tally, builds)
            line += "; \(builds): \(tally.handshakes) handshakes (\(tally.kinds))"
        }
        print("e2e: \(line)")
        MatrixSummary.shared.record(StrongSwanBuild.trixie.name, line)
    }

    /// example.yaml and the lab inventory with every client, then the refusals, on one build pair; returns the
    /// summary ("5.9.8: 60 handshakes proven (…), 5 refusals proven").
    private func fullMatrix(_ builds: BuildPair) throws -> String {
        var tally = Tally()
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "example")
        try proveAll(example, proposals: Self.exampleProposals, builds: builds, tally: &tally)

        let lab = try Inventories.generateLab()
        try proveAll(lab, proposals: Self.labProposals, builds: builds, tally: &tally)
        try refusals(lab, builds: builds, tally: &tally)

        try expectCoversEveryCombination(tally, builds)
        // example.yaml's sgp-1 has no IPv6 pool: its Android and Apple IKEv2 clients prove the IPv6 block.
        #expect(
            tally.ipv6Blocked["android", default: 0] > 0 && tally.ipv6Blocked["apple", default: 0] > 0,
            "\(builds): IPv6 blocking never proven: \(tally.ipv6Blocked)")
        let blocked = tally.ipv6Blocked.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
            separator: ", ")
        return "strongSwan \(builds): \(tally.handshakes) handshakes proven (\(tally.kinds)), "
            + "\(tally.refusals) refusals proven, IPv6 outside the tunnel blocked (\(blocked))"
    }

    private func expectCoversEveryCombination(_ tally: Tally, _ builds: BuildPair) throws {
        for combination in Self.requiredCombinations {
            #expect(
                tally.covered.contains(combination),
                "\(builds): never proven: \(combination); proven: \(tally.covered.sorted())")
        }
    }

    /// Every client case of `deployment`, node by node (one server charon per node).
    private func proveAll(
        _ deployment: GeneratedDeployment, proposals: ExpectedProposals, builds: BuildPair, tally: inout Tally
    ) throws {
        let cases = try deployment.clientCases()
        #expect(!cases.isEmpty)
        for node in deployment.nodes {
            let nodeCases = cases.filter { $0.node == node.name }
            #expect(!nodeCases.isEmpty, "no client for node \(node.name)")
            let nut = try NodeUnderTest.start(deployment, node: node.name, builds: builds)
            defer { nut.teardown() }
            // The daemons really are the versions this run claims to prove.
            for (charon, build) in [(nut.server, builds.server), (nut.client, builds.client)] {
                let version = try charon.daemonVersion()
                #expect(
                    version.stdout.contains("strongSwan \(build.version) charon-systemd"), "\(charon.label): \(version)"
                )
            }
            var sawConfiguredProposals = false
            for c in nodeCases {
                do {
                    let loadable = try c.make()
                    // Windows: judge the server certificate this handshake brings the way Windows does.
                    let before = c.kind == .windows ? try WindowsClientChecks.prepare(nut) : []
                    let proof = try nut.prove(loadable, label: c.label, ikeVersion: c.ikeVersion)
                    if let dialled = c.windowsDialled,
                        let reason = try WindowsClientChecks.refusal(
                            nut, dialled: dialled, before: before, own: WindowsClientChecks.own(loadable))
                    {
                        throw HarnessError("\(c.label): Windows would refuse the server certificate: \(reason)")
                    }
                    if c.kind == .windows { Self.expectWindowsIdentity(c, proof.serverLog) }
                    let peer = proof.serverPeerConfig ?? "?"
                    // The server used the connection of this service (not another one that happened to match).
                    let rightConnection = c.ikeVersion == 2 ? peer == c.service : peer.hasPrefix(c.service + "-")
                    #expect(rightConnection, "\(c.label): server chose peer config \(peer)")
                    if c.ikeVersion == 2 {
                        #expect(
                            proof.ike.encryption == proposals.ikeEncryption
                                && proof.ike.dhGroup == proposals.ikeDHGroup,
                            "\(c.label): negotiated \(proof.ike.encryption) \(proof.ike.dhGroup ?? "-")")
                        if proof.serverLog.contains(proposals.configuredIKEv2) { sawConfiguredProposals = true }
                    }
                    tally.handshakes += 1
                    tally.byKind[c.kind.rawValue, default: 0] += 1
                    tally.covered.insert("\(c.kind.rawValue) \(c.service) \(peer)")
                    if proof.ipv6Blocked { tally.ipv6Blocked[c.kind.rawValue, default: 0] += 1 }
                    // On a node without an IPv6 pool every Android profile and every Apple IKEv2 payload
                    // (kill switch on by default) must carry, and its device apply, the IPv6 block.
                    if node.pool6 == nil && (c.kind == .android || c.kind == .apple && c.ikeVersion == 2) {
                        #expect(proof.ipv6Blocked, "\(c.label): node without pool6 but the profile does not block IPv6")
                    }
                } catch {
                    Issue.record("\(deployment.label) on \(builds): \(error)")
                }
            }
            if nodeCases.contains(where: { $0.ikeVersion == 2 }) {
                #expect(
                    sawConfiguredProposals, "\(builds) \(node.name): server never logged \(proposals.configuredIKEv2)")
            }
        }
    }

    /// Windows sends its IP address as identity with EAP and its certificate's subject DN with a machine
    /// certificate; the server's log names the identity it authenticated.
    static func expectWindowsIdentity(_ c: ClientCase, _ log: String) {
        if c.service == "ikev2-eap" {
            let ip = log.range(of: #"authentication of '[0-9.]+' with EAP successful"#, options: .regularExpression)
            #expect(ip != nil, "\(c.label): the server did not authenticate an IP-address identity with EAP:\n\(log)")
            #expect(log.contains("received EAP identity '\(c.user)'"), "\(c.label): no EAP identity \(c.user)")
        } else {
            let dn = log.range(
                of: #"authentication of 'O=[^']*CN=[^']*' with [A-Za-z0-9_-]+ successful"#, options: .regularExpression)
            #expect(dn != nil, "\(c.label): the server did not authenticate a subject-DN identity:\n\(log)")
        }
    }

    /// Wrong PSK, wrong remote ID, a proposal the server does not offer, and a revoked certificate: each refused,
    /// and the server log says why.
    private func refusals(_ lab: GeneratedDeployment, builds: BuildPair, tally: inout Tally) throws {
        let cases = try lab.clientCases()
        func find(_ kind: ClientCase.Kind, _ user: String, _ node: String, _ service: String) throws -> ClientCase {
            guard
                let c = cases.first(where: {
                    $0.kind == kind && $0.user == user && $0.node == node && $0.service == service
                })
            else { throw HarnessError("no \(kind) case \(user) \(node) \(service)") }
            return c
        }
        // Keep vic's profiles from before the revoke (the revoke removes them from the output tree).
        let vicBefore: [(String, ClientCase.Loadable)] = try cases.filter { $0.user == "vic" }.map { c in
            switch try c.make() {
            case .translated(let setup): return (c.label, .translated(setup))
            case .asWritten(let conf, let connection, let child):
                let copy = try Scratch.makeDirectory("vic-linux").appendingPathComponent("swanctl")
                try FileManager.default.copyItem(
                    at: URL(fileURLWithPath: conf).deletingLastPathComponent(), to: copy)
                return (
                    c.label,
                    .asWritten(
                        confFile: copy.appendingPathComponent("swanctl.conf").path,
                        connection: connection, child: child)
                )
            }
        }
        #expect(
            vicBefore.count >= 4,
            "vic should have Apple, Android, Linux and Windows cert profiles: \(vicBefore.map(\.0))")

        let nut = try NodeUnderTest.start(lab, node: "lab-v4", builds: builds)
        defer { nut.teardown() }
        func expectRefused(_ label: String, _ loadable: ClientCase.Loadable, because reasons: [String]) {
            do {
                let log = try nut.refuse(loadable, label: label)
                let found = reasons.allSatisfy { log.contains($0) }
                #expect(found, "\(builds) \(label): refused, but the server log does not say \(reasons):\n\(log)")
                if found { tally.refusals += 1 }
            } catch {
                Issue.record("\(builds) \(label): \(error)")
            }
        }

        // Wrong PSK: the Apple IKEv2 PSK payload with another (equally strong) secret.
        let psk = try find(.apple, "ann", "lab-v4", "ikev2-psk")
        var payload = psk.applePayload!
        var ikev2 = payload["IKEv2"] as! [String: Any]
        ikev2["SharedSecret"] = "kP9#wrong\"but{strong} ß secret 4Qz"
        payload["IKEv2"] = ikev2
        expectRefused(
            "wrong PSK",
            .translated(
                try AppleProfileTranslator.translate(
                    vpnPayload: payload, otherPayloads: psk.appleOthers)), because: ["MAC mismatched"])

        // Wrong remote ID: the Apple IKEv2 EAP payload asking for another server identity.
        let eap = try find(.apple, "ann", "lab-v4", "ikev2-eap")
        payload = eap.applePayload!
        ikev2 = payload["IKEv2"] as! [String: Any]
        ikev2["RemoteIdentifier"] = "wrong.lab.test"
        payload["IKEv2"] = ikev2
        expectRefused(
            "wrong remote ID",
            .translated(
                try AppleProfileTranslator.translate(
                    vpnPayload: payload, otherPayloads: eap.appleOthers)), because: ["no matching peer config found"])

        // A proposal the server does not offer: the Android EAP profile with another IKE proposal.
        let sswan = try find(.android, "ann", "lab-v4", "ikev2-eap")
        guard case .translated(var setup) = try sswan.make() else { throw HarnessError("sswan not translated") }
        setup.swanctlConf = setup.swanctlConf.replacingOccurrences(
            of: "proposals = \"aes128gcm16-prfsha384-ecp384\"", with: "proposals = \"aes128-sha1-modp3072\"")
        #expect(setup.swanctlConf.contains("aes128-sha1-modp3072"), "the .sswan ike-proposal was not where expected")
        expectRefused("proposal not offered", .translated(setup), because: ["received proposals unacceptable"])

        // Revoked certificate: `vpnprov revoke vic`, reload the server (new CRL), try vic's old profiles.
        _ = try lab.revoke(user: "vic")
        try nut.server.loadAllCleanly(confFile: nut.node.confFile)
        // Only the certificate profiles: vic's ikev2-psk profiles hold the node PSK, which a revoke cannot take
        // back (the warning about PSK services, docs/diagnostics.md `weak-psk-service`); they are not what this check
        // is about.
        let certProfiles = vicBefore.filter { $0.0.hasSuffix("lab-v4 ikev2-cert") }
        #expect(Set(certProfiles.map { $0.0.prefix { $0 != " " } }) == ["apple", "android", "linux", "windows"])
        for (label, loadable) in certProfiles {
            expectRefused("revoked: \(label)", loadable, because: ["certificate was revoked"])
        }
    }

    @Test("A generated server config broken on purpose (local identity changed) refuses its clients, log says why")
    func brokenServerIdentityIsCaught() throws {
        try StrongSwanEnvironment.require()
        try brokenServerIdentityIsCaught(.host)
    }

    @Test("strongSwan 6.0: a server config broken on purpose refuses its clients, log says why", .strongSwan6)
    func brokenServerIdentityIsCaughtOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try brokenServerIdentityIsCaught(.trixie)
    }

    private func brokenServerIdentityIsCaught(_ builds: BuildPair) throws {
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "broken")
        let nut = try NodeUnderTest.start(example, node: "fra-1", builds: builds) { conf in
            conf.replacingOccurrences(of: "id = \"fra-1.vpn.example.com\"", with: "id = \"broken.vpn.example.com\"")
        }
        defer { nut.teardown() }
        let text = try String(contentsOfFile: nut.node.confFile, encoding: .utf8)
        #expect(text.contains("broken.vpn.example.com") && !text.contains("\"fra-1.vpn.example.com\""))
        let cases = try example.clientCases().filter { $0.node == "fra-1" }
        let picks = [
            cases.first { $0.kind == .apple && $0.service == "ikev2-eap" },
            cases.first { $0.kind == .linux && $0.service == "ikev2-cert" },
            cases.first { $0.kind == .android && $0.service == "ikev2-eap" },
        ].compactMap { $0 }
        #expect(picks.count == 3)
        for c in picks {
            let log = try nut.refuse(try c.make(), label: c.label)
            #expect(log.contains("no matching peer config found"), "\(builds) \(c.label): server log:\n\(log)")
        }
    }

    @Test("A node's generated strongswan.d/vpnprov.conf is needed: without it Aggressive Mode PSK is refused")
    func aggressiveModeNeedsTheGeneratedSetting() throws {
        try StrongSwanEnvironment.require()
        try aggressiveModeNeedsTheGeneratedSetting(.host)
    }

    @Test(
        "strongSwan 6.0: without the generated strongswan.d/vpnprov.conf Aggressive Mode PSK is refused", .strongSwan6)
    func aggressiveModeNeedsTheGeneratedSettingOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try aggressiveModeNeedsTheGeneratedSetting(.trixie)
    }

    private func aggressiveModeNeedsTheGeneratedSetting(_ builds: BuildPair) throws {
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "no-include")
        let node = try example.node("fra-1")
        #expect(
            node.settingsInclude != nil, "fra-1 offers ipsec-xauth-psk with a group but has no strongswan.d snippet")
        let nut = try NodeUnderTest.start(example, node: "fra-1", builds: builds, includeSettings: false)
        defer { nut.teardown() }
        let cases = try example.clientCases().filter { $0.node == "fra-1" && $0.service == "ipsec-xauth-psk" }
        let picks = [cases.first { $0.kind == .apple }, cases.first { $0.kind == .linux }].compactMap { $0 }
        #expect(picks.count == 2)
        for c in picks {
            let log = try nut.refuse(try c.make(), label: c.label)
            #expect(
                log.contains("Aggressive Mode PSK disabled for security reasons"),
                "\(builds) \(c.label): server log:\n\(log)")
        }
    }

    @Test("Every generated node loads into charon without a warning, and swanctl --list-conns shows the inventory")
    func nodesLoadCleanlyAndListAsAsked() throws {
        try StrongSwanEnvironment.require()
        try nodesLoadCleanlyAndListAsAsked(.host)
    }

    @Test(
        "strongSwan 6.0: every generated node loads without a warning, and --list-conns shows the inventory",
        .strongSwan6)
    func nodesLoadCleanlyAndListAsAskedOnStrongSwan6() throws {
        try BuildPair.trixie.require()
        try nodesLoadCleanlyAndListAsAsked(.trixie)
    }

    private func nodesLoadCleanlyAndListAsAsked(_ builds: BuildPair) throws {
        let example = try GeneratedDeployment.generate(inventory: Inventories.example, label: "list")
        let lab = try Inventories.generateLab(label: "lab-list")
        // What example.yaml and the lab inventory ask for, as strongSwan prints it (connection → fragments).
        let pskRemote = "remote pre-shared key authentication:\n    id: %any\n"
        // <policy>: the node's own certificate policy, which charon must have loaded as the round's constraint.
        let certRemote = "remote public key authentication:\n    id: %any\n    cert policy: <policy>\n    cacerts: "
        let eapRemote = "remote EAP_MSCHAPV2 authentication:\n    id: %any\n    eap_id: %any\n"
        func certLocal(_ id: String) -> String { "local public key authentication:\n    id: \(id)\n    certs: " }
        func pskLocal(_ id: String) -> String { "local pre-shared key authentication:\n    id: \(id)\n" }
        let expected: [(GeneratedDeployment, String, [String: [String]])] = [
            (
                example, "fra-1",
                [
                    "ikev2-cert": [
                        "IKEv2", certLocal("fra-1.vpn.example.com"), certRemote + "O=acme, CN=acme VPN Root CA",
                    ],
                    "ikev2-eap": ["IKEv2", certLocal("fra-1.vpn.example.com"), eapRemote],
                    "ikev2-psk-eap": [
                        "IKEv2", pskLocal("fra-1.vpn.example.com"),
                        "remote EAP_MSCHAPV2 authentication:\n    id: psk-eap.acme\n    eap_id: %any\n",
                    ],
                    "ikev2-psk": ["IKEv2", pskLocal("fra-1.vpn.example.com"), pskRemote],
                    "ipsec-xauth-psk-main": [
                        "IKEv1", pskLocal("fra-1.vpn.example.com"), pskRemote,
                        "remote XAuth authentication:",
                    ],
                    "ipsec-xauth-psk-aggressive": [
                        "IKEv1", pskLocal("fra-1.vpn.example.com"),
                        "remote pre-shared key authentication:\n    id: acme\n",
                        "remote XAuth authentication:",
                    ],
                ]
            ),
            (
                example, "nyc-1",
                [
                    "ikev2-cert": [certLocal("203.0.113.10"), certRemote],
                    "ikev2-eap": [certLocal("203.0.113.10"), eapRemote],
                ]
            ),
            (
                example, "sgp-1",
                [
                    "ikev2-eap": [certLocal("sgp-1.vpn.example.com"), eapRemote],
                    "ikev2-psk": [pskLocal("sgp-1.vpn.example.com"), pskRemote],
                ]
            ),
            (
                lab, "lab-v4",
                [
                    "ikev2-cert": [certLocal("192.0.2.1"), certRemote + "O=lab"],
                    "ikev2-eap": [certLocal("192.0.2.1"), eapRemote],
                    "ikev2-psk-eap": [pskLocal("192.0.2.1")],
                    "ikev2-psk": [pskLocal("192.0.2.1"), pskRemote],
                    "ipsec-xauth-psk-main": ["IKEv1", pskLocal("192.0.2.1"), "remote XAuth authentication:"],
                    "ipsec-xauth-psk-aggressive": [
                        "IKEv1", "remote pre-shared key authentication:\n    id: lab-group\n",
                    ],
                ]
            ),
            (
                lab, "lab-dns",
                [
                    "ikev2-cert": [certLocal("gw.lab.test"), certRemote],
                    "ikev2-eap": [certLocal("gw.lab.test"), eapRemote],
                    "ikev2-psk-eap": [pskLocal("gw.lab.test")],
                    "ipsec-xauth-psk-main": [
                        "IKEv1", pskLocal("gw.lab.test"), pskRemote, "remote XAuth authentication:",
                    ],
                ]
            ),
        ]
        #expect(example.nodes.count + lab.nodes.count == expected.count, "a generated node has no expectation")
        for (deployment, name, connections) in expected {
            // start() loads with loadAllCleanly: a failed/invalid/ignored/discarded line fails here.
            let nut = try NodeUnderTest.start(deployment, node: name, builds: builds)
            defer { nut.teardown() }
            #expect(
                nut.serverLoad.output.contains("successfully loaded \(connections.count) connections, 0 unloaded"),
                "\(builds) \(name): \(nut.serverLoad.output)")
            let listed = try nut.listConnections()
            #expect(Set(listed.keys) == Set(connections.keys), "\(builds) \(name): listed \(listed.keys.sorted())")
            let policy = GeneratedDeployment.values(
                of: "cert_policy", in: try String(contentsOfFile: nut.node.confFile, encoding: .utf8)
            ).first
            for (connection, fragments) in connections {
                let block = listed[connection] ?? ""
                for fragment in fragments.map({
                    $0.replacingOccurrences(of: "<policy>", with: policy ?? "(none in swanctl.conf)")
                }) {
                    #expect(
                        block.contains(fragment),
                        "\(builds) \(name) \(connection) lacks \(fragment.debugDescription):\n\(block)")
                }
            }
        }
    }
}
