import Foundation
import Glibc
import Testing

/// Where the unit tests keep their files (state directories with private keys among them), and the
/// proof that none is left behind.
///
/// Everything lives below one directory per test process, `<tmp>/vpnprov-tests-<pid>`:
/// - each test of a suite marked `.temporaries` gets its own directory below it, which the trait
///   removes when the test ends, passed, failed or thrown (`temporaryDirectory()` creates inside it);
/// - when the process exits, the root must be empty: anything left (a test outside such a suite that
///   forgot its files, a write into the default working directory) is listed on stderr, removed, and
///   the process exits 1, so `swift test` fails;
/// - a root whose process is gone (killed, or it trapped) is removed by the next run.
///
/// As root the root is a tmpfs of its own: vpnprov syncs the file system it writes to (syncfs), which
/// on the machine's disk waits for every other writer's dirty pages (measured: `generate` of 80 users
/// 4-9 s on the disk under load, 1-2.4 s on tmpfs). A process kill — what the crash tests inject —
/// loses nothing that sync would have saved, so the proofs are the same; unmounting at exit also drops
/// every byte. Without root the root is a plain directory.
package enum TestTemporaries {
    package static let prefix = "vpnprov-tests-"
    package static let pid = getpid()

    /// The current test's directory (set by the `.temporaries` trait).
    @TaskLocal package static var current: String?

    /// `<tmp>/vpnprov-tests-<pid>`, created (and mounted, as root) on first use.
    package static let root: String = {
        removeStaleRoots()
        let path =
            NSTemporaryDirectory().replacingOccurrences(of: "/+$", with: "", options: .regularExpression)
            + "/\(prefix)\(pid)"
        try? FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if geteuid() == 0, ProcessInfo.processInfo.environment["VPNPROV_TEST_TMPFS"] != "0" {
            mounted = mount("vpnprov-tests", path, "tmpfs", 0, "mode=0700,size=4g") == 0
        }
        atexit { TestTemporaries.finish() }
        return path
    }()

    package nonisolated(unsafe) private(set) static var mounted = false

    /// A fresh directory: below the current test's directory, else directly below the root (where
    /// the test must remove it itself, or the run fails at exit).
    package static func makeDirectory(_ label: String) throws -> String {
        let path = (current ?? root) + "/\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs at process exit: the root must be empty.
    package static func finish() {
        let left = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
        removeRoot(root, mounted: mounted)
        guard !left.isEmpty else { return }
        let shown = left.prefix(10).joined(separator: ", ") + (left.count > 10 ? ", ..." : "")
        let message =
            "error: the tests left \(left.count) temporary entr\(left.count == 1 ? "y" : "ies") in \(root) (now removed): \(shown)\n"
        FileHandle.standardError.write(Data(message.utf8))
        // _exit skips the exit handlers not yet run, among them the end-to-end harness's, which
        // removes this process's scratch directory: remove it here.
        let scratch = (root as NSString).deletingLastPathComponent + "/vpnp-e2e-\(pid)"
        if FileManager.default.fileExists(atPath: scratch) { removeRoot(scratch, mounted: false) }
        fflush(nil)
        _exit(1)
    }

    static func removeRoot(_ path: String, mounted: Bool) {
        if mounted || isMountPoint(path) { _ = umount2(path, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: path)
    }

    package static func isMountPoint(_ path: String) -> Bool {
        var own = stat()
        var parent = stat()
        return stat(path, &own) == 0 && stat(path + "/..", &parent) == 0 && own.st_dev != parent.st_dev
    }

    /// Roots of earlier runs whose process is gone.
    static func removeStaleRoots() {
        let tmp = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix(prefix) {
            guard let owner = Int32(name.dropFirst(prefix.count)), owner != pid else { continue }
            if kill(owner, 0) != 0 && errno == ESRCH { removeRoot(tmp + "/" + name, mounted: false) }
        }
    }
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
