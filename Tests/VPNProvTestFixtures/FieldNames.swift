import VPNProvModel

// Tests name a field by its dotted spelling, as docs/inventory.md and the messages do (`"pool"`,
// `"proposals.ike"`, `"pki.ca.days"`); the sources name it by its type (`.pool`, `.proposals(.ike)`,
// `.ca(.days)`), so a misspelt field is a compile error there. These conformances exist in the tests only,
// and a spelling that names no field stops the test instead of falling back to the entry's location.

extension NodeField: ExpressibleByStringLiteral {
    public init(stringLiteral path: String) {
        if let field = NodeField.named.first(where: { $0.path == path }) {
            self = field
        } else if path.hasPrefix("network.allow_private."), let index = Int(path.dropFirst(22)) {
            self = .allowPrivate(index)
        } else {
            preconditionFailure("no node field '\(path)'")
        }
    }
}

extension UserField: ExpressibleByStringLiteral {
    public init(stringLiteral path: String) {
        guard let field = UserField.named.first(where: { $0.path == path }) else {
            preconditionFailure("no user field '\(path)'")
        }
        self = field
    }
}

extension InventoryField: ExpressibleByStringLiteral {
    public init(stringLiteral path: String) {
        guard let field = InventoryField.named.first(where: { $0.path == path }) else {
            preconditionFailure("no top-level field '\(path)'")
        }
        self = field
    }
}

extension Node {
    /// A node whose field locations are named by their dotted spelling.
    package init(
        name: String, address: String, id: IKEIdentity, region: String? = nil, country: String? = nil,
        tier: Tier = .free, pool: CIDR? = nil, pool6: CIDR? = nil, services: [Service],
        psk: SecretSource? = nil, group: String? = nil, proposals: Proposals = .defaults, dns: [String] = [],
        deploy: DeployTarget = DeployTarget(), location: SourceLocation, fieldLocations: [String: SourceLocation]
    ) {
        self.init(
            name: name, address: address, id: id, region: region, country: country, tier: tier, pool: pool,
            pool6: pool6, services: services, psk: psk, group: group, proposals: proposals, dns: dns, deploy: deploy,
            location: location,
            fieldLocations: Dictionary(uniqueKeysWithValues: fieldLocations.map { (NodeField(stringLiteral: $0), $1) }))
    }
}

extension User {
    /// A user whose field locations are named by their dotted spelling.
    package init(
        name: String, password: SecretSource? = nil, cert: Bool = false, id: IKEIdentity, nodes: [String],
        devices: [Device] = Device.defaults, revoked: Bool = false, location: SourceLocation,
        fieldLocations: [String: SourceLocation]
    ) {
        self.init(
            name: name, password: password, cert: cert, id: id, nodes: nodes, devices: devices, revoked: revoked,
            location: location,
            fieldLocations: Dictionary(uniqueKeysWithValues: fieldLocations.map { (UserField(stringLiteral: $0), $1) }))
    }
}
