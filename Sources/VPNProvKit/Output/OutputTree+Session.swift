import Foundation
import VPNProvCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension OutputTree {
    // MARK: streaming

    /// Writes (or compares) an output tree batch by batch, so a fleet's files never have to be in
    /// memory at once. `prepare` may run on several threads at once (one batch each); `add` takes
    /// the batches in order, one call at a time; `publish` makes the new files visible:
    /// - prepare compares each file with the tree and writes a changed one under a temporary name
    ///   (`.<name>.tmp-<pid>`) next to its place; nothing visible changes yet;
    /// - publish flushes the file system once, renames every temporary file into place, removes
    ///   what an earlier run wrote and this one does not, writes the manifest and flushes again.
    ///   A crash never leaves a half-written file, and one flush replaces an fsync per file;
    /// - abort (after a failure before publish) removes the temporary files: nothing changed.
    public final class Session: @unchecked Sendable {
        public enum Mode: Sendable { case write, compare }

        /// What `prepare` found for one batch.
        public struct Batch: Sendable {
            var paths: [String] = []
            /// How many files were already right (a count: a no-op run of a fleet has 600,000).
            var unchanged = 0
            /// Written under a temporary name (write mode) / missing or stale (compare mode).
            var changed: [Change] = []

            /// Adds another prepared batch's files to this one.
            mutating func append(_ other: Batch) {
                paths += other.paths
                unchanged += other.unchanged
                changed += other.changed
            }
        }

        /// Only the path and two flags per file: a fleet has hundreds of thousands.
        struct Change: Sendable {
            var path: String
            /// Written under `temp` (write mode).
            var staged: Bool
            var missing: Bool
        }

        static func temporaryName(_ name: String) -> String { ".\(name).tmp-\(processID)" }
        private static let processID = getpid()

        let directory: String
        let mode: Mode
        /// -1 in compare mode when the directory does not exist.
        let root: Int32
        let syncPerFile: Bool
        /// Compare mode: every path added (`drift` tests the tree's listing against it on all cores).
        /// Write mode keeps only `paths` and finds duplicates by sorting them in `publish`: a fleet
        /// has 600,000 paths, and the set was a tenth of a run's memory.
        private var seen = Set<String>()
        private var paths: [String] = []
        private var unchangedCount = 0
        private var changed: [Change] = []
        /// `publish` has renamed the staged files into place: `abort` has none left to remove.
        private var published = false
        /// `.vpnprov-writing` exists from this run's first temporary file until publish has renamed
        /// them all. Found at the start, it means a run was killed half-way: only then are all
        /// directories searched for temporary files (a search a no-op run should not pay for).
        static let writingMarker = ".vpnprov-writing"
        private var killedRunLeftTemporaries = false
        private let markerLock = NSLock()
        private var markerWritten = false
        /// Directories `prepare` created (relative paths) and whether the root itself was created:
        /// `abort` removes them again when they are empty, so a failed run (a full disk) leaves no
        /// empty directories behind. Guarded by `markerLock`.
        private var createdDirectories: Set<String> = []
        private var createdRoot = false

        public init(directory: String, mode: Mode) throws(OutputError) {
            self.directory = directory
            self.mode = mode
            syncPerFile = !FileSystemSync.available
            if mode == .write {
                createdRoot = access(directory, F_OK) != 0
                root = try openRoot(directory, create: true)
                killedRunLeftTemporaries = faccessat(root, Session.writingMarker, F_OK, AT_SYMLINK_NOFOLLOW) == 0
                markerWritten = killedRunLeftTemporaries
            } else {
                let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                guard fd >= 0 || errno == ENOENT else { throw OutputError.errno("cannot open output directory", directory) }
                root = fd
            }
        }

        deinit { if root >= 0 { close(root) } }

        /// Compares `files` with the tree and, in write mode, writes the changed ones under temporary
        /// names. Thread-safe. On error, this batch's temporary files are already removed.
        public func prepare(_ files: [OutputFile]) throws(OutputError) -> Batch {
            var batch = Batch()
            let cache = DirectoryCache(root: root, create: mode == .write)
            defer {
                cache.closeAll()
                if !cache.createdDirectories.isEmpty {
                    markerLock.lock()
                    createdDirectories.formUnion(cache.createdDirectories)
                    markerLock.unlock()
                }
            }
            do {
                for file in files {
                    let parts = try checkRelativePath(file.path)
                    batch.paths.append(file.path)
                    let mode: mode_t = file.isPrivate ? privateMode : publicMode
                    guard root >= 0 else {
                        batch.changed.append(Change(path: file.path, staged: false, missing: true))
                        continue
                    }
                    guard let dir = try cache.directory(parts.dropLast(), display: file.path) else {
                        batch.changed.append(Change(path: file.path, staged: false, missing: true))
                        continue
                    }
                    // A directory this batch created holds only what the batch wrote: nothing to compare.
                    let current = cache.created(parts.dropLast()) ? .differs(missing: true)
                        : try state(dir, name: parts.last!, contents: file.contents, mode: mode)
                    switch current {
                    case .matches:
                        batch.unchanged += 1
                    case .differs(let missing):
                        if self.mode == .write {
                            try markWriting()
                            try writeTemporary(
                                dir, name: Session.temporaryName(parts.last!), contents: file.contents, mode: mode, sync: syncPerFile,
                                display: file.path)
                            CrashTestHook.step()
                        }
                        batch.changed.append(Change(path: file.path, staged: self.mode == .write, missing: missing))
                    }
                }
            } catch {
                discard(batch.changed)
                throw error
            }
            return batch
        }

        /// Takes a prepared batch (in order, one call at a time). Two outputs for one path are an error.
        public func add(_ batch: Batch) throws(OutputError) {
            // First, so `abort` removes this batch's staged files also when it is refused below.
            changed += batch.changed
            if mode == .compare {
                for path in batch.paths {
                    guard seen.insert(path).inserted else { throw Self.duplicate(path) }
                }
            }
            paths += batch.paths
            unchangedCount += batch.unchanged
        }

        static func duplicate(_ path: String) -> OutputError { OutputError("two outputs want the path '\(path)'") }

        /// Whether `sorted` (ascending by `<`) holds `path`, by binary search.
        static func sortedContains(_ sorted: [String], _ path: String) -> Bool {
            var low = 0, high = sorted.count
            while low < high {
                let mid = (low + high) / 2
                if sorted[mid] < path { low = mid + 1 } else { high = mid }
            }
            return low < sorted.count && sorted[low] == path
        }

        /// Removes the temporary files of a batch that is not going to be added (or of everything
        /// added so far): used after a failure, so nothing visible changed.
        public func discard(_ batch: Batch) { discard(batch.changed) }

        public func abort() {
            if !published { discard(changed) }
            // Every temporary file of this session is gone; a killed run's may not be, and then the
            // marker stays for the next run to clean up.
            markerLock.lock()
            defer { markerLock.unlock() }
            if markerWritten && !killedRunLeftTemporaries {
                unlinkat(root, Session.writingMarker, 0)
                markerWritten = false
            }
            // Directories this run created, deepest first; unlinkat(AT_REMOVEDIR) removes only empty ones.
            for path in createdDirectories.sorted(by: { $0.count > $1.count }) {
                unlinkat(root, path, AT_REMOVEDIR)
            }
            createdDirectories = []
            if createdRoot { rmdir(directory) }
        }

        private func discard(_ changes: [Change]) {
            guard root >= 0 else { return }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            for change in changes where change.staged {
                if let place = try? cache.parent(of: change.path) {
                    unlinkat(place.dir, Session.temporaryName(place.name), 0)
                }
            }
        }

        /// Write mode: makes every prepared file visible, removes stale outputs, writes the manifest.
        public func publish() throws(OutputError) -> WriteSummary {
            precondition(mode == .write)
            var summary = WriteSummary()
            // Sorted in place (the manifest lists them sorted); two outputs for one path are neighbours.
            paths.sort()
            if let i = paths.indices.dropFirst().first(where: { paths[$0] == paths[$0 - 1] }) {
                let e = Self.duplicate(paths[i])
                abort()
                throw e
            }
            // Flushes are for new data; a run that changes nothing must not flush the file system.
            var wroteAnything = !changed.isEmpty
            if !syncPerFile && !changed.isEmpty {
                guard FileSystemSync.sync(root) else {
                    let e = OutputError.errno("cannot flush", directory)
                    abort()
                    throw e
                }
            }
            let cache = DirectoryCache(root: root, create: true)
            defer { cache.closeAll() }
            // Sorted in place: a fleet's lists are tens of MB, and a sorted copy would be one more.
            changed.sort(by: { $0.path < $1.path })
            let ordered = changed
            // Renames on all cores (tens of thousands for a fleet), in runs of neighbouring paths so
            // each worker reuses its directory descriptors; the first failure in path order is reported.
            let perRun = 512
            let failures = parallelMap((ordered.count + perRun - 1) / perRun) { k -> OutputError? in
                let runCache = DirectoryCache(root: root, create: true)
                defer { runCache.closeAll() }
                for change in ordered[(k * perRun)..<min(ordered.count, (k + 1) * perRun)] {
                    let place: (dir: Int32, name: String)?
                    do throws(OutputError) { place = try runCache.parent(of: change.path) } catch { return error }
                    guard let place, renameat(place.dir, Session.temporaryName(place.name), place.dir, place.name) == 0 else {
                        return OutputError.errno("cannot write", change.path)
                    }
                    let dir = place.dir
                    if syncPerFile { fsync(dir) }
                    CrashTestHook.step()
                }
                return nil
            }
            if let failure = failures.lazy.compactMap({ $0 }).first {
                abort()
                throw failure
            }
            summary.written = ordered.map(\.path)
            changed = []
            published = true
            summary.unchangedCount = unchangedCount
            // Remove what an earlier run wrote and this one does not; never anything else.
            var stale: [String] = []
            forEachManifestPath(root) { if !Self.sortedContains(paths, $0) { stale.append($0) } }
            for old in Set(stale).sorted() {
                guard let parts = try? checkRelativePath(old),
                    let dir = try? cache.directory(parts.dropLast(), display: old, create: false)
                else { continue }
                if unlinkat(dir, parts.last!, 0) == 0 { summary.removed.append(old) }
            }
            removeEmptiedDirectories(after: summary.removed, cache: cache)
            // Temporary files of an earlier run killed between writing and renaming, in the
            // directories this run writes to (this run's own are all renamed by now).
            if killedRunLeftTemporaries {
                var directories = Set(paths.map { $0.split(separator: "/").dropLast().map(String.init) })
                directories.insert([])
                for directory in directories {
                    if let dir = try? cache.directory(directory[...], display: directory.joined(separator: "/"), create: false) {
                        removeTemporaries(dir)
                    }
                }
            }
            wroteAnything = try replaceRootFile(manifestName, with: manifestBytes(sorted: paths), mode: publicMode) || wroteAnything
            paths = []
            var st = stat()
            var newCache: (digest: String, paths: [String])?
            if keepRenderCache, fstatat(root, RenderCache.fileName, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                (st.st_mode & 0o7777) == privateMode
            {
                // Unchanged: nothing to write.
            } else if keepRenderCache, let bytes = readRootFile(root, RenderCache.fileName) {
                // 0600: its digests and fingerprints are derived from the secrets, so it is as private as
                // they are (a readable digest of a secret file lets anyone confirm a guess offline).
                wroteAnything = try replaceRootFile(RenderCache.fileName, with: bytes, mode: privateMode) || wroteAnything
            } else if let renderCache {
                newCache = try writeRenderCache(renderCache)
                wroteAnything = true
            } else {
                unlinkat(root, RenderCache.fileName, 0)
            }
            wroteAnything = wroteAnything || !summary.removed.isEmpty
            // Last, so its own time is later than every change it records.
            if wroteAnything || refreshStats {
                var stats: [UInt8]?
                if let newCache {
                    let paths = newCache.paths
                    stats = StatCache.encode(count: paths.count, path: { paths[$0] }, cacheDigest: newCache.digest, root: root)
                } else if keepRenderCache, let bytes = readRootFile(root, RenderCache.fileName) {
                    stats = StatCache.encode(cache: bytes, root: root)
                }
                if let stats {
                    try replaceRootFile(StatCache.fileName, with: stats, mode: privateMode)
                } else {
                    unlinkat(root, StatCache.fileName, 0)
                }
            }
            // The renames and removals (directory entries) are durable after one more flush.
            if wroteAnything {
                if syncPerFile { fsync(root) } else if !FileSystemSync.sync(root) { throw OutputError.errno("cannot flush", directory) }
            }
            if markerWritten { unlinkat(root, Session.writingMarker, 0) }
            return summary
        }

        /// Creates the writing marker before the first temporary file (once, from any thread).
        private func markWriting() throws(OutputError) {
            markerLock.lock()
            defer { markerLock.unlock() }
            guard !markerWritten else { return }
            let fd = openat(root, Session.writingMarker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, publicMode)
            guard fd >= 0 else { throw OutputError.errno("cannot write", Session.writingMarker) }
            close(fd)
            markerWritten = true
        }

        /// Writes the render cache at the top of the tree (atomically, 0600) piece by piece, so a fleet's
        /// cache (tens of MB) is never in memory at once; returns the SHA-256 (hex) of what it wrote.
        /// Also returns the paths of its `file` lines in order (the stat records' order).
        private func writeRenderCache(_ cache: RenderCache) throws(OutputError) -> (digest: String, paths: [String]) {
            let digest = Digest.SHA256Stream()
            var paths: [String] = []
            try writeRootFile(RenderCache.fileName, mode: privateMode) { put in
                cache.write(eachPath: { paths.append($0) }) { piece in
                    digest.update(piece)
                    return put(piece)
                }
            }
            return (hexString(digest.finish()), paths)
        }

        /// Writes a bookkeeping file at the top of the tree (atomically, only when it changed).
        @discardableResult
        private func replaceRootFile(_ name: String, with contents: [UInt8], mode: mode_t) throws(OutputError) -> Bool {
            guard case .differs = try state(root, name: name, contents: contents, mode: mode) else { return false }
            try writeRootFile(name, mode: mode) { put in put(contents) }
            return true
        }

        /// Writes a bookkeeping file at the top of the tree atomically (a temporary file, flushed, then
        /// renamed), its contents made by `produce` as `writeTemporary` takes them.
        private func writeRootFile(
            _ name: String, mode: mode_t, produce: (_ put: ([UInt8]) -> Bool) -> Bool
        ) throws(OutputError) {
            try markWriting()
            let temp = Session.temporaryName(name)
            try writeTemporary(root, name: temp, mode: mode, sync: true, display: name, produce: produce)
            guard renameat(root, temp, root, name) == 0 else {
                let e = OutputError.errno("cannot write", name)
                unlinkat(root, temp, 0)
                throw e
            }
        }

        // MARK: render cache

        /// The stat records must be written again although nothing else changed (some were missing,
        /// stale or not trusted, so this run hashed files).
        var refreshStats = false

        /// The new render cache, written by `publish` (nil removes it, unless `keepRenderCache`).
        var renderCache: RenderCache?
        /// The render cache on disk is already what this run would write: `publish` leaves it alone.
        var keepRenderCache = false

        /// The render cache of the previous run (empty when absent), and the stat records that go with
        /// exactly its bytes (nil when missing, stale or unreadable). The cache's bytes (tens of MB for a
        /// fleet) are let go as soon as they are parsed.
        func previousCaches() -> (cache: RenderCache, stats: StatCache?) {
            guard root >= 0, let cache = readRootFile(root, RenderCache.fileName) else { return (RenderCache(bytes: nil), nil) }
            return (RenderCache(bytes: cache), stats(for: cache))
        }

        private func stats(for cache: [UInt8]) -> StatCache? {
            let fd = openat(root, StatCache.fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var st = stat()
            // 32 bytes a file: 20 MB for a fleet of 600,000 files; far beyond that it is not ours.
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, let bytes = readAll(fd, limit: 1 << 30) else { return nil }
            return StatCache(bytes: bytes, cacheDigest: hexString(Digest.sha256(cache)), written: st.st_mtim)
        }

        /// Every file of `entry` is on disk as a regular file with its recorded mode and digest: by its
        /// stat record when `stats` vouches for it, else by reading and hashing it (`hashed` is then
        /// set, so the run records fresh stats). Thread-safe (read-only).
        func isIntact(_ entry: RenderCache.Entry, stats: StatCache? = nil, hashed: inout Bool) -> Bool {
            guard root >= 0 else { return false }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            // A user's files sit in a few directories: the parent is checked and opened once, and for the
            // files after the first only the name is checked (a fleet has hundreds of thousands of paths).
            var parent: (path: Substring, fd: Int32)?
            for (k, file) in entry.files.enumerated() {
                let slash = file.path.utf8.lastIndex(of: UInt8(ascii: "/"))
                let parentPath = slash.map { file.path[..<$0] } ?? ""
                let nameText = slash.map { file.path[file.path.index(after: $0)...] } ?? file.path[...]
                let dir: Int32
                if let parent, parent.path == parentPath {
                    guard isPlainComponent(nameText.utf8) else { return false }
                    dir = parent.fd
                } else {
                    guard let parts = try? checkRelativePath(file.path),
                        let opened = try? cache.directory(parts.dropLast(), display: file.path)
                    else { return false }
                    dir = opened
                    parent = (parentPath, opened)
                }
                let name = String(nameText)
                if let stats, entry.firstOrdinal >= 0 {
                    var st = stat()
                    if fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                        (st.st_mode & 0o7777) == (file.isPrivate ? privateMode : publicMode),
                        stats.trusts(st, ordinal: Int(entry.firstOrdinal) + k)
                    {
                        continue
                    }
                }
                hashed = true
                let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { return false }
                defer { close(fd) }
                var st = stat()
                guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                    (st.st_mode & 0o7777) == (file.isPrivate ? privateMode : publicMode),
                    let bytes = readExactly(fd, count: Int(st.st_size)),
                    RenderCache.SHA256Value(Digest.sha256(bytes)) == file.sha256
                else { return false }
            }
            return true
        }

        /// The bytes of a file the tree holds now (not following links), nil when it is missing, not a
        /// regular file, unreadable or over `limit` bytes. Thread-safe.
        func existingContents(_ path: String, limit: Int) -> [UInt8]? {
            guard root >= 0, let parts = try? checkRelativePath(path) else { return nil }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            guard let dir = try? cache.directory(parts.dropLast(), display: path) else { return nil }
            let fd = openat(dir, parts.last!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size <= limit else { return nil }
            return readAll(fd, limit: limit)
        }

        /// A batch for files known to be right without rendering them (a fresh cache entry).
        func unchangedBatch(_ paths: [String]) -> Batch {
            var batch = Batch()
            batch.paths = paths
            batch.unchanged = paths.count
            return batch
        }

        /// Directories emptied by removing stale outputs go too (a non-empty one simply stays);
        /// parents are opened without following links.
        private func removeEmptiedDirectories(after removed: [String], cache: DirectoryCache) {
            var emptied = Set<String>()
            for path in removed {
                var parts = path.split(separator: "/").map(String.init).dropLast()
                while !parts.isEmpty {
                    emptied.insert(parts.joined(separator: "/"))
                    parts = parts.dropLast()
                }
            }
            cache.closeAll()
            for directory in emptied.sorted(by: { $0.count > $1.count }) {
                let parts = directory.split(separator: "/").map(String.init)
                guard let parent = try? cache.directory(parts.dropLast()[...], display: directory, create: false) else { continue }
                unlinkat(parent, parts.last!, AT_REMOVEDIR)
            }
            cache.closeAll()
        }

        /// Compare mode: what differs from the tree.
        public func drift() throws(OutputError) -> DriftReport {
            var report = DriftReport()
            guard root >= 0 else {
                report.missing = paths.sorted()
                return report
            }
            // Only what is not expected is kept from the listing (a fleet's tree has hundreds of thousands
            // of files; a set of them all cost more than the listing itself).
            let bookkeeping: Set<String> = [manifestName, RenderCache.fileName, StatCache.fileName, Session.writingMarker]
            let expected = seen
            let extra = try listFilesInParallel(root) { !expected.contains($0) && !bookkeeping.contains($0) }
            let directories = DirectoryCache(root: root, create: false)
            defer { directories.closeAll() }
            for change in changed.sorted(by: { $0.path < $1.path }) {
                // Listed means: reached without following a link, and not a directory.
                var st = stat()
                if let parts = try? checkRelativePath(change.path), let dir = try? directories.directory(parts.dropLast(), display: change.path),
                    fstatat(dir, parts.last!, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) != S_IFDIR
                {
                    report.stale.append(change.path)
                } else {
                    report.missing.append(change.path)
                }
            }
            var previous = Set<String>()
            if !extra.isEmpty {
                let extraSet = Set(extra)
                forEachManifestPath(root) { if extraSet.contains($0) { previous.insert($0) } }
            }
            for path in extra.sorted() {
                if previous.contains(path) { report.unexpected.append(path) } else { report.untracked.append(path) }
            }
            return report
        }
    }
}
