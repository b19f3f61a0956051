import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// Identities that must stay apart (docs/security.md, "Identities that must stay apart"): a password's
/// identity (the user name in secrets.conf) against every node identity, and nodes among themselves.
@Suite(.temporaries) struct IdentityCollisionTests {
    typealias F = Found

    // Fixture.good(): fra-1 (key 20, address fra-1.vpn.example.com), ams-1 (key 40, 192.0.2.10, id
    // ams-1.vpn.example.com), nyc-1 (key 60, 2001:db8::10); bob (key 110) has a password.

    /// Bob renamed; his password goes into every node's secrets.conf with `id = "<name>"`.
    static func bobNamed(_ name: String, change: (inout Inventory) -> Void = { _ in }) -> Inventory {
        Fixture.good().with {
            $0.users[1].name = name
            change(&$0)
        }
    }

    @Test(arguments: [
        // The FQDN identity of a node, compared ignoring case as strongSwan does.
        ("ams-1.vpn.example.com", ""), ("AMS-1.VPN.example.COM", ""),
        // An IPv4 identity, as bytes: the node's id written as an IPv4-mapped IPv6 address counts too.
        ("192.0.2.77", "192.0.2.77"), ("192.0.2.77", "::ffff:192.0.2.77"), ("192.0.2.77", "::FFFF:c000:24d"),
    ])
    func passwordIdentityEqualToANodeIdentityIsRefused(_ name: String, nodeID: String) {
        let inventory = Self.bobNamed(name) {
            if !nodeID.isEmpty { $0.nodes[1].id = IKEIdentity.classify(nodeID) }
        }
        let found = Validator.validate(inventory).filter { $0.code == .passwordIdentityOverlap }
        #expect(
            found.map { F($0.code, $0.location!.line, $0.location!.column) } == [F(.passwordIdentityOverlap, 110, 3)],
            "\(name) \(nodeID)")
        #expect(found.first?.notes.first?.location == Fixture.at(42, 14))
        #expect(Validator.validate(inventory).hasErrors)
    }

    @Test func passwordIdentityOfANodeTheUserDoesNotUseIsRefusedToo() {
        // Bob only uses fra-1; ams-1's identity is still refused (the rule holds against every node),
        // and it is the only finding.
        let inventory = Self.bobNamed("ams-1.vpn.example.com")
        #expect(Fixture.found(inventory) == [F(.passwordIdentityOverlap, 110, 3)])
    }

    @Test func certificateOnlyUserMayShareANodeIdentityName() {
        // Carol has no password: her name is in no secrets.conf (her certificate identity is her DN).
        let inventory = Fixture.good().with { $0.users[2].name = "ams-1.vpn.example.com" }
        #expect(Fixture.found(inventory) == [])
    }

    @Test(arguments: ["0.0.0.0", "10.0.0.1-10.0.0.9"])
    func passwordIdentityThatStrongSwanReadsAsAPatternIsRefused(_ name: String) {
        #expect(Fixture.found(Self.bobNamed(name)) == [F(.identityPattern, 110, 3)], "\(name)")
    }

    @Test(arguments: ["192.0.2.11", "ams-2.vpn.example.com", "bob", "10.0.0.1"])
    func otherPasswordIdentitiesPass(_ name: String) {
        #expect(Fixture.found(Self.bobNamed(name)) == [], "\(name)")
    }

    // MARK: nodes among themselves

    @Test(arguments: [
        ("ams-1.vpn.example.com", "ams-1.vpn.example.com"), ("AMS-1.vpn.example.com", "ams-1.vpn.example.com"),
        ("C=DE, O=acme, CN=gw", "c=de,o=ACME ,  cn=gw"), ("C=DE, O=acme, CN=gw", "/C=DE/O=acme/CN=gw"),
        ("2001:db8::5", "2001:DB8:0::5"), ("192.0.2.5", "::ffff:192.0.2.5"), ("keyid:gw", "keyid:gw"),
    ])
    func nodesWithOneIdentityAreRefused(_ first: String, _ second: String) {
        let inventory = Fixture.good().with {
            $0.nodes[1].id = IKEIdentity.classify(first)
            $0.nodes[2].id = IKEIdentity.classify(second)
        }
        let found = Validator.validate(inventory).filter {
            $0.code == .duplicateNodeIdentity || $0.code == .nodeCertificateOverlap
        }
        #expect(
            found.map { F($0.code, $0.location!.line, $0.location!.column) } == [F(.duplicateNodeIdentity, 62, 14)],
            "\(first) \(second)")
        #expect(found.first?.notes.first?.location == Fixture.at(42, 14))
    }

    @Test func nodesWithOneWrongIdentityAreReportedForItOnly() {
        // Both identities are %any: each is an identity-pattern error, not also a duplicate.
        let inventory = Fixture.good().with {
            $0.nodes[1].id = .ipv4("0.0.0.0")
            $0.nodes[2].id = .ipv4("0.0.0.0")
        }
        #expect(Fixture.found(inventory) == [F(.identityPattern, 42, 14), F(.identityPattern, 62, 14)])
    }

    @Test func nodeWhoseAddressIsAnotherNodesIdentityIsRefused() {
        // nyc-1's certificate would carry ams-1's identity as a dNSName: its key could pose as ams-1.
        let inventory = Fixture.good().with { $0.nodes[2].address = "ams-1.vpn.example.com" }
        #expect(Fixture.found(inventory) == [F(.nodeCertificateOverlap, 60, 3)])
    }

    @Test func nodeWhoseIdentityIsAnotherNodesAddressIsRefused() {
        // nyc-1 identified as ams-1's address: ams-1's certificate carries 192.0.2.10 too.
        let inventory = Fixture.good().with { $0.nodes[2].id = .ipv4("192.0.2.10") }
        #expect(Fixture.found(inventory) == [F(.nodeCertificateOverlap, 60, 3)])
    }

    @Test func nodeWhoseDNIsAnotherNodesDefaultSubjectIsRefused() {
        let inventory = Fixture.good().with { $0.nodes[2].id = .dn("O=acme, CN=ams-1") }
        #expect(Fixture.found(inventory) == [F(.nodeCertificateOverlap, 60, 3)])
    }

    @Test func nodeNamesThatMakeOneConnectionNameAreRefused() {
        let inventory = Fixture.good().with {
            $0.nodes[1].name = "ams.1"
            $0.nodes[2].name = "ams_1"
            for i in $0.users.indices {
                $0.users[i].nodes = $0.users[i].nodes.map { $0 == "ams-1" ? "ams.1" : $0 == "nyc-1" ? "ams_1" : $0 }
            }
        }
        let found = Validator.validate(inventory).filter { $0.code == .connectionNameCollision }
        #expect(
            found.map { F($0.code, $0.location!.line, $0.location!.column) } == [F(.connectionNameCollision, 60, 3)])
        #expect(found.first?.message.contains("'ams_1-<service>'") == true)
    }
}

/// `vpnprov validate` on inventories with each collision exits 1 and names the rule.
@Suite(.temporaries) struct IdentityCollisionCLITests {
    /// Two nodes (`first` and `second` are their extra lines) and a password user.
    static func inventory(
        first: String = "", second: String = "", names: (String, String) = ("a.b", "n2"), user: String = "alice"
    ) -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
          \(names.0):
            pool: 10.70.0.0/24
            \(first.isEmpty ? "address: 192.0.2.1" : first)
          \(names.1):
            pool: 10.71.0.0/24
            \(second.isEmpty ? "address: 192.0.2.2" : second)
        users:
          \(user):
            password: gen

        """
    }

    static let cases: [(String, String)] = [
        (inventory(names: ("a.b", "a_b")), "connection-name-collision"),
        (inventory(second: "address: 192.0.2.2\n    id: 192.0.2.1"), "duplicate-node-identity"),
        (inventory(second: "address: 192.0.2.2\n    id: \"::ffff:192.0.2.1\""), "duplicate-node-identity"),
        (
            inventory(
                first: "address: 192.0.2.1\n    id: vpn.example.com",
                second: "address: vpn.example.com\n    id: 192.0.2.9"),
            "node-certificate-overlap"
        ),
        (inventory(user: "192.0.2.2"), "password-identity-overlap"),
        (inventory(user: "0.0.0.0"), "identity-pattern"),
    ]

    @Test(arguments: 0..<cases.count)
    func validateExitsOne(_ index: Int) throws {
        let (text, code) = Self.cases[index]
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let result = vpnprov(["validate", dir + "/inventory.yaml"])
        #expect(result.code == 1, "\(result.err)")
        #expect(result.err.contains("[\(code)]"), "\(result.err)")
    }

    @Test func theBaseInventoryValidates() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let result = vpnprov(["validate", dir + "/inventory.yaml"])
        #expect(result.code == 0, "\(result.err)")
    }
}
