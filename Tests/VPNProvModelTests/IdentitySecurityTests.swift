import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// Identities a peer matches must match exactly one identity, and no client certificate may carry a
/// server's identity (see docs/security.md).
@Suite(.temporaries) struct IdentitySecurityTests {
    typealias F = Found

    /// Every spelling strongSwan reads as a wildcard, a subnet or range, a regular expression or
    /// another type (identification.c).
    static let patterns = [
        // DN RDN wildcards, and '*' anywhere in a DN value.
        "O=acme, CN=*", "CN=*", "O=acme, OU=*, CN=x", "CN=n1*", "/O=acme/CN=*",
        // FQDN and e-mail prefix wildcards.
        "*", "*.example.com", "*@example.com", "alice@*.example.com", "a*@example.com",
        // ID_ANY.
        "", "%any", "%any6", "0.0.0.0", "::", "0::0", "0:0:0:0:0:0:0:0",
        // Subnets and ranges.
        "10.0.0.0/8", "10.0.0.1/32", "10.0.0.1-10.0.0.9", "2001:db8::/32", "2001:db8::1-2001:db8::9",
        // Type prefixes and regular expressions.
        "fqdn:^.*$", "dns:vpn.example.com", "email:alice@example.com", "rfc822:^a$", "userfqdn:a@b.example",
        "asn1dn:^.*$", "asn1dn:CN=x", "ipv4:10.0.0.1", "ipv6net:2001:db8::/32", "uri:https://x", "xmppaddr:a@b",
        "{2}:vpn.example.com", "{0x3}:a@b.example",
        // Leading '@' type markers.
        "@vpn.example.com", "@@alice@example.com", "@#0123abcd",
        // Key IDs are bytes, but '*' and '%' are refused there too.
        "keyid:*", "keyid:%any",
    ]

    @Test(arguments: patterns)
    func patternAsServerIdentityIsRefused(_ text: String) {
        let inventory = Fixture.good().with { $0.nodes[1].id = IKEIdentity.classify(text) }
        #expect(Fixture.found(inventory) == [F(.identityPattern, 42, 14)], "\(text)")
    }

    @Test(arguments: patterns)
    func patternAsUserIdentityIsRefused(_ text: String) {
        let inventory = Fixture.good().with { $0.users[0].id = IKEIdentity.classify(text) }
        #expect(Fixture.found(inventory) == [F(.identityPattern, 103, 14)], "\(text)")
    }

    @Test func patternMessageNamesTheReason() {
        let inventory = Fixture.good().with { $0.nodes[1].id = IKEIdentity.classify("O=acme, CN=*") }
        let d = Validator.validate(inventory).first { $0.code == .identityPattern }
        #expect(d?.message.hasPrefix("node 'ams-1': identity 'O=acme, CN=*' contains '*'") == true)
    }

    // MARK: server identities never on a client certificate

    func overlap(_ inventory: Inventory) -> [Diagnostic] {
        Validator.validate(inventory).filter { $0.code == .serverIdentityOverlap }
    }

    @Test func emailNodeIdentityOnAClientCertificate() {
        // alice (cert: true) has the e-mail identity alice@example.com in her certificate's SAN.
        let inventory = Fixture.good().with { $0.nodes[1].id = .userFQDN("Alice@Example.com") }
        let all = overlap(inventory)
        #expect(all.map(\.location) == [Fixture.at(42, 14)])
        #expect(all.first?.notes.first?.location == Fixture.at(103, 14))
        #expect(
            all.first?.message
                == "node 'ams-1': identity 'Alice@Example.com' is also on user 'alice''s client certificate; its holder could pose as this server to every client"
        )
        #expect(Fixture.found(inventory) == [F(.serverIdentityOverlap, 42, 14)])
    }

    @Test func nodeDNEqualToAClientDN() {
        // carol's DN, RDNs reordered and in another case: strongSwan may be configured to reorder.
        let inventory = Fixture.good().with { $0.nodes[1].id = .dn("cn=CAROL, O=acme, C=DE") }
        #expect(overlap(inventory).map(\.location) == [Fixture.at(42, 14)])
        #expect(overlap(inventory).first?.notes.first?.location == Fixture.at(123, 14))
    }

    @Test func nodeDNEqualToADefaultClientSubject() {
        // A user without a DN identity gets the subject O=<deployment>, CN=<identity>.
        let inventory = Fixture.good().with { $0.nodes[1].id = .dn("O=acme, CN=alice@example.com") }
        #expect(overlap(inventory).map(\.location) == [Fixture.at(42, 14)])
    }

    @Test func nodeIdentityEqualToADefaultUserIdentity() {
        // bob gets the default identity bob@acme; once he has a certificate, a node may not use it.
        let inventory = Fixture.good().with { $0.nodes[1].id = .userFQDN("bob@acme") }
        #expect(overlap(inventory).isEmpty, "bob has no certificate")
        let withCert = inventory.with {
            $0.users[1].cert = true
            $0.users[1].fieldLocations["id"] = nil
        }
        #expect(overlap(withCert).map(\.location) == [Fixture.at(42, 14)])
        #expect(overlap(withCert).first?.notes.first?.location == Fixture.at(110, 3))
    }

    @Test func fqdnAndIPNodeIdentitiesOnClientCertificates() {
        let fqdn = Fixture.good().with { $0.users[0].id = .fqdn("AMS-1.vpn.example.com") }
        #expect(overlap(fqdn).map(\.location) == [Fixture.at(42, 14)])
        // nyc-1's identity is its address, 2001:db8::10.
        let ip = Fixture.good().with { $0.users[0].id = .ipv6("2001:db8::10") }
        #expect(overlap(ip).map(\.location) == [Fixture.at(62, 14)])
    }

    @Test func revokedUsersCertificatesCount() {
        // Not every client checks the CRL: a revoked certificate still proves its identities.
        let inventory = Fixture.good().with {
            $0.users[3].cert = true
            $0.nodes[1].id = .userFQDN("dave@acme")
        }
        #expect(overlap(inventory).map(\.location) == [Fixture.at(42, 14)])
    }

    @Test func distinctIdentitiesPass() {
        #expect(overlap(Fixture.good()).isEmpty)
        let dn = Fixture.good().with { $0.nodes[1].id = .dn("C=DE, O=acme, CN=ams-1") }
        #expect(overlap(dn).isEmpty)
    }

    // MARK: through the command line

    static func inventory(nodeID: String) -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            id: "\(nodeID)"
            pool: 10.10.0.0/24
            services: [ikev2-cert]
        users:
          alice:
            cert: true

        """
    }

    @Test(arguments: ["O=acme, CN=*", "O=acme, CN=n1*", "O=acme, OU=*", "O=acme, CN=alice@acme"])
    func generateStrictRefusesAServerIdentityAClientCouldPresent(_ id: String) throws {
        let dir = try temporaryDirectory()
        try Self.inventory(nodeID: id).write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["generate", "--strict"], in: dir)
        #expect(r.code == 1, "\(id): \(r.err)")
        #expect(r.err.contains("inventory.yaml:6:9: error:"), "\(r.err)")
        #expect(r.err.contains("[identity-pattern]") || r.err.contains("[server-identity-overlap]"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/state"))
    }

    @Test func formerUsersCertificateInTheStateCounts() throws {
        // bob had a certificate (identity bob@acme); he leaves the inventory, his certificate stays
        // valid until it expires, so a node may not take his identity.
        let dir = try temporaryDirectory()
        let withBob = Self.inventory(nodeID: "vpn.example.com") + "  bob:\n    cert: true\n"
        try withBob.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        try Self.inventory(nodeID: "bob@acme").write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["validate"], in: dir).code == 0, "the inventory alone no longer shows bob")
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 1)
        #expect(
            r.err.contains("inventory.yaml:6:9: error: node 'n1': identity 'bob@acme' is on the client certificate "),
            "\(r.err)")
        #expect(r.err.contains("issued to 'bob' (valid until "), "\(r.err)")
        #expect(r.err.contains("[server-identity-overlap]"))
        #expect(vpnprov(["check"], in: dir).code == 1)
    }
}
