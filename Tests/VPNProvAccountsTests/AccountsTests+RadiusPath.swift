import Foundation
import Testing
import VPNProvAccounts
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvTestFixtures

@testable import VPNProvEngine

/// How a node reaches its RADIUS servers: through IPsec unless switched off, from its `radius_address`, and
/// which addresses may send it Disconnect-Requests or scrape its metrics.
extension AccountsTests {
    /// accounts.protection: ipsec (the default) puts an IPsec connection between each RADIUS node and each
    /// RADIUS server, with one generated key per node in the state, the same on both sides; both firewalls
    /// drop RADIUS that did not come through it. `none` writes none of it, and validate warns.
    @Test func theNodeRadiusPathIsIPsecUnlessSwitchedOff() throws {
        let dir = try temporaryDirectory("accounts")
        let run = try Self.generate(dir, Self.inventory())
        #expect(run.code == 0, "\(run.err)")
        let out = dir + "/out"
        let state = try Self.stateSecrets(dir)
        let freeKey = try #require(state.radiusIPsecSecrets?["nfree"])
        let proKey = try #require(state.radiusIPsecSecrets?["npro"])
        #expect(freeKey != proKey && freeKey != state.radiusSecrets?["nfree"])
        let encoded = { (key: String) in "0s" + Data(key.utf8).base64EncodedString() }
        let node = try Self.read(out + "/servers/nfree/swanctl/conf.d/vpnprov-radius-ipsec.conf")
        #expect(node.contains("radius-rad-1 {") && node.contains("remote_addrs = \"192.0.2.12\""))
        #expect(node.contains(encoded(freeKey)) && !node.contains(encoded(proKey)))
        #expect(node.contains("start_action = \"trap|start\""), "a kernel-IPsec node holds RADIUS back while down")
        for server in ["rad-1", "rad-2"] {
            let conf = try Self.read(out + "/radius/\(server)/ipsec/swanctl.conf")
            #expect(conf.contains(encoded(freeKey)) && conf.contains(encoded(proKey)) && conf.contains("radius-npro {"))
            let mode =
                try FileManager.default.attributesOfItem(atPath: out + "/radius/\(server)/ipsec/swanctl.conf")[
                    .posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        let serverRules = try Self.read(out + "/radius/rad-2/ipsec/vpnprov-radius.nft")
        #expect(serverRules.contains("udp dport { 11812, 11813 } meta ipsec missing iifname != \"ipsec*\" drop"))
        let nodeRules = try Self.read(out + "/servers/nfree/network/vpnprov.nft")
        #expect(nodeRules.contains("ip saddr 192.0.2.12/32 udp sport { 11812, 11813 } meta ipsec missing drop"))
        #expect(nodeRules.contains("ip saddr 192.0.2.11/32 udp dport 3799 meta ipsec missing drop"))
        // No tunnel client's UDP into the node's IPsec to its RADIUS servers (inside client_to_world, before what
        // the node lets clients reach).
        let toWorld = try #require(nodeRules.range(of: "chain client_to_world {").map { nodeRules[$0.lowerBound...] })
        for server in ["192.0.2.11", "192.0.2.12"] {
            let rule = "ip daddr \(server) meta l4proto udp counter reject with icmpx admin-prohibited"
            #expect(toWorld.prefix { $0 != "}" }.contains(rule), "\(server):\n\(toWorld.prefix(1200))")
        }
        let hostVars = try Self.read(out + "/deploy/host_vars/nfree.yml")
        #expect(hostVars.contains("radius-rad-1") && hostVars.contains("radius-rad-2"), "\(hostVars)")
        #expect(!Self.codes(Self.inventory()).contains("W:radius-cleartext"))

        // Switched off: nothing of it, the keys leave the state, and a warning.
        let clear = Self.inventory().replacingOccurrences(
            of: "  radius_database: env:VPN_RADIUS_DB\n",
            with: "  radius_database: env:VPN_RADIUS_DB\n  protection: none\n")
        #expect(Self.codes(clear).contains("W:radius-cleartext"))
        let again = try Self.generate(dir, clear)
        #expect(again.code == 0, "\(again.err)")
        #expect(
            !FileManager.default.fileExists(atPath: out + "/servers/nfree/swanctl/conf.d/vpnprov-radius-ipsec.conf"))
        #expect(!FileManager.default.fileExists(atPath: out + "/radius/rad-1/ipsec/swanctl.conf"))
        let clearRules = try Self.read(out + "/servers/nfree/network/vpnprov.nft")
        #expect(!clearRules.contains("RADIUS answers only through IPsec"))
        // In clear too, a client's datagram would reach the servers as the node: refused all the same.
        #expect(clearRules.contains("ip daddr 192.0.2.11 meta l4proto udp counter reject"), "\(clearRules)")
        #expect(try Self.stateSecrets(dir).radiusIPsecSecrets?.isEmpty ?? true)
        // Kept on purpose (a path protected otherwise), the warning is acknowledged like any other.
        let shown = vpnprov(["validate"], in: dir, environment: Self.env)
        #expect(shown.err.contains("[radius-cleartext]"), "\(shown.err)")
        try
            (clear
            + "acknowledge:\n  - rule: radius-cleartext\n    reason: a private network between nodes and servers\n")
            .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let acknowledged = vpnprov(["validate"], in: dir, environment: Self.env)
        #expect(
            acknowledged.code == 0 && !acknowledged.err.contains("[radius-cleartext]")
                && !acknowledged.err.contains("[error-acknowledged]"), "\(acknowledged.err)")
        // Another word is refused.
        let wrong = Self.inventory().replacingOccurrences(
            of: "  radius_database: env:VPN_RADIUS_DB\n",
            with: "  radius_database: env:VPN_RADIUS_DB\n  protection: tls\n")
        #expect(Self.codes(wrong).contains { $0.hasPrefix("E:") })
    }

    /// The free node with its RADIUS on another address: `radius_address`.
    static func inventoryWithRadiusAddress(_ address: String = "203.0.113.1") -> String {
        inventory().replacingOccurrences(
            of: "    accounts: radius\n  npro:", with: "    accounts: radius\n    radius_address: \(address)\n  npro:")
    }

    /// A node that reaches its RADIUS servers from another address than the one clients dial (a private network):
    /// the servers know it by that address, its IPsec to them starts there, its Disconnect-Requests go there, and
    /// its accounting must name the address clients reach it at (strongSwan's NAS-IP-Address).
    @Test func aNodeReachesItsRadiusServersFromItsRadiusAddress() throws {
        let text = Self.inventoryWithRadiusAddress()
        #expect(Self.codes(text).filter { $0.hasPrefix("E") || $0.contains("radius-address") } == [])
        let dir = try temporaryDirectory("accounts")
        let run = try Self.generate(dir, text)
        #expect(run.code == 0, "\(run.err)")
        let out = dir + "/out"
        for server in ["rad-1", "rad-2"] {
            let clients = try Self.read(out + "/radius/\(server)/clients.conf")
            let free = try #require(clients.range(of: "client \"nfree\" {").map { String(clients[$0.lowerBound...]) })
            let freeSection = String(free.prefix { $0 != "}" })
            #expect(freeSection.contains("ipaddr = \"203.0.113.1\"\n"), "\(freeSection)")
            #expect(freeSection.contains("vpn_nas_address = \"192.0.2.1\"\n"), "\(freeSection)")
            let pro = try #require(clients.range(of: "client \"npro\" {").map { String(clients[$0.lowerBound...]) })
            let proSection = String(pro.prefix { $0 != "}" })
            #expect(proSection.contains("ipaddr = \"192.0.2.3\"\n") && !proSection.contains("vpn_nas_address"))
            let ipsec = try Self.read(out + "/radius/\(server)/ipsec/swanctl.conf")
            let toFree = try #require(ipsec.range(of: "radius-nfree {").map { String(ipsec[$0.lowerBound...]) })
            #expect(toFree.prefix(200).contains("remote_addrs = \"203.0.113.1\""), "\(toFree.prefix(200))")
        }
        let node = try Self.read(out + "/servers/nfree/swanctl/conf.d/vpnprov-radius-ipsec.conf")
        #expect(node.contains("local_addrs = \"203.0.113.1\""), "\(node)")
        let pro = try Self.read(out + "/servers/npro/swanctl/conf.d/vpnprov-radius-ipsec.conf")
        #expect(!pro.contains("local_addrs"))
        // The node's relay sends from there, and keeps only accounting that names the address clients dial (what
        // the servers require of this node); the pro node's relay requires its own address, the packets' source.
        let relayProxy = try Self.read(out + "/servers/nfree/radius-relay/proxy.conf")
        #expect(relayProxy.components(separatedBy: "src_ipaddr = \"203.0.113.1\"").count - 1 == 4, "\(relayProxy)")
        let relayPolicy = try Self.read(out + "/servers/nfree/radius-relay/policy.d/vpnprov-relay")
        #expect(relayPolicy.contains("!= \"192.0.2.1\")") && relayPolicy.contains("&NAS-Identifier != \"nfree\""))
        #expect(
            try Self.read(out + "/servers/npro/radius-relay/policy.d/vpnprov-relay").contains("!= \"192.0.2.3\")"))
        let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
        let inventory = try #require(decoded.inventory)
        let targets = try AccountsDeployment.disconnectTargets(inventory, stateDirectory: dir + "/state")
        #expect(targets.lookup("nfree")?.host == "203.0.113.1")
        #expect(targets.lookup("npro")?.host == "192.0.2.3")
        #expect(
            RadiusPlan.inventoryIdentities(in: inventory).contains { $0.identity == "203.0.113.1" },
            "an account named after the node's RADIUS address is refused like one named after its address")

        // A node dialled by DNS name: the servers cannot know its NAS address, its NAS-Identifier binds it.
        let named = text.replacingOccurrences(of: "    address: 192.0.2.1\n", with: "    address: vpn1.example.com\n")
        let again = try Self.generate(dir, named)
        #expect(again.code == 0, "\(again.err)")
        #expect(try Self.read(out + "/radius/rad-1/clients.conf").contains("vpn_nas_address = \"any\"\n"))
        // Its relay checks no NAS address either: the servers check none.
        let anyPolicy = try Self.read(out + "/servers/nfree/radius-relay/policy.d/vpnprov-relay")
        #expect(!anyPolicy.contains("is not the node's\""), "\(anyPolicy)")
        // An IPv6 path to IPv6 servers; the address is written in canonical form, as FreeRADIUS compares it.
        let six = Self.inventoryWithRadiusAddress("2001:DB8:0:0::5").replacingOccurrences(
            of: "192.0.2.11 }", with: "2001:db8::11 }"
        ).replacingOccurrences(
            of: "192.0.2.12,", with: "2001:db8::12,")
        #expect(Self.codes(six).filter { $0.hasPrefix("E") } == [], "\(Self.codes(six))")
        let dir6 = try temporaryDirectory("accounts")
        let v6 = try Self.generate(dir6, six)
        #expect(v6.code == 0, "\(v6.err)")
        let clients6 = try Self.read(dir6 + "/out/radius/rad-1/clients.conf")
        #expect(
            clients6.contains("ipaddr = \"2001:db8::5\"\n") && clients6.contains("vpn_nas_address = \"192.0.2.1\"\n"))
        let proxy6 = try Self.read(dir6 + "/out/servers/nfree/radius-relay/proxy.conf")
        #expect(proxy6.components(separatedBy: "src_ipaddr = \"2001:db8::5\"").count - 1 == 4, "\(proxy6)")
        // npro has an IPv4 address and IPv6 servers: its relay leaves the source to the kernel.
        #expect(!(try Self.read(dir6 + "/out/servers/npro/radius-relay/proxy.conf")).contains("src_ipaddr = "))
    }

    /// Each unusable `radius_address` is reported at its line.
    @Test func aRadiusAddressIsCheckedAtItsLine() throws {
        func findings(_ text: String) -> [Diagnostic] {
            let decoded = InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml")
            return decoded.diagnostics + (decoded.inventory.map { Validator.validate($0) } ?? [])
        }
        let line = Self.inventoryWithRadiusAddress().split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("radius_address:") }.map { $0 + 1 }
        for (value, code, severity) in [
            ("radius.example.com", "invalid-value", Severity.error),
            ("192.0.2.3", "radius-address", .error),  // npro's address
            ("10.27.3.9", "radius-address", .error),  // in npro's pool
            ("2001:db8::5", "radius-address", .error),  // the servers are IPv4
            // No unicast address of the node's own: unspecified (remote_addrs = 0.0.0.0 on the servers would be any
            // IPv4 peer), "this network", loopback, broadcast, multicast, link-local, reserved, IPv4-mapped.
            ("0.0.0.0", "radius-address", .error), ("0.1.2.3", "radius-address", .error),
            ("127.0.0.1", "radius-address", .error), ("255.255.255.255", "radius-address", .error),
            ("224.0.0.5", "radius-address", .error), ("169.254.10.1", "radius-address", .error),
            ("240.0.0.9", "radius-address", .error),
            ("::1", "radius-address", .error), ("fe80::1", "radius-address", .error),
            ("ff02::1", "radius-address", .error), ("::ffff:203.0.113.1", "radius-address", .error),
            ("\"::\"", "radius-address", .error),
            ("192.0.2.12", "radius-address", .error),  // rad-2's own address
        ] {
            let found = findings(Self.inventoryWithRadiusAddress(value)).filter { $0.code.rawValue == code }
            #expect(found.count == 1, "\(value): \(found.map(\.message))")
            #expect(found.first?.severity == severity && found.first?.location?.line == line, "\(value)")
        }
        let unused = Self.inventoryWithRadiusAddress().replacingOccurrences(
            of: "    accounts: radius\n    radius_address", with: "    accounts: inventory\n    radius_address")
        let warning = findings(unused).filter { $0.code.rawValue == "radius-address" }
        #expect(warning.count == 1 && warning.first?.severity == .warning, "\(warning.map(\.message))")
    }

    /// No address a tunnel client can leave a node with may send Disconnect-Requests or read the exporters: a node
    /// masquerades its clients to its `address` (and, towards its private network, its `radius_address`), so such an
    /// entry admits every tunnel client of that node. The error is at the entry, with a note at the address.
    @Test func noNodeAddressMayDisconnectOrScrape() throws {
        func findings(_ text: String, _ code: String) throws -> [Diagnostic] {
            let inventory = try #require(
                InventoryLoader.decode(bytes: Array(text.utf8), file: "inventory.yaml").inventory)
            return Validator.validate(inventory).filter { $0.code.rawValue == code }
        }
        func disconnectFrom(_ entry: String, radiusAddress: Bool = false) -> String {
            let text = radiusAddress ? Self.inventoryWithRadiusAddress() : Self.inventory()
            return text.replacingOccurrences(
                of: "  servers:\n", with: "  disconnect_from:\n    - 192.0.2.11\n    - \(entry)\n  servers:\n")
        }
        func line(of needle: String, in text: String) -> Int? {
            text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(needle) }.map {
                $0 + 1
            }
        }
        // npro's address; a network holding both nodes' addresses; nfree's radius_address.
        for (entry, radiusAddress, nodes) in [
            ("192.0.2.3", false, ["npro"]), ("192.0.2.0/29", false, ["nfree", "npro"]),
            ("203.0.113.0/24", true, ["nfree"]),
        ] {
            let text = disconnectFrom(entry, radiusAddress: radiusAddress)
            let found = try findings(text, "disconnect-from-wide")
            #expect(found.count == nodes.count, "\(entry): \(found.map(\.message))")
            #expect(found.allSatisfy { $0.severity == .error && $0.location?.line == line(of: "- \(entry)", in: text) })
            for (finding, node) in zip(found, nodes) {
                #expect(finding.message.contains("node '\(node)''s"), "\(finding.message)")
                #expect(finding.message.contains("masquerades"), "\(finding.message)")
                #expect(finding.notes.first?.location?.line != nil)
            }
        }
        // Without disconnect_from the servers send them: a server at a node's address is the same mistake.
        let colocated = Self.inventory().replacingOccurrences(
            of: "rad-1: { address: 192.0.2.11 }", with: "rad-1: { address: 192.0.2.1 }")
        let server = try findings(colocated, "disconnect-from-wide")
        #expect(server.count == 1 && server.first?.location?.line == line(of: "rad-1:", in: colocated), "\(server)")
        // monitoring.from: a node's address, or its radius_address.
        for (entry, radiusAddress) in [("192.0.2.1", false), ("203.0.113.1", true)] {
            let text = (radiusAddress ? Self.inventoryWithRadiusAddress() : Self.inventory()).replacingOccurrences(
                of: "nodes:\n", with: "monitoring:\n  from:\n    - 198.51.100.7\n    - \(entry)\n" + "nodes:\n")
            let found = try findings(text, "monitoring-from-wide")
            #expect(found.count == 1 && found.first?.severity == .error, "\(entry): \(found.map(\.message))")
            #expect(found.first?.location?.line == line(of: "- \(entry)", in: text), "\(found)")
            #expect(found.first?.message.contains("node 'nfree''s") == true, "\(found.map(\.message))")
        }
    }
}
