import Testing
import VPNProvTestFixtures

@testable import VPNProvModel

/// The pool checks find overlaps and contained addresses with lookups instead of comparing every
/// pair of nodes; these prove they report exactly what the pairwise definition says.
@Suite(.temporaries) struct NetworkScalingTests {
    /// The mutation tests' seeded generator (SplitMix64), so a failure reproduces.
    struct Random {
        var seeded: SeededGenerator
        init(state: UInt64) { seeded = SeededGenerator(seed: state) }
        mutating func below(_ n: Int) -> Int { Int(seeded.next() % UInt64(n)) }
    }

    static func network(_ bytes: [UInt8], prefix: Int) -> CIDR {
        var address = bytes
        for i in address.indices {
            let keep = min(max(prefix - 8 * i, 0), 8)
            address[i] &= keep == 0 ? 0 : UInt8(0xFF) << UInt8(8 - keep)
        }
        return CIDR(address: address, prefix: prefix)
    }

    /// Nodes whose pools crowd a small space (10.0.0.0/20, and fd00::/56 with prefixes around the
    /// 64-bit middle of an IPv6 address), so many overlap in both directions.
    static func crowded(seed: UInt64, count: Int) -> Inventory {
        var random = Random(state: seed)
        var nodes: [Node] = []
        for n in 0..<count {
            let v4 = network([10, 0, UInt8(random.below(16)), UInt8(random.below(256))], prefix: 20 + random.below(11))
            var v6bytes: [UInt8] = [0xFD, 0, 0, 0, 0, 0, 0, UInt8(random.below(2))]
            for _ in 8..<16 { v6bytes.append(UInt8(random.below(4))) }
            let v6 = network(v6bytes, prefix: 56 + random.below(16))
            let line = 10 + 10 * n
            nodes.append(
                Node(
                    name: "n\(n)", address: "n\(n).vpn.example.com", id: .fqdn("n\(n).vpn.example.com"),
                    pool: random.below(5) == 0 ? nil : v4, pool6: random.below(5) == 0 ? nil : v6,
                    services: [.ikev2EAP],
                    location: Fixture.at(line, 3),
                    fieldLocations: ["pool": Fixture.at(line + 1, 11), "pool6": Fixture.at(line + 2, 11)]))
        }
        return Inventory(
            file: Fixture.file, name: "acme",
            pki: PKISettings(ca: CASettings(name: "acme CA", key: .ecdsaP256, days: 3650)),
            nodes: nodes, users: [])
    }

    /// The definition: each pool that overlaps an earlier node's pool, against the earliest one.
    static func expectedOverlaps(_ inventory: Inventory) -> [String] {
        var pools: [(node: String, field: String, cidr: CIDR, line: Int)] = []
        for node in inventory.nodes {
            if let p = node.pool { pools.append((node.name, "pool", p, node.location(of: "pool").line)) }
            if let p = node.pool6 { pools.append((node.name, "pool6", p, node.location(of: "pool6").line)) }
        }
        var out: [String] = []
        for j in pools.indices {
            if let i = (0..<j).first(where: { NetworkRules.overlaps(pools[$0].cidr, pools[j].cidr) }) {
                out.append(
                    "\(pools[j].line) \(pools[j].node) \(pools[j].field) \(pools[j].cidr) ~ \(pools[i].node) \(pools[i].cidr) @\(pools[i].line)"
                )
            }
        }
        return out.sorted()
    }

    static func reportedOverlaps(_ inventory: Inventory) -> [String] {
        Validator.validate(inventory).filter { $0.code == .poolOverlap }.map { d in
            let words = d.message.split(separator: " ")
            // "node 'b': pool 10.0.0.0/24 overlaps node 'a' (10.0.0.0/23)"
            let b = words[1].dropFirst().dropLast(2)
            let field = words[2]
            let cidr = words[3]
            let a = words[6].dropFirst().dropLast()
            let other = words[7].dropFirst().dropLast()
            return "\(d.location!.line) \(b) \(field) \(cidr) ~ \(a) \(other) @\(d.notes[0].location!.line)"
        }.sorted()
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func overlapsMatchThePairwiseDefinition(_ seed: UInt64) {
        let inventory = Self.crowded(seed: seed, count: 300)
        let expected = Self.expectedOverlaps(inventory)
        #expect(expected.count > 50, "the fixture must produce overlaps to compare")
        #expect(Self.reportedOverlaps(inventory) == expected)
    }

    @Test func poolContainingManyNodeAddressesIsReportedOnce() {
        let inventory = Fixture.good().with {
            $0.nodes[0].pool = Fixture.cidr("192.0.2.0/24")  // holds ams-1 (192.0.2.10) and the two below
            $0.nodes[1].pool = Fixture.cidr("10.11.0.0/24")
            $0.nodes.append(
                Fixture.node("x-1", line: 200, address: "192.0.2.20", pool: "10.12.0.0/24", services: [.ikev2EAP]))
            $0.nodes.append(
                Fixture.node("x-2", line: 220, address: "192.0.2.30", pool: "10.13.0.0/24", services: [.ikev2EAP]))
        }
        let found = Validator.validate(inventory).filter { $0.code == .poolContainsAddress }
        #expect(
            found.map(\.message) == [
                "node 'fra-1': pool 192.0.2.0/24 contains the address of node 'ams-1' (192.0.2.10) and 2 more node addresses"
            ])
        #expect(found.first?.notes.first?.location == Fixture.at(41, 14))
        // Its own address and one other: two findings, the other without "more".
        let own = inventory.with {
            $0.nodes[0].address = "192.0.2.1"
            $0.nodes.removeLast(2)
        }
        #expect(
            Validator.validate(own).filter { $0.code == .poolContainsAddress }.map(\.message) == [
                "node 'fra-1': pool 192.0.2.0/24 contains its own address (192.0.2.1)",
                "node 'fra-1': pool 192.0.2.0/24 contains the address of node 'ams-1' (192.0.2.10)",
            ])
    }
}
