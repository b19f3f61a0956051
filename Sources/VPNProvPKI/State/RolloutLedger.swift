import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// The nodes whose server files changed and that nobody has said are rolled out yet
/// (`state/rollout-pending`, one node name a line, sorted). Every run that changes a node's files adds
/// it before the first file is renamed; `vpnprov rolled-out` removes it. So a deploy job whose rollout
/// failed finds the same nodes again when it is retried, although `generate` then writes nothing
/// (docs/ci.md). Absent when nothing is pending, so a fleet that is rolled out has the state it had before.
package enum RolloutLedger {
    static let fileName = "rollout-pending"

    /// Largest record read: node names are at most 63 bytes, so this holds thousands of nodes. A
    /// longer file is not one vpnprov wrote and is refused like any unreadable state file.
    static let maxBytes = 1 << 18

    static func path(_ stateDirectory: String) -> String { stateDirectory + "/" + fileName }

    /// The pending nodes, sorted; empty when the file does not exist.
    package static func read(stateDirectory: String) throws -> [String] {
        let path = path(stateDirectory)
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return [] }
            throw AtomicFile.ioError("cannot read \(path)")
        }
        return parse(try AtomicFile.read(path, limit: maxBytes))
    }

    /// The names of a record's bytes (empty lines and surrounding blanks ignored), sorted and unique.
    static func parse(_ bytes: [UInt8]) -> [String] {
        let names = bytes.split(separator: UInt8(ascii: "\n")).map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
        return Set(names.filter { !$0.isEmpty }).sorted()
    }

    /// Replaces the record with `nodes` (removes it when empty). Call with the state lock held.
    package static func write(_ nodes: Set<String>, stateDirectory: String) throws {
        let path = path(stateDirectory)
        if nodes.isEmpty {
            guard unlink(path) == 0 || errno == ENOENT else { throw AtomicFile.ioError("cannot remove \(path)") }
            try AtomicFile.syncDirectory(stateDirectory)
            return
        }
        try AtomicFile.write(Array(nodes.sorted().map { $0 + "\n" }.joined().utf8), to: path)
    }

    /// Adds `nodes` and drops names the inventory no longer has (a node taken out of the fleet is
    /// retired, not rolled out); writes only when that changes the record. Returns the pending nodes.
    @discardableResult
    package static func add(_ nodes: Set<String>, fleet: [String], stateDirectory: String) throws -> [String] {
        let before = try read(stateDirectory: stateDirectory)
        let inFleet = Set(fleet)
        let after = Set(before).union(nodes).intersection(inFleet)
        if after != Set(before) { try write(after, stateDirectory: stateDirectory) }
        return after.sorted()
    }
}
