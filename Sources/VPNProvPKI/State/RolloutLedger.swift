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
/// A record of the manifest (`StateRecords`): written through it and checked against it.
package enum RolloutLedger {
    static let fileName = "rollout-pending"

    /// Largest record read: node names are at most 63 bytes, so this holds thousands of nodes. A
    /// longer file is not one vpnprov wrote and is refused like any unreadable state file.
    static let maxBytes = 1 << 18

    static func path(_ directory: StateDirectory) -> String { directory.root + "/" + fileName }

    /// The pending nodes, sorted; empty when the file (or the state directory) does not exist.
    package static func read(stateDirectory: String) throws -> [String] {
        guard let directory = try StateDirectory.open(stateDirectory, create: false) else { return [] }
        return try read(directory)
    }

    /// The pending nodes of the open state directory, sorted; empty when the file does not exist.
    /// Checked against the manifest and read strictly (`decode`).
    package static func read(_ directory: StateDirectory) throws -> [String] {
        guard let bytes = try directory.readRecords([.rolloutPending]).bytes[.rolloutPending] else { return [] }
        return try decode(bytes, path: path(directory))
    }

    /// The state directory at `path`, which must exist.
    static func existing(_ path: String) throws -> StateDirectory {
        guard let directory = try StateDirectory.open(path, create: false) else {
            errno = ENOENT
            throw AtomicFile.ioError("cannot open the state directory \(path)")
        }
        return directory
    }

    /// The names of a record's bytes (empty lines and surrounding blanks ignored), sorted and unique:
    /// what the fuzzer reads. `decode` is what a run reads.
    static func parse(_ bytes: [UInt8]) -> [String] {
        let names = bytes.split(separator: UInt8(ascii: "\n")).map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
        return Set(names.filter { !$0.isEmpty }).sorted()
    }

    /// The record's bytes as vpnprov writes them: one name a line, each a name the inventory allows,
    /// sorted, none twice, and at least one (with none waiting there is no file). Anything else (an
    /// empty file, a stray byte) is refused naming `path`: a name dropped would be a node that silently
    /// stops waiting for its rollout.
    package static func decode(_ bytes: [UInt8], path: String) throws -> [String] {
        let names = parse(bytes)
        guard !names.isEmpty, encoded(Set(names)) == bytes, names.allSatisfy({ NameRules.problem($0) == nil }) else {
            throw StateError(
                .stateUnreadable,
                "cannot read \(path): it is not the list of node names vpnprov writes (one name a line, sorted); "
                    + "nothing was changed. Restore the state directory from a backup")
        }
        return names
    }

    static func encoded(_ nodes: Set<String>) -> [UInt8] {
        Array(nodes.sorted().map { $0 + "\n" }.joined().utf8)
    }

    /// Replaces the record with `nodes` (removes it when empty). Call with the state lock held.
    package static func write(_ nodes: Set<String>, stateDirectory: String) throws {
        try write(nodes, in: try existing(stateDirectory))
    }

    /// Replaces the record of the open state directory with `nodes` (removes it when empty), through
    /// the manifest. Call with the state lock held.
    package static func write(_ nodes: Set<String>, in directory: StateDirectory) throws {
        try directory.commitRecord(.rolloutPending, nodes.isEmpty ? nil : encoded(nodes))
    }

    /// Adds `nodes` and drops names the inventory no longer has (a node taken out of the fleet is
    /// retired, not rolled out); writes only when that changes the record. Returns the pending nodes.
    @discardableResult
    package static func add(_ nodes: Set<String>, fleet: [String], stateDirectory: String) throws -> [String] {
        try add(nodes, fleet: fleet, in: try existing(stateDirectory))
    }

    /// `add(_:fleet:stateDirectory:)` in the open state directory.
    @discardableResult
    package static func add(_ nodes: Set<String>, fleet: [String], in directory: StateDirectory) throws -> [String] {
        let before = try read(directory)
        let inFleet = Set(fleet)
        let after = Set(before).union(nodes).intersection(inFleet)
        if after != Set(before) { try write(after, in: directory) }
        return after.sorted()
    }
}
