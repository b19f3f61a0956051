import Foundation
import Glibc
import VPNProvModel
import VPNProvSupport

/// Who may own and write the state directory (docs/security.md, "The state directory is the
/// operator's alone"). Whoever can write it can replace a generated secret (which the next run writes
/// into the servers' files and the profiles) or move the CA away, and whoever owns a file in it can
/// make it writable: so the state directory, its subdirectories and every file in them must belong to
/// the user vpnprov runs as and be writable by nobody else, or nothing is read from them. Modes wider
/// than vpnprov's own (0700 directories, 0600 files: a backup restored with `cp -r`, a umask of 022)
/// only let others read: `check` reports them and every run that commits the state narrows them.
package enum StatePermissions {
    /// An entry whose mode is wider than vpnprov's own.
    package struct Wide: Sendable, Hashable, CustomStringConvertible {
        /// As messages show it (the state directory's path and the entry's).
        package var path: String
        /// The directory holding the entry (the state directory's path, or one of its subdirectories'),
        /// and its name there; nil for the state directory itself.
        var parent: String?
        var name: String
        package var mode: mode_t
        var isDirectory: Bool

        /// vpnprov's own mode for it.
        package var wanted: mode_t { isDirectory ? 0o700 : 0o600 }

        package var description: String {
            "\(path) has mode \(octal(mode)), readable by other users; vpnprov keeps \(isDirectory ? "directories" : "files") "
                + "in the state at \(octal(wanted))"
        }
    }

    package static func octal(_ mode: mode_t) -> String { "0" + String(mode & 0o7777, radix: 8) }

    static func refuse(_ path: String, _ why: String) -> StateError {
        StateError(
            .statePermissions,
            "\(path) \(why): whoever can write the state can replace its secrets or its CA, so vpnprov reads nothing from it "
                + "and nothing was changed. Check that its contents are yours, then give it to the user vpnprov runs as and take "
                + "away others' write access (chown, chmod go-w; vpnprov keeps directories 0700 and files 0600)")
    }

    /// Inspects the entries `names` of the open directory `directory` (shown as `shown`), and with `itself`
    /// the directory: refuses one that another user owns or that group or others may write (symbolic
    /// links, which vpnprov never follows inside the state, excepted) and returns those wider than
    /// vpnprov's own modes.
    static func inspect(_ directory: Int32, shown: String, itself: Bool, names: [String]) throws -> [Wide] {
        let user = geteuid()
        var wide: [Wide] = []
        func check(_ st: stat, path: String, parent: String?, name: String) throws {
            let kind = st.st_mode & S_IFMT
            guard kind != S_IFLNK else { return }
            guard st.st_uid == user else {
                throw refuse(path, "belongs to \(owner(st.st_uid)), not to \(owner(user)) (the user vpnprov runs as)")
            }
            guard st.st_mode & 0o022 == 0 else {
                throw refuse(
                    path,
                    "has mode \(octal(st.st_mode)): \(st.st_mode & 0o002 != 0 ? "every" : "its group's") user can write it"
                )
            }
            let entry = Wide(
                path: path, parent: parent, name: name, mode: st.st_mode & 0o7777, isDirectory: kind == S_IFDIR)
            if entry.mode & ~entry.wanted != 0 { wide.append(entry) }
        }
        if itself {
            var st = stat()
            guard fstat(directory, &st) == 0 else { throw AtomicFile.ioError("cannot read the mode of \(shown)") }
            try check(st, path: shown, parent: nil, name: "")
        }
        for name in names.sorted() {
            var st = stat()
            guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno == ENOENT { continue }
                throw AtomicFile.ioError("cannot read the mode of \(shown)/\(name)")
            }
            try check(st, path: shown + "/" + name, parent: shown, name: name)
        }
        return wide
    }

    /// "uid 65534 (nobody)".
    static func owner(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }

    /// Gives `entry` vpnprov's own mode (its other bits taken away), through the state directory's
    /// descriptors and never through a link.
    static func narrow(_ entry: Wide, in state: StateDirectory) throws {
        let fd: Int32
        if let parent = entry.parent {
            let directory = parent == state.root ? state.fd : try state.subdirectory(String(state.relativePath(parent)))
            guard let directory else { return }
            fd = openat(
                directory, entry.name,
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (entry.isDirectory ? O_DIRECTORY : 0))
            guard fd >= 0 else {
                if errno == ENOENT { return }
                throw AtomicFile.ioError("cannot change the mode of \(entry.path)")
            }
        } else {
            fd = dup(state.fd)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, fchmod(fd, st.st_mode & 0o7777 & entry.wanted) == 0 else {
            throw AtomicFile.ioError("cannot change the mode of \(entry.path)")
        }
    }
}
