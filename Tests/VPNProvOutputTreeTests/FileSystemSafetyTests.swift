import Foundation
import Glibc
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

@testable import VPNProvOutputTree

/// What vpnprov leaves on disk and where it agrees to write: nothing derived from a secret is more
/// readable than the secret, overlapping or system directories are refused, and the state directory
/// is not followed through symbolic links.
@Suite(.temporaries) struct FileSystemSafetyTests {
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            services: [ikev2-eap, ikev2-cert]
        users:
          alice:
            password: gen
          bob:
            cert: true

        """

    static func directory() throws -> String {
        let dir = try temporaryDirectory()
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return dir
    }

    static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    // MARK: render cache

    @Test func renderCacheIsAsPrivateAsTheSecretsItDigests() throws {
        let dir = try Self.directory()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let cache = dir + "/out/" + RenderCache.fileName
        let text = try String(contentsOfFile: cache, encoding: .utf8)
        // It records the digest of every private file (secrets.conf among them)...
        let secrets = try [UInt8](
            Data(contentsOf: URL(fileURLWithPath: dir + "/out/servers/n1/swanctl/conf.d/secrets.conf")))
        #expect(text.contains(hexString(Digest.sha256(secrets))))
        // ...so only the owner may read it.
        #expect(Self.mode(cache) == 0o600)
        // A cache an older version left readable is tightened on the next run, contents unchanged.
        #expect(chmod(cache, 0o644) == 0)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(Self.mode(cache) == 0o600)
        #expect(try String(contentsOfFile: cache, encoding: .utf8) == text)
        #expect(vpnprov(["check"], in: dir).code == 0)
    }

    // MARK: --out and --state

    @Test(arguments: [
        (["--out", "state"], "are the same directory"),
        (["--out", "state/out"], "is inside the state directory"),
        (["--state", "out/state"], "the CA key would be distributed"),
        (["--out", "."], "the CA key would be distributed"),
        (["--out", "out", "--state", "out/../out/./state"], "the CA key would be distributed"),
        (["--out", "link"], "are the same directory"),
        (["--out", "/"], "is the root directory"),
        (["--out", "/etc"], "a system directory (/etc)"),
        (["--out", "/usr/"], "a system directory (/usr)"),
        (["--out", "/proc/sys/vpn"], "a system directory (/proc/sys/vpn)"),
        // (The test's leak check scans the state directory given: an empty system directory.)
        (["--state", "/media"], "a system directory (/media)"),
    ])
    func overlappingOrSystemDirectoriesAreRefused(_ arguments: [String], _ message: String) throws {
        let dir = try Self.directory()
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "state")
        for command in [["generate"], ["check"], ["revoke", "alice"]] {
            let r = vpnprov(command + arguments, in: dir)
            #expect(r.code == 2, "\(command) \(arguments): \(r.err)")
            #expect(r.err.contains(message), "\(command) \(arguments): \(r.err)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/state").isEmpty)
    }

    @Test func separateDirectoriesAreFine() throws {
        let dir = try Self.directory()
        #expect(vpnprov(["generate", "--out", "o", "--state", "s"], in: dir).code == 0)
        #expect(vpnprov(["generate", "--out", "o/", "--state", "./s"], in: dir).code == 0)
    }

    // MARK: state symlinks

    /// Entries inside the state directory that must not be links, each replaced by a link to a copy
    /// elsewhere: the run refuses (exit 3) and writes nothing through the link.
    @Test(arguments: ["certs", "keys", "p12", "crl", "ca", "index.json", "secrets.json", ".lock"])
    func linkInsideTheStateIsNotFollowed(_ entry: String) throws {
        let dir = try Self.directory()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        // A changed inventory (a new certificate user), so the next run has something to write.
        try (Self.inventory + "  carol:\n    cert: true\n").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let elsewhere = dir + "/elsewhere"
        try FileManager.default.moveItem(atPath: dir + "/state/" + entry, toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: dir + "/state/" + entry, withDestinationPath: elsewhere)
        let before = Self.listing(elsewhere)
        for command in ["generate", "check"] {
            let r = vpnprov([command], in: dir)
            #expect(r.code == 3, "\(entry) \(command): \(r.err)")
            #expect(
                r.err.contains("is a symbolic link; vpnprov does not follow links inside the state directory"),
                "\(r.err)")
        }
        #expect(Self.listing(elsewhere) == before, "something was written through the link")
    }

    @Test func linkedFileInsideAStateDirectoryIsNotRead() throws {
        let dir = try Self.directory()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let certs = dir + "/state/certs"
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: certs).first { $0.hasSuffix(".pem") })
        let copy = dir + "/copy.pem"
        try FileManager.default.moveItem(atPath: certs + "/" + name, toPath: copy)
        try FileManager.default.createSymbolicLink(atPath: certs + "/" + name, withDestinationPath: copy)
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 3, "\(r.err)")
        #expect(r.err.contains("\(name): is a symbolic link"), "\(r.err)")
    }

    /// Names and sizes below `path` (a file or a directory), following nothing.
    static func listing(_ path: String) -> [String: Int] {
        var out: [String: Int] = [:]
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT != S_IFDIR { return [".": Int(st.st_size)] }
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? [] {
            if lstat(path + "/" + name, &st) == 0 { out[name] = Int(st.st_size) }
        }
        return out
    }

    // MARK: full disks

    /// A small tmpfs at `path` for the duration of `body` (root only: the unit tests run as root,
    /// like the end-to-end ones). `resize` grows it, as an operator freeing space would.
    static func withSmallDisk(at path: String, kilobytes: Int, _ body: (_ resize: (Int) throws -> Void) throws -> Void)
        throws
    {
        func run(_ arguments: [String]) throws { try Subprocess.check("/bin/mount", arguments) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try run(["-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=0755", "tmpfs", path])
        defer { _ = try? Subprocess.run("/bin/umount", [path]) }
        try body { size in try run(["-o", "remount,size=\(size)k", path]) }
    }

    static func fleet(users: Int) -> String {
        var text =
            "vpnprov: 1\nname: acme\nnodes:\n  n1:\n    address: 192.0.2.1\n    pool: 10.10.0.0/24\n    services: [ikev2-eap, ikev2-cert]\nusers:\n"
        for u in 0..<users { text += "  u\(u):\n    password: gen\n    cert: true\n" }
        return text
    }

    /// Every entry below `root` (relative paths), links not followed.
    static func entries(_ root: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []).sorted()
    }

    @Test(.enabled(if: getuid() == 0)) func fullOutputDiskLeavesNoDebris() throws {
        let dir = try temporaryDirectory()
        try Self.fleet(users: 30).write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try Self.withSmallDisk(at: dir + "/disk", kilobytes: 64) { resize in
            let r = vpnprov(["generate", "--out", "disk/out"], in: dir)
            #expect(r.code == 3, "\(r.err)")
            #expect(r.err.contains("No space left on device"), "\(r.err)")
            // Neither temporary files nor the directories made for them: the tree it created is gone.
            #expect(Self.entries(dir + "/disk") == [], "\(Self.entries(dir + "/disk"))")
            // Nothing was committed to the state either (the state is committed after the output is staged).
            #expect(!Self.entries(dir + "/state").contains("index.json"))
            try resize(16 << 10)
            #expect(vpnprov(["generate", "--out", "disk/out"], in: dir).code == 0)
            #expect(vpnprov(["check", "--out", "disk/out"], in: dir).code == 0)
        }
    }

    @Test(.enabled(if: getuid() == 0)) func fullStateDiskLeavesNoUnrecordedFiles() throws {
        let dir = try temporaryDirectory()
        try Self.fleet(users: 10).write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try Self.withSmallDisk(at: dir + "/disk", kilobytes: 32) { resize in
            let r = vpnprov(["generate", "--state", "disk/state"], in: dir)
            #expect(r.code == 3, "\(r.err)")
            #expect(r.err.contains("No space left on device"), "\(r.err)")
            // The commit was taken back: no certificate, key, p12 or CRL without index.json, only the lock.
            #expect(Self.entries(dir + "/disk/state") == [".lock"], "\(Self.entries(dir + "/disk/state"))")
            // And the output it had staged was removed with the directories made for it.
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
            try resize(16 << 10)
            #expect(vpnprov(["generate", "--state", "disk/state"], in: dir).code == 0)
            #expect(vpnprov(["check", "--state", "disk/state"], in: dir).code == 0)
            // Everything in the state is recorded in index.json now.
            let index = try String(contentsOfFile: dir + "/disk/state/index.json", encoding: .utf8)
            for entry in Self.entries(dir + "/disk/state/certs") {
                #expect(index.contains(String(entry.dropLast(4))), "\(entry) is not recorded")
            }
        }
    }
}
