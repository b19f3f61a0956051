import Foundation
import Glibc
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

@testable import VPNProvOutputTree

/// The output tree's bookkeeping (`.vpnprov-stat`, `.vpnprov-cache`) is a hint: damaged, it is
/// discarded, never a crash, and the next `generate` repairs the tree. Files are read back through
/// the one bounded reader, so a huge file at a cached path is not read at all.
/// Runs the built binary: before the fix these runs died with SIGILL.
@Suite(.serialized, .temporaries) struct OutputCacheRobustnessTests {
    /// A site with the example inventory, generated twice (the second run records every file's stat).
    static func site() throws -> (parent: String, dir: String) {
        let parent = try temporaryDirectory()
        let dir = parent + "/site"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try String(contentsOfFile: Repository.example, encoding: .utf8).write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let run = try VPNProvBinary.run(["generate"], in: dir)
            try #require(run.status == 0, "\(run.err.suffix(300))")
        }
        return (parent, dir)
    }

    static func expectClean(_ run: VPNProvBinary.Outcome, _ what: String) {
        #expect(!run.killed, "\(what) crashed: \(run.err.suffix(300))")
    }

    /// `generate` then `check` succeed and agree: the tree is repaired.
    static func expectRepaired(_ dir: String, _ what: String) throws {
        let generate = try VPNProvBinary.run(["generate"], in: dir)
        expectClean(generate, "generate \(what)")
        #expect(generate.status == 0, "generate \(what): \(generate.err.suffix(300))")
        let check = try VPNProvBinary.run(["check"], in: dir)
        #expect(check.status == 0 && !check.killed, "check after \(what): \(check.err.suffix(300))")
    }

    /// A stat header whose record count overflows `count * 32` (and one that simply does not fit):
    /// `StatCache` trapped on the multiplication in both `generate` and `check`.
    @Test(arguments: [Int.max / 16, 1 << 59, 3])
    func statHeaderWithImpossibleCountIsIgnored(_ count: Int) throws {
        #expect(
            StatCache(
                bytes: Array("vpnprov-stat 1 \(String(repeating: "0", count: 64)) \(count)\n".utf8),
                cacheDigest: String(repeating: "0", count: 64), written: timespec()) == nil)
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let (parent, dir) = try Self.site()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let cache = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/out/" + RenderCache.fileName)))
        let crafted =
            Array("vpnprov-stat 1 \(hexString(Digest.sha256(cache))) \(count)\n".utf8)
            + [UInt8](repeating: 0, count: 64)
        try Data(crafted).write(to: URL(fileURLWithPath: dir + "/out/" + StatCache.fileName))
        let check = try VPNProvBinary.run(["check"], in: dir)
        Self.expectClean(check, "check")
        #expect(check.status == 0, "check with a crafted stat file: \(check.err.suffix(300))")
        try Self.expectRepaired(dir, "with a crafted stat file")
        #expect(FileManager.default.contents(atPath: dir + "/out/" + StatCache.fileName) != Data(crafted))
    }

    /// A render cache that is garbage or cut off mid-line is no cache: everything is checked again.
    @Test(arguments: ["garbage", "truncated", "huge-count"])
    func damagedRenderCacheIsIgnored(_ damage: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let (parent, dir) = try Self.site()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let path = dir + "/out/" + RenderCache.fileName
        let cache = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let damaged: [UInt8]
        switch damage {
        case "garbage": damaged = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        case "truncated": damaged = Array(cache.prefix(cache.count / 2 + 7))
        default:
            damaged = Array(
                "vpnprov-cache 1\nuser alice x\nfile \(String(repeating: "f", count: 64)) 0600 \(String(repeating: "a/", count: 3000))x\n"
                    .utf8)
        }
        try Data(damaged).write(to: URL(fileURLWithPath: path))
        let check = try VPNProvBinary.run(["check"], in: dir)
        Self.expectClean(check, "check")
        try Self.expectRepaired(dir, "with a \(damage) render cache")
        #expect(FileManager.default.contents(atPath: path) == Data(cache))
    }

    /// A 200 GB sparse file where the render cache vouches for a README: it was read whole
    /// (`readExactly(count: st_size)`), an allocation of 200 GB. Now it is refused unread and rewritten.
    @Test func hugeSparseFileAtACachedPathIsRewritten() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let (parent, dir) = try Self.site()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let readme = dir + "/out/clients/alice/README"
        let original = FileManager.default.contents(atPath: readme)
        #expect(truncate(readme, 200 << 30) == 0)
        let check = try VPNProvBinary.run(["check"], in: dir)
        Self.expectClean(check, "check")
        #expect(
            check.status == 1 && check.out.contains("stale: clients/alice/README"),
            "\(check.out) \(check.err.suffix(300))")
        try Self.expectRepaired(dir, "with a huge sparse README")
        #expect(FileManager.default.contents(atPath: readme) == original)
    }
}
