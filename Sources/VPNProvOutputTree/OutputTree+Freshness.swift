import Foundation
import Glibc
import Synchronization
import VPNProvCrypto
import VPNProvSupport

/// What the previous run left: its render and stat caches, whether a cached entry's files are intact, a file's
/// current bytes.
extension OutputTree.Session {
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

    /// The render cache of the previous run (empty when absent), and the stat records that go with
    /// exactly its bytes (nil when missing, stale or unreadable). The cache's bytes (tens of MB for a
    /// fleet) are let go as soon as they are parsed.
    package func previousCaches() -> (cache: RenderCache, stats: StatCache?) {
        guard root >= 0, let cache = OutputTree.readRootFile(root, RenderCache.fileName) else {
            return (RenderCache(bytes: nil), nil)
        }
        // The stat records are tied to the cache by its SHA-256: taken on another core while the cache is
        // parsed (both stand before a no-op's stat checks).
        let stats = Background { self.stats(for: cache) }
        let parsed = RenderCache(bytes: cache)
        return (parsed, stats.value)
    }

    private func stats(for cache: [UInt8]) -> StatCache? {
        let fd = openat(root, StatCache.fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        // 32 bytes a file: 20 MB for a fleet of 600,000 files; far beyond that it is not ours.
        guard fstat(fd, &st) == 0, let bytes = OutputTree.readAll(fd, limit: BoundedFile.outputFileLimit) else {
            return nil
        }
        return StatCache(bytes: bytes, cacheDigest: hexString(Digest.sha256(cache)), written: st.st_mtim)
    }

    /// Every file of `entry` is on disk as a regular file with its recorded mode and digest: by its
    /// stat record when `stats` vouches for it, else by reading and hashing it (`hashed` is then
    /// set, so the run records fresh stats). Without `hashing`, only by the stat records: false as soon
    /// as one does not vouch for its file (nothing is read). Thread-safe (read-only).
    package func isIntact(
        _ entry: RenderCache.Entry, stats: StatCache? = nil, hashed: inout Bool, hashing: Bool = true
    ) -> Bool {
        guard root >= 0 else { return false }
        let cache = OutputTree.DirectoryCache(root: root, create: false)
        defer { cache.closeAll() }
        return isIntact(entry, stats: stats, hashed: &hashed, hashing: hashing, directories: cache)
    }

    /// For each of `entries`, whether every file of it is vouched for by its stat record (`isIntact`
    /// without hashing), on all cores, each worker keeping its directories open across the entries of its
    /// run (a user's folder is one `openat` from `clients/`, not two). Thread-safe (read-only).
    package func vouched(_ entries: [RenderCache.Entry], stats: StatCache) -> [Bool] {
        guard root >= 0 else { return entries.map { _ in false } }
        let perRun = 32
        let root = root
        let runs = parallelMap((entries.count + perRun - 1) / perRun) { k -> [Bool] in
            let cache = OutputTree.DirectoryCache(root: root, create: false)
            defer { cache.closeAll() }
            return entries[(k * perRun)..<min(entries.count, (k + 1) * perRun)].map { entry in
                var hashed = false
                return isIntact(entry, stats: stats, hashed: &hashed, hashing: false, directories: cache)
            }
        }
        return runs.flatMap { $0 }
    }

    private func isIntact(
        _ entry: RenderCache.Entry, stats: StatCache?, hashed: inout Bool, hashing: Bool,
        directories cache: OutputTree.DirectoryCache
    ) -> Bool {
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
            let mode = isPrivate ? OutputTree.privateMode : OutputTree.publicMode
            return OutputTree.withCString(name) { name in
                if let records {
                    var st = stat()
                    if fstatat(parentFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                        (st.st_mode & 0o7777) == mode, records.trusts(st, ordinal: firstOrdinal + k)
                    {
                        return true
                    }
                }
                guard hashing else { return false }
                hashedAny = true
                let fd = openat(parentFD, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                guard fd >= 0 else { return false }
                defer { close(fd) }
                var st = stat()
                // Bounded like every outside read: a huge (or sparse) file at a cached path is simply
                // not intact, and is rendered and written again.
                guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, (st.st_mode & 0o7777) == mode,
                    let bytes = OutputTree.readAll(fd, limit: BoundedFile.outputFileLimit),
                    RenderCache.SHA256Value(Digest.sha256(bytes)) == sha256
                else { return false }
                return true
            }
        }
    }

    /// The bytes of a file the tree holds now (not following links), nil when it is missing, not a
    /// regular file, unreadable or over `limit` bytes. Thread-safe.
    package func existingContents(_ path: String, limit: Int) -> [UInt8]? {
        guard root >= 0, let parts = try? OutputTree.checkRelativePath(path) else { return nil }
        let cache = OutputTree.DirectoryCache(root: root, create: false)
        defer { cache.closeAll() }
        guard let dir = try? cache.directory(parts.dropLast(), display: path) else { return nil }
        let fd = openat(dir, parts.last!, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return OutputTree.readAll(fd, limit: limit)
    }
}
