import Foundation
import Glibc
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

@testable import VPNProvOutputTree

/// `.vpnprov-stat` lets a run trust an untouched output file without hashing it; every way of changing
/// a file must still be noticed.
@Suite(.temporaries) struct StatCacheTests {
    static func stat(_ path: String) -> Glibc.stat {
        var st = Glibc.stat()
        _ = lstat(path, &st)
        return st
    }

    /// The stat file for a one-file cache over `dir/a`, written after the file.
    static func fixture() throws -> (dir: String, cache: [UInt8], root: Int32) {
        let dir = try temporaryDirectory()
        write("hello\n", to: dir + "/a")
        let cache = Array("vpnprov-cache 1\nuser u f\nfile \(String(repeating: "0", count: 64)) 0644 a\n".utf8)
        let root = open(dir, O_RDONLY | O_DIRECTORY)
        return (dir, cache, root)
    }

    @Test func anUntouchedFileIsTrustedAndEveryChangeIsNot() throws {
        let (dir, cache, root) = try Self.fixture()
        defer { close(root) }
        let encoded = try #require(StatCache.encode(cache: cache, root: root))
        let digest = hexString(Digest.sha256(cache))
        #expect(encoded.starts(with: Array("vpnprov-stat 1 \(digest) 1\n".utf8)))
        // Recorded later than the file changed: trusted.
        let later = timespec(tv_sec: Self.stat(dir + "/a").st_ctim.tv_sec + 1, tv_nsec: 0)
        let stats = try #require(StatCache(bytes: encoded, cacheDigest: digest, written: later))
        #expect(stats.trusts(Self.stat(dir + "/a"), ordinal: 0))
        #expect(!stats.trusts(Self.stat(dir + "/a"), ordinal: 1))
        // Recorded in the same tick as the file's last change: possibly racy, not trusted.
        let same = try #require(StatCache(bytes: encoded, cacheDigest: digest, written: Self.stat(dir + "/a").st_ctim))
        #expect(!same.trusts(Self.stat(dir + "/a"), ordinal: 0))
        // Another cache's stat file is not used at all.
        #expect(StatCache(bytes: encoded, cacheDigest: String(repeating: "A", count: 64), written: later) == nil)
        #expect(StatCache(bytes: encoded.dropLast(), cacheDigest: digest, written: later) == nil)

        // Same size, content changed, modification time put back: the change time moved.
        let before = Self.stat(dir + "/a")
        write("HELLO\n", to: dir + "/a")
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, dir + "/a", &times, 0) == 0)
        #expect(Self.stat(dir + "/a").st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        let afterEdit = try #require(
            StatCache(
                bytes: encoded, cacheDigest: digest,
                written: timespec(tv_sec: Self.stat(dir + "/a").st_ctim.tv_sec + 5, tv_nsec: 0)))
        #expect(!afterEdit.trusts(Self.stat(dir + "/a"), ordinal: 0))
    }

    /// A run from scratch takes the records of the files it writes whole in a new user's folder as it
    /// writes them, and the others with `fstatat` at the end: the records must be exactly what a run
    /// that reads every file's status afterwards makes (here: the next run, once the stat file is gone).
    @Test func recordsTakenAsFilesAreWrittenAreThoseReadAfterwards() throws {
        let dir = try temporaryDirectory()
        try String(contentsOfFile: Repository.example, encoding: .utf8).write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let statFile = dir + "/out/" + StatCache.fileName
        let taken = try Data(contentsOf: URL(fileURLWithPath: statFile))
        #expect(unlink(statFile) == 0)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let read = try Data(contentsOf: URL(fileURLWithPath: statFile))
        #expect(taken.count > 32 * 20 && taken == read)
    }

    @Test func anEditThatKeepsSizeAndTimesIsStillDriftAndRepaired() throws {
        let dir = try temporaryDirectory()
        try String(contentsOfFile: Repository.example, encoding: .utf8).write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        // A second run records every file as verified (the first run's files may share the stat file's tick).
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let statFile = dir + "/out/" + StatCache.fileName
        #expect(FileSystemSafetyTests.mode(statFile) == 0o600)
        let header = String(decoding: try Data(contentsOf: URL(fileURLWithPath: statFile)).prefix(15), as: UTF8.self)
        #expect(header == "vpnprov-stat 1 ")

        // Flip one byte of a README in place (same inode, same size), then put its times back.
        let readme = dir + "/out/clients/alice/README"
        let before = Self.stat(readme)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: readme)))
        bytes[0] ^= 0x20
        let fd = open(readme, O_WRONLY)
        #expect(pwrite(fd, bytes, 1, 0) == 1)
        close(fd)
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, readme, &times, 0) == 0)
        #expect(Self.stat(readme).st_ino == before.st_ino && Self.stat(readme).st_size == before.st_size)
        let drift = vpnprov(["check"], in: dir)
        #expect(drift.code == 1)
        #expect(drift.out == "stale: clients/alice/README\n")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: readme)))[0] == bytes[0] ^ 0x20)

        // A mode change alone is noticed too; the stat file is not something check compares.
        #expect(chmod(dir + "/out/clients/alice/README", 0o600) == 0)
        #expect(vpnprov(["check"], in: dir).out == "stale: clients/alice/README\n")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(vpnprov(["check"], in: dir).code == 0)
        // Losing it only costs time.
        #expect(unlink(statFile) == 0)
        #expect(vpnprov(["check"], in: dir).code == 0)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(FileManager.default.fileExists(atPath: statFile))
    }
}
