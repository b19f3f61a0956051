import Foundation
import Glibc
import Testing
import VPNProvTestFixtures
import VPNProvTestHarness

/// One lab node with an inventory, output tree and state of its own (below `dir`), for the scenarios that
/// change the inventory and roll it out again. Its rollouts leave out the node's forwarding and firewall
/// (proven by the rollout test), which play no part in who may connect to the node itself: eight module
/// runs fewer per rollout.
struct OneNodeFleet {
    let lab: AnsibleLab
    let n1: AnsibleLab.Node
    let dir: URL
    let out: URL
    private let inventory: String
    private let state: URL

    /// Fails (the test) when Ansible or the strongSwan build cannot run here.
    /// `node`: the node's name (an ACME node's is its DNS name); `views`: as `AnsibleLab.start`.
    static func start(
        build: StrongSwanBuild, label: String, node: String = "n1", views: [String: [String]] = [:]
    ) throws -> OneNodeFleet {
        try AnsibleTools.require()
        // Requires the build (and strongSwan).
        let lab = try AnsibleLab.start(nodes: [node], build: build, views: views)
        do {
            let dir = try Scratch.makeDirectory(label)
            return OneNodeFleet(
                lab: lab, n1: try lab.node(node), dir: dir, out: dir.appendingPathComponent("out"),
                inventory: dir.appendingPathComponent("fleet.yaml").path, state: dir.appendingPathComponent("state"))
        } catch {
            lab.teardown()
            throw error
        }
    }

    func teardown() {
        lab.teardown()
        try? FileManager.default.removeItem(at: dir)
    }

    /// `vpnprov <arguments> <inventory> --out … --state …`, which must succeed; returns what it printed.
    @discardableResult
    func vpnprov(_ arguments: [String]) throws -> ProgramResult {
        let result = try VPNProvBinary.run(arguments + [inventory, "--out", out.path, "--state", state.path])
        guard result.succeeded else {
            throw HarnessError("vpnprov \(arguments.joined(separator: " ")) failed: \(result)")
        }
        return result
    }

    /// Writes `text` as the inventory and generates.
    func generate(_ text: String) throws {
        try text.write(toFile: inventory, atomically: true, encoding: .utf8)
        try vpnprov(["generate"])
    }

    /// Rolls the generated deploy/ out to the node (`extra`: more ansible-playbook arguments), which must
    /// succeed.
    func rollout(_ what: String, extra: [String] = []) async throws -> ProgramResult {
        let result = try await attemptRollout(extra: extra)
        guard result.succeeded else { throw HarnessError("\(lab.build): rollout \(what): \(result)") }
        return result
    }

    /// Rolls the generated deploy/ out to the node, whatever the outcome (`environment`: more variables for
    /// ansible-playbook).
    func attemptRollout(extra: [String] = [], environment: [String: String] = [:]) async throws -> ProgramResult {
        let arguments =
            [
                "-i", out.appendingPathComponent("deploy/inventory.yml").path,
                out.appendingPathComponent("deploy/site.yml").path,
            ] + AnsibleRolloutTests.labVariables + ["-e", "vpnprov_manage_network=false", "-v"] + extra
        return try await lab.playbook(arguments, environment: environment)
    }
}
