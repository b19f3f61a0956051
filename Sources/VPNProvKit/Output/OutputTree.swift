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
/// - every file is written to a temporary name, fsynced and renamed into place, so a crash never
///   leaves a half-written file;
/// - a file whose bytes and mode are already right is not touched (a no-op run rewrites nothing);
/// - files written by an earlier run and no longer generated are removed (they are listed in the
///   manifest); files vpnprov never wrote are left alone.
public enum OutputTree {
    public static let manifestName = ".vpnprov-manifest"
    static let publicMode: mode_t = 0o644
    static let privateMode: mode_t = 0o600

    /// Rejects paths that could leave the output directory or hide (`..`, `/x`, `a//b`, `.x`).
    public static func checkRelativePath(_ path: String) throws(OutputError) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !path.isEmpty, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." || $0.hasPrefix(".") }),
            !path.utf8.contains(0), parts.allSatisfy({ $0.utf8.count <= 255 })
        else { throw OutputError("refusing unsafe output path '\(path)'") }
        return parts
    }

    // MARK: writing

    public static func write(_ files: [OutputFile], to directory: String) throws(OutputError) -> WriteSummary {
        var summary = WriteSummary()
        let root = try openRoot(directory, create: true)
        defer { close(root) }
        let previous = readManifest(root)
        let sorted = files.sorted { $0.path < $1.path }
        var seen = Set<String>()
        for file in sorted {
            guard seen.insert(file.path).inserted else { throw OutputError("two outputs want the path '\(file.path)'") }
            let parts = try checkRelativePath(file.path)
            let dir = try openDirectory(root, components: parts.dropLast(), create: true, display: file.path)
            defer { close(dir) }
            let mode = file.isPrivate ? privateMode : publicMode
            if try fileMatches(dir, name: parts.last!, contents: file.contents, mode: mode) {
                summary.unchanged.append(file.path)
            } else {
                try atomicWrite(dir, name: parts.last!, contents: file.contents, mode: mode, display: file.path)
                summary.written.append(file.path)
            }
        }
        // Remove what an earlier run wrote and this one does not; never anything else.
        for old in previous.sorted() where !seen.contains(old) {
            guard let parts = try? checkRelativePath(old),
                let dir = try? openDirectory(root, components: parts.dropLast(), create: false, display: old)
            else { continue }
            if unlinkat(dir, parts.last!, 0) == 0 { summary.removed.append(old) }
            close(dir)
        }
        // Directories emptied by those removals go too (a non-empty one simply stays).
        var emptied = Set<String>()
        for removed in summary.removed {
            var parts = removed.split(separator: "/").map(String.init).dropLast()
            while !parts.isEmpty {
                emptied.insert(parts.joined(separator: "/"))
                parts = parts.dropLast()
            }
        }
        for dir in emptied.sorted(by: { $0.count > $1.count }) {
            let parts = dir.split(separator: "/").map(String.init)
            guard let parent = try? openDirectory(root, components: parts.dropLast()[...], create: false, display: dir) else { continue }
            unlinkat(parent, parts.last!, AT_REMOVEDIR)
            close(parent)
        }
        // Temporary files of a run killed between writing and renaming (`.<name>.tmp-<pid>`), in the
        // directories this run writes to.
        let directories = Set(sorted.map { $0.path.split(separator: "/").dropLast().map(String.init) })
        for parts in directories {
            guard let dir = try? openDirectory(root, components: parts[...], create: false, display: parts.joined(separator: "/")) else { continue }
            removeTemporaries(dir)
            close(dir)
        }
        let manifest = sorted.map(\.path).joined(separator: "\n") + "\n"
        if try !fileMatches(root, name: manifestName, contents: Array(manifest.utf8), mode: publicMode) {
            try atomicWrite(root, name: manifestName, contents: Array(manifest.utf8), mode: publicMode, display: manifestName)
        }
        fsync(root)
        return summary
    }

    // MARK: comparing

    /// Compares the directory with what would be written, without writing anything.
    public static func compare(_ files: [OutputFile], with directory: String) throws(OutputError) -> DriftReport {
        var report = DriftReport()
        var present = Set<String>()
        let root = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else {
            guard errno == ENOENT else { throw OutputError.errno("cannot open output directory", directory) }
            report.missing = files.map(\.path).sorted()
            return report
        }
        defer { close(root) }
        try listFiles(root, prefix: "", into: &present)
        present.remove(manifestName)
        var expected = Set<String>()
        for file in files.sorted(by: { $0.path < $1.path }) {
            expected.insert(file.path)
            guard present.contains(file.path) else {
                report.missing.append(file.path)
                continue
            }
            let parts = try checkRelativePath(file.path)
            let dir = try openDirectory(root, components: parts.dropLast(), create: false, display: file.path)
            defer { close(dir) }
            if try !fileMatches(dir, name: parts.last!, contents: file.contents, mode: file.isPrivate ? privateMode : publicMode) {
                report.stale.append(file.path)
            }
        }
        report.unexpected = present.subtracting(expected).sorted()
        return report
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

    /// Opens `components` below `base` one at a time with O_NOFOLLOW (a symlink fails with ELOOP or
    /// ENOTDIR), creating missing directories when asked. `reopen` re-resolves the root when `base`
    /// is closed over by the caller's scope (compare).
    private static func openDirectory(
        _ base: Int32, components: ArraySlice<String>, create: Bool, display: String, reopen: String? = nil
    ) throws(OutputError) -> Int32 {
        var current = reopen.map { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } ?? dup(base)
        guard current >= 0 else { throw OutputError.errno("cannot open directory for", display) }
        for component in components {
            if create && mkdirat(current, component, 0o755) != 0 && errno != EEXIST {
                let e = OutputError.errno("cannot create directory for", display)
                close(current)
                throw e
            }
            let next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(current)
            guard next >= 0 else {
                throw OutputError("refusing to write '\(display)': '\(component)' is not a plain directory (symlink?)")
            }
            current = next
        }
        return current
    }

    private static func fileMatches(_ dir: Int32, name: String, contents: [UInt8], mode: mode_t) throws(OutputError) -> Bool {
        let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }  // missing, or a symlink: rewrite (rename replaces the link itself)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size == contents.count,
            (st.st_mode & 0o7777) == mode
        else { return false }
        var buffer = [UInt8](repeating: 0, count: contents.count)
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return false }
            offset += n
        }
        return buffer == contents
    }

    private static func atomicWrite(_ dir: Int32, name: String, contents: [UInt8], mode: mode_t, display: String) throws(OutputError) {
        let temp = ".\(name).tmp-\(getpid())"
        unlinkat(dir, temp, 0)
        let fd = openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw OutputError.errno("cannot write", display) }
        var ok = fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < contents.count {
            let n = contents.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { ok = false } else { offset += n }
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        if ok { CrashTestHook.step() }
        guard ok, renameat(dir, temp, dir, name) == 0 else {
            let e = OutputError.errno("cannot write", display)
            unlinkat(dir, temp, 0)
            throw e
        }
        CrashTestHook.step()
        fsync(dir)
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

    private static func readManifest(_ root: Int32) -> Set<String> {
        let fd = openat(root, manifestName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return Set(String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init))
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
