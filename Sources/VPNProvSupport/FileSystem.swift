import Foundation
import Glibc

/// syncfs(2): flushes one file system (Linux). The Glibc module does not export it; where it is
/// missing, the writer fsyncs every file and directory instead.
package enum FileSystemSync {
    typealias SyncFS = @convention(c) (Int32) -> Int32
    static let function: SyncFS? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: SyncFS.self)
    }()
    package static var available: Bool { function != nil }
    package static func sync(_ fd: Int32) -> Bool { function?(fd) == 0 }
}

/// The process's file-creation mask, read once from /proc (umask(2) cannot be read without
/// changing it, which would race with other threads creating files).
enum FileMode {
    static let processUmask: mode_t? = {
        guard let bytes = try? BoundedFile.read("/proc/self/status", limit: 64 << 10) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("Umask:") {
            return mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        }
        return nil
    }()

    /// True when a file created with `mode` gets exactly `mode` (unknown umask: false).
    static func umaskKeeps(_ mode: mode_t) -> Bool {
        guard let mask = processUmask else { return false }
        return mode & mask == 0
    }
}
