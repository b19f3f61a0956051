import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads files that come from outside the program (inventory, secret files, templates, the state)
/// with a size limit: anything but a regular file is refused before a byte is read (a FIFO or a
/// device would block or never end), the size is checked from `fstat` first (a huge or sparse file
/// fails at once) and again while reading (a file that grows). The limits are documented in
/// docs/security.md.
enum BoundedFile {
    /// Largest inventory file.
    static let inventoryLimit = 16 << 20
    /// Largest `file:` secret: a 1024-byte secret and its line ending.
    static let secretLimit = SecretPolicy.maxBytes + 2
    /// Largest template file.
    static let templateLimit = 1 << 20
    /// Largest state file other than the index and the secrets file (PEM keys, certificates, CRL, p12).
    static let stateFileLimit = 1 << 20
    /// Largest `index.json` and `secrets.json` (about 2 KiB per certificate or user: 100,000s fit).
    static let stateIndexLimit = 512 << 20

    struct Failure: Error {
        var reason: String
    }

    /// The whole file at `path`, refusing non-regular files and files over `limit` bytes. With
    /// `followSymlinks: false` a symlink as the last component is refused too.
    static func read(_ path: String, limit: Int, followSymlinks: Bool = true) throws(Failure) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ELOOP && !followSymlinks { throw Failure(reason: "is a symbolic link") }
            throw Failure(reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Failure(reason: String(cString: strerror(errno))) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw Failure(reason: "is not a regular file") }
        let tooLarge = Failure(reason: "is larger than \(describe(limit))")
        guard st.st_size <= limit else { throw tooLarge }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(st.st_size))
        var chunk = [UInt8](repeating: 0, count: min(65536, limit + 1))
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw tooLarge }
        }
        return bytes
    }

    /// "16 MiB", "1 KiB", "1026 bytes".
    static func describe(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
