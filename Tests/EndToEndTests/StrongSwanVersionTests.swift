import Foundation
import Testing
import VPNProvTestHarness

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvOutputTree
@testable import VPNProvPKI
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates

/// What the harness and vpnprov assume about the two strongSwan versions they prove against (the host's 5.9 and
/// the Debian 13 tree's 6.0), checked on the daemons themselves. docs/strongswan-versions.md explains the
/// differences; these tests are its measurements.
@Suite(.serialized, .strongSwan, .strongSwan6)
struct StrongSwanVersionTests {
    @Test(
        "Each build is the version it claims and loads exactly the plugins the harness names",
        arguments: StrongSwanBuild.all)
    func buildsAreWhatTheyClaim(_ build: StrongSwanBuild) throws {
        try build.require()
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let charon = try Charon.start(in: pair.serverNamespace, build: build, label: "version-\(build.name)")
        defer { charon.stop() }
        let version = try charon.daemonVersion()
        #expect(version.succeeded, "\(version)")
        #expect(
            version.stdout.contains("strongSwan \(build.version) charon-systemd")
                && build.version.hasPrefix(build.name + "."),
            "\(build): \(version.stdout)")
        let stats = try charon.swanctl(["--stats"])
        let loaded = stats.lines.first { $0.hasPrefix("loaded plugins: ") }.map(String.init) ?? ""
        // charon leaves a plugin it cannot load out of this list: equality means every named plugin loaded.
        let named = build.charonPlugins.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(loaded == "loaded plugins: charon-systemd \(named)", "\(build): \(stats.output)")
        #expect(charon.logLines(containing: "failed to load").isEmpty, "\(build): \(charon.log)")
        // The IKEv1 parts vpnprov's ipsec-xauth-psk needs: strongSwan builds xauth-generic by default only with
        // IKEv1 (configure.ac), so it is what the node README tells operators to look for.
        #expect(loaded.split(separator: " ").contains("xauth-generic"), "\(build): \(loaded)")
    }

    @Test("A 6.0 daemon's bind mounts exist only in its own mount namespace and leave nothing behind in the tree")
    func treeMountsArePrivateAndTemporary() throws {
        try StrongSwanBuild.trixie.require()
        let root = try #require(StrongSwanBuild.trixie.root)
        /// Mount points (field 5 of mountinfo), as the process sees them (relative to its root).
        func mountPoints(_ pid: String) -> [String] {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/mountinfo", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                return fields.count > 4 ? String(fields[4]) : nil
            }
        }
        func hostMountsInTree() -> [String] { mountPoints("self").filter { $0.hasPrefix(root + "/") } }
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let charon = try Charon.start(in: pair.serverNamespace, build: .trixie, label: "mounts")
        // charon is chrooted: its mountinfo shows only the mounts inside the tree, relative to it.
        let inside = mountPoints(String(charon.pid))
        for path in ["/dev", "/proc", "/etc/hosts", "/tmp", Scratch.directory.path] {
            #expect(inside.contains(path), "\(path) not mounted for charon: \(inside)")
        }
        #expect(hostMountsInTree().isEmpty, "the host sees mounts in the tree: \(hostMountsInTree())")
        charon.stop()
        #expect(hostMountsInTree().isEmpty)
        // The scratch mount point lived on a private tmpfs: the tree's own /tmp has no trace of this run.
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: root + "/tmp")) ?? []
        #expect(!leftovers.contains(Scratch.directory.lastPathComponent), "\(leftovers)")
    }

    @Test("On 6.0 the load check stays strict: naming the missing gcm plugin, or a one-line section, is a problem")
    func loadCheckIsStrictOnStrongSwan6() throws {
        try StrongSwanBuild.trixie.require()
        // The trixie tree with the 5.9 plugin lists (which name gcm).
        let withGCM = StrongSwanBuild(
            name: StrongSwanBuild.trixie.name, root: StrongSwanBuild.trixie.root,
            charonPlugins: StrongSwanBuild.trixie.charonPlugins, swanctlPlugins: StrongSwanBuild.host.swanctlPlugins)
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let charon = try Charon.start(in: pair.serverNamespace, build: withGCM, label: "gcm-check")
        defer { charon.stop() }
        let good = try SwanctlDirectory.make(
            label: "good", conf: "secrets {\n  eap-x {\n    id = a\n    secret = b\n  }\n}\n")
        let result = try charon.loadAll(confFile: good.confFile)
        let problems = Charon.loadProblems(in: result.output)
        #expect(problems.contains { $0.contains("plugin 'gcm': failed to load") }, "\(result)")
        #expect(throws: HarnessError.self) { try charon.loadAllCleanly(confFile: good.confFile) }

        let clean = try Charon.start(in: pair.clientNamespace, build: .trixie, label: "one-line-check")
        defer { clean.stop() }
        try clean.loadAllCleanly(confFile: good.confFile)
        let bad = try SwanctlDirectory.make(label: "bad", conf: "secrets {\n  eap-x { id = a secret = b }\n}\n")
        #expect(throws: HarnessError.self) { try clean.loadAllCleanly(confFile: bad.confFile) }
    }

    /// A PSK server and client offering only `proposal` in IKE (StrongSwan61Tests' connection without a PPK).
    private static func pskConf(proposal: String, server: Bool) -> String {
        StrongSwan61Tests.conf(server: server, proposal: proposal, ppk: nil)
    }

    /// One IKE proposal per keyword vpnprov accepts (aliases included), built around it with algorithms every
    /// build has, so that a handshake offering only that proposal tests exactly that keyword.
    static func probeProposals() -> [(keyword: String, proposal: String)] {
        AlgorithmTable.all.keys.sorted().compactMap { keyword in
            let info = AlgorithmTable.all[keyword]!
            switch info.kind {
            case .encryption:
                return (keyword, info.isAEAD ? "\(keyword)-prfsha256-ecp256" : "\(keyword)-sha256-ecp256")
            case .integrity: return (keyword, "aes128-\(keyword)-ecp256")
            case .prf: return (keyword, "aes128gcm16-\(keyword)-ecp256")
            case .keyExchange: return (keyword, "aes128gcm16-prfsha256-\(keyword)")
            }
        }
    }

    @Test(
        "Every proposal keyword the validator accepts negotiates on each proven strongSwan",
        arguments: StrongSwanBuild.all)
    func everyAcceptedKeywordNegotiates(_ build: StrongSwanBuild) throws {
        try build.require()
        let probes = Self.probeProposals()
        let secret = SwanctlWriter.secret("keyword probe secret, not weak 5Rq")
        // The server offers every probe proposal in one connection; each client connection offers one.
        var server =
            "connections {\n  probe {\n    version = 2\n    local_addrs = 192.0.2.1\n    pools = p\n"
            + "    proposals = \(probes.map(\.proposal).joined(separator: ", "))\n"
            + "    local {\n      auth = psk\n      id = srv\n    }\n    remote {\n      auth = psk\n    }\n"
            + "    children {\n      probe {\n        local_ts = 0.0.0.0/0\n        esp_proposals = aes256gcm16\n      }\n    }\n"
            + "  }\n}\npools {\n  p {\n    addrs = 10.9.0.0/24\n  }\n}\n"
        server += "secrets {\n  ike-1 {\n    secret = \(secret)\n  }\n}\n"
        var client = "connections {\n"
        for (i, probe) in probes.enumerated() {
            client +=
                "  p\(i) {\n    version = 2\n    remote_addrs = 192.0.2.1\n    vips = 0.0.0.0\n"
                + "    proposals = \(probe.proposal)\n"
                + "    local {\n      auth = psk\n      id = cli\n    }\n    remote {\n      auth = psk\n      id = srv\n    }\n"
                + "    children {\n      p\(i) {\n        remote_ts = 198.51.100.1/32\n        esp_proposals = aes256gcm16\n      }\n    }\n  }\n"
        }
        client += "}\nsecrets {\n  ike-1 {\n    secret = \(secret)\n  }\n}\n"
        let serverDir = try SwanctlDirectory.make(label: "probe-server", conf: server)
        let clientDir = try SwanctlDirectory.make(label: "probe-client", conf: client)

        let s = try TunnelScenario.start(builds: BuildPair(server: build, client: build))
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: serverDir.confFile)
        try s.client.loadAllCleanly(confFile: clientDir.confFile)
        var failed: [String] = []
        for (i, probe) in probes.enumerated() {
            let result = try s.client.initiate(child: "p\(i)", ike: "p\(i)", timeout: .seconds(8))
            if !result.succeeded {
                let reason = result.lines.last { $0.contains("[IKE]") || $0.contains("[CFG]") }.map(String.init) ?? ""
                failed.append("\(probe.keyword) (\(probe.proposal)): \(reason)")
            }
            _ = try? s.client.terminate(ike: "p\(i)", timeout: .seconds(3))
        }
        #expect(failed.isEmpty, "\(build) cannot negotiate:\n\(failed.joined(separator: "\n"))")
    }

    @Test(
        "ML-KEM: 6.0.1 accepts ke1_mlkem768 in config and negotiates it, then cannot compute it; 5.9 rejects the keyword"
    )
    func mlkemIsNotUsable() throws {
        try BuildPair.trixie.require()
        let proposal = "aes256gcm16-prfsha256-ecp256-ke1_mlkem768"
        let server = try SwanctlDirectory.make(label: "pq-server", conf: Self.pskConf(proposal: proposal, server: true))
        let client = try SwanctlDirectory.make(
            label: "pq-client", conf: Self.pskConf(proposal: proposal, server: false))

        let s = try TunnelScenario.start(builds: .trixie)
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: server.confFile)
        try s.client.loadAllCleanly(confFile: client.confFile)
        let result = try s.client.initiate(child: "pq", ike: "pq", timeout: .seconds(10))
        #expect(!result.succeeded, "\(result)")
        #expect(
            result.output.contains("selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_256/ECP_256/KE1_ML_KEM_768"),
            "\(result)")
        #expect(result.output.contains("negotiated key exchange method ML_KEM_768 not supported"), "\(result)")
        #expect(
            s.server.logContains("selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_256/ECP_256/KE1_ML_KEM_768"),
            "\(s.server.log)")

        // The same connection on 5.9: the keyword itself is unknown there.
        let old = try TunnelScenario.start(builds: .host)
        defer { old.teardown() }
        let load = try old.server.swanctl(["--load-all", "--noprompt", "--file", server.confFile])
        #expect(!load.succeeded && load.output.contains("loading connection 'pq' failed"), "\(load)")
    }
}

/// What the quantum-safe pieces need of strongSwan, measured on Debian testing's 6.1 (`StrongSwanBuild.testing`):
/// ML-KEM in an additional key exchange (RFC 9370) and post-quantum preshared keys (RFC 8784). The 5.9 and 6.0
/// builds can do neither (`StrongSwanVersionTests.mlkemIsNotUsable`); docs/strongswan-versions.md has the sources.
@Suite(.serialized, .strongSwan, .strongSwan61)
struct StrongSwan61Tests {
    static let proposal = "aes256gcm16-prfsha384-ecp384-ke1_mlkem768"

    /// A PSK connection whose IKE_SA adds an ML-KEM-768 exchange; `ppk`: the client's PPK (hex) under the PPK_ID
    /// `ppk-cli`, which the server also holds (`serverPPK`), each end requiring one.
    static func conf(server: Bool, proposal: String = proposal, ppk: String?) -> String {
        let secret = SwanctlWriter.secret("quantum-safe probe secret, not weak 3Kp")
        let common =
            "    version = 2\n    proposals = \(proposal)\n"
            + (ppk == nil ? "" : "    ppk_required = yes\n" + (server ? "" : "    ppk_id = ppk-cli\n"))
        let peer =
            server
            ? "    local_addrs = 192.0.2.1\n    pools = p\n    local {\n      auth = psk\n      id = srv\n    }\n"
                + "    remote {\n      auth = psk\n    }\n"
                + "    children {\n      pq {\n        local_ts = 0.0.0.0/0\n        esp_proposals = aes256gcm16\n      }\n    }\n"
            : "    remote_addrs = 192.0.2.1\n    vips = 0.0.0.0\n    local {\n      auth = psk\n      id = cli\n    }\n"
                + "    remote {\n      auth = psk\n      id = srv\n    }\n"
                + "    children {\n      pq {\n        remote_ts = 198.51.100.1/32\n        esp_proposals = aes256gcm16\n      }\n    }\n"
        return "connections {\n  pq {\n" + common + peer + "  }\n}\n"
            + (server ? "pools {\n  p {\n    addrs = 10.9.0.0/24\n  }\n}\n" : "")
            + "secrets {\n  ike-1 {\n    secret = \(secret)\n  }\n"
            + (ppk.map { "  ppk-1 {\n    id = ppk-cli\n    secret = 0x\($0)\n  }\n" } ?? "") + "}\n"
    }

    static let serverPPK = String(repeating: "5a", count: 32)

    @Test(
        "strongSwan 6.1: an IKE_SA with an ML-KEM-768 additional key exchange and a post-quantum preshared key carries traffic; a wrong PPK is refused where one is required; a 6.0 client cannot compute ML-KEM"
    )
    func hybridKeyExchangeAndPPKWork() throws {
        try BuildPair(server: .testing, client: .testing).require()
        let server = try SwanctlDirectory.make(label: "pq61-server", conf: Self.conf(server: true, ppk: Self.serverPPK))
        let s = try TunnelScenario.start(builds: BuildPair(server: .testing, client: .testing))
        defer { s.teardown() }
        try s.server.loadAllCleanly(confFile: server.confFile)

        let good = try SwanctlDirectory.make(label: "pq61-client", conf: Self.conf(server: false, ppk: Self.serverPPK))
        try s.client.loadAllCleanly(confFile: good.confFile)
        let tunnel = try s.connect(child: "pq", ike: "pq")
        #expect(try s.pingThroughTunnel(tunnel).succeeded, "no traffic through the hybrid tunnel")
        #expect(
            s.server.logContains("selected proposal: IKE:AES_GCM_16_256/PRF_HMAC_SHA2_384/ECP_384/KE1_ML_KEM_768"),
            "\(s.server.log.suffix(3000))")
        #expect(s.server.logContains("using PPK for PPK_ID 'ppk-cli'"), "\(s.server.log.suffix(3000))")
        _ = try s.client.terminate(ike: "pq")

        // The same PPK_ID with another key: the AUTH payloads, computed with the PPK, do not verify.
        let wrong = try SwanctlDirectory.make(
            label: "pq61-wrong", conf: Self.conf(server: false, ppk: String(repeating: "a5", count: 32)))
        try s.client.loadAllCleanly(confFile: wrong.confFile)
        let refused = try s.client.initiate(child: "pq", ike: "pq", timeout: .seconds(10))
        #expect(!refused.succeeded, "a wrong PPK was accepted: \(refused)")
        #expect(s.server.logContains("MAC mismatched"), "refused for another reason: \(s.server.log.suffix(2000))")

        // Without a PPK, against a server that requires one.
        let none = try SwanctlDirectory.make(label: "pq61-none", conf: Self.conf(server: false, ppk: nil))
        try s.client.loadAllCleanly(confFile: none.confFile)
        let missing = try s.client.initiate(child: "pq", ike: "pq", timeout: .seconds(10))
        #expect(!missing.succeeded, "no PPK was accepted where one is required: \(missing)")
        #expect(
            s.server.logContains("PPK required but peer does not support PPK"),
            "refused for another reason: \(s.server.log.suffix(2000))")

        // A 6.0 client offering the same ML-KEM proposal: it negotiates ML-KEM and cannot compute it.
        let mixed = try TunnelScenario.start(builds: BuildPair(server: .testing, client: .trixie))
        defer { mixed.teardown() }
        let classical = try SwanctlDirectory.make(label: "pq61-server-noppk", conf: Self.conf(server: true, ppk: nil))
        try mixed.server.loadAllCleanly(confFile: classical.confFile)
        let old = try SwanctlDirectory.make(label: "pq60-client", conf: Self.conf(server: false, ppk: nil))
        try mixed.client.loadAllCleanly(confFile: old.confFile)
        let result = try mixed.client.initiate(child: "pq", ike: "pq", timeout: .seconds(10))
        #expect(!result.succeeded, "\(result)")
        #expect(result.output.contains("negotiated key exchange method ML_KEM_768 not supported"), "\(result)")
    }
}
