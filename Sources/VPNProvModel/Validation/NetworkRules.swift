import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Virtual IP pools, node addresses and DNS servers (pools must be valid and disjoint).
//
// Decisions: a node without any pool is an error (`missing-pool`: clients need a virtual IP); a pool
// must lease at least two addresses (IPv4 /30, IPv6 /126 at most: strongSwan skips the network and
// broadcast addresses); IPv4 pools larger than a /16 warn; pools may not touch 0/8, loopback,
// link-local, multicast or 240/4 (IPv6: ::/8, fe80::/10, ff00::/8); documentation ranges are fine
// (tests use them). A pool containing any node's address is an error (that node becomes unreachable
// through the tunnel); containing one of the node's own DNS servers warns (the server could lease it).
// Overlaps are reported once per pair, at the later pool, with a note at the earlier one.

enum NetworkRules {
    struct Range {
        var cidr: CIDR
        var why: String
    }

    static func cidr(_ text: String) -> CIDR {
        let (address, prefix) = IPAddressText.parseCIDR(text)!
        return CIDR(address: address, prefix: prefix)
    }

    static let reserved4: [Range] = [
        Range(cidr: cidr("0.0.0.0/8"), why: "\"this network\" (0.0.0.0/8)"),
        Range(cidr: cidr("127.0.0.0/8"), why: "loopback (127.0.0.0/8)"),
        Range(cidr: cidr("169.254.0.0/16"), why: "link-local (169.254.0.0/16)"),
        Range(cidr: cidr("224.0.0.0/4"), why: "multicast (224.0.0.0/4)"),
        Range(cidr: cidr("240.0.0.0/4"), why: "reserved/broadcast (240.0.0.0/4)"),
    ]
    static let reserved6: [Range] = [
        Range(cidr: cidr("::/8"), why: "reserved (::/8: unspecified, loopback, IPv4-mapped)"),
        Range(cidr: cidr("fe80::/10"), why: "link-local (fe80::/10)"),
        Range(cidr: cidr("ff00::/8"), why: "multicast (ff00::/8)"),
    ]

    /// Whether the first `bits` bits of `a` and `b` agree.
    static func samePrefix(_ a: [UInt8], _ b: [UInt8], bits: Int) -> Bool {
        guard a.count == b.count else { return false }
        var remaining = bits
        var i = 0
        while remaining >= 8 {
            if a[i] != b[i] { return false }
            remaining -= 8
            i += 1
        }
        if remaining > 0 {
            let mask = UInt8(0xFF) << (8 - remaining)
            if a[i] & mask != b[i] & mask { return false }
        }
        return true
    }

    static func overlaps(_ a: CIDR, _ b: CIDR) -> Bool {
        a.address.count == b.address.count && samePrefix(a.address, b.address, bits: min(a.prefix, b.prefix))
    }

    static func contains(_ c: CIDR, _ address: [UInt8]) -> Bool {
        c.address.count == address.count && samePrefix(c.address, address, bits: c.prefix)
    }

    /// A dialable address problem: (severity, code, text) or nil.
    static func addressProblem(_ text: String) -> (Severity, RuleCode, String)? {
        if text.isEmpty { return (.error, .invalidAddress, "is empty") }
        if let bytes = IPAddressText.parse(text) {
            if bytes.allSatisfy({ $0 == 0 }) { return (.error, .invalidAddress, "is the unspecified address") }
            if bytes.count == 4 {
                if bytes[0] >= 224 { return (.error, .invalidAddress, "is a multicast or reserved address") }
                if bytes[0] == 127 || bytes[0] == 0 {
                    return (.warning, .unreachableAddress, "is a loopback address; clients elsewhere cannot reach it")
                }
                if bytes[0] == 169 && bytes[1] == 254 {
                    return (.warning, .unreachableAddress, "is a link-local address; clients elsewhere cannot reach it")
                }
            } else {
                if bytes[0] == 0xFF { return (.error, .invalidAddress, "is a multicast address") }
                if bytes == [UInt8](repeating: 0, count: 15) + [1] {
                    return (.warning, .unreachableAddress, "is the loopback address; clients elsewhere cannot reach it")
                }
                if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 {
                    return (.warning, .unreachableAddress, "is a link-local address; clients elsewhere cannot reach it")
                }
            }
            return nil
        }
        if text.contains(":") { return (.error, .invalidAddress, "is not a valid IPv6 address") }
        if text.hasSuffix(".") { return (.error, .invalidAddress, "ends with '.'; write the host name without it") }
        if let p = IdentityRules.domainProblem(text, allowUnderscore: false) {
            return (.error, .invalidAddress, "is neither an IP address nor a valid host name: it \(p)")
        }
        if !text.contains(".") {
            return (
                .warning, .unreachableAddress,
                "is a single-label host name; clients resolve it only with a matching search domain"
            )
        }
        return nil
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let nodeIPs = checkAddresses(inventory, into: &d)
        for node in inventory.nodes { checkDNS(node, into: &d) }
        checkPools(inventory, nodeIPs: nodeIPs, into: &d)
        for node in inventory.nodes { checkAllowPrivate(node, into: &d) }
        for node in inventory.nodes { checkIPv6Mode(node, into: &d) }
    }

    /// Each node's address: a problem of its own, or another node's too. Returns the nodes' IP addresses.
    private static func checkAddresses(
        _ inventory: Inventory, into d: inout [Diagnostic]
    ) -> [(name: String, bytes: [UInt8], location: SourceLocation)] {
        var addressOwners: [String: (String, SourceLocation)] = [:]
        var nodeIPs: [(name: String, bytes: [UInt8], location: SourceLocation)] = []
        for node in inventory.nodes {
            let location = node.location(of: .address)
            if let (severity, code, text) = addressProblem(node.address) {
                d.append(
                    Diagnostic(
                        severity, code, "node '\(node.name)': address \(TextCheck.quoted(node.address)) \(text)",
                        at: location, about: .node(node.name)))
                if severity == .error { continue }
            }
            let bytes = IPAddressText.parse(node.address)
            if let bytes { nodeIPs.append((node.name, bytes, location)) }
            let key = bytes.map(IPAddressText.format) ?? node.address.lowercased()
            if let (other, otherLocation) = addressOwners[key] {
                d.append(
                    .error(
                        .duplicateAddress,
                        "node '\(node.name)': address \(node.address) is also used by node '\(other)'", at: location,
                        notes: [.init(location: otherLocation, message: "node '\(other)' has it here")]))
            } else {
                addressOwners[key] = (node.name, location)
            }
        }
        return nodeIPs
    }

    /// `dns`: each server an IP address clients may reach, listed once.
    private static func checkDNS(_ node: Node, into d: inout [Diagnostic]) {
        let location = node.location(of: .dns)
        var seen: Set<String> = []
        for server in node.dns {
            guard let bytes = IPAddressText.parse(server) else {
                d.append(
                    .error(
                        .invalidDNS,
                        "node '\(node.name)': DNS server \(TextCheck.quoted(server)) is not an IP address",
                        at: location))
                continue
            }
            if bytes.allSatisfy({ $0 == 0 }) || (bytes.count == 4 && bytes[0] >= 224)
                || (bytes.count == 16 && bytes[0] == 0xFF)
            {
                d.append(
                    .error(
                        .invalidDNS,
                        "node '\(node.name)': DNS server \(server) is an unspecified, multicast or reserved address",
                        at: location))
            }
            let host = CIDR(address: bytes, prefix: bytes.count * 8)
            if let never = ClientReach.neverRange(containing: host) {
                d.append(
                    .error(
                        .neverForwarded,
                        "node '\(node.name)': DNS server \(server) is \(never.why), which the node's firewall never lets clients reach; push a resolver they may reach (one on the node, or a private one, which the firewall opens for DNS)",
                        at: location))
            }
            if !seen.insert(IPAddressText.format(bytes)).inserted {
                d.append(
                    .warning(
                        .duplicateEntry, "node '\(node.name)': DNS server \(server) is listed twice", at: location))
            }
        }
    }

    /// `network.ipv6`: without effect with no pool6, and routed useless for a unique local pool6.
    private static func checkIPv6Mode(_ node: Node, into d: inout [Diagnostic]) {
        guard let mode = node.network.ipv6 else { return }
        let location = node.location(of: .network(.ipv6))
        if node.pool6 == nil {
            d.append(
                .warning(
                    .networkSetting, "node '\(node.name)': network.ipv6 has no effect without a pool6",
                    at: location, about: .node(node.name)))
        } else if mode == .routed, let pool6 = node.pool6, (pool6.address[0] & 0xFE) == 0xFC {
            d.append(
                .warning(
                    .networkSetting,
                    "node '\(node.name)': network.ipv6 is routed, but pool6 \(pool6) is unique local (fc00::/7), which no internet router forwards; use nat",
                    at: location, about: .node(node.name)))
        }
    }

    /// `network.allow_private`: each entry at its own line. Inside a never-reached range it is an error
    /// (the operator asks for what the firewall refuses whatever the inventory says); an entry that
    /// holds no private or internal address, or is of a family the node has no pool of, has no effect.
    /// An entry only partly inside a never-reached range (0.0.0.0/0, 100.64.0.0/10 around Alibaba's
    /// 100.100.100.200) is fine: the never-reached part stays refused, as docs/inventory.md says.
    static func checkAllowPrivate(_ node: Node, into d: inout [Diagnostic]) {
        for (i, entry) in node.network.allowPrivate.enumerated() {
            let location = node.location(of: .allowPrivate(i))
            let field = "node '\(node.name)': network.allow_private \(entry)"
            if let never = ClientReach.neverRange(containing: entry) {
                d.append(
                    .error(
                        .neverForwarded,
                        "\(field) lies in \(never.why), which the node's firewall refuses whatever the inventory says; remove it",
                        at: location))
            } else if (entry.isIPv6 ? node.pool6 : node.pool) == nil {
                d.append(
                    .warning(
                        .networkSetting,
                        "\(field) has no effect: the node has no \(entry.isIPv6 ? "pool6" : "pool") whose clients could reach it",
                        at: location, about: .node(node.name)))
            } else if !ClientReach.internalRanges(ipv6: entry.isIPv6).contains(where: {
                ClientReach.overlaps($0.cidr, entry)
            }) {
                d.append(
                    .warning(
                        .networkSetting,
                        "\(field) has no effect: it holds no private or internal address, and clients reach every other address anyway",
                        at: location, about: .node(node.name)))
            }
        }
    }

    /// A node address as the pool checks look it up: its node, its bytes, where it is written.
    typealias NodeAddress = (name: String, bytes: [UInt8], location: SourceLocation)
    /// A pool that passed its own checks, for the overlap check across nodes.
    typealias CheckedPool = (node: String, field: String, cidr: CIDR, location: SourceLocation)

    /// Every node's pools: present, of their family, of a usable size, outside reserved ranges, holding no
    /// node address and no DNS server of the node, and not overlapping another node's.
    static func checkPools(_ inventory: Inventory, nodeIPs: [NodeAddress], into d: inout [Diagnostic]) {
        var pools: [CheckedPool] = []
        let addresses = SortedAddresses(nodeIPs.map(\.bytes))
        var ownAddress: [String: [UInt8]] = [:]
        for ip in nodeIPs where ownAddress[ip.name] == nil { ownAddress[ip.name] = ip.bytes }
        for node in inventory.nodes {
            if node.pool == nil && node.pool6 == nil {
                d.append(
                    .error(
                        .missingPool,
                        "node '\(node.name)': no virtual IP pool; set pool (IPv4) and/or pool6 (IPv6) so clients get an address",
                        at: node.location))
                continue
            }
            for (key, cidr, wantsIPv6) in [
                (InventoryDecoder.NodeKey.pool, node.pool, false), (.pool6, node.pool6, true),
            ] {
                guard let cidr else { continue }
                let usable = checkPool(
                    cidr, key: key, wantsIPv6: wantsIPv6, of: node, own: ownAddress[node.name],
                    addresses: addresses, nodeIPs: nodeIPs, into: &d)
                if usable { pools.append((node.name, key.rawValue, cidr, node.location(of: key))) }
            }
        }
        checkPoolOverlaps(pools, into: &d)
    }

    /// One pool of `node` (`key`: pool or pool6): its family, its size, reserved ranges, node addresses
    /// (`own` the node's) and the node's DNS servers inside it. Returns whether it is usable for the
    /// overlap check (of its family, outside reserved ranges).
    static func checkPool(
        _ cidr: CIDR, key: InventoryDecoder.NodeKey, wantsIPv6: Bool, of node: Node, own: [UInt8]?,
        addresses: SortedAddresses, nodeIPs: [NodeAddress], into d: inout [Diagnostic]
    ) -> Bool {
        let owner = "node '\(node.name)'"
        let field = key.rawValue
        let location = node.location(of: key)
        if cidr.isIPv6 != wantsIPv6 {
            d.append(
                .error(
                    .poolFamily,
                    "\(owner): \(field) \(cidr) is \(cidr.isIPv6 ? "IPv6" : "IPv4"); \(wantsIPv6 ? "pool6 takes an IPv6 network, use pool for IPv4" : "pool takes an IPv4 network, use pool6 for IPv6")",
                    at: location))
            return false
        }
        let maxPrefix = cidr.isIPv6 ? 126 : 30
        if cidr.prefix > maxPrefix {
            d.append(
                .error(
                    .poolTooSmall,
                    "\(owner): \(field) \(cidr) leaves fewer than 2 addresses for clients; use /\(maxPrefix) or shorter",
                    at: location))
        }
        if !cidr.isIPv6 && cidr.prefix < 16 {
            d.append(
                .warning(
                    .poolLarge, "\(owner): \(field) \(cidr) is larger than a /16; is that intended?",
                    at: location, about: .node(node.name)))
        }
        var usable = true
        for r in (cidr.isIPv6 ? reserved6 : reserved4) where overlaps(r.cidr, cidr) {
            d.append(.error(.poolReserved, "\(owner): \(field) \(cidr) overlaps the \(r.why) range", at: location))
            usable = false
            break
        }
        checkPoolAddresses(cidr, key: key, of: node, own: own, addresses: addresses, nodeIPs: nodeIPs, into: &d)
        for server in node.dns {
            if let bytes = IPAddressText.parse(server), contains(cidr, bytes) {
                d.append(
                    .warning(
                        .poolContainsDNS,
                        "\(owner): \(field) \(cidr) contains its DNS server \(server); the server may lease that address to a client",
                        at: location,
                        notes: [.init(location: node.location(of: .dns), message: "DNS servers here")],
                        about: .node(node.name)))
            }
        }
        return usable
    }

    /// Node addresses inside a pool of `node`, found by binary search in the sorted addresses: its own
    /// (`own`), and the first other one (with how many more), not one diagnostic per pair.
    static func checkPoolAddresses(
        _ cidr: CIDR, key: InventoryDecoder.NodeKey, of node: Node, own: [UInt8]?, addresses: SortedAddresses,
        nodeIPs: [NodeAddress], into d: inout [Diagnostic]
    ) {
        let owner = "node '\(node.name)'"
        let field = key.rawValue
        let location = node.location(of: key)
        let inside = addresses.range(of: cidr)
        var others = inside.count
        if let own, contains(cidr, own) {
            others -= 1
            d.append(
                .error(
                    .poolContainsAddress,
                    "\(owner): \(field) \(cidr) contains its own address (\(IPAddressText.format(own)))",
                    at: location))
        }
        if others > 0, let first = inside.first(where: { nodeIPs[addresses.order[$0]].name != node.name }) {
            let ip = nodeIPs[addresses.order[first]]
            let more = others > 1 ? " and \(others - 1) more node address\(others > 2 ? "es" : "")" : ""
            d.append(
                .error(
                    .poolContainsAddress,
                    "\(owner): \(field) \(cidr) contains the address of node '\(ip.name)' (\(IPAddressText.format(ip.bytes)))\(more)",
                    at: location,
                    notes: [.init(location: ip.location, message: "node '\(ip.name)' address here")]))
        }
    }

    /// Overlaps across nodes, each later pool reported once against the earliest pool it overlaps.
    /// Two CIDR networks overlap exactly when one contains the other, so for each pool it is enough
    /// to look up its own prefixes (earlier pools containing it) and one entry for the pools inside
    /// it: O(pools × address bits) instead of comparing every pair. (A node's two pools are of
    /// different families and never overlap.)
    static func checkPoolOverlaps(_ pools: [CheckedPool], into d: inout [Diagnostic]) {
        var exact: [PrefixKey: Int] = [:]  // earliest pool that is exactly this network
        var within: [PrefixKey: Int] = [:]  // earliest pool inside this network
        for j in pools.indices {
            let pool = pools[j].cidr
            var earliest = within[PrefixKey(pool.address, bits: pool.prefix)]
            for bits in 0...pool.prefix {
                if let i = exact[PrefixKey(pool.address, bits: bits)], earliest == nil || i < earliest! { earliest = i }
            }
            if let i = earliest {
                let (a, b) = (pools[i], pools[j])
                d.append(
                    .error(
                        .poolOverlap, "node '\(b.node)': \(b.field) \(b.cidr) overlaps node '\(a.node)' (\(a.cidr))",
                        at: b.location,
                        notes: [.init(location: a.location, message: "node '\(a.node)' \(a.field) defined here")]))
            }
            let own = PrefixKey(pool.address, bits: pool.prefix)
            if exact[own] == nil { exact[own] = j }
            for bits in 0...pool.prefix {
                let key = PrefixKey(pool.address, bits: bits)
                if within[key] == nil { within[key] = j }
            }
        }
    }

    /// Addresses in sorted order, to find those inside a network by binary search.
    struct SortedAddresses {
        let keys: [PrefixKey]
        /// Index into the original list, per sorted position.
        let order: [Int]

        init(_ addresses: [[UInt8]]) {
            let keyed = addresses.enumerated().map { (PrefixKey($0.element, bits: $0.element.count * 8), $0.offset) }
                .sorted { $0.0 < $1.0 }
            keys = keyed.map(\.0)
            order = keyed.map(\.1)
        }

        /// Sorted positions of the addresses inside `cidr` (contiguous, in address order): two binary
        /// searches, whatever the count.
        func range(of cidr: CIDR) -> Swift.Range<Int> {
            let full = cidr.isIPv6 ? 128 : 32
            let first = PrefixKey(cidr.address, bits: full)
            let last = PrefixKey(PrefixKey.last(cidr.address, prefix: cidr.prefix), bits: full)
            let start = lowerBound(first)
            return start..<max(start, upperBound(last))
        }

        private func lowerBound(_ key: PrefixKey) -> Int {
            var lo = 0
            var hi = keys.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if keys[mid] < key { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }

        private func upperBound(_ key: PrefixKey) -> Int {
            var lo = 0
            var hi = keys.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if key < keys[mid] { hi = mid } else { lo = mid + 1 }
            }
            return lo
        }
    }

    /// The first `bits` bits of an IPv4 or IPv6 address (the rest zero), as a hashable key.
    struct PrefixKey: Hashable, Comparable {
        var high: UInt64
        var low: UInt64
        var bits: UInt8
        var isIPv6: Bool

        init(_ address: [UInt8], bits: Int) {
            var high: UInt64 = 0
            var low: UInt64 = 0
            for (i, byte) in address.enumerated() {
                if i < 8 {
                    high |= UInt64(byte) << (56 - 8 * UInt64(i))
                } else {
                    low |= UInt64(byte) << (56 - 8 * UInt64(i - 8))
                }
            }
            func mask(_ n: Int) -> UInt64 { n <= 0 ? 0 : (n >= 64 ? ~0 : ~(~UInt64(0) >> UInt64(n))) }
            self.high = high & mask(bits)
            self.low = low & mask(bits - 64)
            self.bits = UInt8(bits)
            self.isIPv6 = address.count == 16
        }

        /// The last address of the network `address`/`prefix` (every host bit set).
        static func last(_ address: [UInt8], prefix: Int) -> [UInt8] {
            var bytes = address
            for i in bytes.indices {
                let networkBits = min(max(prefix - 8 * i, 0), 8)
                bytes[i] |= networkBits >= 8 ? 0 : UInt8(0xFF) >> UInt8(networkBits)
            }
            return bytes
        }

        /// Address order (IPv4 before IPv6); only meaningful between full-length keys.
        static func < (a: PrefixKey, b: PrefixKey) -> Bool {
            if a.isIPv6 != b.isIPv6 { return !a.isIPv6 }
            if a.high != b.high { return a.high < b.high }
            if a.low != b.low { return a.low < b.low }
            return a.bits < b.bits
        }
    }
}

extension NetworkRules {
    /// An address (or network) a tunnel client's packets can carry as their source when they reach another host.
    struct ClientSource {
        /// A pool (the clients' virtual IPs) or an address of the node the clients leave it with.
        enum Kind {
            case pool
            case masqueraded
        }

        var network: CIDR
        var node: Node
        var key: InventoryDecoder.NodeKey
        var kind: Kind
        /// What it is, for a message: "pool 10.1.0.0/24", "address 192.0.2.1".
        var what: String
    }

    /// What a tunnel client can appear as beyond its node: its virtual IP (the node's `pool` and `pool6`; an IPv6
    /// pool routed without NAT is seen as it is), and the address its packets leave the node with once the node's
    /// table masquerades them (`masquerade` takes the address of the interface they leave through): the node's
    /// `address` and its `radius_address`. A node written as a DNS name has an address validation cannot know.
    static func clientSources(_ nodes: [Node]) -> [ClientSource] {
        var out: [ClientSource] = []
        for node in nodes {
            for (key, pool) in [(InventoryDecoder.NodeKey.pool, node.pool), (.pool6, node.pool6)] {
                guard let pool else { continue }
                out.append(
                    ClientSource(network: pool, node: node, key: key, kind: .pool, what: "\(key.rawValue) \(pool)"))
            }
            for (key, text) in [(InventoryDecoder.NodeKey.address, node.address), (.radiusAddress, node.radiusAddress)]
            {
                guard let text, let bytes = IPAddressText.parse(text) else { continue }
                out.append(
                    ClientSource(
                        network: CIDR(address: bytes, prefix: bytes.count * 8), node: node, key: key,
                        kind: .masqueraded, what: "\(key.rawValue) \(text)"))
            }
        }
        return out
    }

    /// Why a client of `source`'s node, seen from `source`, is a tunnel client: for the end of a message.
    static func clientReason(_ source: ClientSource) -> String {
        switch source.kind {
        case .pool: return "its tunnel clients have these addresses"
        case .masqueraded: return "the node masquerades its tunnel clients to this address"
        }
    }
}
