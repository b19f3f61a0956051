import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Crash-safe file writes for the state directory (`StateDirectory` writes through here, in its open
/// directories).
package enum AtomicFile {
    /// Writes `bytes` to `path` atomically: temporary file in the same directory (0600), fsync,
    /// rename over the target, fsync the directory. With `sync: false` the fsyncs are skipped (the
    /// caller syncs the file system once before committing the index).
    package static func write(_ bytes: [UInt8], to path: String, sync: Bool = true, overwrite: Bool = true) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw ioError("cannot open \(directory)") }
        defer { close(dfd) }
        try write(
            bytes, in: dfd, name: (path as NSString).lastPathComponent, shown: path, sync: sync, overwrite: overwrite)
    }

    /// Writes `bytes` to `name` in the open directory `directory` atomically (as `write(_:to:)`), naming
    /// the file `shown` in errors.
    static func write(
        _ bytes: [UInt8], in directory: Int32, name: String, shown path: String, sync: Bool, overwrite: Bool
    ) throws {
        let tempName = ".\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try AtomicWrite.temporary(in: directory, name: tempName, mode: 0o600, sync: sync) { put in put(bytes) }
        } catch {
            errno = error.errno
            throw ioError("cannot write \(path)")
        }
        WriteSteps.step()
        if overwrite {
            guard renameat(directory, tempName, directory, name) == 0 else {
                let e = ioError("cannot rename into \(path)")
                unlinkat(directory, tempName, 0)
                throw e
            }
        } else {
            // link() refuses to replace an existing file: the target is never overwritten.
            let linked = linkat(directory, tempName, directory, name, 0)
            let e = ioError("refusing to overwrite \(path)")
            unlinkat(directory, tempName, 0)
            guard linked == 0 else { throw e }
        }
        WriteSteps.step()
        if sync {
            guard fsync(directory) == 0 else {
                throw ioError("cannot sync \((path as NSString).deletingLastPathComponent)")
            }
        }
    }

    /// Flushes the file system holding the open directory `fd` (all files written with `sync: false`).
    static func syncFileSystem(fd: Int32, shown directory: String) throws {
        // syncfs(2) (Linux) flushes just this file system; the Glibc module does not export it.
        typealias SyncFS = @convention(c) (Int32) -> Int32
        if let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") {
            let syncfs = unsafeBitCast(symbol, to: SyncFS.self)
            guard syncfs(fd) == 0 else { throw ioError("cannot sync \(directory)") }
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

    static func ioError(_ what: String) -> StateError {
        StateError(.io, "\(what): \(String(cString: strerror(errno)))")
    }
}
