import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// The files of the state directory that runs rewrite in place, under fixed names (docs/state.md):
/// every other state file is written once under a name of its own and recorded in index.json with
/// its digest. Their raw values are their file names, in the order the manifest lists them.
package enum StateRecord: String, CaseIterable, Sendable, Hashable {
    case handOff = "handoff.json"
    case index = "index.json"
    case outputLocation = "output-location"
    case rolloutPending = "rollout-pending"
    case secrets = "secrets.json"

    /// Largest file read: a fleet's index and secrets are megabytes; the others a line a node.
    var limit: Int {
        switch self {
        case .index, .secrets: BoundedFile.stateIndexLimit
        case .rolloutPending: RolloutLedger.maxBytes
        case .handOff: HandOffLedger.maxBytes
        case .outputLocation: 4096
        }
    }
}

/// `manifest.sha256`: the SHA-256 of every record the state holds, sealed by the SHA-256 of the lines
/// that list them. Renaming it into place is the one commit point of the state: a record that does
/// not have the digest it lists is not the state's (docs/state.md, "One commit point"). Its lines are
/// what `sha256sum` writes, so `sha256sum -c manifest.sha256` in the state directory checks the
/// records by hand (the two comment lines are skipped).
package struct StateManifest: Equatable, Sendable {
    package static let fileName = "manifest.sha256"
    static let header =
        "# vpnprov state manifest 1: the SHA-256 of each record; 'sha256sum -c manifest.sha256' checks them"
    static let sealPrefix = "# seal "
    /// Largest manifest read (four lines of 80 bytes and two comments).
    static let limit = 4096

    /// Lowercase hexadecimal SHA-256 by record; a record not listed does not exist.
    package var digests: [StateRecord: String] = [:]

    init(digests: [StateRecord: String] = [:]) { self.digests = digests }

    static func digest(_ bytes: [UInt8]) -> String { hexString(Digest.sha256(bytes)).lowercased() }

    /// The manifest of `records` (nil: absent).
    init(records: [StateRecord: [UInt8]]) {
        digests = records.mapValues(Self.digest)
    }

    var encoded: [UInt8] {
        var text = Self.header + "\n"
        for record in StateRecord.allCases {
            if let digest = digests[record] { text += "\(digest)  \(record.rawValue)\n" }
        }
        let body = Array(text.utf8)
        return body + Array("\(Self.sealPrefix)\(Self.digest(body))\n".utf8)
    }

    /// The manifest in `bytes` (read from `path`): exactly the lines `encoded` writes, its seal
    /// matching them; else state-unreadable naming the file.
    package static func decode(_ bytes: [UInt8], path: String) throws -> StateManifest {
        func refuse(_ why: String) -> StateError {
            StateError(
                .stateUnreadable,
                "cannot read \(path): \(why); the state cannot be trusted and nothing was changed (restore the state directory from a backup)"
            )
        }
        guard bytes.last == UInt8(ascii: "\n"), let text = String(validating: bytes, as: UTF8.self) else {
            throw refuse("it is not a manifest vpnprov writes")
        }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 2, lines.first == Substring(header), let last = lines.last, last.hasPrefix(sealPrefix)
        else { throw refuse("it is not a manifest vpnprov writes") }
        let sealed = Array(bytes[..<(bytes.count - last.utf8.count - 1)])
        guard String(last.dropFirst(sealPrefix.count)) == digest(sealed) else {
            throw refuse("its seal does not match its lines (it has changed since vpnprov wrote it)")
        }
        var manifest = StateManifest()
        var previous = -1
        for line in lines.dropFirst().dropLast() {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1].isEmpty, parts[0].utf8.count == 64,
                parts[0].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                let record = StateRecord(rawValue: String(parts[2])),
                let position = StateRecord.allCases.firstIndex(of: record), position > previous
            else { throw refuse("the line '\(line.prefix(100))' is not one vpnprov writes") }
            previous = position
            manifest.digests[record] = String(parts[0])
        }
        return manifest
    }
}

/// The records of a state directory as one commit left them.
package struct StateRecords: Sendable {
    /// The manifest; nil in a state written before vpnprov sealed its records (read as it is, and sealed
    /// by the next run that commits the state).
    var manifest: StateManifest?
    /// The bytes of each record asked for that exists.
    package var bytes: [StateRecord: [UInt8]] = [:]

    package var sealed: Bool { manifest != nil }
}

extension StateDirectory {
    /// `.<record>.next-<digest>`: a record's next contents, written before the manifest that lists
    /// them is renamed into place and renamed over the record after it.
    static func pendingName(_ record: StateRecord, _ digest: String) -> String {
        ".\(record.rawValue).next-\(digest)"
    }

    static func isPendingName(_ name: String) -> Bool {
        StateRecord.allCases.contains { name.hasPrefix(".\($0.rawValue).next-") }
    }

    var manifestPath: String { root + "/" + StateManifest.fileName }

    func path(_ record: StateRecord) -> String { root + "/" + record.rawValue }

    /// The committed manifest, nil when there is none.
    func readManifest() throws -> StateManifest? {
        guard let bytes = try readIfPresent(StateManifest.fileName, limit: StateManifest.limit) else { return nil }
        return try StateManifest.decode(bytes, path: manifestPath)
    }

    /// The file `name` of the state directory itself, nil when it does not exist (never through a link).
    func readIfPresent(_ name: String, limit: Int) throws -> [UInt8]? {
        do {
            return try BoundedFile.read(at: fd, name, limit: limit, followSymlinks: false)
        } catch {
            if case .system(let code) = error, code == ENOENT { return nil }
            throw StateError(.stateUnreadable, "cannot read \(root)/\(name): \(error.reason)")
        }
    }

    /// The committed contents of `wanted`: each checked against the manifest's digest (found under its
    /// own name, or, after a commit killed before it renamed them, under its pending name), or read as
    /// they are in a state without a manifest. A record that is not what the manifest lists is refused,
    /// named. Without the lock (`status`, `accounts`) a commit may run meanwhile: a record that does not
    /// match is read again, with the manifest, up to three times.
    package func readRecords(_ wanted: [StateRecord]) throws -> StateRecords {
        var attempt = 0
        while true {
            attempt += 1
            let manifest = try readManifest()
            do {
                var records = StateRecords(manifest: manifest)
                for record in wanted {
                    records.bytes[record] = try readRecord(record, manifest: manifest)
                }
                return records
            } catch let error as StateError where error.code == .stateInconsistent && attempt < 3 {
                // Read again: a commit may have replaced the manifest, or renamed a pending record
                // into place between the two reads of it. A damaged record fails every time.
                continue
            }
        }
    }

    private func readRecord(_ record: StateRecord, manifest: StateManifest?) throws -> [UInt8]? {
        let current = try readIfPresent(record.rawValue, limit: record.limit)
        guard let manifest else { return current }
        let shown = path(record)
        guard let digest = manifest.digests[record] else {
            guard current == nil else {
                throw StateError(
                    .stateInconsistent,
                    "\(shown) is not listed in \(manifestPath): it was not written by the run that committed this state (a copy from "
                        + "elsewhere, or a damaged disk); nothing was changed. Restore the state directory from a backup"
                )
            }
            return nil
        }
        if let current, StateManifest.digest(current) == digest { return current }
        if let pending = try readIfPresent(Self.pendingName(record, digest), limit: record.limit),
            StateManifest.digest(pending) == digest
        {
            return pending
        }
        throw StateError(
            .stateInconsistent,
            current == nil
                ? "\(shown) is missing, but \(manifestPath) lists it; nothing was changed. Restore the state directory from a backup"
                : "\(shown) has changed since vpnprov wrote it (its SHA-256 is not the one \(manifestPath) lists: a damaged disk, "
                    + "an edit or a copy from another state); nothing was changed. Restore the state directory from a backup"
        )
    }

    /// Commits `changes` (new contents, or nil to remove the record) on top of the records `current`
    /// lists, with one rename: each new record is written under its pending name, then the manifest
    /// listing them all is renamed into place (the commit point), then each is renamed over its record.
    /// A run killed before the manifest's rename leaves the state it found; one killed after leaves the
    /// new one, which readers find under the pending names until the next commit renames them. A
    /// record removed is first moved to its pending name, so the old manifest still finds it. Call with
    /// the state lock held. Returns the manifest now committed.
    @discardableResult
    func commitRecords(_ changes: [StateRecord: [UInt8]?], current: StateManifest) throws -> StateManifest {
        try finishCommit(current)
        var next = current
        var written: [StateRecord] = []
        var removed: [StateRecord] = []
        for record in StateRecord.allCases {
            guard let change = changes[record] else { continue }
            if let bytes = change {
                let digest = StateManifest.digest(bytes)
                if current.digests[record] == digest && exists(path(record)) { continue }
                do {
                    try AtomicWrite.temporary(
                        in: fd, name: Self.pendingName(record, digest), mode: 0o600, sync: true, replacingStale: true
                    ) { put in put(bytes) }
                } catch {
                    errno = error.errno
                    throw AtomicFile.ioError("cannot write \(path(record))")
                }
                WriteSteps.step()
                next.digests[record] = digest
                written.append(record)
            } else if let digest = current.digests[record] {
                guard renameat(fd, record.rawValue, fd, Self.pendingName(record, digest)) == 0 || errno == ENOENT else {
                    throw AtomicFile.ioError("cannot remove \(path(record))")
                }
                WriteSteps.step()
                next.digests[record] = nil
                removed.append(record)
            }
        }
        guard next != current || !exists(manifestPath) else {
            removePending(keeping: next)
            return next
        }
        do {
            try syncDirectory(root)
            try write(next.encoded, to: manifestPath)
        } catch {
            // Committed after all when the manifest is in place (only its directory's sync failed).
            if (try? readManifest()) == next {
                try? finishCommit(next)
                throw error
            }
            // Not committed: the records are as they were (a removed one back under its name).
            for record in removed {
                if let digest = current.digests[record] {
                    renameat(fd, Self.pendingName(record, digest), fd, record.rawValue)
                }
            }
            removePending(keeping: current)
            throw error
        }
        // Committed. Renaming the records into place only tidies up: readers find them either way.
        try? finishCommit(next)
        return next
    }

    /// Renames each record `manifest` lists and finds only under its pending name into place, and
    /// removes every other pending file (a commit killed before its manifest was renamed, a record
    /// removed).
    func finishCommit(_ manifest: StateManifest) throws {
        var renamed = false
        for (record, digest) in manifest.digests.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let pending = Self.pendingName(record, digest)
            var st = stat()
            guard fstatat(fd, pending, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if let current = try? readIfPresent(record.rawValue, limit: record.limit),
                StateManifest.digest(current) == digest
            {
                continue
            }
            guard renameat(fd, pending, fd, record.rawValue) == 0 else {
                throw AtomicFile.ioError("cannot rename into \(path(record))")
            }
            WriteSteps.step()
            renamed = true
        }
        removePending(keeping: manifest)
        if renamed { try syncDirectory(root) }
    }

    /// Removes the pending files `manifest` does not need: all but those of records found only there.
    private func removePending(keeping manifest: StateManifest) {
        for name in Self.names(in: fd) where Self.isPendingName(name) {
            let needed = manifest.digests.contains { record, digest in
                guard name == Self.pendingName(record, digest) else { return false }
                let current = (try? readIfPresent(record.rawValue, limit: record.limit)) ?? nil
                return current.map(StateManifest.digest) != digest
            }
            if !needed { unlinkat(fd, name, 0) }
        }
    }

    /// Replaces one record of a sealed state (or writes it the old way in a state without a manifest,
    /// which the next commit of the whole state seals). nil removes it. Call with the state lock held.
    package func commitRecord(_ record: StateRecord, _ bytes: [UInt8]?) throws {
        if let manifest = try readManifest() {
            try commitRecords([record: bytes], current: manifest)
        } else if let bytes {
            try write(bytes, to: path(record))
        } else {
            guard remove(path(record)) else { throw AtomicFile.ioError("cannot remove \(path(record))") }
            try syncDirectory(root)
        }
    }
}
