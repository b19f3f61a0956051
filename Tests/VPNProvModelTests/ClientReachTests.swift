import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// Where a node's clients may go (docs/security.md §14): `network.allow_private` and the pushed DNS
/// servers judged at their lines, and the node's table written from the same ranges. The traffic proof
/// is `ForwardingTests` (charon, nft, a fake metadata service behind the node).
@Suite(.temporaries) struct ClientReachTests {
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          a:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            services: [ikev2-cert]
            dns: [169.254.169.253, 10.0.0.2]
            network:
              allow_private:
                - 10.20.0.0/16
                - 169.254.169.254
                - 198.51.100.0/24
                - fd00:20::/48
                - 0.0.0.0/0
          b:
            address: 192.0.2.2
            pool: 10.11.0.0/24
            pool6: fd00:11::/112
            services: [ikev2-cert]
            dns: [192.0.2.53, "fd00:ec2::253", 192.0.2.53]
            network:
              allow_private: [10.20.0.0/16, 10.20.30.0/24, 10.20.0.0/16, "fd00:20::1", "fd00:ec2::254"]
        users:
          carol:
            cert: true
            devices: [linux]

        """

    @Test func entriesAndDNSServersAreJudgedAtTheirLines() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["validate", "--format", "json"], in: dir)
        #expect(r.code == 1)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let found = try #require(doc["diagnostics"] as? [[String: Any]])
            .filter { $0["code"] as? String != "ipv6-leak" }
            .map { "\($0["code"]!) \($0["line"]!):\($0["column"]!)" }
        #expect(
            found.sorted()
                == [
                    "duplicate-entry 21:10",  // b's DNS server 192.0.2.53 twice
                    "network-setting 13:11",  // 198.51.100.0/24 is public: no effect
                    "network-setting 14:11",  // fd00:20::/48 on a node without pool6
                    "never-forwarded 12:11",  // 169.254.169.254: the metadata service, never
                    "never-forwarded 21:10",  // fd00:ec2::253 (AWS's DNS): never reached
                    "never-forwarded 23:80",  // fd00:ec2::254 (AWS's IMDS)
                    "never-forwarded 8:10",  // 169.254.169.253 (AWS's DNS over IPv4)
                ].sorted(), "\(found)")
        // 0.0.0.0/0 holds private and never-reached ranges alike: fine, the never-reached part stays refused.
        let messages = try #require(doc["diagnostics"] as? [[String: Any]]).compactMap { $0["message"] as? String }
        #expect(
            messages.contains(
                "node 'a': network.allow_private 169.254.169.254/32 lies in link-local, where clouds serve instance metadata (169.254.0.0/16), which the node's firewall refuses whatever the inventory says; remove it"
            ), "\(messages)")
        #expect(messages.contains { $0.contains("DNS server fd00:ec2::253 is AWS's instance metadata and services") })
    }

    @Test func theTableRefusesTheNeverRangesFirstAndTheInternalOnesLast() throws {
        let text = Self.inventory
            .replacingOccurrences(of: "dns: [169.254.169.253, 10.0.0.2]", with: "dns: [10.0.0.2]")
            .replacingOccurrences(of: "        - 169.254.169.254\n", with: "")
            .replacingOccurrences(
                of: "dns: [192.0.2.53, \"fd00:ec2::253\", 192.0.2.53]",
                with: "dns: [192.0.2.53, \"fd00:11::1\", 192.0.2.53]"
            )
            .replacingOccurrences(of: ", \"fd00:ec2::254\"]", with: "]")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["generate", "inventory.yaml", "--out", "out", "--state", "state"], in: dir)
        #expect(r.code == 0, "\(r.err)")
        func table(_ node: String) throws -> String {
            try String(contentsOfFile: "\(dir)/out/servers/\(node)/network/vpnprov.nft", encoding: .utf8)
        }
        func elements(_ set: String, in table: String) -> [String] {
            guard let start = table.range(of: "\tset \(set) {\n") else { return [] }
            let body = table[start.upperBound...].prefix { $0 != "}" }
            guard let open = body.range(of: "elements = {") else { return [] }
            return body[open.upperBound...].split(whereSeparator: { $0 == "," || $0 == "\n" })
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let a = try table("a")
        let b = try table("b")
        // The never-reached and the internal ranges are ClientReach's, on every node; the metadata
        // addresses of the issue among them.
        for t in [a, b] {
            #expect(elements("never4", in: t) == ClientReach.never4.map(\.cidr.description))
            #expect(elements("internal4", in: t) == ClientReach.internal4.map(\.cidr.description))
        }
        #expect(elements("never6", in: b) == ClientReach.never6.map(\.cidr.description))
        #expect(elements("internal6", in: b) == ClientReach.internal6.map(\.cidr.description))
        #expect(!a.contains("set never6"), "node a has no pool6, its table no IPv6 sets")
        for (address, family) in [
            ("169.254.169.254", false), ("100.100.100.200", false), ("168.63.129.16", false),
            ("fd00:ec2::254", true), ("fd20:ce::254", true), ("fe80::a9fe:a9fe", true), ("64:ff9b::a9fe:a9fe", true),
        ] {
            let host = CIDR(address: IPAddressText.parse(address)!, prefix: family ? 128 : 32)
            #expect(ClientReach.neverRange(containing: host) != nil, "\(address) is not never-reached")
        }
        // allow_private without repeats and without a network inside another (an interval set refuses
        // overlaps); 0.0.0.0/0 covers everything else of node a's.
        #expect(elements("allow4", in: a) == ["0.0.0.0/0"])
        #expect(elements("allow4", in: b) == ["10.20.0.0/16"])
        #expect(elements("allow6", in: b) == ["fd00:20::1/128"])
        #expect(elements("dns4", in: b) == ["192.0.2.53"])
        #expect(elements("dns6", in: b) == ["fd00:11::1"])
        #expect(elements("dns4", in: a) == ["10.0.0.2"])
        /// A chain's rules, comments cut off.
        func chain(_ name: String, in table: String) -> [String] {
            guard let start = table.range(of: "\tchain \(name) {\n") else { return [] }
            let body = table[start.upperBound...]
            let end = body.range(of: "\n\t}\n")?.lowerBound ?? body.endIndex
            return body[..<end].split(separator: "\n").map {
                $0.trimmingCharacters(in: .whitespaces).components(separatedBy: " comment ").first!
            }
        }
        // Order decides: never, then DNS, then the allowed networks, then the internal ones refused.
        #expect(
            chain("client_to_world", in: b) == [
                "ip daddr @never4 reject with icmpx admin-prohibited",
                "ip daddr @dns4 meta l4proto { tcp, udp } th dport 53 accept",
                "ip daddr @allow4 accept",
                "ip daddr @internal4 reject with icmpx admin-prohibited",
                "ip6 daddr @never6 reject with icmpx admin-prohibited",
                "ip6 daddr @dns6 meta l4proto { tcp, udp } th dport 53 accept",
                "ip6 daddr @allow6 accept",
                "ip6 daddr @internal6 reject with icmpx admin-prohibited",
                "accept",
            ])
        // The node's own services: the pools jump to client_to_node before IKE and the DAE port are
        // accepted, and it ends in a reject.
        let input = chain("input", in: b)
        let jump = try #require(input.firstIndex(of: "ip saddr @pool4 jump client_to_node"))
        let ike = try #require(input.firstIndex(of: "udp dport { 500, 4500 } accept"))
        #expect(jump < ike)
        #expect(chain("client_to_node", in: b).last == "reject with icmpx admin-prohibited")
    }
}
