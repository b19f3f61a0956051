import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport

/// Why the output tree could not be written or read. Always an environment problem (exit 3), except
/// `unsafePath`, which means a renderer produced a path that would leave the output directory.
package struct OutputError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
    package init(_ message: String) { self.message = message }
    static func errno(_ what: String, _ path: String) -> OutputError {
        OutputError("\(what) '\(path)': \(String(cString: strerror(Glibc.errno)))")
    }
}

/// What `OutputTree.write` did.
package struct WriteSummary: Sendable, Equatable {
    /// Sorted (packed: a fleet's first run writes hundreds of thousands of files).
    package var written = PathList()
    /// How many files were already as they should be (a count: a fleet's no-op run has hundreds of
    /// thousands, and nobody reads their names).
    package var unchangedCount = 0
    package var removed: [String] = []
}

/// What `OutputTree.compare` found (the `check` drift gate).
package struct DriftReport: Sendable, Equatable {
    package var missing: [String] = []
    /// Present, but contents or mode differ from what `generate` would write now.
    package var stale: [String] = []
    /// Present, written by an earlier run, and no longer generated: `generate` would remove it.
    package var unexpected: [String] = []
    /// Present, but vpnprov never wrote it (not in the manifest): `generate` leaves it alone, and the
    /// tree is deployed and handed out as it is, so it stays drift until someone removes it.
    package var untracked: [String] = []
    package var isClean: Bool { missing.isEmpty && stale.isEmpty && unexpected.isEmpty && untracked.isEmpty }
}

/// Writes and compares the output tree safely:
/// - nothing is written outside the output directory: every path is relative, has no `..` or empty
///   component, and every directory on the way is opened with O_NOFOLLOW, so a symlink planted inside
///   the output directory is never followed;
/// - every file is written to a temporary name, flushed to disk and renamed into place, so a crash
///   never leaves a half-written file;
/// - a file whose bytes and mode are already right is not touched (a no-op run rewrites nothing);
/// - files written by an earlier run and no longer generated are removed (they are listed in the
///   manifest); files vpnprov never wrote are left alone.
package enum OutputTree {
    package static let manifestName = ".vpnprov-manifest"
    /// What the rollout reports back into the tree (`rollout/acme/<node>.pem`, the node certificates it obtained
    /// from ACME; docs/acme.md): never written by vpnprov, never drift, read by `vpnprov status`.
    static let rolloutReportsDirectory = "rollout"
    /// What `vpnprov handoff` publishes (`handoff/`: the sealed links and their QR codes, docs/handoff.md): written
    /// by the hand-off commands, not rendered from the inventory, never drift.
    static let handOffDirectory = "handoff"
    static let publicMode: mode_t = 0o644
    static let privateMode: mode_t = 0o600

    /// Rejects paths that could leave the output directory or hide (`..`, `/x`, `a//b`, `.x`).
    package static func checkRelativePath(_ path: String) throws(OutputError) -> [String] {
        // On UTF-8 bytes: this runs for every file of every run.
        let bytes = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard !path.isEmpty, bytes.allSatisfy(isPlainComponent) else {
            throw OutputError("refusing unsafe output path '\(path)'")
        }
        return bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    /// `checkRelativePath`'s rules without splitting: every `/`-separated component plain; empty is
    /// the root.
    static func isPlainRelativePath<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        var length = 0
        var first = true
        for b in bytes {
            if b == UInt8(ascii: "/") {
                if length == 0 { return false }
                length = 0
                first = true
                continue
            }
            if (first && b == UInt8(ascii: ".")) || b == 0 { return false }
            first = false
            length += 1
            if length > 255 { return false }
        }
        return length > 0 || bytes.isEmpty
    }

    /// One component of a safe output path: not empty, no leading dot (no `.`, `..` or hidden name), no
    /// NUL, at most 255 bytes.
    static func isPlainComponent<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        !bytes.isEmpty && bytes.first != UInt8(ascii: ".") && bytes.count <= 255 && !bytes.contains(0)
    }

    // MARK: writing

    package static func write(_ files: [OutputFile], to directory: String) throws(OutputError) -> WriteSummary {
        let session = try Session(directory: directory, mode: .write)
        do {
            session.add(try session.prepare(files))
            return try session.publish()
        } catch {
            session.abort()
            throw error
        }
    }

    // MARK: comparing

    /// Compares the directory with what would be written, without writing anything.
    package static func compare(_ files: [OutputFile], with directory: String) throws(OutputError) -> DriftReport {
        let session = try Session(directory: directory, mode: .compare)
        session.add(try session.prepare(files))
        return try session.drift()
    }
}
