import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvCrypto
@testable import VPNProvModel
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvTemplates

/// A draining node's siblings (same tier and region, deployment-CA certificates) take over its IKEv2 clients: their
/// certificates also carry its identity and they get one `<service>-from-<node>` connection per service, after their
/// own; the catalogue marks the drained node. Nodes of other groups, and every node of an inventory without a drain,
/// are as before.
@Suite struct DrainPlanTests {
    static let base = """
        vpnprov: 1
        name: acme
        defaults:
          services: [ikev2-cert, ikev2-eap, ikev2-psk]
          psk: gen
        nodes:
          a:
            address: 192.0.2.1
            id: a.vpn.test
            region: eu
            pool: 10.10.1.0/24
            proposals: { ike: [aes128gcm16-prfsha256-ecp256], esp: [aes128gcm16-ecp256] }
          b:
            address: 192.0.2.2
            id: b.vpn.test
            region: eu
            pool: 10.10.2.0/24
          c:
            address: 192.0.2.3
            id: c.vpn.test
            region: us
            pool: 10.10.3.0/24
          d:
            address: 192.0.2.4
            id: d.vpn.test
            region: eu
            tier: pro
            pool: 10.10.4.0/24
        users:
          alice: { password: "correct horse battery", nodes: [a] }
          bob: { password: "correct horse battery", nodes: [b], cert: true }

        """

    static func inventory(draining: Bool) throws -> Inventory {
        let text =
            draining
            ? base.replacingOccurrences(
                of: "    region: eu\n    pool: 10.10.1.0/24",
                with: "    region: eu\n    state: draining\n    pool: 10.10.1.0/24") : base
        let result = decode(text)
        #expect(result.diagnostics.filter { $0.severity == .error }.isEmpty, "\(result.diagnostics)")
        return try #require(result.inventory)
    }

    static func node(_ name: String, _ inventory: Inventory) throws -> Node {
        try #require(inventory.nodes.first { $0.name == name })
    }

    @Test func siblingsAreTheActiveNodesOfTheSameTierAndRegion() throws {
        let inventory = try Self.inventory(draining: true)
        let a = try Self.node("a", inventory)
        #expect(a.state == .draining)
        #expect(DrainGroups.siblings(of: a, in: inventory).map(\.name) == ["b"])
        #expect(
            DrainGroups.drainedNodes(redirectingTo: try Self.node("b", inventory), in: inventory).map(\.name) == ["a"])
        #expect(DrainGroups.drainedNodes(redirectingTo: try Self.node("c", inventory), in: inventory).isEmpty)
        #expect(DrainGroups.drainedNodes(redirectingTo: try Self.node("d", inventory), in: inventory).isEmpty)
        // An ACME sibling cannot carry another node's name (HTTP-01 proves each name from its own address).
        var acme = inventory
        acme.nodes[1].certificate = .acme
        #expect(DrainGroups.siblings(of: a, in: acme).isEmpty)
        #expect(
            DrainGroups.siblings(of: try Self.node("a", try Self.inventory(draining: false)), in: inventory).isEmpty)
    }

    @Test func theSiblingTakesOverTheRedirectedServicesAfterItsOwnConnections() throws {
        let inventory = try Self.inventory(draining: true)
        let b = ServerPlan.make(for: try Self.node("b", inventory), in: inventory)
        #expect(
            b.connections.map(\.name) == [
                "ikev2-cert", "ikev2-eap", "ikev2-psk", "ikev2-cert-from-a", "ikev2-eap-from-a",
            ])
        let fromA = try #require(b.connections.first { $0.name == "ikev2-eap-from-a" })
        #expect(fromA.local.id == .fqdn("a.vpn.test"))
        #expect(fromA.local.certificates == ["b.pem"])
        #expect(fromA.pools == b.connections[1].pools)
        #expect(fromA.ikeProposals == ["aes128gcm16-prfsha256-ecp256"])
        let certFromA = try #require(b.connections.first { $0.name == "ikev2-cert-from-a" })
        #expect(certFromA.remote[0].certPolicies == [NodeAccessPolicy.oid(forNode: "a")])
        // a's EAP users log in at b once redirected.
        #expect(b.passwordUsers == ["alice", "bob"])
        // The drained node and the other groups keep their plans.
        let plain = try Self.inventory(draining: false)
        for name in ["a", "c", "d"] {
            #expect(
                ServerPlan.make(for: try Self.node(name, inventory), in: inventory).connections
                    == ServerPlan.make(for: try Self.node(name, plain), in: plain).connections)
        }
        #expect(ServerPlan.make(for: try Self.node("b", plain), in: plain).passwordUsers == ["bob"])
    }

    @Test func theSiblingCertificateAlsoNamesTheDrainedNode() throws {
        let inventory = try Self.inventory(draining: true)
        let b = try CertificateProfile.server(try Self.node("b", inventory), inventory: inventory)
        #expect(b.subjectAltNames.contains(.dnsName("a.vpn.test")))
        #expect(b.subjectAltNames.contains(.dnsName("b.vpn.test")))
        let plain = try Self.inventory(draining: false)
        #expect(
            try CertificateProfile.server(try Self.node("b", plain), inventory: plain).subjectAltNames
                .contains(.dnsName("a.vpn.test")) == false)
        for name in ["a", "c", "d"] {
            #expect(
                try CertificateProfile.server(try Self.node(name, inventory), inventory: inventory)
                    == CertificateProfile.server(try Self.node(name, plain), inventory: plain))
        }
    }

    /// deploy/host_vars of the drained node name, per redirected connection, the siblings that take its clients.
    @Test func theDrainedNodesHostVarsNameItsSiblings() throws {
        let inventory = try Self.inventory(draining: true)
        let text = try TemplateSet.builtin().template("deploy/host_vars.yml.tmpl").render(
            DeployRenderer.hostVarsContext(try #require(try Render.node("a", of: inventory)).hostVars))
        #expect(
            text.hasSuffix(
                """
                vpnprov_drain:
                  siblings:
                    "ikev2-cert":
                      - "192.0.2.2"
                    "ikev2-eap":
                      - "192.0.2.2"

                """), "\(text)")
        let b = try TemplateSet.builtin().template("deploy/host_vars.yml.tmpl").render(
            DeployRenderer.hostVarsContext(try #require(try Render.node("b", of: inventory)).hostVars))
        #expect(!b.contains("vpnprov_drain"))
    }

    @Test func theCatalogueMarksTheDrainedNodeOnly() throws {
        let inventory = try Self.inventory(draining: true)
        let catalog = CatalogRenderer.catalog(CataloguePlan.make(inventory))
        for server in catalog.servers {
            #expect(server.state == (server.node == "a" ? "draining" : nil))
        }
        let text = String(decoding: CatalogRenderer.encoded(catalog), as: UTF8.self)
        #expect(text.contains("\"state\" : \"draining\""))
        let plain = String(
            decoding: CatalogRenderer.encoded(
                CatalogRenderer.catalog(CataloguePlan.make(try Self.inventory(draining: false)))),
            as: UTF8.self)
        #expect(!plain.contains("\"state\""))
    }
}
