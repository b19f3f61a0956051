import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Crash-safe file writes for the state directory.
package enum AtomicFile {
    /// Writes `bytes` to `path` atomically: temporary file in the same directory (0600), fsync,
    /// rename over the target, fsync the directory. With `sync: false` the fsyncs are skipped (the
    /// caller syncs the file system once before committing the index).
    package static func write(_ bytes: [UInt8], to path: String, sync: Bool = true, overwrite: Bool = true) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let tempName = ".\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw ioError("cannot open \(directory)") }
        defer { close(dfd) }
        do {
            try AtomicWrite.temporary(in: dfd, name: tempName, mode: 0o600, sync: sync) { put in put(bytes) }
        } catch {
            errno = error.errno
            throw ioError("cannot write \(path)")
        }
        WriteSteps.step()
        if overwrite {
            guard renameat(dfd, tempName, dfd, name) == 0 else {
                let e = ioError("cannot rename into \(path)")
                unlinkat(dfd, tempName, 0)
                throw e
            }
        } else {
            // link() refuses to replace an existing file: the target is never overwritten.
            let linked = linkat(dfd, tempName, dfd, name, 0)
            let e = ioError("refusing to overwrite \(path)")
            unlinkat(dfd, tempName, 0)
            guard linked == 0 else { throw e }
        }
        WriteSteps.step()
        if sync { try syncDirectory(directory) }
    }

    /// Removes temporary files that `write` leaves behind only when the process dies between creating
    /// and renaming them (`.<name>.tmp-<pid>-<random>`). Call with the state lock held.
    static func removeTemporaries(in directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where AtomicWrite.isTemporaryName(name) {
            unlink("\(directory)/\(name)")
        }
    }

    static func syncDirectory(_ directory: String) throws {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw ioError("cannot open \(directory)") }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw ioError("cannot sync \(directory)") }
    }

    /// Flushes the file system holding `directory` (all files written with `sync: false`).
    static func syncFileSystem(of directory: String) throws {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw ioError("cannot open \(directory)") }
        defer { close(dfd) }
        // syncfs(2) (Linux) flushes just this file system; the Glibc module does not export it.
        typealias SyncFS = @convention(c) (Int32) -> Int32
        if let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") {
            let syncfs = unsafeBitCast(symbol, to: SyncFS.self)
            guard syncfs(dfd) == 0 else { throw ioError("cannot sync \(directory)") }
        } else {
            sync()
        }
    }

    /// Creates a directory (and missing parents) with mode 0700.
    static func makeDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw StateError(.stateUnreadable, "\(path) exists and is not a directory")
            }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeDirectory(parent) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw ioError("cannot create directory \(path)") }
    }

    /// A state file, bounded (BoundedFile.stateFileLimit unless `limit` says otherwise), never
    /// through a symbolic link.
    static func read(_ path: String, limit: Int = BoundedFile.stateFileLimit) throws -> [UInt8] {
        do {
            return try BoundedFile.read(path, limit: limit, followSymlinks: false)
        } catch {
            throw StateError(.stateUnreadable, "cannot read \(path): \(error.reason)")
        }
    }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    static func ioError(_ what: String) -> StateError {
        StateError(.io, "\(what): \(String(cString: strerror(errno)))")
    }
}
