import Foundation
import Glibc
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Where `generate`, `check` and `revoke` may write. The output tree is meant to be copied and
/// distributed; the state holds the CA key. So neither may contain the other (`--state out/state`
/// would ship the CA key; `--out state` would mix generated files into the state), and the output
/// tree may not be `/` or a system directory (its stale files are removed on every run).
enum DirectoryChecks {
    /// Refused as `--out` or `--state` themselves.
    static let systemDirectories: Set<String> = [
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt",
        "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/usr/bin", "/usr/lib", "/usr/local",
        "/usr/sbin", "/var/lib", "/var/tmp",
    ]
    /// Pseudo file systems: nothing may be written below them.
    static let pseudoFileSystems = ["/proc", "/sys", "/dev"]

    /// Throws a usage error (exit 2) when the directories overlap or one is a system directory.
    static func check(out: String, state: String, environment: [String: String], command: String) throws(CLIError) {
        let o = canonical(out)
        let s = canonical(state)
        for (flag, path, shown) in [("--out", o, out), ("--state", s, state)] {
            var refused = systemDirectories.contains(path) || pseudoFileSystems.contains { isInside(path, $0) }
            if let home = environment["HOME"], !home.isEmpty, canonical(home) == path { refused = true }
            if refused {
                throw CLIError.usage(
                    "\(flag) '\(shown)' is \(path == "/" ? "the root directory" : "a system directory (\(path))"); choose a directory of its own",
                    command: command)
            }
        }
        if o == s {
            throw CLIError.usage(
                "--out and --state are the same directory (\(o)); the state holds the CA key and must stay apart from the output",
                command: command)
        }
        if isInside(s, o) {
            throw CLIError.usage(
                "the state directory \(s) is inside the output directory \(o): the CA key would be distributed with the output",
                command: command)
        }
        if isInside(o, s) {
            throw CLIError.usage(
                "the output directory \(o) is inside the state directory \(s); keep them apart", command: command)
        }
    }

    /// `path` is `directory` or below it (whole components).
    static func isInside(_ path: String, _ directory: String) -> Bool {
        path == directory || path.hasPrefix(directory == "/" ? "/" : directory + "/")
    }

    /// An absolute path with `.`, `..` and repeated slashes resolved, and symbolic links resolved in
    /// the part that exists (so `out/../state` and a link to the state compare equal to the state).
    static func canonical(_ path: String) -> String {
        var parts: [Substring] = []
        for component in path.split(separator: "/") {
            if component == "." { continue }
            if component == ".." {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(component)
        }
        // The longest prefix that exists, through realpath; the rest appended as written.
        var existing = parts.count
        while existing > 0 {
            let prefix = "/" + parts[0..<existing].joined(separator: "/")
            if let resolved = realpath(prefix, nil) {
                defer { free(resolved) }
                let base = String(cString: resolved)
                let rest = parts[existing...].joined(separator: "/")
                return rest.isEmpty ? base : (base == "/" ? "/" : base + "/") + rest
            }
            existing -= 1
        }
        return "/" + parts.joined(separator: "/")
    }
}
