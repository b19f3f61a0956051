import Foundation
import Glibc
import Testing
import VPNProvSupport

/// Where the tests keep their files (state directories with private keys among them), and the proof that
/// none is left behind: one implementation (`TemporaryRoot`) for the two roots a test process has.
///
/// - `TestTemporaries`: `<tmp>/vpnprov-tests-<pid>` (mode 0700), the unit tests' files. Each test of a suite
///   marked `.temporaries` gets its own directory below it, which the trait removes when the test ends,
///   passed, failed or thrown (`temporaryDirectory()` creates inside it). When the process exits, the root
///   must be empty: anything left (a test outside such a suite that forgot its files, a write into the
///   default working directory) is listed on stderr, removed, and the process exits 1, so `swift test` fails.
/// - `Scratch`: `<tmp>/vpnp-e2e-<pid>` (mode 0755: the labs' daemons run as other users and read their files
///   there), the end-to-end tests' long-lived fixtures (generated trees, PKIs, daemons' files), which live as
///   long as the run; every daemon that used it has been stopped by the time the process exits. Its removal
///   at exit must succeed, or the process exits 1.
///
/// A root whose process is gone (killed, or it trapped) is removed by the next run that creates one. As root
/// each root is a tmpfs of its own (`VPNPROV_TEST_TMPFS=0` turns that off): vpnprov syncs the file system it
/// writes to (syncfs), which on the machine's disk waits for every other writer's dirty pages (measured:
/// `generate` of 80 users 4-9 s on the disk under load, 1-2.4 s on tmpfs). A process kill — what the crash
/// tests inject — loses nothing that sync would have saved, so the proofs are the same; unmounting at exit
/// also drops every byte. Without root a root is a plain directory. `.ci/run` looks for leftovers by these
/// names' prefixes (`vpnprov-*`, `vpnp-*`).
package struct TemporaryRoot: Sendable {
    /// The name's prefix; the process id follows it.
    package let prefix: String
    package let mode: mode_t
    /// What the exit check calls the root in its message.
    let what: String
    /// The tmpfs's name in the mount table.
    let mountName: String
    /// Whether the root must be empty at exit (else only its removal must succeed).
    let mustBeEmptyAtExit: Bool

    package var path: String {
        NSTemporaryDirectory().replacingOccurrences(of: "/+$", with: "", options: .regularExpression)
            + "/\(prefix)\(TemporaryRoot.pid)"
    }

    package static let pid = getpid()

    /// Creates (and, as root, mounts) the root, after removing the roots of earlier runs whose process is gone.
    func create() -> String {
        removeStale()
        let path = path
        try? FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: Int(mode)])
        if geteuid() == 0, ProcessInfo.processInfo.environment["VPNPROV_TEST_TMPFS"] != "0" {
            _ = mount(mountName, path, "tmpfs", 0, "mode=0\(String(mode, radix: 8)),size=4g")
        }
        return path
    }

    /// At process exit: what is left (when the root must be empty) is named, the root is removed, and a
    /// leftover or a failed removal ends the process with status 1. Returns normally when all is well.
    func finish(alsoRemoving others: [String] = []) {
        let path = path
        let left =
            mustBeEmptyAtExit ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() : []
        Self.remove(path)
        var message = ""
        if !left.isEmpty {
            let shown = left.prefix(10).joined(separator: ", ") + (left.count > 10 ? ", ..." : "")
            message =
                "error: the tests left \(left.count) temporary entr\(left.count == 1 ? "y" : "ies") in \(path) (now removed): \(shown)\n"
        } else if FileManager.default.fileExists(atPath: path) {
            message = "error: the \(what) \(path) could not be removed\n"
        }
        guard !message.isEmpty else { return }
        FileHandle.standardError.write(Data(message.utf8))
        // _exit skips the exit handlers not yet run: remove the other roots here.
        for other in others where FileManager.default.fileExists(atPath: other) { Self.remove(other) }
        fflush(nil)
        _exit(1)
    }

    /// Unmounts (when it is a mount point) and removes a root.
    static func remove(_ path: String) {
        if isMountPoint(path) { _ = umount2(path, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: path)
    }

    package static func isMountPoint(_ path: String) -> Bool {
        var own = stat()
        var parent = stat()
        return stat(path, &own) == 0 && stat(path + "/..", &parent) == 0 && own.st_dev != parent.st_dev
    }

    /// True when a process with that id exists.
    package static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Roots of earlier runs whose process is gone.
    func removeStale() {
        let tmp = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix(prefix) {
            guard let owner = Int32(name.dropFirst(prefix.count)), owner != Self.pid else { continue }
            if !Self.processExists(owner) { Self.remove(tmp + "/" + name) }
        }
    }

    static let unit = TemporaryRoot(
        prefix: "vpnprov-tests-", mode: 0o700, what: "test directory", mountName: "vpnprov-tests",
        mustBeEmptyAtExit: true)
    static let scratch = TemporaryRoot(
        prefix: "vpnp-e2e-", mode: 0o755, what: "end-to-end scratch directory", mountName: "vpnprov-e2e",
        mustBeEmptyAtExit: false)
}

/// The unit tests' files (see `TemporaryRoot`).
package enum TestTemporaries {
    package static let prefix = TemporaryRoot.unit.prefix
    package static let pid = TemporaryRoot.pid

    /// The current test's directory (set by the `.temporaries` trait).
    @TaskLocal package static var current: String?

    /// `<tmp>/vpnprov-tests-<pid>`, created (and mounted, as root) on first use.
    package static let root: String = {
        let path = TemporaryRoot.unit.create()
        atexit { TemporaryRoot.unit.finish(alsoRemoving: [TemporaryRoot.scratch.path]) }
        return path
    }()

    /// A fresh directory: below the current test's directory, else directly below the root (where
    /// the test must remove it itself, or the run fails at exit).
    package static func makeDirectory(_ label: String) throws -> String {
        let path = (current ?? root) + "/\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    package static func isMountPoint(_ path: String) -> Bool { TemporaryRoot.isMountPoint(path) }
}

/// The end-to-end tests' scratch space (see `TemporaryRoot`) and numbers unique within the process.
package enum Scratch {
    /// Prefix of every namespace and temporary directory the end-to-end harness creates; followed by our pid.
    package static let prefix = "vpnp"
    package static let pid = TemporaryRoot.pid

    private static let counter = Locked(0)

    /// A number unique within this process.
    package static func next() -> Int {
        counter.withLock {
            $0 += 1
            return $0
        }
    }

    /// `<tmp>/vpnp-e2e-<pid>`; created on first use and removed when the process exits.
    package static let directory: URL = {
        let url = URL(fileURLWithPath: TemporaryRoot.scratch.create())
        atexit { TemporaryRoot.scratch.finish() }
        return url
    }()

    /// Where `directory` is, without creating it (a run whose filter leaves out every end-to-end test
    /// still evaluates their conditions, and should create nothing).
    package static var path: String { TemporaryRoot.scratch.path }

    /// A fresh directory below `directory`.
    package static func makeDirectory(_ label: String) throws -> URL {
        let url = directory.appendingPathComponent("\(label)-\(next())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// True when a process with that id exists.
    package static func processExists(_ pid: Int32) -> Bool { TemporaryRoot.processExists(pid) }

    /// Removes the scratch directories of earlier runs whose process is gone.
    package static func removeStaleDirectories() { TemporaryRoot.scratch.removeStale() }
}

/// Gives each test of the suite its own temporary directory and removes it when the test ends.
package struct TemporariesTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let directory = TestTemporaries.root + "/test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await TestTemporaries.$current.withValue(directory) { try await function() }
    }
}

extension Trait where Self == TemporariesTrait {
    /// Every test of the suite gets a temporary directory of its own, removed when it ends.
    package static var temporaries: Self { Self() }
}

/// A fresh empty directory for the current test (removed with it when its suite is `.temporaries`).
package func temporaryDirectory(_ label: String = "dir") throws -> String {
    try TestTemporaries.makeDirectory(label)
}
