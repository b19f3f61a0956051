import VPNProvYAML

// A node (and `defaults:`): its fields as written, then merged with `defaults:` into a `Node`.

extension InventoryDecoder {
    /// A node's fields as written (in `defaults:` or the node itself), before merging.
    struct NodeFields {
        var address: String?
        var id: IKEIdentity?
        var region: String?
        var country: String?
        var tier: Tier?
        var pool: CIDR?
        var pool6: CIDR?
        var services: [Service]?
        var psk: SecretSource?
        var group: String?
        var ike: [String]?
        var esp: [String]?
        var dns: [String]?
        var apple = AppleOptions()
        var deployHost: String?
        var deployPort: Int?
        var deployUser: String?
        var deployBecome: Bool?
        var uplink: String?
        var mss: NodeNetwork.MSS?
        var isolateClients: Bool?
        var ipsec: NodeNetwork.IPsecPath?
        var ipv6: NodeNetwork.IPv6Mode?
        var allowPrivate: [CIDR]?
        var accounts: AccountSource?
        var radiusAddress: String?
        var certificate: CertificateSource?
        var quantumSafe: QuantumSafe?
        var locations: [NodeField: SourceLocation] = [:]
        /// Keys whose value had an error.
        var failed: Set<NodeKey> = []
        /// The mapping itself had an error (an unknown key, not a mapping).
        var mappingFailed = false
        /// Errors found in the values of `failed`.
        var failedCount = 0

        /// A node depends on a broken `defaults:` field when it does not write that key itself (`own`: the
        /// keys it writes, as written).
        func breaks(_ node: String, own: Set<String>?) -> Bool {
            if mappingFailed { return true }
            return failed.contains { !(own ?? []).contains($0.rawValue) }
        }
    }

    func decodeNodeFields(_ node: YAMLNode, _ what: String, _ cx: DecodingContext) -> NodeFields {
        let start = cx.errorCount
        var f = decodeNodeFieldValues(node, what, cx)
        if cx.errorCount - start > f.failedCount { f.mappingFailed = true }
        return f
    }

    /// The fields of `decodeNodeFields`, with the keys whose value had an error in `failed`.
    func decodeNodeFieldValues(_ node: YAMLNode, _ what: String, _ cx: DecodingContext) -> NodeFields {
        var f = NodeFields()
        guard let entries = cx.mapping(node, what, keys: NodeKey.self) else { return f }
        for (key, _, value) in entries {
            if value.isNull { continue }
            let before = cx.errorCount
            defer {
                if cx.errorCount > before {
                    f.failed.insert(key)
                    f.failedCount += cx.errorCount - before
                }
            }
            let field = "\(what): '\(key.rawValue)'"
            var ok = true
            switch key {
            case .address:
                f.address = cx.string(value, field)
                ok = f.address != nil
            case .id:
                f.id = cx.string(value, field).map(IKEIdentity.classify)
                ok = f.id != nil
            case .region:
                f.region = cx.string(value, field)
            case .country:
                f.country = cx.string(value, field)
            case .tier:
                f.tier = cx.choice(value, field, Tier.self)
            case .pool:
                f.pool = cx.cidr(value, field, ipv6: false)
            case .pool6:
                f.pool6 = cx.cidr(value, field, ipv6: true)
            case .services:
                // Stored in `Service.allCases` order, unique.
                f.services = cx.choiceList(value, field, Service.self)?.sorted()
            case .psk:
                f.psk = cx.secret(value, field)
            case .group:
                f.group = cx.string(value, field)
            case .proposals:
                guard let p = cx.mapping(value, field, keys: ProposalKey.self) else { continue }
                for (pk, _, pv) in p {
                    let list = cx.stringList(pv, "\(what): 'proposals.\(pk.rawValue)'")?.map(\.0)
                    switch pk {
                    case .ike: f.ike = list
                    case .esp: f.esp = list
                    }
                    if list != nil { f.locations[.proposals(pk)] = cx.location(pv) }
                }
            case .apple:
                f.apple = decodeApple(value, what, locations: &f.locations, cx)
            case .deploy:
                guard let d = cx.mapping(value, field, keys: DeployKey.self) else { continue }
                for (dk, _, dv) in d {
                    if dv.isNull { continue }
                    let sub = "\(what): 'deploy.\(dk.rawValue)'"
                    switch dk {
                    case .host: f.deployHost = cx.string(dv, sub)
                    case .port: f.deployPort = cx.integer(dv, sub, minimum: 1, maximum: 65535)
                    case .user: f.deployUser = cx.string(dv, sub)
                    case .become: f.deployBecome = cx.bool(dv, sub)
                    }
                    f.locations[.deploy(dk)] = cx.location(dv)
                }
            case .network:
                decodeNetwork(value, what, into: &f, cx)
            case .accounts:
                f.accounts = cx.choice(value, field, AccountSource.self)
            case .radiusAddress:
                // The node's own address on the path to its RADIUS servers: its RADIUS client's address there and
                // the source of its RADIUS, an address literal in canonical form (docs/accounts.md).
                guard let text = cx.string(value, field) else { continue }
                guard let bytes = IPAddressText.parse(text) else {
                    cx.error(
                        .invalidValue,
                        "\(field): '\(DecodingContext.printable(text))' is not an IPv4 or IPv6 address (the node's own address towards its RADIUS servers)",
                        at: value)
                    continue
                }
                f.radiusAddress = IPAddressText.format(bytes)
            case .certificate:
                f.certificate = cx.choice(value, field, CertificateSource.self)
            case .quantumSafe:
                f.quantumSafe = decodeQuantumSafe(value, what, into: &f, cx)
            case .dns:
                if let list = cx.stringList(value, field) {
                    var servers: [String] = []
                    for (s, item) in list {
                        if IPAddressText.parse(s) == nil {
                            cx.error(
                                .invalidValue,
                                "\(field): '\(DecodingContext.printable(s))' is not an IPv4 or IPv6 address", at: item)
                            continue
                        }
                        servers.append(s)
                    }
                    f.dns = servers
                }
            }
            if ok { f.locations[.key(key)] = cx.location(value) }
        }
        return f
    }

    /// A Linux interface name vpnprov writes into nftables and sysctl files.
    static func isInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...15).contains(bytes.count), name != ".", name != ".." else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
                || b == 0x2D
        }
    }

    func decodeNode(
        name: String, keyNode: YAMLNode, value: YAMLNode, defaults: NodeFields, _ cx: DecodingContext
    ) -> Node? {
        let what = "node '\(DecodingContext.printable(name))'"
        if Self.misplacedField(name, keyNode, value, keys: Self.nodeKeys, under: "nodes", kind: "node", cx) {
            return nil
        }
        let own = value.isNull ? NodeFields() : decodeNodeFields(value, what, cx)
        if case .mapping = value.kind {} else if !value.isNull { return nil }

        var locations = defaults.locations
        locations.merge(own.locations) { _, node in node }

        guard let address = own.address ?? defaults.address else {
            cx.error(
                .missingKey, "\(what): missing required key 'address' (what clients dial: IPv4, IPv6 or DNS name)",
                at: keyNode)
            return nil
        }
        let id = own.id ?? defaults.id ?? IKEIdentity.classify(address)
        if locations[.key(.id)] == nil { locations[.key(.id)] = locations[.key(.address)] }
        let proposals = Proposals(
            ike: own.ike ?? defaults.ike ?? Proposals.defaults.ike,
            esp: own.esp ?? defaults.esp ?? Proposals.defaults.esp)
        if locations[.key(.proposals)] == nil {
            locations[.key(.proposals)] = locations[.proposals(.ike)] ?? locations[.proposals(.esp)]
        }
        var node = Node(
            name: name, address: address, id: id,
            region: own.region ?? defaults.region, country: own.country ?? defaults.country,
            tier: own.tier ?? defaults.tier ?? .free,
            pool: own.pool ?? defaults.pool, pool6: own.pool6 ?? defaults.pool6,
            services: own.services ?? defaults.services ?? Self.defaultServices,
            psk: own.psk ?? defaults.psk, group: own.group ?? defaults.group,
            proposals: proposals, dns: own.dns ?? defaults.dns ?? [],
            deploy: DeployTarget(
                host: own.deployHost ?? defaults.deployHost, port: own.deployPort ?? defaults.deployPort ?? 22,
                user: own.deployUser ?? defaults.deployUser ?? "root",
                become: own.deployBecome ?? defaults.deployBecome ?? false),
            location: cx.location(keyNode), fieldLocations: locations)
        node.apple = own.apple.over(defaults.apple)
        node.network = NodeNetwork(
            uplink: own.uplink ?? defaults.uplink, mss: own.mss ?? defaults.mss ?? .fixed(NodeNetwork.defaultMSS),
            isolateClients: own.isolateClients ?? defaults.isolateClients ?? true,
            ipsec: own.ipsec ?? defaults.ipsec ?? .xfrm,
            ipv6: own.ipv6 ?? defaults.ipv6, allowPrivate: own.allowPrivate ?? defaults.allowPrivate ?? [])
        node.accounts = own.accounts ?? defaults.accounts ?? .inventory
        node.radiusAddress = own.radiusAddress ?? defaults.radiusAddress
        // A node's quantum_safe: replaces the whole of defaults' (its keys are read together).
        node.quantumSafe = own.quantumSafe ?? (own.locations[.key(.quantumSafe)] == nil ? defaults.quantumSafe : nil)
        node.certificate = own.certificate ?? defaults.certificate ?? .ca
        return node
    }
}
