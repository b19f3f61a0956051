import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning

/// Inventories built in code the way the decoder builds them: every field remembers the line and
/// column where its value was written, so each rule's diagnostic can be asserted at its exact place.
package enum Fixture {
    package static let file = "inventory/prod.yaml"
    package static func at(_ line: Int, _ column: Int) -> VPNProvModel.SourceLocation {
        VPNProvModel.SourceLocation(file: file, line: line, column: column)
    }

    static let nodeFields = [
        "address", "id", "pool", "pool6", "services", "psk", "group", "proposals", "dns", "country",
    ]
    static let userFields = ["password", "cert", "id", "nodes", "devices"]

    /// A node whose key is at `line`, column 3; field k's value at line+1+k, column 14.
    package static func node(
        _ name: String, line: Int, address: String, id: IKEIdentity? = nil, pool: String? = nil, pool6: String? = nil,
        services: [Service], psk: SecretSource? = nil, group: String? = nil, proposals: Proposals = .defaults,
        dns: [String] = ["1.1.1.1", "2606:4700:4700::1111"], country: String? = "DE"
    ) -> Node {
        var locations: [String: VPNProvModel.SourceLocation] = [:]
        for (k, field) in nodeFields.enumerated() { locations[field] = at(line + 1 + k, 14) }
        return Node(
            name: name, address: address, id: id ?? IKEIdentity.classify(address), region: "eu-central",
            country: country,
            pool: pool.map(cidr), pool6: pool6.map(cidr), services: services, psk: psk, group: group,
            proposals: proposals,
            dns: dns, location: at(line, 3), fieldLocations: locations)
    }

    /// A user whose key is at `line`, column 3; field k's value at line+1+k, column 14.
    package static func user(
        _ name: String, line: Int, password: SecretSource? = .generate, cert: Bool = false, id: IKEIdentity? = nil,
        nodes: [String], devices: [Device] = Device.allCases, revoked: Bool = false
    ) -> User {
        var locations: [String: VPNProvModel.SourceLocation] = [:]
        for (k, field) in userFields.enumerated() { locations[field] = at(line + 1 + k, 14) }
        return User(
            name: name, password: password, cert: cert, id: id ?? .userFQDN("\(name)@acme"), nodes: nodes,
            devices: devices,
            revoked: revoked, location: at(line, 3), fieldLocations: locations)
    }

    package static func cidr(_ text: String) -> CIDR {
        let (address, prefix) = IPAddressText.parseCIDR(text)!
        return CIDR(address: address, prefix: prefix)
    }

    /// Every service on one node or another, every device: only the weak-by-design warnings.
    package static func good() -> Inventory {
        Inventory(
            file: file, name: "acme",
            pki: PKISettings(ca: CASettings(name: "acme VPN Root CA", key: .ecdsaP256, days: 3650)),
            nodes: [
                node(
                    "fra-1", line: 20, address: "fra-1.vpn.example.com", pool: "10.10.0.0/24", pool6: "fd00:10::/64",
                    services: [.ikev2Cert, .ikev2EAP, .ikev2PSK, .ikev2PSKEAP, .ipsecXauthPSK], psk: .generate,
                    group: "acme"),
                node(
                    "ams-1", line: 40, address: "192.0.2.10", id: .fqdn("ams-1.vpn.example.com"), pool: "10.11.0.0/24",
                    services: [.ikev2Cert], country: "NL"),
                node(
                    "nyc-1", line: 60, address: "2001:db8::10", pool6: "fd00:12::/64", services: [.ikev2EAP],
                    dns: ["2606:4700:4700::1111"], country: "US"),
            ],
            users: [
                user(
                    "alice", line: 100, cert: true, id: .userFQDN("alice@example.com"),
                    nodes: ["fra-1", "ams-1", "nyc-1"]),
                user("bob", line: 110, password: .env("VPN_BOB_PASSWORD"), nodes: ["fra-1"], devices: [.android]),
                user(
                    "carol", line: 120, password: nil, cert: true, id: .dn("C=DE, O=acme, CN=carol"), nodes: ["ams-1"],
                    devices: [.apple, .linux]),
                user(
                    "dave", line: 130, password: .file("secrets/dave"), nodes: ["ams-1"], devices: [.linux],
                    revoked: true),
            ],
            fieldLocations: [
                "name": at(2, 7), "pki": at(3, 1), "pki.ca": at(4, 7), "pki.ca.name": at(4, 15),
                "pki.ca.days": at(4, 52),
                "pki.server_days": at(5, 16), "pki.client_days": at(6, 16),
            ])
    }

    /// ams-1 has no IPv6 pool and carol has a Linux device there: `ipv6-leak` is by design too.
    package static let byDesign: Set<RuleCode> = [
        .weakPSKService, .ikev1Aggressive, .ikev1Service, .ikev1Build, .ipv6Leak,
    ]

    /// (code, line, column) of every diagnostic except the by-design warnings: the validator's and the
    /// planning rules', as `vpnprov validate` runs them.
    package static func found(_ inventory: Inventory, keeping keep: Set<RuleCode> = []) -> [Found] {
        Validator.sorted(Validator.validate(inventory) + PlanRules.check(inventory)).filter {
            !byDesign.contains($0.code) || keep.contains($0.code)
        }.map {
            Found($0.code, $0.location?.line ?? 0, $0.location?.column ?? 0, $0.severity)
        }
    }
}

package struct Found: Hashable, CustomStringConvertible {
    package var code: RuleCode
    package var line: Int
    package var column: Int
    package var severity: Severity
    package init(_ code: RuleCode, _ line: Int, _ column: Int, _ severity: Severity = .error) {
        self.code = code
        self.line = line
        self.column = column
        self.severity = severity
    }
    package var description: String { "\(line):\(column) \(severity) [\(code)]" }
}

extension Inventory {
    package func with(_ change: (inout Inventory) -> Void) -> Inventory {
        var copy = self
        change(&copy)
        return copy
    }
}
