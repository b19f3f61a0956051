import Foundation
import Glibc
import Synchronization
import VPNProvModel
import VPNProvSupport

/// The state directory opened once, as the output tree is: every file vpnprov reads, writes, renames
/// or removes in it is reached from this descriptor (`openat`, `renameat`, `linkat`, `unlinkat`,
/// `fstatat`, `mkdirat`), and its subdirectories (`ca`, `certs`, `keys`, `p12`, `crl`) are opened once
/// below it with O_NOFOLLOW. So a path component swapped for a link (or another directory renamed into
/// place) after the open cannot redirect a write or a read elsewhere: the run keeps working in the
/// directories it opened. The state directory itself may be a link (the operator's choice of disk); it
/// is resolved once, when it is opened.
///
/// Files are named by the paths `StatePaths` makes from `root` (which messages show as they are): a
/// file in the state directory itself or in one of its subdirectories.
package final class StateDirectory: Sendable {
    /// As given: what messages show, and what `StatePaths` builds on.
    package let root: String
    let paths: StatePaths
    /// The state directory.
    let fd: Int32
    /// The subdirectories opened so far, by name (absent: not there when asked for).
    private let subdirectories: Mutex<[String: Int32]>
    /// The entries opened or listed so far whose modes are wider than vpnprov's own (`StatePermissions`).
    private let widened: Mutex<[StatePermissions.Wide]>

    private init(root: String, fd: Int32) {
        self.root = root
        self.paths = StatePaths(root: root)
        self.fd = fd
        self.subdirectories = Mutex([:])
        self.widened = Mutex([])
    }

    deinit {
        subdirectories.withLock { open in
            for fd in open.values { close(fd) }
        }
        close(fd)
    }

    /// Opens the state directory at `root`; with `create`, creates it (and missing parents, 0700) first.
    /// Nil without `create` when it does not exist. The directory and every entry in it must belong to
    /// the user vpnprov runs as and be writable by nobody else, or nothing is read from it
    /// (`StatePermissions`); each subdirectory is held to the same when it is opened.
    package static func open(_ root: String, create: Bool) throws -> StateDirectory? {
        if create { try AtomicFile.makeDirectory(root) }
        let fd = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT && !create { return nil }
            throw AtomicFile.ioError("cannot open the state directory \(root)")
        }
        let directory = StateDirectory(root: root, fd: fd)
        try directory.inspect(fd, shown: root, itself: true)
        return directory
    }

    /// Refuses an entry of the open directory `directory` (shown as `shown`), or with `itself` the
    /// directory, that another user owns or can write, and notes those whose modes are wider than
    /// vpnprov's own.
    private func inspect(_ directory: Int32, shown: String, itself: Bool) throws {
        let found = try StatePermissions.inspect(
            directory, shown: shown, itself: itself, names: Self.names(in: directory))
        if !found.isEmpty { widened.withLock { $0 += found } }
    }

    /// The entries seen so far (the state directory's own, and those of every subdirectory opened) whose
    /// modes are wider than vpnprov's own: what `narrowModes` makes private.
    package var wideModes: [StatePermissions.Wide] { widened.withLock { $0 } }

    /// Gives every entry of `wideModes` vpnprov's own mode (0700 for directories, 0600 for files); returns
    /// those it changed. Call with the state lock held.
    func narrowModes() throws -> [StatePermissions.Wide] {
        let wide = wideModes
        for entry in wide { try StatePermissions.narrow(entry, in: self) }
        widened.withLock { $0 = [] }
        return wide
    }

    // MARK: - names

    /// The directory descriptor and file name of `path` (one `StatePaths` of `root` made), opening its
    /// subdirectory when needed; nil when that subdirectory does not exist. A subdirectory that is a
    /// symbolic link is refused.
    func locate(_ path: String) throws -> (directory: Int32, name: String)? {
        let relative = relativePath(path)
        guard let slash = relative.firstIndex(of: "/") else { return (fd, String(relative)) }
        let name = String(relative[relative.index(after: slash)...])
        guard let directory = try subdirectory(String(relative[..<slash])) else { return nil }
        return (directory, name)
    }

    /// `path` below `root`, as `StatePaths` made it ("certs/01AB.pem").
    func relativePath(_ path: String) -> Substring {
        // Checked byte by byte: a commit locates each of a fleet's key, certificate and p12 files twice.
        let utf8 = path.utf8
        precondition(
            utf8.count > root.utf8.count && utf8.starts(with: root.utf8)
                && utf8[utf8.index(utf8.startIndex, offsetBy: root.utf8.count)] == UInt8(ascii: "/"),
            "\(path) is not in the state directory \(root)")
        let relative = path.dropFirst(root.count + 1)
        // At most two names ("certs/01AB.pem"), as `split` counts them (empty ones left out).
        var names = 0
        var previous = UInt8(ascii: "/")
        for byte in relative.utf8 {
            if byte != UInt8(ascii: "/") && previous == UInt8(ascii: "/") { names += 1 }
            previous = byte
        }
        precondition(!relative.isEmpty && names <= 2, "\(path): not a state file")
        return relative
    }

    /// The open subdirectory `name` ("certs"), opened without following a link; nil when it does not exist.
    func subdirectory(_ name: String) throws -> Int32? {
        try subdirectories.withLock { open throws -> Int32? in
            if let fd = open[name] { return fd }
            let fd = openat(self.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { return nil }
                if errno == ELOOP || errno == ENOTDIR { try Self.refuseLink(self.fd, name, shown: root + "/" + name) }
                throw AtomicFile.ioError("cannot open \(root)/\(name)")
            }
            do {
                // The directory itself was an entry of the state directory, inspected when it was opened.
                try inspect(fd, shown: root + "/" + name, itself: false)
            } catch {
                close(fd)
                throw error
            }
            open[name] = fd
            return fd
        }
    }

    /// Creates the subdirectory `path` (0700) when it does not exist, and opens it.
    func makeSubdirectory(_ path: String) throws {
        let name = String(relativePath(path))
        if mkdirat(fd, name, 0o700) != 0 && errno != EEXIST {
            throw AtomicFile.ioError("cannot create directory \(path)")
        }
        guard try subdirectory(name) != nil else { throw AtomicFile.ioError("cannot open \(path)") }
    }

    /// Removes the empty subdirectory `path` (one this run created and is taking back).
    func removeSubdirectory(_ path: String) {
        let name = String(relativePath(path))
        subdirectories.withLock { open in
            if let fd = open.removeValue(forKey: name) { close(fd) }
        }
        unlinkat(fd, name, AT_REMOVEDIR)
    }

    /// Throws state-unreadable when `name` in `directory` is a symbolic link.
    static func refuseLink(_ directory: Int32, _ name: String, shown path: String) throws {
        var st = stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFLNK {
            throw StateError(
                .stateUnreadable,
                "\(path) is a symbolic link; vpnprov does not follow links inside the state directory (replace it with the real directory or file)"
            )
        }
    }

    /// Refuses a symbolic link anywhere vpnprov reads or writes inside the state directory (its
    /// subdirectories, the manifest and the records, the issuing journal, the lock), and opens the
    /// subdirectories that exist. Files inside the subdirectories are opened with O_NOFOLLOW and replaced by
    /// rename, which replaces a link instead of writing through it.
    func refuseSymlinks() throws {
        let files = [manifestPath] + StateRecord.allCases.map(path) + [paths.issuingJournal, paths.lock]
        for path in paths.subdirectories + files {
            try Self.refuseLink(fd, String(relativePath(path)), shown: path)
        }
        // Opened now, so the rest of the run works in these directories whatever is renamed later (one
        // that cannot be opened reports its error where it is used; one that another user holds, here).
        for path in paths.subdirectories {
            do {
                _ = try subdirectory(String(relativePath(path)))
            } catch let error as StateError where error.code == .statePermissions {
                throw error
            } catch {}
        }
    }

    // MARK: - files

    /// Whether the file `path` exists (a link counts when it leads to something, as a path lookup sees it).
    func exists(_ path: String) -> Bool {
        guard let (directory, name) = try? locate(path) else { return false }
        var st = stat()
        return fstatat(directory, name, &st, 0) == 0
    }

    /// The state file `path`, bounded (BoundedFile.stateFileLimit unless `limit` says otherwise), never
    /// through a symbolic link.
    func read(_ path: String, limit: Int = BoundedFile.stateFileLimit) throws -> [UInt8] {
        do {
            guard let (directory, name) = try locate(path) else { throw BoundedFile.Failure.system(errno: ENOENT) }
            return try BoundedFile.read(at: directory, name, limit: limit, followSymlinks: false)
        } catch let error as BoundedFile.Failure {
            throw StateError(.stateUnreadable, "cannot read \(path): \(error.reason)")
        }
    }

    /// Writes `bytes` to the file `path` atomically, as `AtomicFile.write` does, in the directory
    /// descriptors opened here.
    func write(_ bytes: [UInt8], to path: String, sync: Bool = true, overwrite: Bool = true) throws {
        guard let (directory, name) = try locate(path) else {
            errno = ENOENT
            throw AtomicFile.ioError("cannot write \(path)")
        }
        try AtomicFile.write(bytes, in: directory, name: name, shown: path, sync: sync, overwrite: overwrite)
    }

    /// Removes the file `path`; true when it is gone (or was never there).
    @discardableResult
    func remove(_ path: String) -> Bool {
        guard let (directory, name) = try? locate(path) else { return true }
        return unlinkat(directory, name, 0) == 0 || errno == ENOENT
    }

    /// Removes the temporary files `write` leaves behind only when the process dies between creating
    /// and renaming them, in the state directory and its subdirectories. Call with the state lock held.
    func removeTemporaries() {
        var directories = [fd]
        for path in paths.subdirectories {
            if let fd = try? subdirectory(String(relativePath(path))) { directories.append(fd) }
        }
        for directory in directories {
            for name in Self.names(in: directory) where AtomicWrite.isTemporaryName(name) {
                unlinkat(directory, name, 0)
            }
        }
    }

    /// The names in the open directory `directory` (listed through a descriptor of its own, so the
    /// shared one keeps no read position).
    static func names(in directory: Int32) -> [String] {
        let own = openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0, let stream = fdopendir(own) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Flushes the directory `path` (the state directory or one of its subdirectories).
    func syncDirectory(_ path: String) throws {
        let directory: Int32
        if path == root {
            directory = fd
        } else {
            guard let sub = try subdirectory(String(relativePath(path))) else {
                errno = ENOENT
                throw AtomicFile.ioError("cannot open \(path)")
            }
            directory = sub
        }
        guard fsync(directory) == 0 else { throw AtomicFile.ioError("cannot sync \(path)") }
    }

    /// Flushes the file system holding the state directory (all files written with `sync: false`).
    func syncFileSystem() throws {
        try AtomicFile.syncFileSystem(fd: fd, shown: root)
    }
}
