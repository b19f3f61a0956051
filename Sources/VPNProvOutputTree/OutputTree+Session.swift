import Foundation
import Glibc
import Synchronization
import VPNProvCrypto
import VPNProvSupport

extension OutputTree {
    // MARK: streaming

    /// Writes (or compares) an output tree batch by batch, so a fleet's files never have to be in
    /// memory at once. `prepare` may run on several threads at once (one batch each); `add` takes
    /// the batches in order, one call at a time; `publish` makes the new files visible:
    /// - prepare compares each file with the tree and writes a changed one under a temporary name
    ///   (`.<name>.tmp-<pid>`) next to its place, or a new folder of the caller's whole under one
    ///   (its files under their own names inside); nothing visible changes yet;
    /// - publish flushes the file system once, renames every staged folder and temporary file into place, removes
    ///   what an earlier run wrote and this one does not, writes the manifest and flushes again.
    ///   A crash never leaves a half-written file, and one flush replaces an fsync per file;
    /// - abort (after a failure before publish) removes the temporary files: nothing changed.
    // @unchecked Sendable: lock-held. `add`, the one method workers call concurrently, holds `addLock`;
    // the marker state is under `markerLock` and the render-cache settings in a Mutex; everything else
    // is set in init or used by the owner once the parallel stage has joined (prepare touches only
    // its own batch).
    package final class Session: @unchecked Sendable {
        package enum Mode: Sendable { case write, compare }

        /// What `prepare` found for one batch: every path, each with its status (packed: a fleet has
        /// hundreds of thousands).
        package struct Batch: Sendable {
            package var files = PathList()
            /// How many files were already right (a no-op run of a fleet has hundreds of thousands).
            package var unchanged = 0
            /// The folders written whole under a temporary name (their final relative paths).
            var stagedFolders: [String] = []

            package init() {}

            /// Adds another prepared batch's files to this one.
            package mutating func append(_ other: Batch) {
                files.append(contentsOf: other.files)
                unchanged += other.unchanged
                stagedFolders += other.stagedFolders
            }

            /// Adds files known to be right without rendering them (a fresh render-cache entry).
            package mutating func keep(_ cached: RenderCache.FileList) {
                cached.forEachFile { _, _, path in files.append(utf8: path) }
                unchanged += cached.count
            }
        }

        static func temporaryName(_ name: String) -> String { "." + name + temporarySuffix }
        /// `.tmp-<pid>`, made once (a name is made for every file written).
        private static let temporarySuffix = ".tmp-\(getpid())"

        let directory: String
        let mode: Mode
        /// -1 in compare mode when the directory does not exist.
        let root: Int32
        let syncPerFile: Bool
        /// Every path added, with what `prepare` found (staged, missing or stale, or right). `publish`
        /// and `drift` sort it once and find two outputs for one path as neighbours, instead of keeping a
        /// set of a fleet's hundreds of thousands of paths (docs/benchmarks.md, "Why the code is shaped this way").
        private var files = PathList()
        private var unchangedCount = 0
        /// The staged folders of every batch added: `publish` renames each into place whole.
        private var stagedFolders: [String] = []
        private let addLock = NSLock()
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

        package init(directory: String, mode: Mode) throws(OutputError) {
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
                guard fd >= 0 || errno == ENOENT else {
                    throw OutputError.errno("cannot open output directory", directory)
                }
                root = fd
            }
        }

        deinit { if root >= 0 { close(root) } }

        /// Compares `files` with the tree and, in write mode, writes the changed ones under temporary
        /// names. Thread-safe. On error, this batch's temporary files are already removed.
        ///
        /// `folders` are directories (relative paths) that only this call writes into in this run (a
        /// user's folder). In write mode, one that does not exist yet is made whole under a temporary
        /// name (`.<name>.tmp-<pid>`) with its files under their own names, and `publish` renames the
        /// folder instead of each file: a new user's fifty files cost one rename, not fifty.
        package func prepare(_ files: [OutputFile], folders: [String] = []) throws(OutputError) -> Batch {
            var batch = Batch()
            let cache = DirectoryCache(root: root, create: mode == .write)
            // The folder the current files are in, when it is staged: its path with the slash, and a
            // cache of the directories below its temporary name.
            var staging: (prefix: String, fd: Int32, cache: DirectoryCache)?
            // The stat records of each staged folder's files, taken as they were written.
            var records: [String: [(path: String, record: StatCache.Record)]] = [:]
            func endStaging() {
                guard let current = staging else { return }
                // Its directory entries are durable before publish renames it (file data: `writeTemporary`).
                if syncPerFile { fsync(current.fd) }
                current.cache.closeAll()
                close(current.fd)
                staging = nil
            }
            defer {
                endStaging()
                cache.closeAll()
                if !cache.createdDirectories.isEmpty {
                    markerLock.lock()
                    createdDirectories.formUnion(cache.createdDirectories)
                    markerLock.unlock()
                }
            }
            do throws(OutputError) {
                for file in files {
                    let mode: mode_t = file.isPrivate ? privateMode : publicMode
                    if self.mode == .write, root >= 0, !folders.isEmpty {
                        if let current = staging, !file.path.hasPrefix(current.prefix) { endStaging() }
                        if staging == nil, let folder = folders.first(where: { file.path.hasPrefix($0 + "/") }) {
                            // Staged by this batch already (its files came apart): opened again.
                            let staged = batch.stagedFolders.contains(folder)
                            if let fd = try stageFolder(folder, cache: cache, again: staged) {
                                if !staged { batch.stagedFolders.append(folder) }
                                staging = (folder + "/", fd, DirectoryCache(root: fd, create: true))
                            }
                        }
                        if let current = staging {
                            // Nothing is in a staged folder but what this batch writes: nothing to compare.
                            let inside = String(file.path.dropFirst(current.prefix.count))
                            guard let place = try current.cache.place(of: inside) else {
                                throw OutputError("refusing unsafe output path '\(file.path)'")
                            }
                            // Its stat record now: no rename changes its times later (its folder's do).
                            var st = stat()
                            try writeTemporary(
                                place.dir, name: place.name, contents: file.contents, mode: mode, sync: syncPerFile,
                                display: file.path, status: &st)
                            WriteSteps.step()
                            batch.files.append(file.path, [.changed, .inStagedFolder])
                            records[current.prefix, default: []].append((file.path, StatCache.Record(st)))
                            continue
                        }
                    }
                    // The file's directory is looked up (and made) once per run of files in it.
                    guard root >= 0, let place = try cache.place(of: file.path) else {
                        _ = try checkRelativePath(file.path)
                        batch.files.append(file.path, .changed)
                        continue
                    }
                    // A directory this batch created holds only what the batch wrote: nothing to compare.
                    let current =
                        place.created
                        ? .differs(missing: true)
                        : try state(place.dir, name: place.name, contents: file.contents, mode: mode)
                    switch current {
                    case .matches:
                        batch.files.append(file.path)
                        batch.unchanged += 1
                    case .differs:
                        if self.mode == .write {
                            try markWriting()
                            try writeTemporary(
                                place.dir, name: Session.temporaryName(place.name), contents: file.contents, mode: mode,
                                sync: syncPerFile,
                                display: file.path)
                            WriteSteps.step()
                        }
                        batch.files.append(file.path, self.mode == .write ? [.changed, .staged] : .changed)
                    }
                }
            } catch {
                discard(batch)
                throw error
            }
            if !records.isEmpty {
                // In path order, under the first path: what a render-cache entry of exactly these files
                // looks them up by (`StatCache.records(of:root:written:)`).
                let sorted = records.values.map { $0.sorted { $0.path.precedesByUTF8($1.path) } }
                writtenRecords.withLock { written in
                    for folder in sorted { written[folder[0].path] = folder.map(\.record) }
                }
            }
            return batch
        }

        /// The stat records of files written whole in staged folders, taken as they were written, each
        /// folder's in path order under its first path (docs/benchmarks.md, "Why the code is shaped
        /// this way").
        private let writtenRecords = Mutex<[String: [StatCache.Record]]>([:])

        /// Makes `folder`'s temporary name and opens it, when `folder` does not exist; nil when it does
        /// (its files are then compared and staged one by one). A temporary folder of this pid already
        /// there is a run killed long ago: replaced. `again`: this batch staged it already; it is opened.
        private func stageFolder(_ folder: String, cache: DirectoryCache, again: Bool = false) throws(OutputError)
            -> Int32?
        {
            guard let place = try cache.place(of: folder) else { return nil }
            if again {
                let fd = openat(
                    place.dir, Session.temporaryName(place.name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { throw OutputError.errno("cannot write", folder) }
                return fd
            }
            var st = stat()
            if !place.created {
                guard fstatat(place.dir, place.name, &st, AT_SYMLINK_NOFOLLOW) != 0, errno == ENOENT else { return nil }
            }
            try markWriting()
            let temporary = Session.temporaryName(place.name)
            if mkdirat(place.dir, temporary, 0o755) != 0 {
                guard errno == EEXIST else { throw OutputError.errno("cannot create directory for", folder) }
                Self.removeTree(place.dir, temporary)
                guard mkdirat(place.dir, temporary, 0o755) == 0 else {
                    throw OutputError.errno("cannot create directory for", folder)
                }
            }
            let fd = openat(place.dir, temporary, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                let e = OutputError.errno("cannot create directory for", folder)
                Self.removeTree(place.dir, temporary)
                throw e
            }
            return fd
        }

        /// Removes `name` in `dir` and, when it is a directory, everything below it (never following a link).
        static func removeTree(_ dir: Int32, _ name: String) {
            if unlinkat(dir, name, 0) == 0 || (errno != EISDIR && errno != EPERM) { return }
            let fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return }
            for (child, _) in (try? directoryEntries(fd, display: name)) ?? [] { removeTree(fd, child) }
            close(fd)
            unlinkat(dir, name, AT_REMOVEDIR)
        }

        /// Removes the temporary names of staged folders (and all they hold).
        private func removeStagedFolders(_ folders: [String]) {
            guard root >= 0, !folders.isEmpty else { return }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            for folder in folders {
                if let place = try? cache.place(of: folder) {
                    Self.removeTree(place.dir, Session.temporaryName(place.name))
                }
            }
        }

        /// Takes a prepared batch (in order, one call at a time). Two outputs for one path are an error
        /// (`publish` and `drift` throw it).
        package func add(_ batch: Batch) {
            addLock.lock()
            defer { addLock.unlock() }
            files.append(contentsOf: batch.files)
            unchangedCount += batch.unchanged
            stagedFolders += batch.stagedFolders
        }

        static func duplicate(_ path: String) -> OutputError { OutputError("two outputs want the path '\(path)'") }

        /// Removes the temporary files of a batch that is not going to be added (or of everything
        /// added so far): used after a failure, so nothing visible changed.
        package func discard(_ batch: Batch) {
            discard(batch.files)
            removeStagedFolders(batch.stagedFolders)
        }

        package func abort() {
            if !published {
                discard(files)
                removeStagedFolders(stagedFolders)
            }
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

        private func discard(_ list: PathList) {
            guard root >= 0 else { return }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            for i in list.indices where list.status(i).contains(.staged) {
                if let place = try? cache.parent(of: list[i]) {
                    unlinkat(place.dir, Session.temporaryName(place.name), 0)
                }
            }
        }

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
            // In path order, so the first failure reported is the first path, and each run of renames
            // reuses its directory descriptors.
            let ordered = files.indices.filter { files.status($0).contains(.staged) }
            // Every file written: staged alone or inside a staged folder.
            let written =
                stagedFolders.isEmpty
                ? ordered : files.indices.filter { !files.status($0).isDisjoint(with: [.staged, .inStagedFolder]) }
            // What an earlier run wrote and this one does not (read before anything is renamed).
            let stale = Set(files.missing { forEachManifestLine(root, $0) }).sorted()
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
            let cache = DirectoryCache(root: root, create: true)
            defer { cache.closeAll() }
            if let failure = renameStagedFolders(cache: cache) ?? renameStaged(ordered) {
                abort()
                throw failure
            }
            // A first run writes every file: the list is then shared, not copied.
            summary.written = written.count == files.count ? files : files.subset(written.lazy.map { Int32($0) })
            published = true
            summary.unchangedCount = unchangedCount
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
            if markerWritten || killedRunLeftTemporaries { unlinkat(root, Session.writingMarker, 0) }
            return summary
        }

        /// Renames each staged folder into place (once renamed, it is no longer this run's to remove:
        /// `abort` then leaves it, as it leaves a renamed file); the first failure, or nil.
        private func renameStagedFolders(cache: DirectoryCache) -> OutputError? {
            for (i, folder) in stagedFolders.enumerated() {
                guard let place = try? cache.place(of: folder),
                    renameat(place.dir, Session.temporaryName(place.name), place.dir, place.name) == 0
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
                let runCache = DirectoryCache(root: root, create: false)
                defer { runCache.closeAll() }
                for position in ordered[(k * perRun)..<min(ordered.count, (k + 1) * perRun)] {
                    let path = files[position]
                    let place: (dir: Int32, name: String)?
                    do throws(OutputError) { place = try runCache.parent(of: path) } catch { return error }
                    guard let place, renameat(place.dir, Session.temporaryName(place.name), place.dir, place.name) == 0
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
        private func removeStale(_ stale: [String], cache: DirectoryCache) -> [String] {
            var removed: [String] = []
            for old in stale {
                guard let parts = try? checkRelativePath(old),
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
        private func removeKilledRunsTemporaries(cache: DirectoryCache) {
            // Temporary files and staged folders (a staged folder is not searched: it goes whole).
            var leftovers: [String] = []
            func search(_ dir: Int32, _ prefix: String) {
                for (name, type) in (try? directoryEntries(dir, display: prefix.isEmpty ? "." : prefix)) ?? [] {
                    let path = prefix.isEmpty ? name : "\(prefix)/\(name)"
                    if AtomicWrite.isTemporaryName(name) {
                        leftovers.append(path)
                    } else if isDirectory(dir, name, type) {
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
                try replaceRootFile(manifestName, with: manifestBytes(files), mode: publicMode) || wroteAnything
            self.files = PathList()
            var st = stat()
            // The new cache's SHA-256 (hex).
            var newCache: String?
            var keptCache: [UInt8]?
            if keepRenderCache, fstatat(root, RenderCache.fileName, &st, AT_SYMLINK_NOFOLLOW) == 0,
                (st.st_mode & S_IFMT) == S_IFREG,
                (st.st_mode & 0o7777) == privateMode
            {
                // Unchanged: nothing to write.
            } else if keepRenderCache, let bytes = readRootFile(root, RenderCache.fileName) {
                // 0600: its digests and fingerprints are derived from the secrets, so it is as private as
                // they are (a readable digest of a secret file lets anyone confirm a guess offline).
                wroteAnything =
                    try replaceRootFile(RenderCache.fileName, with: bytes, mode: privateMode) || wroteAnything
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
                } else if keepRenderCache, let bytes = keptCache ?? readRootFile(root, RenderCache.fileName) {
                    stats = StatCache.encode(cache: bytes, root: root)
                }
                if let stats {
                    try replaceRootFile(StatCache.fileName, with: stats, mode: privateMode)
                } else {
                    unlinkat(root, StatCache.fileName, 0)
                }
            }
            return wroteAnything
        }

        /// Sorts `files` by path into buffers of exactly their size; two outputs for one path, neighbours
        /// then, are an error.
        private func sortFiles() throws(OutputError) {
            files = files.subset(files.sortedOrder())
            if let i = files.indices.dropFirst().first(where: { files.compare($0, $0 - 1) == 0 }) {
                throw Self.duplicate(files[i])
            }
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
        private func writeRenderCache(_ cache: RenderCache) throws(OutputError) -> String {
            let digest = Digest.SHA256Stream()
            try writeRootFile(RenderCache.fileName, mode: privateMode) { put in
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
        package var refreshStats: Bool {
            get { cacheSettings.withLock { $0.refreshStats } }
            set { cacheSettings.withLock { $0.refreshStats = newValue } }
        }

        /// The new render cache, written by `publish` (nil removes it, unless `keepRenderCache`).
        package var renderCache: RenderCache? {
            get { cacheSettings.withLock { $0.renderCache } }
            set { cacheSettings.withLock { $0.renderCache = newValue } }
        }

        /// The render cache on disk is already what this run would write: `publish` leaves it alone.
        package var keepRenderCache: Bool {
            get { cacheSettings.withLock { $0.keep } }
            set { cacheSettings.withLock { $0.keep = newValue } }
        }

        private let cacheSettings = Mutex<(refreshStats: Bool, renderCache: RenderCache?, keep: Bool)>(
            (false, nil, false))

        /// The render cache of the previous run (empty when absent), and the stat records that go with
        /// exactly its bytes (nil when missing, stale or unreadable). The cache's bytes (tens of MB for a
        /// fleet) are let go as soon as they are parsed.
        package func previousCaches() -> (cache: RenderCache, stats: StatCache?) {
            guard root >= 0, let cache = readRootFile(root, RenderCache.fileName) else {
                return (RenderCache(bytes: nil), nil)
            }
            return (RenderCache(bytes: cache), stats(for: cache))
        }

        private func stats(for cache: [UInt8]) -> StatCache? {
            let fd = openat(root, StatCache.fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var st = stat()
            // 32 bytes a file: 20 MB for a fleet of 600,000 files; far beyond that it is not ours.
            guard fstat(fd, &st) == 0, let bytes = readAll(fd, limit: BoundedFile.outputFileLimit) else { return nil }
            return StatCache(bytes: bytes, cacheDigest: hexString(Digest.sha256(cache)), written: st.st_mtim)
        }

        /// Every file of `entry` is on disk as a regular file with its recorded mode and digest: by its
        /// stat record when `stats` vouches for it, else by reading and hashing it (`hashed` is then
        /// set, so the run records fresh stats). Thread-safe (read-only).
        package func isIntact(_ entry: RenderCache.Entry, stats: StatCache? = nil, hashed: inout Bool) -> Bool {
            guard root >= 0 else { return false }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            // A user's files sit in a few directories, each opened once for its run of files. Paths are
            // read in place from the packed list (a fleet has hundreds of thousands; docs/benchmarks.md,
            // "Why the code is shaped this way").
            var k = 0
            var hashedAny = false
            defer { if hashedAny { hashed = true } }
            // Unwrapped once, not per file (each look into an optional struct copies it).
            let records = entry.firstOrdinal >= 0 ? stats : nil
            let firstOrdinal = Int(entry.firstOrdinal)
            return entry.files.allFiles { sha256, isPrivate, path in
                defer { k += 1 }
                guard let place = try? cache.place(utf8: path) else { return false }
                let parentFD = place.dir
                let name = UnsafeBufferPointer(rebasing: path[place.nameStart...])
                let mode = isPrivate ? privateMode : publicMode
                return OutputTree.withCString(name) { name in
                    if let records {
                        var st = stat()
                        if fstatat(parentFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                            (st.st_mode & 0o7777) == mode, records.trusts(st, ordinal: firstOrdinal + k)
                        {
                            return true
                        }
                    }
                    hashedAny = true
                    let fd = openat(parentFD, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                    guard fd >= 0 else { return false }
                    defer { close(fd) }
                    var st = stat()
                    // Bounded like every outside read: a huge (or sparse) file at a cached path is simply
                    // not intact, and is rendered and written again.
                    guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, (st.st_mode & 0o7777) == mode,
                        let bytes = readAll(fd, limit: BoundedFile.outputFileLimit),
                        RenderCache.SHA256Value(Digest.sha256(bytes)) == sha256
                    else { return false }
                    return true
                }
            }
        }

        /// The bytes of a file the tree holds now (not following links), nil when it is missing, not a
        /// regular file, unreadable or over `limit` bytes. Thread-safe.
        package func existingContents(_ path: String, limit: Int) -> [UInt8]? {
            guard root >= 0, let parts = try? checkRelativePath(path) else { return nil }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            guard let dir = try? cache.directory(parts.dropLast(), display: path) else { return nil }
            let fd = openat(dir, parts.last!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            return readAll(fd, limit: limit)
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
                guard let parent = try? cache.directory(parts.dropLast()[...], display: directory, create: false) else {
                    continue
                }
                unlinkat(parent, parts.last!, AT_REMOVEDIR)
            }
            cache.closeAll()
        }

        /// Compare mode: what differs from the tree.
        package func drift() throws(OutputError) -> DriftReport {
            var report = DriftReport()
            try sortFiles()
            guard root >= 0 else {
                report.missing = Array(files)
                return report
            }
            // Only what is not expected is kept from the listing, and the expected paths are searched in
            // the sorted list rather than put in a set (a fleet's tree has hundreds of thousands of
            // files; docs/benchmarks.md, "Why the code is shaped this way").
            let bookkeeping = [manifestName, RenderCache.fileName, StatCache.fileName, Session.writingMarker].map {
                Array($0.utf8)
            }
            let expected = files
            let reports = Array((OutputTree.rolloutReportsDirectory + "/").utf8)
            let handOff = Array((OutputTree.handOffDirectory + "/").utf8)
            let extra = try listFilesInParallel(root) { path in
                !expected.containsSorted(utf8: path) && !bookkeeping.contains { $0.elementsEqual(path) }
                    && !path.starts(with: reports) && !path.starts(with: handOff)
            }
            let directories = DirectoryCache(root: root, create: false)
            defer { directories.closeAll() }
            for i in files.indices where files.status(i).contains(.changed) {
                let path = files[i]
                // Listed means: reached without following a link, and not a directory.
                var st = stat()
                if let parts = try? checkRelativePath(path),
                    let dir = try? directories.directory(parts.dropLast(), display: path),
                    fstatat(dir, parts.last!, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) != S_IFDIR
                {
                    report.stale.append(path)
                } else {
                    report.missing.append(path)
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
