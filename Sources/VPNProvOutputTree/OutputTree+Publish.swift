import Foundation
import Glibc
import Synchronization
import VPNProvCrypto
import VPNProvSupport

/// Publishing a session: the renames into place, the removal of stale outputs, the manifest and the caches.
extension OutputTree.Session {
    /// Write mode: makes every prepared file visible, removes stale outputs, writes the manifest.
    /// Renames the staged files into place and removes what an earlier run wrote and this one does
    /// not. `announce`, when given, is called first, before anything in the tree changes, with the
    /// names `x` of the paths `top/x/...` that will be written or removed: a caller that must remember
    /// them (the nodes waiting for a rollout) records them while a failure can still only make it
    /// remember too much, never too little.
    package func publish(
        announcingOwnersUnder tops: [String] = [], _ announce: (Set<String>) throws(OutputError) -> Void = { _ in }
    ) throws(OutputError) -> WriteSummary {
        precondition(mode == .write)
        var summary = WriteSummary()
        // Sorted once (the manifest lists the paths sorted; the renames go in runs of neighbours).
        do { try sortFiles() } catch {
            abort()
            throw error
        }
        let files = self.files
        let stagedFolders = self.stagedFolders
        // In path order, so the first failure reported is the first path, and each run of renames
        // reuses its directory descriptors.
        let ordered = files.indices.filter { files.status($0).contains(.staged) }
        // Every file written: staged alone or inside a staged folder.
        let written =
            stagedFolders.isEmpty
            ? ordered : files.indices.filter { !files.status($0).isDisjoint(with: [.staged, .inStagedFolder]) }
        // What an earlier run wrote and this one does not (read before anything is renamed).
        let stale = Set(files.missing { OutputTree.forEachManifestLine(root, $0) }).sorted()
        if !tops.isEmpty {
            do throws(OutputError) {
                let staleList = PathList(stale)
                try announce(
                    tops.reduce(into: Set<String>()) {
                        $0.formUnion(files.owners(under: $1, at: written).union(staleList.owners(under: $1)))
                    })
            } catch {
                abort()
                throw error
            }
        }
        // Flushes are for new data; a run that changes nothing must not flush the file system.
        var wroteAnything = !written.isEmpty
        if !syncPerFile && !written.isEmpty {
            guard FileSystemSync.sync(root) else {
                let e = OutputError.errno("cannot flush", directory)
                abort()
                throw e
            }
        }
        let cache = OutputTree.DirectoryCache(root: root, create: true)
        defer { cache.closeAll() }
        if let failure = renameStagedFolders(cache: cache) ?? renameStaged(ordered) {
            abort()
            throw failure
        }
        // A first run writes every file: the list is then shared, not copied.
        summary.written = written.count == files.count ? files : files.subset(written.lazy.map { Int32($0) })
        summary.unchangedCount = added.withLock {
            $0.published = true
            return $0.unchangedCount
        }
        summary.removed = removeStale(stale, cache: cache)
        if killedRunLeftTemporaries { removeKilledRunsTemporaries(cache: cache) }
        wroteAnything = try writeBookkeeping(wroteFiles: wroteAnything || !summary.removed.isEmpty)
        // The renames and removals (directory entries) are durable after one more flush.
        if wroteAnything {
            if syncPerFile {
                fsync(root)
            } else if !FileSystemSync.sync(root) {
                throw OutputError.errno("cannot flush", directory)
            }
        }
        // The marker goes once no temporary file is left: this run's are renamed, a killed run's removed.
        if markers.withLock({ $0.markerWritten }) || killedRunLeftTemporaries {
            unlinkat(root, OutputTree.Session.writingMarker, 0)
        }
        return summary
    }

    /// Renames each staged folder into place (once renamed, it is no longer this run's to remove:
    /// `abort` then leaves it, as it leaves a renamed file); the first failure, or nil.
    private func renameStagedFolders(cache: OutputTree.DirectoryCache) -> OutputError? {
        for (i, folder) in stagedFolders.enumerated() {
            guard let place = try? cache.place(of: folder),
                renameat(place.dir, OutputTree.Session.temporaryName(place.name), place.dir, place.name) == 0
            else {
                let failure = OutputError.errno("cannot write", folder)
                stagedFolders.removeFirst(i)
                return failure
            }
            if syncPerFile { fsync(place.dir) }
            WriteSteps.step()
        }
        stagedFolders = []
        return nil
    }

    /// Renames the staged files at `ordered` into place, on all cores (tens of thousands for a fleet),
    /// in runs of neighbouring paths so each worker reuses its directory descriptors; the first failure
    /// in path order, or nil.
    private func renameStaged(_ ordered: [Int]) -> OutputError? {
        let perRun = 512
        let files = self.files
        let root = self.root
        let syncPerFile = self.syncPerFile
        let failures = parallelMap((ordered.count + perRun - 1) / perRun) { k -> OutputError? in
            // Each staged file's directory holds its temporary file already: opened, never created.
            let runCache = OutputTree.DirectoryCache(root: root, create: false)
            defer { runCache.closeAll() }
            for position in ordered[(k * perRun)..<min(ordered.count, (k + 1) * perRun)] {
                let path = files[position]
                let place: (dir: Int32, name: String)?
                do throws(OutputError) { place = try runCache.parent(of: path) } catch { return error }
                guard let place,
                    renameat(place.dir, OutputTree.Session.temporaryName(place.name), place.dir, place.name) == 0
                else {
                    return OutputError.errno("cannot write", path)
                }
                if syncPerFile { fsync(place.dir) }
                WriteSteps.step()
            }
            return nil
        }
        return failures.lazy.compactMap({ $0 }).first
    }

    /// Removes what an earlier run wrote and this one does not (never anything else); the paths removed.
    private func removeStale(_ stale: [String], cache: OutputTree.DirectoryCache) -> [String] {
        var removed: [String] = []
        for old in stale {
            guard let parts = try? OutputTree.checkRelativePath(old),
                let dir = try? cache.directory(parts.dropLast(), display: old, create: false)
            else { continue }
            if unlinkat(dir, parts.last!, 0) == 0 { removed.append(old) }
        }
        removeEmptiedDirectories(after: removed, cache: cache)
        return removed
    }

    /// Temporary files and staged folders of an earlier run killed (SIGKILL, SIGINT, SIGTERM) between
    /// writing and renaming, anywhere in the tree: the killed run may have staged files where this run writes
    /// nothing (a user whose `unrevoke` was interrupted). This run's own are all renamed by now.
    /// Directories left empty (created by the killed run for them) go too.
    private func removeKilledRunsTemporaries(cache: OutputTree.DirectoryCache) {
        // Temporary files and staged folders (a staged folder is not searched: it goes whole).
        var leftovers: [String] = []
        func search(_ dir: Int32, _ prefix: String) {
            for (name, type) in (try? OutputTree.directoryEntries(dir, display: prefix.isEmpty ? "." : prefix)) ?? [] {
                let path = prefix.isEmpty ? name : "\(prefix)/\(name)"
                if AtomicWrite.isTemporaryName(name) {
                    leftovers.append(path)
                } else if OutputTree.isDirectory(dir, name, type) {
                    let sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard sub >= 0 else { continue }
                    search(sub, path)
                    close(sub)
                }
            }
        }
        search(root, "")
        var removedTemporaries: [String] = []
        for path in leftovers {
            // By its directory (a temporary name is not a path `parent(of:)` accepts).
            var parts = path.split(separator: "/").map(String.init)
            let name = parts.removeLast()
            if let dir = try? cache.directory(parts[...], display: path, create: false) {
                Self.removeTree(dir, name)
                if faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0 { removedTemporaries.append(path) }
            }
        }
        removeEmptiedDirectories(after: removedTemporaries, cache: cache)
    }

    /// The manifest, the render cache and the stat records, after the files: whether anything was
    /// written (`wroteFiles`: files were renamed or removed before).
    private func writeBookkeeping(wroteFiles: Bool) throws(OutputError) -> Bool {
        var wroteAnything = wroteFiles
        // A new cache's stat records are taken on the other core while the manifest and the cache are
        // written (serial work; a fleet's cache is tens of MB), those of files written whole in a
        // staged folder as they were written.
        let newRenderCache = keepRenderCache ? nil : renderCache
        let root = self.root
        let written = writtenRecords.withLock { $0 }
        let statRecords = newRenderCache.map { cache in
            Background { StatCache.records(of: cache, root: root, written: written) }
        }
        // Never left running past a failure.
        defer { _ = statRecords?.value }
        wroteAnything =
            try replaceRootFile(
                OutputTree.manifestName, with: OutputTree.manifestBytes(files), mode: OutputTree.publicMode)
            || wroteAnything
        self.files = PathList()
        var st = stat()
        // The new cache's SHA-256 (hex).
        var newCache: String?
        var keptCache: [UInt8]?
        if keepRenderCache, fstatat(root, RenderCache.fileName, &st, AT_SYMLINK_NOFOLLOW) == 0,
            (st.st_mode & S_IFMT) == S_IFREG,
            (st.st_mode & 0o7777) == OutputTree.privateMode
        {
            // Unchanged: nothing to write.
        } else if keepRenderCache, let bytes = OutputTree.readRootFile(root, RenderCache.fileName) {
            // 0600: its digests and fingerprints are derived from the secrets, so it is as private as
            // they are (a readable digest of a secret file lets anyone confirm a guess offline).
            wroteAnything =
                try replaceRootFile(RenderCache.fileName, with: bytes, mode: OutputTree.privateMode) || wroteAnything
            keptCache = bytes
        } else if let newRenderCache {
            newCache = try writeRenderCache(newRenderCache)
            wroteAnything = true
        } else {
            unlinkat(root, RenderCache.fileName, 0)
        }
        // Last, so its own time is later than every change it records.
        if wroteAnything || refreshStats {
            var stats: [UInt8]?
            if let newCache, let statRecords {
                stats = statRecords.value.map {
                    StatCache.file(records: $0.records, count: $0.count, cacheDigest: newCache)
                }
            } else if keepRenderCache, let bytes = keptCache ?? OutputTree.readRootFile(root, RenderCache.fileName) {
                stats = StatCache.encode(cache: bytes, root: root)
            }
            if let stats {
                try replaceRootFile(StatCache.fileName, with: stats, mode: OutputTree.privateMode)
            } else {
                unlinkat(root, StatCache.fileName, 0)
            }
        }
        return wroteAnything
    }

    /// Sorts `files` by path into buffers of exactly their size; two outputs for one path, neighbours
    /// then, are an error.
    func sortFiles() throws(OutputError) {
        let files = self.files
        let sorted = files.subset(files.sortedOrder())
        self.files = sorted
        if let i = sorted.indices.dropFirst().first(where: { sorted.compare($0, $0 - 1) == 0 }) {
            throw Self.duplicate(sorted[i])
        }
    }

    /// Creates the writing marker before the first temporary file (once, from any thread).
    func markWriting() throws(OutputError) {
        let root = root
        try markers.withLock { (markers) throws(OutputError) in
            guard !markers.markerWritten else { return }
            let fd = openat(
                root, OutputTree.Session.writingMarker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                OutputTree.publicMode)
            guard fd >= 0 else { throw OutputError.errno("cannot write", OutputTree.Session.writingMarker) }
            close(fd)
            markers.markerWritten = true
        }
    }

    /// Writes the render cache at the top of the tree (atomically, 0600) piece by piece, so a fleet's
    /// cache (tens of MB) is never in memory at once; returns the SHA-256 (hex) of what it wrote.
    private func writeRenderCache(_ cache: RenderCache) throws(OutputError) -> String {
        let digest = Digest.SHA256Stream()
        try writeRootFile(RenderCache.fileName, mode: OutputTree.privateMode) { put in
            cache.write { piece in
                digest.update(piece)
                return put(piece)
            }
        }
        return hexString(digest.finish())
    }

    /// Writes a bookkeeping file at the top of the tree (atomically, only when it changed).
    @discardableResult
    private func replaceRootFile(_ name: String, with contents: [UInt8], mode: mode_t) throws(OutputError) -> Bool {
        guard case .differs = try OutputTree.state(root, name: name, contents: contents, mode: mode) else {
            return false
        }
        try writeRootFile(name, mode: mode) { put in put(contents) }
        return true
    }

    /// Writes a bookkeeping file at the top of the tree atomically (a temporary file, flushed, then
    /// renamed), its contents made by `produce` as `OutputTree.writeTemporary` takes them.
    private func writeRootFile(
        _ name: String, mode: mode_t, produce: (_ put: ([UInt8]) -> Bool) -> Bool
    ) throws(OutputError) {
        try markWriting()
        let temp = OutputTree.Session.temporaryName(name)
        try OutputTree.writeTemporary(root, name: temp, mode: mode, sync: true, display: name, produce: produce)
        guard renameat(root, temp, root, name) == 0 else {
            let e = OutputError.errno("cannot write", name)
            unlinkat(root, temp, 0)
            throw e
        }
    }

    /// Directories emptied by removing stale outputs go too (a non-empty one simply stays);
    /// parents are opened without following links.
    private func removeEmptiedDirectories(after removed: [String], cache: OutputTree.DirectoryCache) {
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
            guard let parent = try? cache.directory(parts.dropLast()[...], display: directory, create: false) else {
                continue
            }
            unlinkat(parent, parts.last!, AT_REMOVEDIR)
        }
        cache.closeAll()
    }
}
