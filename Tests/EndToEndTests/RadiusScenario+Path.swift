import Foundation
import Testing
import VPNProvTestHarness

/// The node-RADIUS path (`accounts.protection: ipsec`): RADIUS travels in the generated IPsec, a client's
/// UDP to a RADIUS server is refused, the relay listens on loopback.
extension RadiusScenario {

    /// A capture of RADIUS server `preferred`'s link while an account logs in through the free node (IKEv2
    /// EAP-MSCHAPv2, then IKEv1 XAuth) sees ESP between the two, and no RADIUS in clear: not the account's name,
    /// not the client's address (Calling-Station-Id), no EAP-MSCHAPv2. Then a RADIUS request the free node sends
    /// in clear (its IPsec to `preferred` removed) is dropped: unanswered and unseen by FreeRADIUS, and answered
    /// once the two generated firewall rules are gone (so it is they that drop it).
    func pathSteps() {
        let node = free
        let connection = "radius-\(preferred)"
        step("node↔RADIUS link captured during EAP-MSCHAPv2 and XAuth logins: only ESP, no account name, no RADIUS") {
            let capture = try lab.capture(atRadius: preferred, peer: node.address)
            let marks = try radiusMarks()
            _ = try connectAndReachHostBehind(0, "alice", to: node, ikeVersion: 2)
            try disconnect(0, from: node, ikeVersion: 2)
            _ = try connectAndReachHostBehind(0, "alice", to: node, ikeVersion: 1)
            try disconnect(0, from: node, ikeVersion: 1)
            try wait("alice's sessions closed") { try openSessions("alice") == 0 }
            let bytes = try capture.finish()
            let log = try radiusLog(since: marks)
            try check(
                log.contains("Login OK: [alice") && log.contains("from client \(node.name)"),
                "\(preferred) did not decide alice's logins: \(log.suffix(1500))")
            let all = try capture.read()
            let packets = all.split(separator: "\n").filter { !$0.hasPrefix(" ") && !$0.hasPrefix("\t") }
            // with -v, a packet's second line is its transport: "… UDP-encap: ESP(spi=…,seq=…)"
            let esp = all.split(separator: "\n").filter { $0.contains("ESP(spi=") }.count
            let radius = try capture.read(["udp", "port", "1812", "or", "udp", "port", "1813"])
            let client = lab.clients[0].address
            try check(bytes.range(of: Data("alice".utf8)) == nil, "the account name is in the capture")
            try check(
                bytes.range(of: Data(client.utf8)) == nil, "the client's address (Calling-Station-Id) is in the capture"
            )
            try check(radius.isEmpty, "RADIUS in clear on the link:\n\(radius.prefix(2000))")
            try check(
                !all.contains("RADIUS") && !all.contains("EAP"), "RADIUS decoded on the link:\n\(all.prefix(2000))")
            try check(
                esp > 0,
                "no ESP between \(node.name) and \(preferred): \(all.prefix(2000)) (\(bytes.count) bytes; tcpdump: \(capture.log))"
            )
            return "\(packets.count) packets, \(esp) ESP, none RADIUS, \(bytes.count) bytes without the account name"
        }
        step(
            "a RADIUS request in clear from \(node.name) to \(preferred) is dropped; answered without the generated rules"
        ) {
            let nodeCharon = try lab.nodeDaemon(node.name)
            let server = try lab.radiusCharon(preferred)
            let serverNamespace = try lab.radiusMember(preferred).namespace
            let nodeNamespace = try lab.node(node.name).namespace
            // No IPsec between the two any more: the node's request, and the server's answer, leave in clear.
            for charon in [nodeCharon, server] {
                let peer = charon === server ? "radius-\(node.name)" : connection
                _ = try charon.swanctl(["--uninstall", "--child", peer])
                _ = try charon.swanctl(["--terminate", "--ike", peer])
            }
            defer {
                // As loaded: the server's trap policy, the node's connection up.
                _ = try? server.swanctl(["--install", "--child", "radius-\(node.name)"])
                _ = try? nodeCharon.initiate(child: connection, ike: connection, timeout: .seconds(10))
            }
            let file = try Scratch.makeDirectory("cleartext").appendingPathComponent("secret")
            try (try inputs.radiusSecret(node.name) + "\n").write(to: file, atomically: true, encoding: .utf8)
            chmod(file.path, 0o600)
            // Message-Authenticator: the servers' clients require it (radclient computes it)
            let request =
                "User-Name = mallory\nUser-Password = \"not-a-password\"\nNAS-Identifier = \(node.name)\n"
                + "Message-Authenticator = 0x00\n"
            func send() throws -> (answered: Bool, seen: Bool, output: String) {
                let mark = try lab.radius(preferred).logMark
                let result = try lab.radclient(
                    inNamespace: nodeNamespace,
                    arguments: [
                        "-r", "1", "-t", "2", "-S", file.path, "\(inputs.radiusServers[0].address):1812", "auth",
                    ],
                    input: request)
                let seen = try lab.radius(preferred).log(since: mark).contains("[mallory")
                return (
                    result.output.contains("Access-Reject") || result.output.contains("Access-Accept"), seen,
                    "\(result)"
                )
            }
            let protected = try send()
            try check(!protected.answered && !protected.seen, "a request in clear was answered or seen: \(protected)")
            guard let serverRules = try inputs.radiusIPsec(preferred)?.firewall,
                let nodeRules = try inputs.nodeFirewall(node.name)
            else { throw HarnessError("no generated firewall") }
            defer {
                try? NetworkPair.loadNftables(serverRules, in: serverNamespace)
                try? NetworkPair.loadNftables(nodeRules, in: nodeNamespace)
            }
            try NetworkPair.loadNftables("delete table inet vpnprov-radius\n", in: serverNamespace)
            let serverOpen = try send()
            try check(
                serverOpen.seen && !serverOpen.answered,
                "without the server's rule: \(serverOpen) (the node's rule must drop the answer)")
            try NetworkPair.loadNftables("delete table inet vpnprov\n", in: nodeNamespace)
            let open = try send()
            try check(open.seen && open.answered, "without both rules the request in clear was not answered: \(open)")
            return "dropped by \(preferred); its answer in clear dropped by \(node.name); answered without the rules"
        }
        step(
            "a tunnel client's UDP to a RADIUS server is refused by the node; without the node's rule it reaches the server through the node's IPsec, as the node"
        ) {
            try clientUDPToRadiusServerIsRefused(node: node)
        }
        step("the node's RADIUS relay listens on loopback only; its proxy sockets are bound to the node's address") {
            try relayListensOnLoopback(node: node)
        }
        try? resetSessions()
    }

    /// The relay's UDP sockets in the node's namespace (`ss`, its process's): charon's two ports on 127.0.0.1, and
    /// the sockets it sends to the RADIUS servers from, on the node's own address; none on every address.
    func relayListensOnLoopback(node: RadiusNodeSpec) throws -> String {
        let relay = try lab.relay(node.name)
        let result = try Subprocess.check(
            StrongSwanEnvironment.ipPath, ["netns", "exec", try lab.node(node.name).namespace, "ss", "-H", "-lunp"])
        let sockets = result.stdout.split(separator: "\n").filter { $0.contains("pid=\(relay.pid),") }.map {
            String($0.split(separator: " ", omittingEmptySubsequences: true)[3])
        }.sorted()
        try check(
            sockets.contains("127.0.0.1:11812") && sockets.contains("127.0.0.1:11813"),
            "the relay's sockets: \(sockets)\n\(result.stdout)")
        let others = sockets.filter { !$0.hasPrefix("127.0.0.1:") }
        try check(others.allSatisfy { $0.hasPrefix(node.address + ":") }, "the relay's sockets: \(sockets)")
        return sockets.joined(separator: ", ")
    }

    /// The node↔server IPsec carries every UDP packet between the two hosts, and the node masquerades its clients to
    /// its own address: a client's UDP to the server would enter that IPsec and arrive as the node, with only the
    /// node's RADIUS secret between it and every UDP service of the RADIUS host. The node's table refuses it (its
    /// rule's counter takes the datagram, so it went no further); with that rule taken out of the live table the
    /// same datagram is counted at the server, decrypted from the IPsec TUN device with the node's address.
    func clientUDPToRadiusServerIsRefused(node: RadiusNodeSpec) throws -> String {
        let server = try lab.radiusMember(preferred)
        let nodeNamespace = try lab.node(node.name).namespace
        let port = 9999
        try NetworkPair.loadNftables(
            """
            table inet vpnprov-probe {
                counter arrived {}
                chain input {
                    type filter hook input priority -300; policy accept;
                    iifname "ipsec*" ip saddr \(node.address) udp dport \(port) counter name arrived
                }
            }

            """, in: server.namespace)
        defer { try? NetworkPair.loadNftables("delete table inet vpnprov-probe\n", in: server.namespace) }
        func arrived() throws -> Int {
            let out = try Subprocess.check(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", server.namespace, "nft", "list", "counter", "inet", "vpnprov-probe", "arrived"]
            ).stdout
            guard let range = out.range(of: "packets ") else { throw HarnessError("no counter in: \(out)") }
            return Int(out[range.upperBound...].prefix { $0.isNumber }) ?? -1
        }
        // The app's own setup (the seed app's code path with the catalogue's ikev2-eap entry): a full tunnel, so the
        // server's address, somewhere on the internet in production, is reached through the node.
        let client = try lab.client(0)
        let serverAddress = inputs.radiusServers[0].address
        guard
            let setup = try inputs.seedAppSetups(node: node.name, user: "alice", password: passwords["alice"]!)
                .first(where: { $0.label == "ikev2-eap" })?.setup
        else { throw HarnessError("no ikev2-eap entry of \(node.name) in the catalogue") }
        try client.loadAllCleanly(confFile: try setup.write(label: "seed-radius-udp").confFile)
        loadedConf[0] = nil
        let up = try client.initiate(child: setup.childName, ike: setup.connectionName, timeout: Self.timeout)
        defer { _ = try? client.terminate(ike: setup.connectionName, timeout: .seconds(3)) }
        guard up.succeeded,
            let vip = try client.virtualIPs(ike: setup.connectionName).first(where: { !$0.contains(":") })
        else { throw HarnessError("alice → \(node.name) (the app's setup): \(up)") }
        // One datagram from the client's virtual IP to the server.
        func send() throws {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((sys.argv[1], 0))
                s.sendto(b"probe from a tunnel client", (sys.argv[2], int(sys.argv[3])))
                """
            let result = try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", lab.clients[0].namespace, "/usr/bin/python3", "-c", script, vip, serverAddress,
                    String(port),
                ], timeout: .seconds(10))
            guard result.succeeded else { throw HarnessError("sending the datagram: \(result)") }
        }
        // The node's rule about this server: its counter and handle.
        func nodeRule() throws -> (packets: Int, handle: String)? {
            let chain = try Subprocess.check(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", nodeNamespace, "nft", "-a", "list", "chain", "inet", "vpnprov", "client_to_world"]
            ).stdout
            return chain.split(separator: "\n").filter {
                $0.contains("RADIUS servers") && $0.contains("daddr \(serverAddress) ")
            }.compactMap { line -> (packets: Int, handle: String)? in
                guard let packets = line.range(of: "counter packets "), let handle = line.range(of: "# handle ")
                else { return nil }
                return (
                    Int(line[packets.upperBound...].prefix { $0.isNumber }) ?? -1, String(line[handle.upperBound...])
                )
            }.first
        }
        guard let rule = try nodeRule(), rule.packets == 0 else {
            throw HarnessError("no unused rule about \(serverAddress) in \(node.name)'s table")
        }
        try send()
        try wait("the node's rule refusing the client's datagram") { try nodeRule()?.packets == 1 }
        try check(try arrived() == 0, "the client's datagram reached \(preferred)")
        // The same datagram with the node's rule taken out of its live table.
        guard let rules = try inputs.nodeFirewall(node.name) else { throw HarnessError("no generated firewall") }
        defer { try? NetworkPair.loadNftables(rules, in: nodeNamespace) }
        try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", nodeNamespace, "nft", "delete", "rule", "inet", "vpnprov", "client_to_world", "handle",
                rule.handle,
            ])
        try send()
        try wait("the client's datagram at \(preferred) without the node's rule") { try arrived() == 1 }
        return
            "refused by \(node.name)'s rule; without it the datagram arrived at \(preferred) through IPsec from \(node.address)"
    }
}
