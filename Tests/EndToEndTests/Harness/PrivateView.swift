import Foundation
import VPNProvSupport
import VPNProvTestHarness

/// A lab host's own view of a host directory (`/etc`, `/run`), the same on a fresh machine as on one that
/// ran the tests a hundred times.
///
/// `ip netns exec <ns>` bind-mounts `/etc/netns/<ns>/<name>` over `/etc/<name>` only where `/etc/<name>`
/// already exists on the host: a lab node's `/etc/vpnprov` was therefore no overlay on a fresh machine, the
/// role wrote the host's real `/etc/vpnprov`, and every later run found the directory and passed. The
/// harness no longer uses that mechanism (and writes nothing below the host's `/etc`). Instead each lab
/// host that needs files of its own gets a view directory in the scratch directory:
/// - the entries the lab host owns (`own`), real files and directories the harness and the host's
///   processes write, whether or not the host has such an entry;
/// - for every other entry of the host directory, a symbolic link to it through a read-only bind mount of
///   the host directory (`<scratch>/host-view/<dir>`), so programs find the host's files (`/etc/passwd`'s
///   neighbours, `/etc/ssl`, `/etc/alternatives`, …) but cannot change them: a write there fails (EROFS)
///   instead of changing the machine the tests run on. A host entry that is itself a link is copied as a
///   link (a relative `/etc/mtab -> ../proc/self/mounts` keeps resolving from the view).
///
/// Every process started for that lab host runs `mountScript(for:)` first in the private mount namespace
/// `ip netns exec` gives it (`exec(_:_:_:)` does that): the host directory bound read-only to its
/// scratch mount point, then the view bound over it. Bind mounts of the same directories in several mount
/// namespaces see one set of files, so the node's sshd (and everything Ansible runs through it) and its
/// charon share the view as one host would. The kernel drops the mounts with the namespace's last process.
enum PrivateView {
    /// Each namespace's views: (host directory, view), in the order they were made.
    private static let registry = Locked<[String: [(host: String, view: String)]]>([:])

    /// Where the host directory `host` is bound read-only inside a lab host's mount namespace (an empty
    /// directory in the host's own mount namespace).
    private static func hostMountPoint(_ host: String) throws -> String {
        let path = Scratch.directory.appendingPathComponent("host-view" + host).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Creates the view of `host` (`/etc` or `/run`) for the processes of `namespace`, with `own` as the lab
    /// host's own entries (created as empty directories when `directories` names them; files are the
    /// caller's to write). Returns the view's path: what the lab host's processes see at `host`.
    @discardableResult
    static func create(of host: String, for namespace: String, own: [String], directories: [String] = [])
        throws -> String
    {
        let fm = FileManager.default
        let mountPoint = try hostMountPoint(host)
        let view = Scratch.directory.appendingPathComponent("view-\(namespace)" + host).path
        try fm.createDirectory(atPath: view, withIntermediateDirectories: true)
        let owned = Set(own + directories)
        for name in try fm.contentsOfDirectory(atPath: host).sorted() where !owned.contains(name) {
            let source = host + "/" + name
            let target: String
            if let link = try? fm.destinationOfSymbolicLink(atPath: source) {
                target = link
            } else {
                target = mountPoint + "/" + name
            }
            try fm.createSymbolicLink(atPath: view + "/" + name, withDestinationPath: target)
        }
        for name in directories {
            try fm.createDirectory(atPath: view + "/" + name, withIntermediateDirectories: true)
        }
        registry.withLock { $0[namespace, default: []].append((host, view)) }
        return view
    }

    /// The view of `host` that `create(of:for:…)` made for `namespace` (what its processes see at `host`), or nil.
    static func path(of host: String, for namespace: String) -> String? {
        return registry.withLock { $0[namespace]?.last { $0.host == host }?.view }
    }

    /// Forgets the namespace's views (their directories go with the scratch directory or the caller's).
    static func remove(for namespace: String) {
        let views = registry.withLock { $0.removeValue(forKey: namespace) ?? [] }
        for (_, view) in views { try? FileManager.default.removeItem(atPath: view) }
    }

    /// Shell lines that put the namespace's views in place in the calling (private) mount namespace; empty
    /// for a namespace without views. Each line ends in a newline.
    static func mountScript(for namespace: String) -> String {
        let views = registry.withLock { $0[namespace] ?? [] }
        let mount = StrongSwanBuild.mountPath
        return views.map { host, view in
            let point = Scratch.directory.path + "/host-view" + host
            return """
                \(mount) --bind '\(host)' '\(point)'
                \(mount) -o remount,bind,ro '\(point)'
                \(mount) --bind '\(view)' '\(host)'

                """
        }.joined()
    }

    /// The arguments of `ip` that run `program arguments…` in `namespace` with its views in place (plain
    /// `netns exec` for a namespace without views). The shell execs the program: the pid is the program's.
    static func exec(_ namespace: String, _ program: String, _ arguments: [String]) -> [String] {
        let mounts = mountScript(for: namespace)
        if mounts.isEmpty { return ["netns", "exec", namespace, program] + arguments }
        return [
            "netns", "exec", namespace, StrongSwanBuild.shPath, "-c", "set -e\n" + mounts + "exec \"$@\"", "sh",
            program,
        ]
            + arguments
    }
}
