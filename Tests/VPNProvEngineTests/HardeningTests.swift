import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvEngine

/// Hostile input through the CLI: hostile inventories are rejected with their rule code, names that would
/// escape the output tree are invalid, and a symlink planted in the output directory is never followed.
@Suite(.temporaries) struct HardeningTests {
    /// Hostile inventories, each with the rule code that must reject it.
    static let hostile: [(name: String, code: String, bytes: @Sendable () -> [UInt8])] = [
        (
            "alias-bomb", "alias-limit",
            {
                // Billion laughs: 9 levels of 10 aliases each, 10^9 nodes once expanded.
                var text = "vpnprov: 1\nname: acme\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                for level in 1...9 {
                    let previous = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
                    text += "a\(level): &a\(level) [\(previous)]\n"
                }
                return Array(text.utf8)
            }
        ),
        (
            "nesting-flow-10000", "depth-limit",
            {
                Array(
                    ("vpnprov: 1\nname: " + String(repeating: "[", count: 10_000)
                        + String(repeating: "]", count: 10_000) + "\n").utf8)
            }
        ),
        (
            "nesting-block-10000", "depth-limit",
            {
                // Compact block sequences: "- - - ... x" opens one sequence per dash.
                Array(("vpnprov: 1\nname:\n" + String(repeating: "- ", count: 10_000) + "x\n").utf8)
            }
        ),
        (
            "scalar-3MiB", "scalar-too-long",
            {
                Array("vpnprov: 1\nname: acme\nnodes:\n  fra-1:\n    address: ".utf8)
                    + Array(repeating: UInt8(ascii: "a"), count: 3 << 20) + [0x0A]
            }
        ),
        ("invalid-utf8", "invalid-utf8", { Array("vpnprov: 1\nname: ac".utf8) + [0xC3, 0x28] + Array("me\n".utf8) }),
        ("nul-byte", "invalid-character", { Array("vpnprov: 1\nname: ac".utf8) + [0x00] + Array("me\n".utf8) }),
    ]

    @Test(arguments: 0..<hostile.count)
    func hostileInventoryIsRejectedWithItsRuleCode(_ index: Int) throws {
        let (name, code, bytes) = Self.hostile[index]
        let dir = try temporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir + "/\(name).yaml", contents: Data(bytes())))
        let r = vpnprov(["validate", "\(name).yaml"], in: dir)
        #expect(r.code == 1, "\(name): exit \(r.code)")
        #expect(r.err.contains("[\(code)]"), "\(name): no [\(code)] diagnostic")
        #expect(r.err.filter { $0 == "\n" }.count < 20, "\(name): the error is short")
        // generate refuses it too, before creating anything.
        let g = vpnprov(["generate", "\(name).yaml"], in: dir)
        #expect(g.code == 1)
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/state"))
    }

    /// `state/output-location` is read like every state file: a FIFO (which a plain open would wait on
    /// for ever), a link or an oversized file is no record, and the read returns at once.
    @Test func outputLocationThatIsAFIFOALinkOrTooLongIsNoRecord() throws {
        let dir = try temporaryDirectory()
        let state = dir + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let record = state + "/" + OutputLocation.fileName
        write("out\n", to: record)
        #expect(OutputLocation.recorded(stateDirectory: state) == dir + "/out")

        #expect(unlink(record) == 0 && mkfifo(record, 0o600) == 0)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: String? = "not returned"
        Thread.detachNewThread {
            result = OutputLocation.recorded(stateDirectory: state)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success, "reading a FIFO blocked")
        #expect(result == nil)

        #expect(unlink(record) == 0)
        write("/elsewhere/out\n", to: dir + "/planted")
        #expect(symlink(dir + "/planted", record) == 0)
        #expect(OutputLocation.recorded(stateDirectory: state) == nil)

        #expect(unlink(record) == 0)
        write(String(repeating: "x", count: OutputLocation.maxBytes + 1), to: record)
        #expect(OutputLocation.recorded(stateDirectory: state) == nil)
    }

    @Test func oversizedFileIsRefusedBeforeParsing() throws {
        let dir = try temporaryDirectory()
        let big = Data(repeating: UInt8(ascii: "#"), count: InventoryLoader.maxFileSize + 1)
        #expect(FileManager.default.createFile(atPath: dir + "/big.yaml", contents: big))
        let r = vpnprov(["validate", "big.yaml"], in: dir)
        #expect(r.code != 0 && r.code != 1)
        #expect(r.err.contains("larger than"))
    }

    // MARK: paths

    static let escapingNames: [(field: String, value: String)] = [
        ("node", "\"../escape\""), ("node", "\"/etc\""), ("node", ".hidden"), ("node", "\"a/b\""),
        ("node", "\"\\0nul\""), ("node", String(repeating: "n", count: 300)),
        ("user", "\"..\""), ("user", "\"../../tmp/x\""), ("user", ".profile"), ("user", "\"\\\\server\""),
        ("user", String(repeating: "u", count: 300)), ("deployment", "\"../acme\""), ("deployment", ".acme"),
        ("deployment", "\"a/../../b\""),
    ]

    static func inventory(node: String = "fra-1", user: String = "alice", deployment: String = "acme") -> String {
        """
        vpnprov: 1
        name: \(deployment)
        nodes:
          \(node):
            address: 192.0.2.1
            pool: 10.10.0.0/24
        users:
          \(user):
            password: gen

        """
    }

    @Test(arguments: 0..<escapingNames.count)
    func namesThatWouldEscapeAreInvalidAndNothingIsWritten(_ index: Int) throws {
        let (field, value) = Self.escapingNames[index]
        let text =
            field == "node"
            ? Self.inventory(node: value).replacingOccurrences(of: "  fra-1", with: "  \(value)")
            : field == "user" ? Self.inventory(user: value) : Self.inventory(deployment: value)
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let r = vpnprov(["generate", "--out", "out", "--state", "state"], in: dir)
        #expect(r.code == 1, "\(field) \(value.prefix(20)): exit \(r.code)")
        #expect(r.err.contains("[invalid-name]"), "\(field) \(value.prefix(20)): not an invalid name")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["inventory.yaml"])
    }

    @Test func symlinkInOutputDirectoryIsNotFollowed() throws {
        let dir = try temporaryDirectory()
        let elsewhere = try temporaryDirectory()
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/out/clients", withDestinationPath: elsewhere)
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 3)
        #expect(r.err.contains("clients"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        // The link itself is left alone.
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/out/clients") == elsewhere)
    }

    @Test func symlinkedOutputFileIsReplacedNotWrittenThrough() throws {
        let dir = try temporaryDirectory()
        let elsewhere = try temporaryDirectory()
        try Self.inventory().write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let target = dir + "/out/catalog/servers.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: target))
        try FileManager.default.removeItem(atPath: target)
        try "victim".write(toFile: elsewhere + "/victim", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: elsewhere + "/victim")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(try String(contentsOfFile: elsewhere + "/victim", encoding: .utf8) == "victim")
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.type] as? FileAttributeType == .typeRegular)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == original)
    }

    // MARK: secrets

    @Test func exampleRunPrintsNoSecretAndKeepsSecretFilesPrivate() throws {
        let dir = try temporaryDirectory()
        let example = InventoryFixtures.repository.appendingPathComponent("inventory/example.yaml").path
        try FileManager.default.copyItem(atPath: example, toPath: dir + "/inventory.yaml")
        let env = ["VPNPROV_TEST_UNUSED": "unused"]
        for command in [
            ["generate"], ["generate"], ["check"], ["validate", "--strict"], ["revoke", "carol"], ["check"],
        ] {
            _ = vpnprov(command, in: dir, environment: env)  // the helper checks both outputs for secrets
        }
        let secrets = SecretLeaks.secrets(stateDirectories: [dir + "/state"], inventories: [dir + "/inventory.yaml"])
        #expect(secrets.count > 10, "the check knows the run's secrets")
        SecretLeaks.expectPrivateFilesOwnerOnly([dir + "/out", dir + "/state"], secrets: secrets)
    }
}
