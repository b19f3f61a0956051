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

    static func path(_ directory: StateDirectory) -> String { directory.root + "/" + fileName }

    /// The pending nodes, sorted; empty when the file (or the state directory) does not exist.
    package static func read(stateDirectory: String) throws -> [String] {
        guard let directory = try StateDirectory.open(stateDirectory, create: false) else { return [] }
        return try read(directory)
    }

    /// The pending nodes of the open state directory, sorted; empty when the file does not exist.
    package static func read(_ directory: StateDirectory) throws -> [String] {
        let path = path(directory)
        var st = stat()
        guard fstatat(directory.fd, fileName, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return [] }
            throw AtomicFile.ioError("cannot read \(path)")
        }
        return parse(try directory.read(path, limit: maxBytes))
    }

    /// The state directory at `path`, which must exist.
    static func existing(_ path: String) throws -> StateDirectory {
        guard let directory = try StateDirectory.open(path, create: false) else {
            errno = ENOENT
            throw AtomicFile.ioError("cannot open the state directory \(path)")
        }
        return directory
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
        try write(nodes, in: try existing(stateDirectory))
    }

    /// Replaces the record of the open state directory with `nodes` (removes it when empty). Call with
    /// the state lock held.
    package static func write(_ nodes: Set<String>, in directory: StateDirectory) throws {
        let path = path(directory)
        if nodes.isEmpty {
            guard directory.remove(path) else { throw AtomicFile.ioError("cannot remove \(path)") }
            try directory.syncDirectory(directory.root)
            return
        }
        try directory.write(Array(nodes.sorted().map { $0 + "\n" }.joined().utf8), to: path)
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
