import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvCrypto
@testable import VPNProvEngine

/// The render cache's fingerprints come from the inventory itself (`Fingerprint.inventoryReach` classifies
/// each of its stored properties), so an edit anywhere that reaches a file makes that file stale: after any
/// edit, a run that takes what it can from the cache writes the same tree as a run into an empty directory.
@Suite(.temporaries) struct FingerprintScopeTests {
    /// Every section of the inventory written: a CRL, RADIUS accounts, an ACME node, monitoring and a hand-off
    /// site, users of each kind.
    static let inventory = """
        vpnprov: 1
        name: demo
        pki:
          crl_url: http://crl.example.com/demo.crl
        secrets:
          env_prefix: [VPN_]
        accounts:
          radius_database: file:radius-db.conf
          protection: ipsec
          servers:
            rad-1: { address: 192.0.2.11 }
        acme:
          email: ops@example.com
        monitoring:
          from: [192.0.2.250]
          port: 9100
        handoff:
          address: get.vpn.example.com
          deploy: {host: 10.0.0.5}
        defaults:
          services: [ikev2-eap, ikev2-cert]
          dns: [192.0.2.53]
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.9.0.0/24
            accounts: radius
          n2:
            address: n2.vpn.example.com
            id: n2.vpn.example.com
            certificate: acme
            pool: 10.10.0.0/24
        users:
          ann:
            password: gen
            devices: [apple, android, linux, windows, networkmanager]
          bob:
            cert: true
            devices: [apple, linux]

        """

    /// One edit of each part of the inventory that reaches a file: the text replaced, and what replaces it.
    static let edits: [(part: String, from: String, to: String)] = [
        ("name", "name: demo", "name: demo2"),
        ("pki.crl_url", "demo.crl", "demo-2.crl"),
        ("accounts.protection", "protection: ipsec", "protection: none"),
        ("accounts.servers", "192.0.2.11", "192.0.2.12"),
        ("acme.email", "ops@example.com", "noc@example.com"),
        ("monitoring.port", "port: 9100", "port: 9200"),
        ("monitoring.from", "[192.0.2.250]", "[192.0.2.251]"),
        ("handoff.address", "get.vpn.example.com", "dl.vpn.example.com"),
        ("defaults.dns", "[192.0.2.53]", "[192.0.2.54]"),
        ("a node's pool", "10.9.0.0/24", "10.9.1.0/24"),
        ("a user's devices", "devices: [apple, linux]", "devices: [apple]"),
    ]

    /// sha256 of every file below `dir`, by path relative to it, the tree's own records (the render cache,
    /// the stat records) left out.
    func tree(_ dir: String) throws -> [String: String] {
        var result: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(atPath: dir) else { return [:] }
        for case let path as String in walker where !path.hasPrefix(".vpnprov-") {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: dir + "/" + path, isDirectory: &isDirectory)
            if isDirectory.boolValue { continue }
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + path)))
            result[path] = hexString(Digest.sha256(bytes))
        }
        return result
    }

    /// A directory holding `text` as inventory.yaml, with the RADIUS servers' connection string beside it.
    func workspace(_ text: String) throws -> String {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try "host=db.example.com dbname=vpn user=radius passfile=/etc/vpnprov/pgpass\n".write(
            toFile: dir + "/radius-db.conf", atomically: true, encoding: .utf8)
        return dir
    }

    /// A new stored property of `Inventory` fails here until `Fingerprint.inventoryReach` says what it reaches.
    @Test func everyPropertyOfTheInventoryHasItsReach() throws {
        let inventory = try #require(
            InventoryLoader.decode(bytes: Array(Self.inventory.utf8), file: "inventory.yaml").inventory)
        let labels = Mirror(reflecting: inventory).children.compactMap(\.label)
        #expect(labels.sorted() == Fingerprint.inventoryReach.keys.sorted())
    }

    /// After each edit, `generate` over the previous run's tree (the cache taking every unit whose fingerprint
    /// did not change) writes what `generate` writes into an empty directory from the same state. Each edit
    /// changes some file, so a fingerprint that missed it would leave that file stale.
    @Test(arguments: Self.edits.indices)
    func anEditReachingAFileMakesItStale(_ index: Int) throws {
        let edit = Self.edits[index]
        let dir = try workspace(Self.inventory)
        let first = vpnprov(["generate"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        let before = try tree(dir + "/out")
        let edited = Self.inventory.replacingOccurrences(of: edit.from, with: edit.to)
        #expect(edited != Self.inventory, "\(edit.part): the edit's text is not in the inventory")
        try edited.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let cached = vpnprov(["generate"], in: dir)
        #expect(cached.code == 0, "\(edit.part): \(cached.err)")
        let after = try tree(dir + "/out")
        let changed = after != before
        #expect(changed, "\(edit.part): the edit reaches no file")
        // The sections that reach only the servers' unit (`Fingerprint.inventoryReach`) change no client file:
        // the narrowing that keeps every user's files from being rendered again is right.
        let section = String(edit.part.prefix { $0 != "." })
        if ["accounts", "monitoring", "handoff"].contains(section) {
            let clients = Set(before.keys).union(after.keys).filter {
                $0.hasPrefix("clients/") && before[$0] != after[$0]
            }
            #expect(clients.isEmpty, "\(edit.part) reaches client files: \(clients.sorted().prefix(5))")
        }

        // The same inventory and state, no tree: everything rendered.
        let fresh = try workspace(edited)
        try FileManager.default.copyItem(atPath: dir + "/state", toPath: fresh + "/state")
        let scratch = vpnprov(["generate"], in: fresh)
        #expect(scratch.code == 0, "\(edit.part): \(scratch.err)")
        #expect(!scratch.err.contains("issued"), "\(edit.part): the second state differs: \(scratch.err)")
        let expected = try tree(fresh + "/out")
        let stale = Set(expected.keys).union(after.keys).filter { expected[$0] != after[$0] }.sorted()
        #expect(stale.isEmpty, "\(edit.part): stale after a cached run: \(stale.prefix(10))")
    }
}
