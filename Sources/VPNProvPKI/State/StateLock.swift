import Foundation
import Glibc
import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// An exclusive lock on a state directory (flock on `<state>/.lock`): it dies with the process, so a
/// crashed run never leaves a stale lock. Held until `release()` or deinit.
package final class StateLock: Sendable {
    package let directory: String
    /// The state directory, opened once when the lock is taken: the run that holds the lock reads and
    /// writes the state through it (`StateStore.load`).
    package let stateDirectory: StateDirectory
    /// The lock file's descriptor, -1 once released; guarded so `release()` from any thread and deinit
    /// cannot close it twice.
    private let fd: Mutex<Int32>

    /// The lock file's name in the state directory.
    static let fileName = ".lock"

    /// Whether an earlier run made the state directory's lock file (a regular file: a link or anything else
    /// is left for `init` to report).
    package static func isPresent(in stateDirectory: String) -> Bool {
        var st = stat()
        return lstat(stateDirectory + "/" + fileName, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Creates the state directory (0700) when missing, opens it and takes the lock, or throws `.lockHeld`.
    package init(stateDirectory: String) throws {
        directory = stateDirectory
        guard let opened = try StateDirectory.open(stateDirectory, create: true) else {
            throw AtomicFile.ioError("cannot open the state directory \(stateDirectory)")
        }
        self.stateDirectory = opened
        let path = opened.paths.lock
        let fd = openat(opened.fd, Self.fileName, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw StateError(
                    .stateUnreadable,
                    "\(path) is a symbolic link; vpnprov does not follow links inside the state directory")
            }
            throw AtomicFile.ioError("cannot open the lock file \(path)")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            close(fd)
            if busy {
                throw StateError(
                    .lockHeld,
                    "state directory \(stateDirectory) is locked by another vpnprov run; try again when it has finished"
                )
            }
            throw AtomicFile.ioError("cannot lock \(path)")
        }
        self.fd = Mutex(fd)
        // Nothing is written into the lock file, so a rerun leaves the state directory byte-identical.
    }

    package func release() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            // Unlock explicitly before closing: a child forked by another thread (Foundation's Process) holds a
            // copy of this descriptor until it execs, and a flock lives as long as any copy does, so close()
            // alone could leave the state locked for an instant and refuse the next run in this process.
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}
