import Foundation
import VPNProvCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the output tree could not be written or read. Always an environment problem (exit 3), except
/// `unsafePath`, which means a renderer produced a path that would leave the output directory.
public struct OutputError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
    static func errno(_ what: String, _ path: String) -> OutputError {
        OutputError("\(what) '\(path)': \(String(cString: strerror(Glibc.errno)))")
    }
}

/// What `OutputTree.write` did.
public struct WriteSummary: Sendable, Equatable {
    public var written: [String] = []
    public var unchanged: [String] = []
    public var removed: [String] = []
}

/// What `OutputTree.compare` found (the `check` drift gate).
public struct DriftReport: Sendable, Equatable {
    public var missing: [String] = []
    /// Present, but contents or mode differ from what `generate` would write now.
    public var stale: [String] = []
    /// Present, but `generate` would not write it.
    public var unexpected: [String] = []
    public var isClean: Bool { missing.isEmpty && stale.isEmpty && unexpected.isEmpty }
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
public enum OutputTree {
    public static let manifestName = ".vpnprov-manifest"
    static let publicMode: mode_t = 0o644
    static let privateMode: mode_t = 0o600

    /// Rejects paths that could leave the output directory or hide (`..`, `/x`, `a//b`, `.x`).
    public static func checkRelativePath(_ path: String) throws(OutputError) -> [String] {
        // On UTF-8 bytes: this runs for every file of every run.
        let bytes = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard !path.isEmpty, !path.utf8.contains(0),
            bytes.allSatisfy({ !$0.isEmpty && $0.first != UInt8(ascii: ".") && $0.count <= 255 })
        else { throw OutputError("refusing unsafe output path '\(path)'") }
        return bytes.map { String(Substring($0)) }
    }

    // MARK: writing

    public static func write(_ files: [OutputFile], to directory: String) throws(OutputError) -> WriteSummary {
        let session = try Session(directory: directory, mode: .write)
        do {
            try session.add(try session.prepare(files))
            return try session.publish()
        } catch {
            session.abort()
            throw error
        }
    }

    // MARK: comparing

    /// Compares the directory with what would be written, without writing anything.
    public static func compare(_ files: [OutputFile], with directory: String) throws(OutputError) -> DriftReport {
        let session = try Session(directory: directory, mode: .compare)
        try session.add(try session.prepare(files))
        return try session.drift()
    }

    // MARK: streaming

    /// Writes (or compares) an output tree batch by batch, so a fleet's files never have to be in
    /// memory at once. `prepare` may run on several threads at once (one batch each); `add` takes
    /// the batches in order on one thread; `publish` makes the new files visible:
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
            var unchanged: [String] = []
            /// Written under a temporary name (write mode) / missing or stale (compare mode).
            var changed: [Change] = []
        }

        /// Only the path and two flags per file: a fleet has hundreds of thousands.
        struct Change: Sendable {
            var path: String
            /// Written under `temp` (write mode).
            var staged: Bool
            var missing: Bool
            var components: [String] { (try? checkRelativePath(path)) ?? [] }
            var temp: String { staged ? Session.temporaryName(components.last ?? "") : "" }
        }

        static func temporaryName(_ name: String) -> String { ".\(name).tmp-\(processID)" }
        private static let processID = getpid()

        let directory: String
        let mode: Mode
        /// -1 in compare mode when the directory does not exist.
        let root: Int32
        let syncPerFile: Bool
        private var seen = Set<String>()
        private var paths: [String] = []
        private var unchanged: [String] = []
        private var changed: [Change] = []
        private var pendingTemps: [Change] = []
        /// `.vpnprov-writing` exists from this run's first temporary file until publish has renamed
        /// them all. Found at the start, it means a run was killed half-way: only then are all
        /// directories searched for temporary files (a search a no-op run should not pay for).
        static let writingMarker = ".vpnprov-writing"
        private var killedRunLeftTemporaries = false
        private let markerLock = NSLock()
        private var markerWritten = false

        public init(directory: String, mode: Mode) throws(OutputError) {
            self.directory = directory
            self.mode = mode
            syncPerFile = !FileSystemSync.available
            if mode == .write {
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
            defer { cache.closeAll() }
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
                        batch.unchanged.append(file.path)
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

        /// Takes a prepared batch (in order, on one thread). Two outputs for one path are an error.
        public func add(_ batch: Batch) throws(OutputError) {
            pendingTemps += batch.changed.filter(\.staged)
            for path in batch.paths {
                guard seen.insert(path).inserted else { throw OutputError("two outputs want the path '\(path)'") }
            }
            paths += batch.paths
            unchanged += batch.unchanged
            changed += batch.changed
        }

        /// Removes the temporary files of a batch that is not going to be added (or of everything
        /// added so far): used after a failure, so nothing visible changed.
        public func discard(_ batch: Batch) { discard(batch.changed) }

        public func abort() {
            discard(pendingTemps)
            pendingTemps = []
            // Every temporary file of this session is gone; a killed run's may not be, and then the
            // marker stays for the next run to clean up.
            markerLock.lock()
            defer { markerLock.unlock() }
            if markerWritten && !killedRunLeftTemporaries {
                unlinkat(root, Session.writingMarker, 0)
                markerWritten = false
            }
        }

        private func discard(_ changes: [Change]) {
            guard root >= 0 else { return }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            for change in changes where change.staged {
                let components = change.components
                if let dir = try? cache.directory(components.dropLast(), display: change.path) {
                    unlinkat(dir, Session.temporaryName(components.last ?? ""), 0)
                }
            }
        }

        /// Write mode: makes every prepared file visible, removes stale outputs, writes the manifest.
        public func publish() throws(OutputError) -> WriteSummary {
            precondition(mode == .write)
            var summary = WriteSummary()
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
            let ordered = changed.sorted(by: { $0.path < $1.path })
            // Renames on all cores (tens of thousands for a fleet), in runs of neighbouring paths so
            // each worker reuses its directory descriptors; the first failure in path order is reported.
            let perRun = 512
            let failures = parallelMap((ordered.count + perRun - 1) / perRun) { k -> OutputError? in
                let runCache = DirectoryCache(root: root, create: true)
                defer { runCache.closeAll() }
                for change in ordered[(k * perRun)..<min(ordered.count, (k + 1) * perRun)] {
                    let components = change.components
                    let dir: Int32?
                    do throws(OutputError) { dir = try runCache.directory(components.dropLast(), display: change.path) } catch { return error }
                    guard let name = components.last, let dir, renameat(dir, Session.temporaryName(name), dir, name) == 0 else {
                        return OutputError.errno("cannot write", change.path)
                    }
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
            pendingTemps = []
            summary.unchanged = unchanged.sorted()
            // Remove what an earlier run wrote and this one does not; never anything else.
            let previous = readManifest(root)
            for old in previous.sorted() where !seen.contains(old) {
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
            wroteAnything = try replaceRootFile(manifestName, with: Array((paths.sorted().joined(separator: "\n") + "\n").utf8)) || wroteAnything
            if let renderCache {
                wroteAnything = try replaceRootFile(RenderCache.fileName, with: renderCache) || wroteAnything
            } else {
                unlinkat(root, RenderCache.fileName, 0)
            }
            wroteAnything = wroteAnything || !summary.removed.isEmpty
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

        /// Writes a bookkeeping file at the top of the tree (atomically, only when it changed).
        @discardableResult
        private func replaceRootFile(_ name: String, with contents: [UInt8]) throws(OutputError) -> Bool {
            guard case .differs = try state(root, name: name, contents: contents, mode: publicMode) else { return false }
            try markWriting()
            let temp = Session.temporaryName(name)
            try writeTemporary(root, name: temp, contents: contents, mode: publicMode, sync: true, display: name)
            guard renameat(root, temp, root, name) == 0 else {
                let e = OutputError.errno("cannot write", name)
                unlinkat(root, temp, 0)
                throw e
            }
            return true
        }

        // MARK: render cache

        /// The new render cache, written by `publish` (nil removes it).
        var renderCache: [UInt8]?

        /// The render cache of the previous run (empty when absent or unreadable).
        func previousRenderCache() -> RenderCache {
            RenderCache(bytes: root >= 0 ? readRootFile(root, RenderCache.fileName) : nil)
        }

        /// Every file of `entry` is on disk as a regular file with its recorded mode and digest.
        /// Thread-safe (read-only).
        func isIntact(_ entry: RenderCache.Entry) -> Bool {
            guard root >= 0 else { return false }
            let cache = DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            for file in entry.files {
                guard let parts = try? checkRelativePath(file.path),
                    let dir = try? cache.directory(parts.dropLast(), display: file.path)
                else { return false }
                let fd = openat(dir, parts.last!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { return false }
                defer { close(fd) }
                var st = stat()
                guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                    (st.st_mode & 0o7777) == (file.isPrivate ? privateMode : publicMode),
                    let bytes = readExactly(fd, count: Int(st.st_size)),
                    hexString(Digest.sha256(bytes)) == file.sha256
                else { return false }
            }
            return true
        }

        /// A batch for files known to be right without rendering them (a fresh cache entry).
        func unchangedBatch(_ paths: [String]) -> Batch {
            var batch = Batch()
            batch.paths = paths
            batch.unchanged = paths
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
            var present = Set<String>()
            try listFiles(root, prefix: "", into: &present)
            present.remove(manifestName)
            present.remove(RenderCache.fileName)
            present.remove(Session.writingMarker)
            for change in changed.sorted(by: { $0.path < $1.path }) {
                if !present.contains(change.path) {
                    report.missing.append(change.path)
                } else {
                    report.stale.append(change.path)
                }
            }
            report.unexpected = present.subtracting(seen).sorted()
            return report
        }
    }

    /// Directories below the root opened one component at a time with O_NOFOLLOW (a symlink fails
    /// with ELOOP or ENOTDIR), creating missing ones when asked, and kept open while a batch's files
    /// go to the same few directories.
    final class DirectoryCache {
        let root: Int32
        let create: Bool
        private var open: [String: Int32] = [:]
        /// Directories this cache made (mkdirat succeeded): empty when made.
        private var made: Set<String> = []

        init(root: Int32, create: Bool) {
            self.root = root
            self.create = create
        }

        /// The directory's descriptor (owned by the cache), or nil when it is missing and not created.
        func directory(_ components: ArraySlice<String>, display: String, create: Bool? = nil) throws(OutputError) -> Int32? {
            let create = create ?? self.create
            if components.isEmpty { return root }
            let key = components.joined(separator: "/")
            if let fd = open[key] { return fd }
            if open.count >= 64 { closeAll() }
            guard let parent = try directory(components.dropLast(), display: display, create: create) else { return nil }
            let component = components.last!
            if create {
                if mkdirat(parent, component, 0o755) == 0 {
                    made.insert(key)
                } else if errno != EEXIST {
                    throw OutputError.errno("cannot create directory for", display)
                }
            }
            let fd = openat(parent, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                if !create && errno == ENOENT { return nil }
                throw OutputError("refusing to write '\(display)': '\(component)' is not a plain directory (symlink?)")
            }
            open[key] = fd
            return fd
        }

        func closeAll() {
            for fd in open.values { close(fd) }
            open = [:]
        }

        /// Whether this cache created the directory (so it held nothing before this cache wrote to it).
        func created(_ components: ArraySlice<String>) -> Bool {
            !made.isEmpty && made.contains(components.joined(separator: "/"))
        }
    }

    // MARK: primitives

    private static func openRoot(_ directory: String, create: Bool) throws(OutputError) -> Int32 {
        if create && mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw OutputError.errno("cannot create output directory", directory)
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw OutputError.errno("cannot open output directory", directory) }
        return fd
    }

    enum FileState {
        case matches
        /// missing: no regular file of that name.
        case differs(missing: Bool)
    }

    /// Whether `name` in `dir` is a regular file with exactly these bytes and mode. Reads in
    /// chunks and stops at the first difference; the size is compared first.
    static func state(_ dir: Int32, name: String, contents: [UInt8], mode: mode_t) throws(OutputError) -> FileState {
        let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return .differs(missing: true) }  // missing, or a symlink: rewrite (rename replaces the link itself)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .differs(missing: true) }
        guard st.st_size == contents.count, (st.st_mode & 0o7777) == mode else { return .differs(missing: false) }
        let same = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65536) { buffer -> Bool in
            contents.withUnsafeBytes { expected -> Bool in
                var offset = 0
                while offset < expected.count {
                    let n = read(fd, buffer.baseAddress!, min(buffer.count, expected.count - offset))
                    if n <= 0 { return false }
                    if memcmp(buffer.baseAddress!, expected.baseAddress! + offset, n) != 0 { return false }
                    offset += n
                }
                // Exactly the expected size: nothing more to read.
                return read(fd, buffer.baseAddress!, 1) == 0
            }
        }
        return same ? .matches : .differs(missing: false)
    }

    private static func writeTemporary(
        _ dir: Int32, name temp: String, contents: [UInt8], mode: mode_t, sync: Bool, display: String
    ) throws(OutputError) {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = openat(dir, temp, flags, mode)
        if fd < 0 && errno == EEXIST {
            // A temporary file of this process's pid (a run killed long ago): replace it.
            unlinkat(dir, temp, 0)
            fd = openat(dir, temp, flags, mode)
        }
        guard fd >= 0 else { throw OutputError.errno("cannot write", display) }
        // The exact mode, whatever the umask (the call is skipped when the umask left it intact).
        var ok = FileMode.umaskKeeps(mode) || fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < contents.count {
            let n = contents.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { ok = false } else { offset += n }
        }
        if ok && sync { ok = fsync(fd) == 0 }
        let saved = errno
        close(fd)
        guard ok else {
            errno = saved
            let e = OutputError.errno("cannot write", display)
            unlinkat(dir, temp, 0)
            throw e
        }
    }

    /// Removes `.<name>.tmp-<digits>` files (left only by a killed run) from `dir`.
    private static func removeTemporaries(_ dir: Int32) {
        let copy = dup(dir)
        guard copy >= 0, let stream = fdopendir(copy) else { return }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix("."), let range = name.range(of: ".tmp-", options: .backwards) else { continue }
            let pid = name[range.upperBound...]
            if !pid.isEmpty && pid.allSatisfy(\.isASCII) && pid.allSatisfy(\.isNumber) { names.append(name) }
        }
        closedir(stream)
        for name in names { unlinkat(dir, name, 0) }
    }

    /// Exactly `count` bytes (the file's size), or nil when the file holds more or fewer.
    static func readExactly(_ fd: Int32, count: Int) -> [UInt8]? {
        var complete = false
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var offset = 0
            while offset < count {
                let n = read(fd, buffer.baseAddress! + offset, count - offset)
                if n <= 0 { break }
                offset += n
            }
            initialized = offset
            var probe: UInt8 = 0
            complete = offset == count && read(fd, &probe, 1) == 0
        }
        return complete ? bytes : nil
    }

    /// The whole file, or nil past `limit` bytes or on a read error.
    static func readAll(_ fd: Int32, limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 { return nil }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            if bytes.count > limit { return nil }
        }
    }

    private static func readManifest(_ root: Int32) -> Set<String> {
        let bytes = readRootFile(root, manifestName) ?? []
        return Set(bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) })
    }

    /// A bookkeeping file at the top of the tree (not following a link), nil when absent or over
    /// 1 GiB (the render cache takes ~110 bytes a file: 66 MB at 20,000 users).
    static func readRootFile(_ root: Int32, _ name: String) -> [UInt8]? {
        let fd = openat(root, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: 1 << 30)
    }

    /// Every regular file and symlink below `dir` (directories recursed without following links).
    private static func listFiles(_ dir: Int32, prefix: String, into result: inout Set<String>) throws(OutputError) {
        let copy = dup(dir)
        guard copy >= 0, let stream = fdopendir(copy) else { throw OutputError.errno("cannot list", prefix.isEmpty ? "." : prefix) }
        defer { closedir(stream) }
        var entries: [(String, UInt8)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            entries.append((name, entry.pointee.d_type))
        }
        for (name, type) in entries {
            let path = prefix.isEmpty ? name : "\(prefix)/\(name)"
            var isDirectory = type == UInt8(DT_DIR)
            if type == UInt8(DT_UNKNOWN) {
                var st = stat()
                isDirectory = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
            }
            if isDirectory {
                let sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard sub >= 0 else { throw OutputError.errno("cannot list", path) }
                defer { close(sub) }
                try listFiles(sub, prefix: path, into: &result)
            } else {
                result.insert(path)
            }
        }
    }
}

/// syncfs(2): flushes one file system (Linux). The Glibc module does not export it; where it is
/// missing, the writer fsyncs every file and directory instead.
enum FileSystemSync {
    typealias SyncFS = @convention(c) (Int32) -> Int32
    static let function: SyncFS? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: SyncFS.self)
    }()
    static var available: Bool { function != nil }
    static func sync(_ fd: Int32) -> Bool { function?(fd) == 0 }
}

/// The process's file-creation mask, read once from /proc (umask(2) cannot be read without
/// changing it, which would race with other threads creating files).
enum FileMode {
    static let processUmask: mode_t? = {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Umask:") {
            return mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        }
        return nil
    }()

    /// True when a file created with `mode` gets exactly `mode` (unknown umask: false).
    static func umaskKeeps(_ mode: mode_t) -> Bool {
        guard let mask = processUmask else { return false }
        return mode & mask == 0
    }
}
