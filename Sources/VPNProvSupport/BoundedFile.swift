import Foundation
import Glibc

/// Reads files that come from outside the program (inventory, secret files, templates, the state)
/// with a size limit: anything but a regular file is refused before a byte is read (a FIFO or a
/// device would block or never end), the size is checked from `fstat` first (a huge or sparse file
/// fails at once) and again while reading (a file that grows). The limits are documented in
/// docs/security.md.
package enum BoundedFile {
    /// Largest inventory file.
    package static let inventoryLimit = 16 << 20
    /// Largest template file.
    package static let templateLimit = 1 << 20
    /// Largest state file other than the index and the secrets file (PEM keys, certificates, CRL, p12).
    package static let stateFileLimit = 1 << 20
    /// Largest `index.json` and `secrets.json` (about 2 KiB per certificate or user: 100,000s fit).
    package static let stateIndexLimit = 512 << 20
    /// Largest file of the output tree read back: its bookkeeping (manifest, render cache, stat
    /// records: ~110 bytes a file, 66 MB at 20,000 users) and a file the render cache vouches for.
    /// Anything larger is not what vpnprov wrote: a cache is then ignored, a file rewritten.
    package static let outputFileLimit = 1 << 30

    /// Why a file was refused; `reason` is the text every caller prints after the path.
    package enum Failure: Error, Equatable {
        case symlink
        case notRegular
        case tooLarge(limit: Int)
        case system(errno: Int32)

        package var reason: String {
            switch self {
            case .symlink: "is a symbolic link"
            case .notRegular: "is not a regular file"
            case .tooLarge(let limit): "is larger than \(BoundedFile.describe(limit))"
            case .system(let code): String(cString: strerror(code))
            }
        }
    }

    /// The whole file at `path`, refusing non-regular files and files over `limit` bytes. With
    /// `followSymlinks: false` a symlink as the last component is refused too.
    package static func read(_ path: String, limit: Int, followSymlinks: Bool = true) throws(Failure) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ELOOP && !followSymlinks { throw .symlink }
            throw .system(errno: errno)
        }
        defer { close(fd) }
        return try read(fd: fd, limit: limit)
    }

    /// The whole file `name` in the open directory `directory`, as `read(_:limit:followSymlinks:)` reads a path.
    package static func read(at directory: Int32, _ name: String, limit: Int, followSymlinks: Bool = true)
        throws(Failure) -> [UInt8]
    {
        let fd = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ELOOP && !followSymlinks { throw .symlink }
            throw .system(errno: errno)
        }
        defer { close(fd) }
        return try read(fd: fd, limit: limit)
    }

    /// The whole of the open file `fd` (from its current offset), with the same rules as
    /// `read(_:limit:)`: refused before a byte is read when it is not a regular file or `fstat` says it
    /// is over `limit` (a sparse 200 GB file costs nothing), and while reading once more than `limit`
    /// bytes arrive. Every reader of a file vpnprov did not just write ends here, the output tree's
    /// caches and the files they vouch for included.
    package static func read(fd: Int32, limit: Int) throws(Failure) -> [UInt8] {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .system(errno: errno) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        let tooLarge = Failure.tooLarge(limit: limit)
        guard st.st_size >= 0, st.st_size <= limit else { throw tooLarge }
        var bytes: [UInt8] = []
        // Sized from the file's length (checked against the limit above): growing by doubling would
        // hold up to twice a fleet's render cache while reading it.
        bytes.reserveCapacity(Int(st.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: min(65536, limit + 1))
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(errno: errno)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw tooLarge }
        }
        return bytes
    }

    /// Whether the open file `fd` holds exactly `expected` (the caller has checked that it is a regular
    /// file of that size): read in chunks, stopping at the first difference, never more than
    /// `expected.count + 1` bytes, so no file is held in memory to be compared.
    package static func holds(fd: Int32, exactly expected: [UInt8]) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65536) { buffer -> Bool in
            expected.withUnsafeBytes { expected -> Bool in
                var offset = 0
                while offset < expected.count {
                    let n = Glibc.read(fd, buffer.baseAddress!, min(buffer.count, expected.count - offset))
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return false }
                    if memcmp(buffer.baseAddress!, expected.baseAddress! + offset, n) != 0 { return false }
                    offset += n
                }
                // Exactly the expected size: nothing more to read.
                return Glibc.read(fd, buffer.baseAddress!, 1) == 0
            }
        }
    }

    /// "16 MiB", "1 KiB", "1026 bytes".
    static func describe(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
