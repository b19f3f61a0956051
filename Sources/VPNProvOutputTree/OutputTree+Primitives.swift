import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport

/// The file-system primitives under the output tree: opening the root, comparing a file with
/// what would be written, temporary files, bounded reads, the manifest and listing a directory.
extension OutputTree {
    // MARK: primitives

    static func openRoot(_ directory: String, create: Bool) throws(OutputError) -> Int32 {
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
        let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        // Missing, or a symlink: rewrite (the rename replaces the link itself).
        guard fd >= 0 else { return .differs(missing: true) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .differs(missing: true) }
        guard st.st_size == contents.count, (st.st_mode & 0o7777) == mode else { return .differs(missing: false) }
        let same = BoundedFile.holds(fd: fd, exactly: contents)
        return same ? .matches : .differs(missing: false)
    }

    /// With `status`, the file's status once written is stored there.
    static func writeTemporary(
        _ dir: Int32, name temp: String, contents: [UInt8], mode: mode_t, sync: Bool, display: String,
        status: UnsafeMutablePointer<stat>? = nil
    ) throws(OutputError) {
        try writeTemporary(dir, name: temp, mode: mode, sync: sync, display: display, status: status) { put in
            put(contents)
        }
    }

    /// `writeTemporary` for contents made piece by piece: `produce` hands each piece to `put`, which
    /// returns false once writing failed (`produce` then stops and returns false).
    static func writeTemporary(
        _ dir: Int32, name temp: String, mode: mode_t, sync: Bool, display: String,
        status: UnsafeMutablePointer<stat>? = nil, produce: (_ put: ([UInt8]) -> Bool) -> Bool
    ) throws(OutputError) {
        // A temporary file of this process's pid already there is a run killed long ago: replaced.
        do {
            try AtomicWrite.temporary(
                in: dir, name: temp, mode: mode, sync: sync, replacingStale: true, status: status, produce: produce)
        } catch {
            errno = error.errno
            throw OutputError.errno("cannot write", display)
        }
    }

    /// The whole file (a regular file, at most `limit` bytes), or nil: BoundedFile, the one reader of
    /// outside files, on a descriptor the tree opened without following links.
    static func readAll(_ fd: Int32, limit: Int) -> [UInt8]? {
        try? BoundedFile.read(fd: fd, limit: limit)
    }

    /// Calls `body` with each path of the previous run's manifest, read in place: a fleet's manifest
    /// has hundreds of thousands of lines, never held as a set.
    static func forEachManifestPath(_ root: Int32, _ body: (String) -> Void) {
        forEachManifestLine(root) { body(String(decoding: $0, as: UTF8.self)) }
    }

    /// `forEachManifestPath` with each path as its UTF-8 bytes in place.
    static func forEachManifestLine(_ root: Int32, _ body: (ArraySlice<UInt8>) -> Void) {
        let bytes = readRootFile(root, manifestName) ?? []
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            if end > start { body(bytes[start..<end]) }
            start = end + 1
        }
    }

    /// The manifest's bytes: one path a line, in the list's order (the caller sorts it), a lone newline
    /// for an empty tree.
    static func manifestBytes(_ paths: PathList) -> [UInt8] {
        if paths.isEmpty { return [0x0A] }
        var out: [UInt8] = []
        out.reserveCapacity(paths.utf8Count + paths.count)
        for i in paths.indices {
            out += paths.utf8(i)
            out.append(0x0A)
        }
        return out
    }

    /// A bookkeeping file at the top of the tree (not following a link, not waiting on a FIFO), nil
    /// when absent, not a regular file or over BoundedFile.outputFileLimit.
    static func readRootFile(_ root: Int32, _ name: String) -> [UInt8]? {
        let fd = openat(root, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: BoundedFile.outputFileLimit)
    }

    /// `body` with `name` (a checked path component: no NUL) as a C string, without a `String`.
    static func withCString<R>(_ name: UnsafeBufferPointer<UInt8>, _ body: (UnsafePointer<CChar>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 1) { buffer in
            name.withMemoryRebound(to: CChar.self) { _ = buffer.initialize(fromContentsOf: $0) }
            buffer[name.count] = 0
            return body(buffer.baseAddress!)
        }
    }

    /// The names in `dir` (without "." and "..") with their d_type.
    static func directoryEntries(_ dir: Int32, display: String) throws(OutputError) -> [(String, UInt8)] {
        let copy = dup(dir)
        guard copy >= 0, let stream = fdopendir(copy) else { throw OutputError.errno("cannot list", display) }
        defer { closedir(stream) }
        var entries: [(String, UInt8)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            entries.append((name, entry.pointee.d_type))
        }
        return entries
    }

    /// Whether the entry is a directory itself (a link to one is not).
    static func isDirectory(_ dir: Int32, _ name: String, _ type: UInt8) -> Bool {
        if type != UInt8(DT_UNKNOWN) { return type == UInt8(DT_DIR) }
        var st = stat()
        return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The files below `root` (as `listFiles` finds them) for which `keep` holds, given each path's
    /// UTF-8 bytes in place: a `String` is made only for a path kept (`check` lists a fleet's 64,000
    /// files to find the few it did not expect). The directories two levels down (a user's or a
    /// node's folder) are listed on all cores.
    static func listFilesInParallel(_ root: Int32, keep: @Sendable (UnsafeBufferPointer<UInt8>) -> Bool)
        throws(OutputError) -> [String]
    {
        var kept: [String] = []
        var jobs: [(parent: Int32, name: String, path: String)] = []
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        func keeping(_ path: String) {
            var path = path
            if path.withUTF8({ keep($0) }) { kept.append(path) }
        }
        for (name, type) in try directoryEntries(root, display: ".") {
            guard isDirectory(root, name, type) else {
                keeping(name)
                continue
            }
            let sub = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard sub >= 0 else { throw OutputError.errno("cannot list", name) }
            opened.append(sub)
            for (child, childType) in try directoryEntries(sub, display: name) {
                let path = "\(name)/\(child)"
                if isDirectory(sub, child, childType) {
                    jobs.append((sub, child, path))
                } else {
                    keeping(path)
                }
            }
        }
        let directories = jobs
        let listed = parallelMap(directories.count) { i -> Result<[String], OutputError> in
            let job = directories[i]
            let fd = openat(job.parent, job.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { return .failure(OutputError.errno("cannot list", job.path)) }
            defer { close(fd) }
            var found: [String] = []
            var path = Array(job.path.utf8)
            do throws(OutputError) {
                try listFiles(fd, path: &path) { utf8 in
                    if keep(utf8) { found.append(String(decoding: utf8, as: UTF8.self)) }
                }
            } catch {
                return .failure(error)
            }
            return .success(found)
        }
        for result in listed {
            switch result {
            case .success(let found): kept += found
            case .failure(let error): throw error
            }
        }
        return kept
    }

    /// Every regular file and symlink below `dir` (directories recursed without following links), each
    /// path's UTF-8 bytes (`path`, the directory's own, then `/` and the name) in one buffer, in place:
    /// no `String` per entry.
    static func listFiles(_ dir: Int32, path: inout [UInt8], visit: (UnsafeBufferPointer<UInt8>) -> Void)
        throws(OutputError)
    {
        let copy = dup(dir)
        guard copy >= 0, let stream = fdopendir(copy) else {
            throw OutputError.errno("cannot list", String(decoding: path, as: UTF8.self))
        }
        defer { closedir(stream) }
        let length = path.count
        while let entry = readdir(stream) {
            let type = entry.pointee.d_type
            // The name is the entry's NUL-terminated d_name, read before the next readdir.
            let skip = withUnsafeBytes(of: &entry.pointee.d_name) { raw -> Bool in
                let name = raw.prefix { $0 != 0 }
                if name.elementsEqual([UInt8(ascii: ".")])
                    || name.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
                {
                    return true
                }
                if !path.isEmpty { path.append(UInt8(ascii: "/")) }
                path += name
                return false
            }
            if skip { continue }
            defer { path.removeSubrange(length...) }
            let sub: Int32 = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                    var directory = type == UInt8(DT_DIR)
                    if type == UInt8(DT_UNKNOWN) {
                        var st = stat()
                        directory =
                            fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
                    }
                    return directory ? openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -2
                }
            }
            if sub == -2 {
                path.withUnsafeBufferPointer(visit)
                continue
            }
            guard sub >= 0 else { throw OutputError.errno("cannot list", String(decoding: path, as: UTF8.self)) }
            defer { close(sub) }
            try listFiles(sub, path: &path, visit: visit)
        }
    }
}
