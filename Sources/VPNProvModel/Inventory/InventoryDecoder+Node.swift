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
        var state: NodeState?
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
            if decodeNodeField(key, value, what, into: &f, cx) { f.locations[.key(key)] = cx.location(value) }
        }
        return f
    }

    /// One key's value into `f`; false when the value is unusable (its place is then not recorded).
    func decodeNodeField(
        _ key: NodeKey, _ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext
    ) -> Bool {
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
            ok = decodeProposals(value, what, into: &f, cx)
        case .apple:
            f.apple = decodeApple(value, what, locations: &f.locations, cx)
        case .deploy:
            ok = decodeDeploy(value, what, into: &f, cx)
        case .network:
            decodeNetwork(value, what, into: &f, cx)
        case .accounts:
            f.accounts = cx.choice(value, field, AccountSource.self)
        case .radiusAddress:
            f.radiusAddress = decodeRadiusAddress(value, field, cx)
            ok = f.radiusAddress != nil
        case .certificate:
            f.certificate = cx.choice(value, field, CertificateSource.self)
        case .quantumSafe:
            f.quantumSafe = decodeQuantumSafe(value, what, into: &f, cx)
        case .dns:
            f.dns = decodeDNS(value, field, cx)
        case .state:
            f.state = cx.choice(value, field, NodeState.self)
        }
        return ok
    }

    /// A node's `proposals:` into `f`, each list's place recorded; false when it is not a mapping.
    func decodeProposals(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext) -> Bool {
        guard let p = cx.mapping(value, "\(what): 'proposals'", keys: ProposalKey.self) else { return false }
        for (pk, _, pv) in p {
            let list = cx.stringList(pv, "\(what): 'proposals.\(pk.rawValue)'")?.map(\.0)
            switch pk {
            case .ike: f.ike = list
            case .esp: f.esp = list
            }
            if list != nil { f.locations[.proposals(pk)] = cx.location(pv) }
        }
        return true
    }

    /// A node's `deploy:` into `f`, each key's place recorded; false when it is not a mapping.
    func decodeDeploy(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext) -> Bool {
        guard let d = cx.mapping(value, "\(what): 'deploy'", keys: DeployKey.self) else { return false }
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
        return true
    }

    /// The node's own address on the path to its RADIUS servers: its RADIUS client's address there and the
    /// source of its RADIUS, an address literal in canonical form (docs/accounts.md); nil after an error.
    func decodeRadiusAddress(_ value: YAMLNode, _ field: String, _ cx: DecodingContext) -> String? {
        guard let text = cx.string(value, field) else { return nil }
        guard let bytes = IPAddressText.parse(text) else {
            cx.error(
                .invalidValue,
                "\(field): '\(DecodingContext.printable(text))' is not an IPv4 or IPv6 address (the node's own address towards its RADIUS servers)",
                at: value)
            return nil
        }
        return IPAddressText.format(bytes)
    }

    /// A node's `dns:`: the address literals of the list (each other entry an error at its line); nil when it is
    /// not a list.
    func decodeDNS(_ value: YAMLNode, _ field: String, _ cx: DecodingContext) -> [String]? {
        guard let list = cx.stringList(value, field) else { return nil }
        var servers: [String] = []
        for (s, item) in list {
            if IPAddressText.parse(s) == nil {
                cx.error(
                    .invalidValue, "\(field): '\(DecodingContext.printable(s))' is not an IPv4 or IPv6 address",
                    at: item)
                continue
            }
            servers.append(s)
        }
        return servers
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
        let merged = own.inheriting(defaults)
        guard let address = merged.address else {
            cx.error(
                .missingKey, "\(what): missing required key 'address' (what clients dial: IPv4, IPv6 or DNS name)",
                at: keyNode)
            return nil
        }
        return merged.node(name: name, address: address, location: cx.location(keyNode))
    }
}

extension InventoryDecoder.NodeFields {
    /// These fields (a node's own) with what they leave out taken from `defaults`, key by key (`NodeKey.inherit`),
    /// and the places the inherited values were written.
    func inheriting(_ defaults: Self) -> Self {
        var merged = self
        for key in InventoryDecoder.NodeKey.allCases { key.inherit(into: &merged, from: defaults) }
        merged.locations = defaults.locations.merging(locations) { _, node in node }
        return merged
    }

    /// Takes `field` from `defaults` when these fields do not have it.
    mutating func inherit<Value>(_ field: WritableKeyPath<Self, Value?>, from defaults: Self) {
        if self[keyPath: field] == nil { self[keyPath: field] = defaults[keyPath: field] }
    }

    /// The node of merged fields: what is still missing gets its default, a field without a place of its own
    /// points at the key it is derived from.
    func node(name: String, address: String, location: SourceLocation) -> Node {
        var locations = self.locations
        if locations[.key(.id)] == nil { locations[.key(.id)] = locations[.key(.address)] }
        if locations[.key(.proposals)] == nil {
            locations[.key(.proposals)] = locations[.proposals(.ike)] ?? locations[.proposals(.esp)]
        }
        var node = Node(
            name: name, address: address, id: id ?? IKEIdentity.classify(address), region: region, country: country,
            tier: tier ?? .free, pool: pool, pool6: pool6, services: services ?? InventoryDecoder.defaultServices,
            psk: psk, group: group,
            proposals: Proposals(ike: ike ?? Proposals.defaults.ike, esp: esp ?? Proposals.defaults.esp),
            dns: dns ?? [],
            deploy: DeployTarget(
                host: deployHost, port: deployPort ?? 22, user: deployUser ?? "root", become: deployBecome ?? false),
            location: location, fieldLocations: locations)
        node.apple = apple
        node.network = NodeNetwork(
            uplink: uplink, mss: mss ?? .fixed(NodeNetwork.defaultMSS), isolateClients: isolateClients ?? true,
            ipsec: ipsec ?? .xfrm, ipv6: ipv6, allowPrivate: allowPrivate ?? [])
        node.accounts = accounts ?? .inventory
        node.radiusAddress = radiusAddress
        node.quantumSafe = quantumSafe
        node.certificate = certificate ?? .ca
        node.state = state ?? .active
        return node
    }
}

extension InventoryDecoder.NodeKey {
    /// How a node inherits this key from `defaults:`: where the node does not write it, the value under
    /// `defaults:`; a mapping key by key, or as a whole where its keys are read together. One arm per key, so a
    /// key does not compile without its rule; `InventoryKeyTests` writes every key (and every key of a mapping)
    /// under `defaults:` only and checks that it reaches the node.
    func inherit(into node: inout InventoryDecoder.NodeFields, from defaults: InventoryDecoder.NodeFields) {
        switch self {
        case .address: node.inherit(\.address, from: defaults)
        case .id: node.inherit(\.id, from: defaults)
        case .region: node.inherit(\.region, from: defaults)
        case .country: node.inherit(\.country, from: defaults)
        case .tier: node.inherit(\.tier, from: defaults)
        case .pool: node.inherit(\.pool, from: defaults)
        case .pool6: node.inherit(\.pool6, from: defaults)
        case .services: node.inherit(\.services, from: defaults)
        case .psk: node.inherit(\.psk, from: defaults)
        case .group: node.inherit(\.group, from: defaults)
        case .proposals:
            for key in InventoryDecoder.ProposalKey.allCases {
                switch key {
                case .ike: node.inherit(\.ike, from: defaults)
                case .esp: node.inherit(\.esp, from: defaults)
                }
            }
        case .dns: node.inherit(\.dns, from: defaults)
        case .apple: node.apple = node.apple.over(defaults.apple)
        case .deploy:
            for key in InventoryDecoder.DeployKey.allCases {
                switch key {
                case .host: node.inherit(\.deployHost, from: defaults)
                case .port: node.inherit(\.deployPort, from: defaults)
                case .user: node.inherit(\.deployUser, from: defaults)
                case .become: node.inherit(\.deployBecome, from: defaults)
                }
            }
        case .network:
            for key in InventoryDecoder.NetworkKey.allCases {
                switch key {
                case .uplink: node.inherit(\.uplink, from: defaults)
                case .mss: node.inherit(\.mss, from: defaults)
                case .isolateClients: node.inherit(\.isolateClients, from: defaults)
                case .ipsec: node.inherit(\.ipsec, from: defaults)
                case .ipv6: node.inherit(\.ipv6, from: defaults)
                // A node's own list replaces the defaults' (docs/inventory.md).
                case .allowPrivate: node.inherit(\.allowPrivate, from: defaults)
                }
            }
        case .accounts: node.inherit(\.accounts, from: defaults)
        case .radiusAddress: node.inherit(\.radiusAddress, from: defaults)
        case .certificate: node.inherit(\.certificate, from: defaults)
        case .quantumSafe:
            // A node's `quantum_safe:` replaces the whole of the defaults' (its keys are read together), even one
            // that did not decode.
            if node.locations[.key(.quantumSafe)] == nil { node.quantumSafe = defaults.quantumSafe }
        case .state: node.inherit(\.state, from: defaults)
        }
    }
}
