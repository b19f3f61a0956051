import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport

extension OutputTree {
    /// Directories below the root opened one component at a time with O_NOFOLLOW (a symlink fails
    /// with ELOOP or ENOTDIR), creating missing ones when asked, and kept open while a batch's files
    /// go to the same few directories.
    final class DirectoryCache {
        let root: Int32
        let create: Bool
        private var open: [String: Int32] = [:]
        /// Directories this cache made (mkdirat succeeded): empty when made.
        private var made: Set<String> = []

        init(root: Int32, create: Bool) {
            self.root = root
            self.create = create
        }

        /// The directory's descriptor (owned by the cache), or nil when it is missing and not created.
        func directory(_ components: ArraySlice<String>, display: String, create: Bool? = nil) throws(OutputError)
            -> Int32?
        {
            try directory(path: components.joined(separator: "/")[...], display: display, create: create ?? self.create)
        }

        /// Directory `component` of `parent` (its path `key`), created first when asked, opened without
        /// following a link and kept open; nil when it is missing and not created.
        private func child(_ component: String, of parent: Int32, key: String, display: String, create: Bool)
            throws(OutputError) -> Int32?
        {
            if create {
                if mkdirat(parent, component, 0o755) == 0 {
                    made.insert(key)
                } else if errno != EEXIST {
                    throw OutputError.errno("cannot create directory for", display)
                }
            }
            let fd = openat(parent, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                if !create && errno == ENOENT { return nil }
                throw OutputError("refusing to write '\(display)': '\(component)' is not a plain directory (symlink?)")
            }
            open[key] = fd
            return fd
        }

        func closeAll() {
            for fd in open.values { close(fd) }
            open = [:]
            lastParent = nil
        }

        /// The directory `place` found last (its path's bytes), and whether this cache created it.
        private var lastParent: (path: [UInt8], fd: Int32, created: Bool)?

        /// The directory holding `path` and the file's name in it, with `checkRelativePath`'s rules;
        /// nil when the directory is missing and not created. A file in the same directory as the one
        /// before costs no splitting of its path (stat records and renames go through long runs).
        func parent(of path: String) throws(OutputError) -> (dir: Int32, name: String)? {
            try place(of: path).map { ($0.dir, $0.name) }
        }

        /// `parent(of:)`, and whether this cache created that directory (so it held nothing before this
        /// cache wrote to it).
        func place(of path: String) throws(OutputError) -> (dir: Int32, name: String, created: Bool)? {
            var path = path
            let found = path.withUTF8 { utf8 in
                Result { () throws(OutputError) in
                    try place(utf8: utf8).map {
                        (
                            $0.dir,
                            String(decoding: UnsafeBufferPointer(rebasing: utf8[$0.nameStart...]), as: UTF8.self),
                            $0.created
                        )
                    }
                }
            }
            return try found.get()
        }

        /// `place(of:)` for a path's UTF-8 bytes in place (the render cache's packed lists): the directory,
        /// where the file's name starts in `path`, and whether this cache created the directory. The one
        /// reading of a path into its directory and name, for staging, renaming, the stat records and
        /// the freshness of a no-op run.
        func place(utf8 path: UnsafeBufferPointer<UInt8>) throws(OutputError)
            -> (dir: Int32, nameStart: Int, created: Bool)?
        {
            let slash = path.lastIndex(of: UInt8(ascii: "/"))
            let parent = UnsafeBufferPointer(rebasing: path[..<(slash ?? 0)])
            let nameStart = slash.map { $0 + 1 } ?? 0
            // A leading slash leaves an empty parent that is not the root.
            guard OutputTree.isPlainComponent(UnsafeBufferPointer(rebasing: path[nameStart...])),
                slash == nil || !parent.isEmpty, OutputTree.isPlainRelativePath(parent)
            else {
                throw OutputError("refusing unsafe output path '\(String(decoding: path, as: UTF8.self))'")
            }
            if let lastParent, lastParent.path.elementsEqual(parent) {
                return (lastParent.fd, nameStart, lastParent.created)
            }
            let parentPath = String(decoding: parent, as: UTF8.self)
            guard
                let fd = try directory(
                    path: parentPath[...], display: String(decoding: path, as: UTF8.self), create: create)
            else { return nil }
            let created = !made.isEmpty && made.contains(parentPath)
            lastParent = (Array(parent), fd, created)
            return (fd, nameStart, created)
        }

        /// The directory at `relative` (`/`-separated names; empty: the root): from the
        /// nearest directory of it already open, each missing level opened (and created when asked)
        /// in turn. Files come sorted, so that is mostly the previous file's directory or its parent,
        /// and the path is neither split nor joined (docs/benchmarks.md, "Why the code is shaped this way").
        private func directory(path relative: Substring, display: String, create: Bool) throws(OutputError) -> Int32? {
            if relative.isEmpty { return root }
            if let fd = open[String(relative)] { return fd }
            // Room for every level of this path, none closed while it is walked.
            if open.count >= 64 { closeAll() }
            var fd = root
            var start = relative.startIndex
            var cut = relative.endIndex
            while let slash = relative[..<cut].utf8.lastIndex(of: UInt8(ascii: "/")) {
                if let found = open[String(relative[..<slash])] {
                    fd = found
                    start = relative.index(after: slash)
                    break
                }
                cut = slash
            }
            while start < relative.endIndex {
                let end = relative[start...].utf8.firstIndex(of: UInt8(ascii: "/")) ?? relative.endIndex
                guard
                    let next = try child(
                        String(relative[start..<end]), of: fd, key: String(relative[..<end]), display: display,
                        create: create)
                else { return nil }
                fd = next
                start = end < relative.endIndex ? relative.index(after: end) : end
            }
            return fd
        }

        /// Every directory this cache created (relative paths).
        var createdDirectories: Set<String> { made }

        /// Whether this cache created the directory (so it held nothing before this cache wrote to it).
        func created(_ components: ArraySlice<String>) -> Bool {
            !made.isEmpty && made.contains(components.joined(separator: "/"))
        }
    }
}
