import Foundation
import Glibc
import Testing
import VPNProvCrypto
import VPNProvTestHarness

/// Linux desktops: the generated NetworkManager keyfiles, installed as the user's README says and loaded
/// unchanged into a real NetworkManager (Debian's 1.42 with network-manager-strongswan 1.6 and its backend
/// charon-nm 5.9.8; `NetworkManagerDesktop`), connect to the generated node running on strongSwan 5.9 and 6.0:
/// EAP, certificate and PSK each get a virtual IP from the pool and reach a host behind the node through it
/// (nothing else leads there). On 5.9 the node has no IPv6 pool, and while connected IPv6 cannot leave
/// outside the tunnel (the keyfile's blackhole route); on 6.0 it has one, and IPv6 reaches the host behind
/// the node through the tunnel from an address of that pool. Refused: a wrong EAP password, a revoked
/// certificate, and a server whose certificate does not come from the CA the keyfile names.
@Suite(
    .serialized, .strongSwan,
    .enabled(
        if: NetworkManagerDesktop.unavailableReason == nil || StrongSwanEnvironment.isRequired,
        Comment(rawValue: NetworkManagerDesktop.unavailableReason ?? "NetworkManager available")))
struct NetworkManagerTests {
    static let inventory = """
        vpnprov: 1
        name: nmt
        defaults:
          pool: 10.92.0.0/24
          network:
            ipsec: libipsec
        nodes:
          nm-1:
            address: 192.0.2.1
            services: [ikev2-cert, ikev2-eap, ikev2-psk]
            psk: gen
        users:
          dora:
            cert: true
            password: gen
            devices: [networkmanager]
          rita:
            cert: true
            devices: [networkmanager]

        """

    static let services = ["ikev2-eap", "ikev2-cert", "ikev2-psk"]

    /// The inventory in `dir` (with `pool6`: the node has an IPv6 pool), generated.
    static func generate(_ label: String, in dir: URL, pool6: Bool) throws -> GeneratedDeployment {
        let path = dir.appendingPathComponent("inventory.yaml").path
        let text =
            pool6
            ? inventory.replacingOccurrences(of: "    psk: gen\n", with: "    psk: gen\n    pool6: fd00:92::/112\n")
            : inventory
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try GeneratedDeployment.generate(inventory: path, label: label)
    }

    /// A user's folder (`clients/<user>/`, or a copy of it): the README and the `networkmanager/` keyfiles.
    struct UserFiles {
        var root: URL
        var folder: URL { root.appendingPathComponent("networkmanager") }
        var keyfiles: [URL]

        init(_ d: GeneratedDeployment, user: String, copyTo copy: URL? = nil) throws {
            var root = d.out.appendingPathComponent("clients/\(user)")
            if let copy {
                try FileManager.default.copyItem(at: root, to: copy)
                root = copy
            }
            self.root = root
            let folder = root.appendingPathComponent("networkmanager")
            keyfiles = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
                .filter { $0.hasSuffix(".nmconnection") }.map { folder.appendingPathComponent($0) }
        }

        func keyfile(_ service: String) throws -> URL {
            guard let url = keyfiles.first(where: { $0.lastPathComponent.hasSuffix("-\(service).nmconnection") }) else {
                throw HarnessError("no keyfile for \(service) in \(folder.path)")
            }
            return url
        }

        /// `key=value` of the keyfile (first occurrence).
        static func value(_ key: String, in url: URL) throws -> String? {
            try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
                .first { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
        }

        /// The README's NetworkManager commands (the indented lines after "As root, in this folder:").
        func readmeCommands() throws -> [String] {
            let lines = try String(contentsOf: root.appendingPathComponent("README"), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(where: { $0.hasSuffix("As root, in this folder:") }) else {
                throw HarnessError("\(root.path)/README: no NetworkManager install commands")
            }
            return lines[(start + 1)...].prefix { $0.hasPrefix("    ") }.map { $0.trimmingCharacters(in: .whitespaces) }
        }

        /// Runs the README's commands as written, as root, in this folder, on the desktop.
        func install(on desktop: NetworkManagerDesktop) throws {
            let commands = try readmeCommands()
            guard commands.contains(where: { $0.hasPrefix("nmcli connection load ") }) else {
                throw HarnessError("the README loads no connection: \(commands)")
            }
            try desktop.runAsRoot(commands, in: root)
        }
    }

    /// An ACME node (docs/acme.md): its keyfiles name no CA, so charon-nm trusts its CA directory, which here holds
    /// only Pebble's root; the node's certificate comes from Pebble (obtained with lego in the node's namespace,
    /// HTTP-01 on its port 80, installed as the role installs it). EAP and certificate users connect and reach the
    /// node through the tunnel.
    @Test(
        "ACME node: keyfiles without a CA connect through charon-nm trusting only Pebble's root",
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"),
        arguments: StrongSwanBuild.all)
    func desktopConnectsToAnACMENode(_ build: StrongSwanBuild) throws {
        try build.require()
        try NetworkManagerDesktop.require()
        let name = "nm-1.vpn.test"
        let keep = try Scratch.makeDirectory("nm-acme")
        defer { try? FileManager.default.removeItem(at: keep) }
        let text = Self.inventory
            .replacingOccurrences(
                of: "defaults:\n",
                with: "acme:\n  email: ops@vpn.test\n  directory: https://192.0.2.2:14000/dir\ndefaults:\n"
            )
            .replacingOccurrences(
                of: "    address: 192.0.2.1\n", with: "    address: \(name)\n    id: \(name)\n    certificate: acme\n"
            )
            .replacingOccurrences(
                of: "    services: [ikev2-cert, ikev2-eap, ikev2-psk]\n    psk: gen\n",
                with: "    services: [ikev2-cert, ikev2-eap]\n")
        let path = keep.appendingPathComponent("inventory.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let d = try GeneratedDeployment.generate(inventory: path, label: "nm-acme-\(build.name)")
        defer { try? FileManager.default.removeItem(at: d.out.deletingLastPathComponent()) }
        let node = try d.node("nm-1")
        let dora = try UserFiles(d, user: "dora")
        for keyfile in dora.keyfiles {
            #expect(try UserFiles.value("certificate", in: keyfile) == nil, "\(keyfile.lastPathComponent) names a CA")
        }

        let pair = try NetworkPair.create(clientHosts: [name])
        defer { pair.teardown() }
        // Pebble in the client's namespace resolves the node's name to it (the pair's hosts file) and fetches the
        // HTTP-01 token from the node's port 80, where lego listens while it validates.
        let pebble = try PebbleServer.start(namespace: pair.clientNamespace, address: pair.clientAddress)
        defer { pebble.stop() }
        try pebble.issue(
            domain: name, inNamespace: pair.serverNamespace,
            swanctlDirectory: node.directory.appendingPathComponent("swanctl"))
        let root = try pebble.issuingRoot()

        let server = try Charon.start(
            in: pair.serverNamespace, build: build, label: "server",
            settingsIncludes: node.settingsInclude.map { [$0] } ?? [])
        defer { server.stop() }
        try server.loadAllCleanly(confFile: node.confFile)
        // The desktop's trust store: Pebble's root only.
        let trust = keep.appendingPathComponent("ca-dir")
        try FileManager.default.createDirectory(at: trust, withIntermediateDirectories: true)
        try root.write(to: trust.appendingPathComponent("pebble-root.pem"), atomically: true, encoding: .utf8)
        let desktop = try NetworkManagerDesktop.start(on: pair, caDirectory: trust.path)
        defer { desktop.stop() }
        try dora.install(on: desktop)
        var proven: [String] = []
        for service in ["ikev2-eap", "ikev2-cert"] {
            let id = "nmt nm-1 \(service)"
            let up = try desktop.up(id)
            guard up.succeeded else {
                let logs =
                    "--- charon-nm ---\n\(desktop.charonLog.suffix(3000))\n--- server ---\n\(server.log.suffix(3000))"
                Issue.record(Comment(rawValue: "\(service): nmcli connection up failed: \(up)\n\(logs)"))
                continue
            }
            defer { desktop.down(id) }
            let sa = try server.securityAssociations().first { $0.state == "ESTABLISHED" }
            #expect(sa?.name == service, "\(service): the server chose \(sa?.name ?? "nothing")")
            #expect(desktop.charonLog.contains("CN=Pebble Intermediate CA"), "charon-nm saw no Pebble chain")
            let ping = try pair.ping(from: pair.clientNamespace, to: pair.serverInnerAddress)
            #expect(ping.succeeded, "\(service): ping through the tunnel: \(ping)")
            if ping.succeeded { proven.append(service) }
        }
        #expect(proven == ["ikev2-eap", "ikev2-cert"], "proven: \(proven)")
        // The control: with Pebble's root gone from the directory (charon-nm reads it at every connect), the same
        // keyfile is refused: the desktop trusted the node because of that root, and only because of it.
        try FileManager.default.removeItem(at: trust.appendingPathComponent("pebble-root.pem"))
        let untrusted = try desktop.up("nmt nm-1 ikev2-eap", timeout: .seconds(10))
        if untrusted.succeeded { desktop.down("nmt nm-1 ikev2-eap") }
        #expect(!untrusted.succeeded, "connected without Pebble's root in charon-nm's CA directory")
        #expect(desktop.charonLog.contains("no trusted RSA public key found"), "refused for another reason")
        print("e2e networkmanager acme \(build.version): \(proven.joined(separator: ", ")) with only Pebble's root")
    }

    @Test(
        "Generated keyfiles connect through real NetworkManager and charon-nm; the refusals hold",
        arguments: StrongSwanBuild.all)
    func desktopConnects(_ build: StrongSwanBuild) throws {
        try build.require()
        try NetworkManagerDesktop.require()
        let clock = ContinuousClock()
        let started = clock.now
        let keep = try Scratch.makeDirectory("nm-keep")
        defer { try? FileManager.default.removeItem(at: keep) }
        // 5.9: no IPv6 pool (the blackhole is proven); 6.0: an IPv6 pool (IPv6 through the tunnel).
        let pool6 = build.root != nil
        let d = try Self.generate("nm-\(build.name)", in: keep, pool6: pool6)
        // The output tree and the state hold private keys.
        defer { try? FileManager.default.removeItem(at: d.out.deletingLastPathComponent()) }
        let node = try d.node("nm-1")
        let pool = try #require(node.pool4)
        #expect((node.pool6 != nil) == pool6)
        let dora = try UserFiles(d, user: "dora")
        #expect(dora.keyfiles.count == 3, "dora's keyfiles: \(dora.keyfiles.map(\.lastPathComponent))")
        let rita = try UserFiles(d, user: "rita", copyTo: keep.appendingPathComponent("rita"))

        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let server = try Charon.start(
            in: pair.serverNamespace, build: build, label: "server",
            settingsIncludes: node.settingsInclude.map { [$0] } ?? [])
        defer { server.stop() }
        try server.loadAllCleanly(confFile: node.confFile)
        let internet = try Internet.attach(to: pair.serverNamespace)
        defer { internet.teardown() }
        try internet.applyGenerated(node: node, in: pair.serverNamespace, mssRules: true)

        let desktop = try NetworkManagerDesktop.start(on: pair)
        defer { desktop.stop() }
        func logs() -> String {
            "--- charon-nm ---\n\(desktop.charonLog.suffix(3000))\n--- server ---\n\(server.log.suffix(3000))"
                + "\n--- NetworkManager ---\n\(desktop.networkManagerLog.suffix(3000))"
        }
        /// `nmcli connection up` must fail, and the server's or charon-nm's log of the attempt must give
        /// `reason`. An activation that never reached the server (no packet in its log) is no refusal and is
        /// tried once more.
        var refused: [String] = []
        func refuse(_ id: String, _ what: String, server reason: String? = nil, client reasons: [String] = []) throws {
            for attempt in 1...2 {
                let serverMark = server.log.utf8.count
                let clientMark = desktop.charonLog.utf8.count
                let up = try desktop.up(id, timeout: .seconds(10))
                if up.succeeded {
                    desktop.down(id)
                    Issue.record("\(what): connected but must be refused\n\(logs())")
                    return
                }
                let serverLog = Self.since(serverMark, server.log)
                if !serverLog.contains("received packet") && attempt == 1 { continue }
                let clientLog = Self.since(clientMark, desktop.charonLog)
                let why = reason.map { serverLog.contains($0) } ?? false || reasons.contains { clientLog.contains($0) }
                #expect(why, "\(what): refused, but not for the expected reason: \(up)\n\(logs())")
                if why { refused.append(what) }
                return
            }
        }
        let host = ForwardingTests.hostAddress
        // Nothing but the tunnel leads to the host behind the node; the outside IPv6 host is reachable.
        #expect(
            try !pair.ping(from: pair.clientNamespace, to: host).succeeded,
            "the host behind the node answers without a tunnel")
        #expect(
            try !pair.ping(from: pair.clientNamespace, to: ForwardingTests.hostAddress6).succeeded,
            "the host behind the node answers IPv6 without a tunnel")
        #expect(
            try pair.ping(from: pair.clientNamespace, to: pair.outsideAddress6).succeeded,
            "outside IPv6 host unreachable before connecting")

        try dora.install(on: desktop)
        var proven: [String] = []
        for service in Self.services {
            let id = "nmt nm-1 \(service)"
            let up = try desktop.up(id)
            guard up.succeeded else {
                Issue.record("\(service): nmcli connection up failed: \(up)\n\(logs())")
                continue
            }
            defer { desktop.down(id) }
            let addresses = try desktop.addresses(of: id)
            #expect(
                addresses.contains { IPText.cidr(pool, contains: String($0.prefix { $0 != "/" })) },
                "\(service): no virtual IP from \(pool): \(addresses)")
            let sa = try server.securityAssociations().first { $0.state == "ESTABLISHED" }
            #expect(sa?.name == service, "\(service): the server chose \(sa?.name ?? "nothing")")
            let ping = try pair.ping(from: pair.clientNamespace, to: host)
            #expect(ping.succeeded, "\(service): ping to the host behind the node: \(ping)\n\(logs())")
            var ipv6 = false
            if let pool6 = node.pool6 {
                let addresses6 = try desktop.addresses(of: id, family: 6)
                #expect(
                    addresses6.contains { IPText.cidr(pool6, contains: String($0.prefix { $0 != "/" })) },
                    "\(service): no IPv6 virtual IP from \(pool6): \(addresses6)")
                let ping6 = try pair.ping(from: pair.clientNamespace, to: ForwardingTests.hostAddress6)
                #expect(ping6.succeeded, "\(service): ping6 to the host behind the node: \(ping6)\n\(logs())")
                ipv6 = ping6.succeeded
            } else {
                let outside = try pair.ping(from: pair.clientNamespace, to: pair.outsideAddress6)
                #expect(!outside.succeeded, "\(service): IPv6 leaks outside the tunnel while connected")
                ipv6 = !outside.succeeded
            }
            if ping.succeeded && ipv6 { proven.append(service) }
        }
        #expect(proven == Self.services, "proven: \(proven)")
        // Disconnected, IPv6 flows again: the blackhole route leaves with the VPN (polled: NetworkManager removes
        // it just after `connection down` returns).
        let deadline = ContinuousClock.now + .seconds(5)
        var after = try pair.ping(from: pair.clientNamespace, to: pair.outsideAddress6)
        while !after.succeeded && ContinuousClock.now < deadline {
            usleep(50_000)
            after = try pair.ping(from: pair.clientNamespace, to: pair.outsideAddress6)
        }
        #expect(after.succeeded, "IPv6 blocked after disconnecting: \(after)")

        // Refused: a wrong password (the keyfile with one character of the secret changed).
        let eap = try dora.keyfile("ikev2-eap")
        let text = try String(contentsOf: eap, encoding: .utf8)
        let wrong = keep.appendingPathComponent(eap.lastPathComponent)
        try text.replacingOccurrences(of: "\npassword=", with: "\npassword=x").write(
            to: wrong, atomically: true, encoding: .utf8)
        #expect(text.contains("\npassword="))
        try desktop.load(connectionFile: wrong)
        try refuse("nmt nm-1 ikev2-eap", "wrong password", server: "EAP-MS-CHAPv2 verification failed")
        try desktop.load(connectionFile: eap)

        // Refused: a server the desktop does not trust (the CA file holds another CA of the same name).
        let caPath = try #require(try UserFiles.value("certificate", in: eap))
        let foreignCA = keep.appendingPathComponent("foreign-ca.pem")
        try Subprocess.check(
            StrongSwanEnvironment.openSSLPath,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/O=nmt/CN=nmt VPN Root CA", "-keyout", keep.appendingPathComponent("foreign-ca.key").path,
                "-out", foreignCA.path,
            ])
        try desktop.install(foreignCA, at: caPath, mode: 0o644)
        try refuse("nmt nm-1 ikev2-eap", "untrusted server", client: ["no trusted", "no issuer certificate found"])
        try desktop.install(dora.folder.appendingPathComponent("ca.pem"), at: caPath, mode: 0o644)

        // Refused: a revoked certificate. Rita installed her files (same connection names as dora's: one person
        // per desktop) before she was revoked; the node reloads its CRL.
        _ = try d.revoke(user: "rita")
        // The node README's reload (it clears the CRL charon cached while accepting dora's certificate).
        let readme = try String(contentsOf: node.directory.appendingPathComponent("README"), encoding: .utf8)
        let reload = try #require(
            readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("swanctl --load-all") })
        let loaded = try server.swanctl(
            Array(reload.split(separator: " ").dropFirst().map(String.init)) + ["--file", node.confFile])
        #expect(loaded.succeeded, "\(reload): \(loaded)")
        try rita.install(on: desktop)
        try refuse("nmt nm-1 ikev2-cert", "revoked certificate", server: "certificate was revoked")
        print(
            "e2e NetworkManager (\(clock.now - started), \(pool6 ? "IPv6 through the tunnel" : "IPv6 blackholed"), server strongSwan \(build.version), charon-nm 5.9): connected: \(proven.joined(separator: ", ")); refused: \(refused.joined(separator: ", "))"
        )
        #expect(refused.count == 3)
        // Nothing else was started on the desktop's behalf (no bus activation).
        let strangers = try desktop.strangers()
        #expect(strangers.isEmpty, "processes the test did not start: \(strangers)")
    }

    static func since(_ mark: Int, _ log: String) -> String { NodeUnderTest.since(mark, log) }
}
