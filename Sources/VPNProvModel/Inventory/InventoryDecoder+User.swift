import VPNProvYAML

extension InventoryDecoder {
    /// A field written one level too far left (`pool:` under `nodes:` instead of under its node)
    /// reads as an entry named after the field with a scalar value: say so, instead of "node 'pool'
    /// must be a mapping". True when reported.
    static func misplacedField(
        _ name: String, _ keyNode: YAMLNode, _ value: YAMLNode, keys: [String], under list: String, kind: String,
        _ cx: DecodingContext
    ) -> Bool {
        guard keys.contains(name) else { return false }
        if case .mapping = value.kind { return false }
        cx.error(
            .typeMismatch,
            "'\(name)' is a \(kind) field, but it is indented as a \(kind) name directly under '\(list):'; "
                + "indent it to line up with the other fields of the \(kind) it belongs to",
            at: keyNode)
        return true
    }

    func decodeUser(
        name: String, keyNode: YAMLNode, value: YAMLNode, deployment: String, nodeNames: [String],
        declaredNodes: Set<String>,
        nodePositions: [String: Int], named: inout [String]?, _ cx: DecodingContext
    ) -> User? {
        let what = "user '\(DecodingContext.printable(name))'"
        if Self.misplacedField(name, keyNode, value, keys: Self.userKeys, under: "users", kind: "user", cx) {
            return nil
        }
        var password: SecretSource?
        var cert = false
        var id: IKEIdentity?
        var nodes = nodeNames
        var devices = Device.defaults
        var revoked = false
        var apple = AppleOptions()
        var locations: [UserField: SourceLocation] = [:]

        if !value.isNull {
            guard let entries = cx.mapping(value, what, keys: UserKey.self) else { return nil }
            for (key, _, v) in entries {
                if v.isNull { continue }
                let field = "\(what): '\(key.rawValue)'"
                var ok = true
                switch key {
                case .password:
                    password = cx.secret(v, field)
                    ok = password != nil
                case .cert:
                    if let b = cx.bool(v, field) { cert = b } else { ok = false }
                case .id:
                    if let s = cx.string(v, field) { id = IKEIdentity.classify(s) } else { ok = false }
                case .nodes:
                    let chosen = Self.decodeUserNodes(
                        v, field, nodeNames: nodeNames, declaredNodes: declaredNodes, nodePositions: nodePositions,
                        named: &named, cx)
                    nodes = chosen ?? nodes
                    ok = chosen != nil
                case .devices:
                    let chosen = cx.choiceList(v, field, Device.self)
                    devices = chosen.map { d in Device.allCases.filter(d.contains) } ?? devices
                    ok = chosen != nil
                case .apple:
                    apple = decodeUserApple(v, what, locations: &locations, cx)
                case .revoked:
                    if let b = cx.bool(v, field) { revoked = b } else { ok = false }
                }
                if ok { locations[.key(key)] = cx.location(v) }
            }
        }
        if id == nil { id = .userFQDN("\(name)@\(deployment)") }
        var user = User(
            name: name, password: password, cert: cert, id: id!, nodes: nodes, devices: devices, revoked: revoked,
            location: cx.location(keyNode), fieldLocations: locations)
        user.apple = apple
        return user
    }

    /// A user's `nodes:` in the inventory's node order, each known and listed once; `named` gets the names as
    /// written (the nodes the user depends on). Nil when it is not a list of strings.
    static func decodeUserNodes(
        _ v: YAMLNode, _ field: String, nodeNames: [String], declaredNodes: Set<String>, nodePositions: [String: Int],
        named: inout [String]?, _ cx: DecodingContext
    ) -> [String]? {
        guard let list = cx.stringList(v, field) else { return nil }
        // The nodes the user depends on (nil without `nodes:`: every node).
        named = list.map(\.0)
        var chosen = Set<String>()
        var repeats = DecodingContext.Repeats()
        defer { repeats.report(field, into: cx) }
        for (n, item) in list {
            if nodePositions[n] == nil {
                if declaredNodes.contains(n) { continue }
                cx.error(
                    .unknownNode,
                    "\(field): no node named '\(DecodingContext.printable(n))'"
                        + DecodingContext.hint(for: n, among: nodeNames), at: item)
            } else if !chosen.insert(n).inserted {
                repeats.add(n, at: item)
            }
        }
        return chosen.sorted { nodePositions[$0]! < nodePositions[$1]! }
    }
}
