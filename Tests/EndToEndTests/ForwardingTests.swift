import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// A node that carries traffic: with only the generated files applied (the node's sysctl file, its
/// nftables table and its swanctl tree), every client of every service reaches a host *behind* the
/// node — ping, a DNS query to the pushed resolver and a 2 MB HTTP download — and that host sees the
/// node's address, not the pool's. The node's uplink leads to an "internet" namespace whose host drops
/// ICMP "fragmentation needed" / "packet too big" (a path MTU discovery black hole): the tunnel's MTU is
/// 1400 and the client announces a full-size MSS, so the download only completes because the node
/// clamps the MSS (proven by loading the same ruleset without its MSS rules first). Also: client
/// isolation, no forwarding of pool addresses from outside the tunnel, and certificate users scoped to
/// their nodes by charon itself.
@Suite(.serialized, .strongSwan)
struct ForwardingTests {
    static let inventory = """
        vpnprov: 1
        name: fwd
        defaults:
          pool: 10.90.0.0/24
          pool6: fd00:90::/112
          dns: [203.0.113.80, 2001:db8:80::80]
          network:
            ipsec: libipsec
        nodes:
          fwd-1:
            address: fwd-1.vpn.test
            services: [ikev2-cert, ikev2-eap, ikev2-psk, ipsec-xauth-psk]
            psk: gen
            group: fwd
          fwd-2:
            address: fwd-2.vpn.test
            pool: 10.91.0.0/24
            pool6: fd00:91::/112
            services: [ikev2-cert, ikev2-eap]
            network:
              isolate_clients: false
        users:
          dora:
            cert: true
            password: gen
          emil:
            password: gen
            devices: [linux]
          finn:
            cert: true
            nodes: [fwd-1]
            devices: [linux]

        """

    /// The host behind the node.
    static let hostAddress = "203.0.113.80"
    static let hostAddress6 = "2001:db8:80::80"
    static let nodeUplinkAddress = "203.0.113.1"
    static let nodeUplinkAddress6 = "2001:db8:80::1"
    static let hosts = ["fwd-1.vpn.test", "fwd-2.vpn.test"]

    /// The inventory written to a scratch file, generated.
    static func generate(_ label: String, inventory: String = ForwardingTests.inventory) throws -> GeneratedDeployment {
        let path = try Scratch.makeDirectory("inv-\(label)").appendingPathComponent("inventory.yaml").path
        try inventory.write(toFile: path, atomically: true, encoding: .utf8)
        return try GeneratedDeployment.generate(inventory: path, label: label)
    }

    @Test(
        "Every client reaches a host behind the node through it, NATed, MSS-clamped, with DNS",
        arguments: StrongSwanBuild.all)
    func clientsReachTheInternetThroughTheNode(_ build: StrongSwanBuild) throws {
        try build.require()
        let d = try Self.generate("fwd-\(build.name)")
        let node = try d.node("fwd-1")
        let nut = try NodeUnderTest.start(d, node: "fwd-1", builds: BuildPair(server: build, client: build))
        defer { nut.teardown() }
        let internet = try Internet.attach(to: nut.scenario.pair.serverNamespace)
        defer { internet.teardown() }
        let web = try Scratch.makeDirectory("fwd-web")
        let payload = [UInt8]((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        try Data(payload).write(to: web.appendingPathComponent("blob"))
        let http = try HTTPFileServer(namespace: internet.namespace, address: "::", port: 80, directory: web)
        defer { http.stop() }
        let dns = try Dnsmasq.start(in: internet.namespace)
        defer { dns.stop() }

        // Without the ruleset the host behind the node is unreachable from the pools (no NAT, and no
        // forwarding): the proof below is the generated files' doing.
        try internet.applyGenerated(node: node, in: nut.scenario.pair.serverNamespace, mssRules: false)

        var proven = 0
        var mssProven = false
        for c in try d.clientCases() where c.node == "fwd-1" {
            let loadable = try c.make()
            let (ike, child) = try nut.load(loadable, label: c.label)
            defer { _ = try? nut.client.terminate(ike: ike) }
            let up = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(15))
            guard up.succeeded else {
                Issue.record("\(c.label): no tunnel: \(up)\n\(nut.server.log.suffix(3000))")
                continue
            }
            let sa = try #require(
                try nut.client.securityAssociations().first { $0.name == ike && $0.state == "ESTABLISHED" })
            let tunnel = TunnelScenario.Tunnel(ike: sa, virtualIPs: sa.localVirtualIPs)
            let vip = try #require(tunnel.virtualIPv4, "\(c.label): no IPv4 virtual IP")
            // The client announces a full-size MSS (its tunnel device at 1500) while the node's tunnel
            // carries 1400: only the node's clamping keeps the host's segments small enough.
            try Subprocess.check(
                StrongSwanEnvironment.ipPath,
                ["-n", nut.scenario.pair.clientNamespace, "link", "set", "ipsec0", "mtu", "1500"])
            if !mssProven {
                let stalled = try internet.download(from: nut.scenario.pair.clientNamespace, source: vip, maxTime: 6)
                #expect(
                    !stalled.succeeded,
                    "\(c.label): without MSS clamping the 2 MB download should stall at the black hole")
                try internet.applyGenerated(node: node, in: nut.scenario.pair.serverNamespace, mssRules: true)
                mssProven = true
            }
            let ping = try nut.scenario.pair.ping(
                from: nut.scenario.pair.clientNamespace, source: vip, to: Self.hostAddress, within: 6)
            #expect(ping.succeeded, "\(c.label): ping to the host behind the node: \(ping)")
            let query = try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", nut.scenario.pair.clientNamespace, "dig", "+short", "+time=3", "+tries=1", "-b",
                    vip,
                    "@\(Self.hostAddress)", "web.vpn.test", "A",
                ])
            #expect(query.stdout.contains(Self.hostAddress), "\(c.label): DNS through the tunnel: \(query)")
            let got = try internet.download(from: nut.scenario.pair.clientNamespace, source: vip, maxTime: 30)
            #expect(got.succeeded && got.stdout.hasPrefix("200 \(payload.count)"), "\(c.label): 2 MB download: \(got)")
            // The host saw the node's uplink address, never the pool's.
            #expect(
                http.requestLog.contains(Self.nodeUplinkAddress), "\(c.label): HTTP request log: \(http.requestLog)")
            #expect(!http.requestLog.contains("10.90.0."), "\(c.label): the pool address reached the host")
            if c.ikeVersion == 2, let vip6 = tunnel.virtualIPv6 {
                let ping6 = try nut.scenario.pair.ping(
                    from: nut.scenario.pair.clientNamespace, source: vip6, to: Self.hostAddress6)
                #expect(ping6.succeeded, "\(c.label): ping6 to the host behind the node: \(ping6)")
                let got6 = try internet.download(
                    from: nut.scenario.pair.clientNamespace, source: vip6, maxTime: 30, ipv6: true)
                #expect(
                    got6.succeeded && got6.stdout.hasPrefix("200 \(payload.count)"),
                    "\(c.label): 2 MB download over IPv6: \(got6)")
                #expect(http.requestLog.contains(Self.nodeUplinkAddress6), "\(c.label): IPv6 HTTP request log")
                #expect(!http.requestLog.contains("fd00:90:"), "\(c.label): the IPv6 pool address reached the host")
            }
            proven += 1
        }
        #expect(proven >= 8, "only \(proven) client cases proven")
        #expect(dns.log.contains("web.vpn.test"), "the resolver never saw a query")

        // A packet from a pool address that arrives outside the tunnel is not forwarded: the host's
        // counter of echo requests does not move (and does move for one through the tunnel above).
        let spoofer = nut.scenario.pair.clientNamespace
        try Subprocess.check(
            StrongSwanEnvironment.ipPath, ["-n", spoofer, "addr", "add", "10.90.0.250/32", "dev", "veth0"])
        try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            ["-n", spoofer, "route", "add", "203.0.113.0/24", "via", nut.scenario.pair.serverAddress])
        let before = try internet.echoRequestsSeen()
        #expect(before > 0, "the host's counter saw none of the tunnel's pings")
        _ = try nut.scenario.pair.ping(from: spoofer, source: "10.90.0.250", to: Self.hostAddress, count: 2)
        #expect(try internet.echoRequestsSeen() == before, "a pool address from outside the tunnel was forwarded")
        print("forwarding \(build.name): \(proven) client cases reached the host behind the node")
    }

    /// A node whose clients may reach 100.64.0.0/10 and fd00::/8 of the private ranges, and that pushes
    /// four DNS servers: itself (both families) and a private resolver behind it (fc00::/8 and
    /// 172.16/12 are not allowed: DNS to them is, nothing else).
    static let fenceInventory = """
        vpnprov: 1
        name: fence
        nodes:
          fence-1:
            address: fwd-1.vpn.test
            pool: 10.92.0.0/24
            pool6: fd00:92::/112
            services: [ikev2-cert]
            dns: [203.0.113.1, 2001:db8:80::1, 172.16.80.53, "fc00:80::53"]
            network:
              ipsec: libipsec
              allow_private: [100.64.0.0/10, "fd00::/8"]
        users:
          dora:
            cert: true
            devices: [linux]

        """

    /// Behind the node ("internet" namespace): a fake metadata service (its on-link address, as on a
    /// cloud), Alibaba's metadata address inside the allowed 100.64.0.0/10, AWS's IPv6 one inside the
    /// allowed fd00::/8, private hosts the inventory allows and does not, a private resolver.
    static let metadata = "169.254.169.254"
    static let metadataAlibaba = "100.100.100.200"
    static let metadata6 = "fd00:ec2::254"
    static let allowedPrivate = "100.64.80.80"
    static let allowedPrivate6 = "fd00:80::80"
    static let refusedPrivate = "10.80.0.80"
    static let refusedPrivate6 = "fc00:80::80"
    static let privateResolver = "172.16.80.53"
    static let privateResolver6 = "fc00:80::53"
    static let fakeCredentials = "AKIA-FAKE-INSTANCE-CREDENTIALS"

    @Test(
        "A client reaches neither the cloud's metadata service, nor the node's own services, nor a private network the inventory does not allow; the internet, allowed networks and the pushed DNS it does",
        arguments: StrongSwanBuild.all)
    func clientsAreFencedOffTheNodeAndItsNetworks(_ build: StrongSwanBuild) throws {
        try build.require()
        let d = try Self.generate("fence-\(build.name)", inventory: Self.fenceInventory)
        let node = try d.node("fence-1")
        let nut = try NodeUnderTest.start(d, node: "fence-1", builds: BuildPair(server: build, client: build))
        defer { nut.teardown() }
        let pair = nut.scenario.pair
        let internet = try Internet.attach(to: pair.serverNamespace)
        defer { internet.teardown() }
        let ip = StrongSwanEnvironment.ipPath
        // The metadata address is on the node's uplink link, as a cloud puts it; the other hosts are routed
        // to the internet namespace's host.
        try Subprocess.check(ip, ["-n", internet.namespace, "addr", "add", "\(Self.metadata)/32", "dev", "eth0"])
        try Subprocess.check(ip, ["-n", pair.serverNamespace, "route", "add", "\(Self.metadata)/32", "dev", "up0"])
        for address in [Self.metadataAlibaba, Self.allowedPrivate, Self.refusedPrivate, Self.privateResolver] {
            try Subprocess.check(ip, ["-n", internet.namespace, "addr", "add", "\(address)/32", "dev", "lo"])
            try Subprocess.check(
                ip, ["-n", pair.serverNamespace, "route", "add", "\(address)/32", "via", Self.hostAddress])
        }
        for address in [Self.metadata6, Self.allowedPrivate6, Self.refusedPrivate6, Self.privateResolver6] {
            try Subprocess.check(ip, ["-n", internet.namespace, "addr", "add", "\(address)/128", "dev", "lo"])
            try Subprocess.check(
                ip, ["-n", pair.serverNamespace, "-6", "route", "add", "\(address)/128", "via", Self.hostAddress6])
        }
        // Every address behind the node serves the same directory: the fake instance credentials, and a
        // page that says who answered.
        let web = try Scratch.makeDirectory("fence-web")
        let credentials = web.appendingPathComponent("latest/meta-data/iam/security-credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try Self.fakeCredentials.write(
            to: credentials.appendingPathComponent("vpnprov-node"), atomically: true, encoding: .utf8)
        try "behind".write(to: web.appendingPathComponent("who"), atomically: true, encoding: .utf8)
        let http = try HTTPFileServer(namespace: internet.namespace, address: "::", port: 80, directory: web)
        defer { http.stop() }
        // The node's own service, on every address of the node (as sshd listens).
        let nodeWeb = try Scratch.makeDirectory("fence-node")
        try "node".write(to: nodeWeb.appendingPathComponent("who"), atomically: true, encoding: .utf8)
        let sshd = try HTTPFileServer(namespace: pair.serverNamespace, address: "::", port: 22, directory: nodeWeb)
        defer { sshd.stop() }
        let nodeDNS = try Dnsmasq.start(
            in: pair.serverNamespace, listen: [Self.nodeUplinkAddress, Self.nodeUplinkAddress6])
        defer { nodeDNS.stop() }
        let privateDNS = try Dnsmasq.start(
            in: internet.namespace, listen: [Self.privateResolver, Self.privateResolver6])
        defer { privateDNS.stop() }

        let c = try #require(try d.clientCases().first { $0.node == "fence-1" && $0.kind == .linux })
        let (ike, child) = try nut.load(try c.make(), label: c.label)
        defer { _ = try? nut.client.terminate(ike: ike) }
        let up = try nut.client.initiate(child: child, ike: ike, timeout: .seconds(15))
        try #require(up.succeeded, "no tunnel: \(up)\n\(nut.server.log.suffix(3000))")
        let vips = try nut.client.virtualIPs(ike: ike)
        let vip = try #require(vips.first { !$0.contains(":") }, "no IPv4 virtual IP: \(vips)")
        let vip6 = try #require(vips.first { $0.contains(":") }, "no IPv6 virtual IP: \(vips)")

        /// `curl` through the tunnel; the body, or nil when nothing answered.
        func fetch(_ host: String, port: Int = 80, path: String = "who") throws -> String? {
            let v6 = host.contains(":")
            let result = try Subprocess.run(
                ip,
                [
                    "netns", "exec", pair.clientNamespace, "curl", "-s", "-f", "--interface", v6 ? vip6 : vip,
                    "--max-time", "5", "http://\(v6 ? "[\(host)]" : host):\(port)/\(path)",
                ], timeout: .seconds(15))
            return result.succeeded ? result.stdout : nil
        }
        func resolves(_ server: String) throws -> Bool {
            let query = try Subprocess.run(
                ip,
                [
                    "netns", "exec", pair.clientNamespace, "dig", "+short", "+time=2", "+tries=1", "-b",
                    server.contains(":") ? vip6 : vip, "@\(server)", "web.vpn.test", "A",
                ], timeout: .seconds(15))
            return query.stdout.contains(Self.hostAddress)
        }
        let metadataURLs = [Self.metadata, Self.metadataAlibaba, Self.metadata6]
        let nodeAddresses = [Self.nodeUplinkAddress, pair.serverInnerAddress, Self.nodeUplinkAddress6]
        let credentialsPath = "latest/meta-data/iam/security-credentials/vpnprov-node"

        // Without the rules that decide where a client may go (the two jumps taken out of the generated
        // table), every probe below answers: what refuses them after is the generated table's doing.
        let table = try String(
            contentsOf: node.directory.appendingPathComponent("network/vpnprov.nft"), encoding: .utf8)
        let open = table.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("jump client_to_") }.joined(separator: "\n")
        #expect(open != table, "the generated table has no jump to its client chains")
        try internet.applyGenerated(node: node, in: pair.serverNamespace, mssRules: true)  // and its sysctl file
        try NetworkPair.loadNftables(open, in: pair.serverNamespace)
        for host in metadataURLs {
            #expect(
                try fetch(host, path: credentialsPath) == Self.fakeCredentials,
                "without the client chains the metadata service at \(host) should answer")
        }
        for host in nodeAddresses {
            #expect(try fetch(host, port: 22) == "node", "without the client chains the node's port 22 at \(host)")
        }
        for host in [Self.refusedPrivate, Self.refusedPrivate6, Self.privateResolver] {
            #expect(try fetch(host) == "behind", "without the client chains the private host \(host) should answer")
        }

        // The generated table, whole.
        try internet.applyGenerated(node: node, in: pair.serverNamespace, mssRules: true)
        for host in metadataURLs {
            #expect(try fetch(host, path: credentialsPath) == nil, "the metadata service at \(host) answered a client")
        }
        for host in nodeAddresses {
            #expect(try fetch(host, port: 22) == nil, "the node's own port 22 at \(host) answered a client")
        }
        for host in [Self.refusedPrivate, Self.refusedPrivate6, Self.privateResolver, Self.privateResolver6] {
            #expect(try fetch(host) == nil, "the private host \(host), which the inventory does not allow, answered")
        }
        for host in [Self.allowedPrivate, Self.allowedPrivate6, Self.hostAddress, Self.hostAddress6] {
            #expect(try fetch(host) == "behind", "\(host), which clients may reach, did not answer")
        }
        // The pushed DNS: the node itself and the private resolver, both families.
        for server in [Self.nodeUplinkAddress, Self.nodeUplinkAddress6, Self.privateResolver, Self.privateResolver6] {
            #expect(try resolves(server), "the pushed DNS server \(server) did not answer through the tunnel")
        }
        // ICMP to the node: ping, for the client's own diagnosis.
        #expect(try pair.ping(from: pair.clientNamespace, source: vip, to: Self.nodeUplinkAddress).succeeded)
        #expect(try pair.ping(from: pair.clientNamespace, source: vip6, to: Self.nodeUplinkAddress6).succeeded)
    }

    @Test("Client isolation: on by default, off where the inventory says", arguments: StrongSwanBuild.all)
    func clientIsolation(_ build: StrongSwanBuild) throws {
        try build.require()
        let d = try Self.generate("fwd-iso-\(build.name)")
        for (name, isolated) in [("fwd-1", true), ("fwd-2", false)] {
            let node = try d.node(name)
            let nut = try NodeUnderTest.start(d, node: name, builds: BuildPair(server: build, client: build))
            defer { nut.teardown() }
            let internet = try Internet.attach(to: nut.scenario.pair.serverNamespace)
            defer { internet.teardown() }
            try internet.applyGenerated(node: node, in: nut.scenario.pair.serverNamespace, mssRules: true)
            let second = try SecondClient.start(beside: nut.scenario.pair, build: build)
            defer { second.stop() }
            // Two users' Linux profiles, one in each client namespace.
            let cases = try d.clientCases().filter { $0.node == name && $0.kind == .linux && $0.service == "ikev2-eap" }
            guard cases.count >= 2 else {
                Issue.record("need two EAP users on \(name)")
                return
            }
            let (ikeA, childA) = try nut.load(try cases[0].make(), label: cases[0].label)
            defer { _ = try? nut.client.terminate(ike: ikeA) }
            #expect(try nut.client.initiate(child: childA, ike: ikeA).succeeded)
            guard case .asWritten(let confB, let ikeB, let childB) = try cases[1].make() else { return }
            try second.charon.loadAllCleanly(confFile: confB)
            #expect(try second.charon.initiate(child: childB, ike: ikeB).succeeded)
            let vipA = try #require(try nut.client.virtualIPs(ike: ikeA).first { !$0.contains(":") })
            let vipB = try #require(try second.charon.virtualIPs(ike: ikeB).first { !$0.contains(":") })
            let ping = try nut.scenario.pair.ping(from: nut.scenario.pair.clientNamespace, source: vipA, to: vipB)
            #expect(
                ping.succeeded == !isolated,
                "\(name): client A → client B (\(vipB)) with isolation \(isolated ? "on" : "off"): \(ping)")
        }
    }

    @Test(
        "A certificate opens only the user's nodes; adding a node re-issues it and opens that node",
        arguments: StrongSwanBuild.all)
    func certificateUsersAreScopedToTheirNodes(_ build: StrongSwanBuild) throws {
        try build.require()
        let d = try Self.generate("fwd-scope-\(build.name)")
        // finn (nodes: [fwd-1]) aims his certificate profile at fwd-2.
        let finnConf = d.out.appendingPathComponent("clients/finn/linux/swanctl/swanctl.conf").path
        let aimed = try Scratch.makeDirectory("fwd-aimed").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: finnConf).deletingLastPathComponent(), to: aimed)
        let aimedConf = aimed.appendingPathComponent("swanctl.conf").path
        let text = try String(contentsOfFile: aimedConf, encoding: .utf8)
        try text.replacingOccurrences(of: "fwd-1", with: "fwd-2").write(
            toFile: aimedConf, atomically: true, encoding: .utf8)
        let connection = try #require(
            try GeneratedDeployment.connectionNames(inFile: aimedConf).first { $0.hasSuffix("ikev2-cert") })
        do {
            let nut = try NodeUnderTest.start(d, node: "fwd-2", builds: BuildPair(server: build, client: build))
            defer { nut.teardown() }
            let log = try nut.refuse(
                .asWritten(confFile: aimedConf, connection: connection, child: connection), label: "finn → fwd-2")
            // charon names the node's policy that finn's certificate does not carry.
            let policy = try #require(
                GeneratedDeployment.values(
                    of: "cert_policy", in: try String(contentsOfFile: nut.node.confFile, encoding: .utf8)
                ).first)
            #expect(log.contains("constraint requires cert policy \(policy)"), "fwd-2 refused finn, but why?\n\(log)")
        }
        // The operator gives finn fwd-2: generate re-issues his certificate and says so.
        let widened = Self.inventory.replacingOccurrences(of: "nodes: [fwd-1]", with: "nodes: [fwd-1, fwd-2]")
        try widened.write(toFile: d.inventory, atomically: true, encoding: .utf8)
        let run = try VPNProvBinary.run(["generate", d.inventory, "--out", d.out.path, "--state", d.state.path])
        #expect(run.succeeded, "\(run)")
        #expect(run.stdout.contains("finn") || run.stderr.contains("finn"), "the summary does not name finn: \(run)")
        let nut = try NodeUnderTest.start(d, node: "fwd-2", builds: BuildPair(server: build, client: build))
        defer { nut.teardown() }
        let proof = try nut.prove(
            .asWritten(confFile: finnConf, connection: connection, child: connection),
            label: "finn → fwd-2 after the change",
            ikeVersion: 2)
        #expect(proof.serverPeerConfig == "ikev2-cert")
        nut.teardown()

        // And back: the certificate that opened fwd-2 is revoked (it would stay valid otherwise), so
        // the profile finn holds from the widened run is refused there after the next rollout.
        let widenedCopy = try Scratch.makeDirectory("fwd-widened").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: finnConf).deletingLastPathComponent(), to: widenedCopy)
        try Self.inventory.write(toFile: d.inventory, atomically: true, encoding: .utf8)
        let narrowed = try VPNProvBinary.run(["generate", d.inventory, "--out", d.out.path, "--state", d.state.path])
        #expect(narrowed.succeeded, "\(narrowed)")
        let again = try NodeUnderTest.start(d, node: "fwd-2", builds: BuildPair(server: build, client: build))
        defer { again.teardown() }
        let log = try again.refuse(
            .asWritten(
                confFile: widenedCopy.appendingPathComponent("swanctl.conf").path, connection: connection,
                child: connection),
            label: "finn's widened profile → fwd-2 after narrowing")
        #expect(log.contains("certificate was revoked"), "refused, but not as revoked:\n\(log)")
    }
}
