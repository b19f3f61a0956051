import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvTemplates

/// The `deploy:` node field (decoding, defaults, validation) and the deploy/ tree it feeds.
@Suite(.temporaries) struct DeployFieldTests {
    static let base = """
        vpnprov: 1
        name: acme
        defaults:
          deploy: { user: admin, become: true }
        nodes:
          fra-1:
            address: fra-1.vpn.example.com
            pool: 10.10.0.0/24
            deploy: { host: 192.0.2.10, port: 2222 }
          ams-1:
            address: 198.51.100.7
            pool: 10.20.0.0/24

        """

    @Test func defaultsAndNodeValuesMergeKeyByKey() throws {
        let inventory = try #require(decode(Self.base).inventory)
        let fra = try #require(inventory.node(named: "fra-1"))
        #expect(fra.deploy == DeployTarget(host: "192.0.2.10", port: 2222, user: "admin", become: true))
        #expect(fra.deployHost == "192.0.2.10")
        let ams = try #require(inventory.node(named: "ams-1"))
        #expect(ams.deploy == DeployTarget(host: nil, port: 22, user: "admin", become: true))
        #expect(ams.deployHost == "198.51.100.7", "without deploy.host Ansible dials the node's address")
        #expect(Validator.validate(inventory).filter { $0.severity == .error }.isEmpty)
    }

    @Test func withoutDeployTheDefaultsAreRootOnPort22() throws {
        let inventory = try #require(
            decode("vpnprov: 1\nname: acme\nnodes:\n  n1:\n    address: vpn.example.com\n    pool: 10.1.0.0/24\n")
                .inventory)
        #expect(inventory.nodes[0].deploy == DeployTarget(host: nil, port: 22, user: "root", become: false))
    }

    @Test func unknownKeyGetsADidYouMean() {
        let result = decode(Self.base.replacingOccurrences(of: "port: 2222", with: "prot: 2222"))
        let error = result.diagnostics.first { $0.code == .unknownKey }
        #expect(error?.message == "node 'fra-1': 'deploy': unknown key 'prot'; did you mean 'port'?")
        #expect(error?.location?.line == 9)
        #expect(result.inventory == nil)
    }

    @Test func portOutOfRangeIsAnErrorAtItsValue() {
        for bad in ["0", "65536"] {
            let result = decode(Self.base.replacingOccurrences(of: "port: 2222", with: "port: \(bad)"))
            #expect(summary(result.diagnostics) == ["invalid-value 9:39"], "port \(bad)")
            #expect(
                result.diagnostics.first?.message
                    == "node 'fra-1': 'deploy.port' must be between 1 and 65535, found \(bad)")
        }
    }

    @Test func badHostIsAnErrorAtTheHost() throws {
        for bad in ["ssh://fra-1", "fra 1.example.com", "224.0.0.1", "2001:db8::g"] {
            let text = Self.base.replacingOccurrences(of: "host: 192.0.2.10", with: "host: \"\(bad)\"")
            let inventory = try #require(decode(text).inventory, "\(bad)")
            let errors = Validator.validate(inventory).filter { $0.severity == .error }
            #expect(summary(errors) == ["invalid-deploy-host 9:21"], "\(bad)")
            #expect(errors.first?.message.hasPrefix("node 'fra-1': deploy.host '\(bad)' ") == true)
        }
    }

    @Test func badUserIsAnError() throws {
        for bad in ["-oProxyCommand=x", "ad min", "", String(repeating: "u", count: 33)] {
            let text = Self.base.replacingOccurrences(of: "user: admin", with: "user: \"\(bad)\"")
            let inventory = try #require(decode(text).inventory, "\(bad)")
            let errors = Validator.validate(inventory).filter { $0.severity == .error }
            #expect(summary(errors) == ["invalid-deploy-user 4:19", "invalid-deploy-user 4:19"], "\(bad)")
        }
    }
}

@Suite(.temporaries) struct DeployRendererTests {
    let inventory = ClientFixtures.inventory()

    @Test func matchesGoldenFiles() throws {
        let files = try Render.files(DeployRenderer.self, inventory)
        try Golden.check(files, against: "deploy/two-nodes")
    }

    @Test func isDeterministicSecretFreeAndPublic() throws {
        let templates = try TemplateSet.builtin()
        let a = try Render.files(DeployRenderer.self, inventory, templates: templates)
        #expect(a == (try Render.files(DeployRenderer.self, inventory, templates: templates)))
        #expect(a.allSatisfy { !$0.isPrivate && $0.path.hasPrefix("deploy/") })
        for file in a {
            let text = String(decoding: file.contents, as: UTF8.self)
            for secret in ClientFixtures.secrets { #expect(!text.contains(secret), "\(file.path)") }
        }
    }

    @Test func inventoryHasOneHostPerNodeAndAGroupPerRegion() throws {
        let files = try Render.files(DeployRenderer.self, inventory)
        let text = try #require(files.first { $0.path == "deploy/inventory.yml" }).contents
        let inventoryText = String(decoding: text, as: UTF8.self)
        #expect(
            inventoryText.contains(
                "    vpnprov_nodes:\n      hosts:\n        \"fra-1\":\n          ansible_host: \"fra-1.vpn.example.com\"\n          ansible_port: 22\n          ansible_user: \"root\"\n          ansible_become: false\n"
            ))
        #expect(inventoryText.contains("    vpnprov_region_eu_central:\n      hosts:\n        \"fra-1\": {}\n"))
        #expect(inventoryText.contains("    vpnprov_region_eu_west:\n      hosts:\n        \"ams-1\": {}\n"))
    }

    @Test func hostVarsNameThePlannedConnectionsAndTheAllowedIdentities() throws {
        let fra = try #require(try Render.node("fra-1", of: inventory))
        let context = DeployRenderer.hostVarsContext(fra.hostVars)
        let plan = fra.server
        #expect(
            context == [
                "node": "fra-1",
                "connections": .list(plan.connections.map { .string($0.name) }),
                // carol is revoked: not allowed. alice has a certificate and a password; her client may present
                // the certificate's SAN or its subject.
                "identities": ["O=acme, CN=alice@acme.example", "alice", "alice@acme.example", "bob"],
                "acme": false,
                "monitoring": false,
                // No ML-KEM asked of the node: no strongSwan version to check.
                "strongswan_minimum": "",
                // Not draining.
                "drain": false,
            ])
    }

    @Test func anACMENodesHostVarsCarryWhatTheRoleObtainsItsCertificateWith() throws {
        var inventory = inventory
        var acme = ACMESettings(location: SourceLocation(file: "t", line: 1, column: 1))
        acme.email = "ops@acme.example"
        acme.key = .ec256
        acme.caBundle = "pebble.pem"
        inventory.acme = acme
        let index = try #require(inventory.nodes.firstIndex { $0.name == "fra-1" })
        inventory.nodes[index].certificate = .acme
        inventory.nodes[index].id = .fqdn("fra-1.vpn.example.com")
        let templates = try TemplateSet.builtin()
        let files = try Render.files(DeployRenderer.self, inventory, templates: templates)
        let text = String(
            decoding: try #require(files.first { $0.path == "deploy/host_vars/fra-1.yml" }).contents, as: UTF8.self)
        // fra-1 offers ipsec-xauth-hybrid, which signs with RSA: its key is RSA although acme.key is ec256.
        #expect(
            text.hasSuffix(
                """
                vpnprov_acme:
                  directory: "https://acme-v02.api.letsencrypt.org/directory"
                  email: "ops@acme.example"
                  domain: "fra-1.vpn.example.com"
                  key_type: "rsa2048"
                  renew_days: 30
                  ca_bundle: true
                  # The ACME CA's roots on the node (acme.roots), installed into swanctl/x509ca/ too.
                  roots:
                    - "/etc/ssl/certs/ISRG_Root_X1.pem"

                """))
        let ams = String(
            decoding: try #require(files.first { $0.path == "deploy/host_vars/ams-1.yml" }).contents, as: UTF8.self)
        #expect(!ams.contains("vpnprov_acme"))
    }

    @Test func regionGroupsAreAnsibleIdentifiers() {
        #expect(DeployRenderer.regionGroup("eu-central") == "vpnprov_region_eu_central")
        #expect(DeployRenderer.regionGroup("Zürich 1") == "vpnprov_region_Z_rich_1")
    }

    @Test func yamlSyntaxQuotesEscapesAndMarksTemplatesUnsafe() throws {
        #expect(TemplateSyntax.yaml.escape("fra-1") == "\"fra-1\"")
        #expect(TemplateSyntax.yaml.escape("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(TemplateSyntax.yaml.escape("{{ lookup('pipe', 'id') }}") == "!unsafe \"{{ lookup('pipe', 'id') }}\"")
        #expect(TemplateSyntax.yaml.escape("a\u{1}b") == nil)
    }
}
