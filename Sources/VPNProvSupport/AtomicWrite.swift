import Foundation
import Glibc

/// The one way vpnprov writes a file it must never leave half-written: the contents go to a temporary
/// file beside the target, which the caller then renames (or links) into place. The state directory
/// and the output tree both write through here; each keeps its own temporary names and write steps.
package enum AtomicWrite {
    /// Why a temporary file could not be written: the failing call's errno.
    package struct Failure: Error, Sendable {
        package var errno: Int32
    }

    /// Creates `name` in the directory `directory` (never following a link, never reusing a file) with
    /// exactly `mode` whatever the umask, writes what `produce` hands to `put` (which returns false once
    /// writing failed; `produce` then returns false), and with `sync` flushes it. On failure the
    /// temporary file is removed. With `replacingStale`, a file of that name already there (left by a
    /// run killed long ago with the same pid) is removed first. With `status`, the file's status once
    /// written is stored there.
    package static func temporary(
        in directory: Int32, name: String, mode: mode_t, sync: Bool, replacingStale: Bool = false,
        status: UnsafeMutablePointer<stat>? = nil, produce: (_ put: ([UInt8]) -> Bool) -> Bool
    ) throws(Failure) {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = openat(directory, name, flags, mode)
        if fd < 0 && errno == EEXIST && replacingStale {
            unlinkat(directory, name, 0)
            fd = openat(directory, name, flags, mode)
        }
        guard fd >= 0 else { throw Failure(errno: errno) }
        // The exact mode, whatever the umask (the call is skipped when the umask left it intact).
        var ok = FileMode.umaskKeeps(mode) || fchmod(fd, mode) == 0
        if ok {
            ok = produce { contents in writeAll(fd, contents) }
        }
        if ok && sync { ok = fsync(fd) == 0 }
        if ok, let status { ok = fstat(fd, status) == 0 }
        let saved = errno
        close(fd)
        guard ok else {
            unlinkat(directory, name, 0)
            throw Failure(errno: saved)
        }
    }

    /// Writes all of `contents` to `fd`, retrying interrupted and short writes.
    static func writeAll(_ fd: Int32, _ contents: [UInt8]) -> Bool {
        contents.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    /// `.<name>.tmp-<pid>` or `.<name>.tmp-<pid>-<random>`: a temporary file of a vpnprov run, never a
    /// file it keeps. Anything else is left alone by the cleaners, even when it looks similar.
    package static func isTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix("."), let range = name.range(of: ".tmp-", options: .backwards) else { return false }
        let parts = name[range.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }
}
