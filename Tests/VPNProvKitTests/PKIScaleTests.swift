import Foundation
import Testing
@testable import VPNProvKit

/// Fleet-scale run (2,000 users, 400 with certificates, 20 nodes). Not timed as a test: it prints the
/// durations when VPNPROV_PERF is set, and otherwise is skipped.
@Test(.enabled(if: ProcessInfo.processInfo.environment["VPNPROV_PERF"] != nil))
func fleetScalePrepare() throws {
    let state = makeTempDirectory()
    let nodes = (0..<20).map { makeNode("node\($0)", address: "node\($0).vpn.example.com", services: [.ikev2Cert, .ikev2EAP, .ikev2PSK], psk: .generate) }
    let users = (0..<2000).map { makeUser("user\($0)", cert: $0 % 5 == 0, password: .generate) }
    let inventory = makeInventory(nodes: nodes, users: users)
    let clock = ContinuousClock()
    var first: PrepareResult?
    let fresh = try clock.measure { first = try prepare(inventory, state: state) }
    var second: PrepareResult?
    let rerun = try clock.measure { second = try prepare(inventory, state: state) }
    #expect(first!.materials == second!.materials)
    #expect(first!.materials.users.values.filter { $0.p12 != nil }.count == 400)
    print("fleet prepare: fresh \(fresh), unchanged rerun \(rerun)")
}
