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
    // Sendable: what workers share is behind a lock (the batches added and the marker state in `Locked`s, the
    // render-cache settings and the stat records in Mutexes); the rest is set in init (prepare touches only its
    // own batch).
    package final class Session: Sendable {
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
        /// How many of them were already right; the staged folders of every batch added (`publish` renames each
        /// into place whole); whether `publish` has renamed the staged files into place (`abort` then has none
        /// left to remove).
        struct Added {
            var files = PathList()
            var unchangedCount = 0
            var stagedFolders: [String] = []
            var published = false
        }
        let added = Locked(Added())
        /// The owner's view of `added` (after the parallel stage has joined).
        var files: PathList {
            get { added.withLock { $0.files } }
            set { added.withLock { $0.files = newValue } }
        }
        var stagedFolders: [String] {
            get { added.withLock { $0.stagedFolders } }
            set { added.withLock { $0.stagedFolders = newValue } }
        }
        /// `.vpnprov-writing` exists from this run's first temporary file until publish has renamed
        /// them all. Found at the start, it means a run was killed half-way: only then are all
        /// directories searched for temporary files (a search a no-op run should not pay for).
        static let writingMarker = ".vpnprov-writing"
        let killedRunLeftTemporaries: Bool
        /// Whether the marker exists; directories `prepare` created (relative paths) and whether the root itself
        /// was created: `abort` removes them again when they are empty, so a failed run (a full disk) leaves no
        /// empty directories behind.
        struct Markers {
            var markerWritten = false
            var createdDirectories: Set<String> = []
            var createdRoot = false
        }
        let markers = Locked(Markers())

        package init(directory: String, mode: Mode) throws(OutputError) {
            self.directory = directory
            self.mode = mode
            syncPerFile = !FileSystemSync.available
            if mode == .write {
                let createdRoot = access(directory, F_OK) != 0
                root = try openRoot(directory, create: true)
                let killed = faccessat(root, Session.writingMarker, F_OK, AT_SYMLINK_NOFOLLOW) == 0
                killedRunLeftTemporaries = killed
                markers.withLock {
                    $0.createdRoot = createdRoot
                    $0.markerWritten = killed
                }
            } else {
                let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                guard fd >= 0 || errno == ENOENT else {
                    throw OutputError.errno("cannot open output directory", directory)
                }
                root = fd
                killedRunLeftTemporaries = false
            }
        }

        /// Whether to refresh the stat records, the render cache to write, and whether the one on disk is kept
        /// (`OutputTree+Freshness.swift`).
        let cacheSettings = Mutex<(refreshStats: Bool, renderCache: RenderCache?, keep: Bool)>((false, nil, false))

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
                    markers.withLock { $0.createdDirectories.formUnion(cache.createdDirectories) }
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
        let writtenRecords = Mutex<[String: [StatCache.Record]]>([:])

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
            added.withLock {
                $0.files.append(contentsOf: batch.files)
                $0.unchangedCount += batch.unchanged
                $0.stagedFolders += batch.stagedFolders
            }
        }

        static func duplicate(_ path: String) -> OutputError { OutputError("two outputs want the path '\(path)'") }

        /// Removes the temporary files of a batch that is not going to be added (or of everything
        /// added so far): used after a failure, so nothing visible changed.
        package func discard(_ batch: Batch) {
            discard(batch.files)
            removeStagedFolders(batch.stagedFolders)
        }

        package func abort() {
            let current = added.value
            if !current.published {
                discard(current.files)
                removeStagedFolders(current.stagedFolders)
            }
            // Every temporary file of this session is gone; a killed run's may not be, and then the
            // marker stays for the next run to clean up.
            markers.withLock { markers in
                if markers.markerWritten && !killedRunLeftTemporaries {
                    unlinkat(root, Session.writingMarker, 0)
                    markers.markerWritten = false
                }
                // Directories this run created, deepest first; unlinkat(AT_REMOVEDIR) removes only empty ones.
                for path in markers.createdDirectories.sorted(by: { $0.count > $1.count }) {
                    unlinkat(root, path, AT_REMOVEDIR)
                }
                markers.createdDirectories = []
                if markers.createdRoot { rmdir(directory) }
            }
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
    }
}
