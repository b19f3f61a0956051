import VPNProvSupport

/// What a node's clients may reach through it, by destination (docs/security.md §14, the node's
/// `vpnprov.nft`): the validator judges `network.allow_private` and `dns` against these ranges, and the
/// planner writes them into the node's firewall. One table, so the two never disagree.
///
/// - `never`: refused whatever the inventory says. Cloud metadata services and the platform endpoints
///   beside them hand out the node's cloud identity (instance credentials, user data, the VM agent's
///   secrets) to anyone who can send from the node; link-local addresses are where clouds put them, and
///   loopback and "this network" are the node itself, never a destination through it.
/// - `internal`: private and internal networks (RFC 1918, shared address space, unique local...):
///   refused unless `network.allow_private` names them. The node's cloud network, its provider's
///   internal services and the operator's own hosts live there; a consumer VPN's clients have no business
///   there.
///
/// Documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are deployed
/// nowhere, so they stay open (the end-to-end tests' "internet" lives there).
package enum ClientReach {
    package struct Range: Sendable, Hashable {
        package var cidr: CIDR
        /// What it is, for messages ("link-local (169.254.0.0/16)").
        package var why: String
    }

    static func cidr(_ text: String) -> CIDR {
        let (address, prefix) = IPAddressText.parseCIDR(text)!
        return CIDR(address: address, prefix: prefix)
    }

    static func range(_ text: String, _ why: String) -> Range { Range(cidr: cidr(text), why: "\(why) (\(text))") }

    /// RFC 6052's well-known NAT64 prefix: a NAT64 gateway on the node's network translates
    /// `64:ff9b::a.b.c.d` to the IPv4 address a.b.c.d, so every IPv4 range below is refused there too.
    static let nat64 = cidr("64:ff9b::/96")

    /// `range` of IPv4 embedded in the well-known NAT64 prefix (RFC 6052, a /96).
    static func embedded(_ r: Range) -> Range {
        var bytes = nat64.address
        bytes.replaceSubrange(12..<16, with: r.cidr.address)
        let c = CIDR(address: bytes, prefix: 96 + r.cidr.prefix)
        return Range(cidr: c, why: "\(r.why) through NAT64 (\(c))")
    }

    /// IPv4 destinations no client ever reaches. Sources: AWS, Google Cloud, Azure, Oracle, OpenStack,
    /// DigitalOcean, Hetzner and Akamai/Linode serve instance metadata at 169.254.169.254, Scaleway at
    /// 169.254.42.42, Tencent at 169.254.0.23, AWS ECS and EKS task credentials at 169.254.170.2 and
    /// 169.254.170.23 (all link-local); Alibaba Cloud at 100.100.100.200 (cloud-init's AliYun
    /// datasource); Azure's WireServer (VM agent, extension settings) at the public-looking
    /// 168.63.129.16 (Microsoft's "What is IP address 168.63.129.16?"); Oracle Cloud Classic and Cloud at
    /// Customer at 192.0.0.192.
    package static let never4: [Range] = [
        range("0.0.0.0/8", "\"this network\""),
        range("100.100.100.200/32", "Alibaba Cloud's metadata service"),
        range("127.0.0.0/8", "loopback"),
        range("168.63.129.16/32", "Azure's WireServer"),
        range("169.254.0.0/16", "link-local, where clouds serve instance metadata"),
        range("192.0.0.192/32", "Oracle Cloud Classic's metadata service"),
    ]

    /// IPv6 destinations no client ever reaches. Sources: AWS serves IMDS at fd00:ec2::254 and puts its
    /// other instance services in fd00:ec2::/32 (DNS ::253, NTP ::123, EKS Pod Identity ::23); Google
    /// Cloud's IPv6-only instances reach metadata at fd20:ce::254; Oracle at fd00:c1::a9fe:a9fe (its
    /// SDK's instance principals endpoint); Scaleway at fd00:42::42 and Akamai/Linode at
    /// fd00:a9fe:a9fe::1 (cloud-init's datasources); OpenStack at fe80::a9fe:a9fe (link-local).
    package static let never6: [Range] =
        [
            range("::1/128", "loopback"),
            range("::ffff:0:0/96", "IPv4-mapped, never a destination on the wire"),
            range("fd00:42::42/128", "Scaleway's metadata service"),
            range("fd00:a9fe:a9fe::1/128", "Akamai's metadata service"),
            range("fd00:c1::a9fe:a9fe/128", "Oracle Cloud's metadata service"),
            range("fd00:ec2::/32", "AWS's instance metadata and services"),
            range("fd20:ce::254/128", "Google Cloud's metadata service"),
            range("fe80::/10", "link-local"),
        ] + never4.map(embedded)

    /// Private and internal IPv4 networks: refused unless `network.allow_private` names them (IANA's
    /// special-purpose registry, the ranges that are not globally reachable and are deployed somewhere).
    package static let internal4: [Range] = [
        range("10.0.0.0/8", "private (RFC 1918)"),
        range("100.64.0.0/10", "shared address space (RFC 6598: carrier-grade NAT, cloud-internal services)"),
        range("172.16.0.0/12", "private (RFC 1918)"),
        range("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
        range("192.168.0.0/16", "private (RFC 1918)"),
        range("198.18.0.0/15", "benchmarking (RFC 2544)"),
    ]

    /// Private and internal IPv6 networks: refused unless `network.allow_private` names them.
    package static let internal6: [Range] =
        [
            range("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
            range("fc00::/7", "unique local (RFC 4193)"),
            range("fec0::/10", "site-local (deprecated, RFC 3879)"),
        ] + internal4.map(embedded)

    package static func never(ipv6: Bool) -> [Range] { ipv6 ? never6 : never4 }
    static func internalRanges(ipv6: Bool) -> [Range] { ipv6 ? internal6 : internal4 }

    /// Whether the first `prefix` bits of `address` put it inside `c` (same family).
    package static func contains(_ c: CIDR, _ inner: CIDR) -> Bool {
        guard c.address.count == inner.address.count, inner.prefix >= c.prefix else { return false }
        var remaining = c.prefix
        var i = 0
        while remaining >= 8 {
            if c.address[i] != inner.address[i] { return false }
            remaining -= 8
            i += 1
        }
        if remaining > 0 {
            let mask = UInt8(0xFF) << (8 - remaining)
            if c.address[i] & mask != inner.address[i] & mask { return false }
        }
        return true
    }

    package static func overlaps(_ a: CIDR, _ b: CIDR) -> Bool { contains(a, b) || contains(b, a) }

    /// The never-reached range `c` lies in whole, if any.
    package static func neverRange(containing c: CIDR) -> Range? {
        never(ipv6: c.isIPv6).first { contains($0.cidr, c) }
    }

    /// `networks` without repeats and without a network inside another one, in address order: an
    /// nftables interval set refuses overlapping elements.
    package static func normalized(_ networks: [CIDR]) -> [CIDR] {
        let sorted = networks.sorted { a, b in
            if a.address != b.address { return a.address.lexicographicallyPrecedes(b.address) }
            return a.prefix < b.prefix
        }
        var kept: [CIDR] = []
        for c in sorted where !kept.contains(where: { contains($0, c) }) { kept.append(c) }
        return kept
    }
}
