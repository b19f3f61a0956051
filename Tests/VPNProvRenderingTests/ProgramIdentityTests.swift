import Foundation
import Testing
import VPNProvSupport
import VPNProvTestFixtures

/// The build ID identifies a build of vpnprov for the render cache: it must be the one binutils reads,
/// and anything that is not such a program must give none (the caller then hashes the program).
@Suite(.temporaries) struct ProgramIdentityTests {
    @Test(.needs(.readelf)) func theBuildIDIsTheOneReadelfReads() throws {
        let program = VPNProvBinary.path
        let read = try runTool(["readelf", "-n", program])
        try #require(read.status == 0, "\(read.output)")
        let line = try #require(read.output.split(separator: "\n").first { $0.contains("Build ID:") })
        let expected = String(line.split(separator: ":").last!).trimmingCharacters(in: .whitespaces)
        let id = try #require(ProgramIdentity.gnuBuildID(path: program))
        #expect(id.map { String(format: "%02x", $0) }.joined() == expected)
        #expect(id.count >= 8)
    }

    @Test func anythingElseHasNone() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let program = try [UInt8](Data(contentsOf: URL(fileURLWithPath: VPNProvBinary.path)))
        for (name, bytes) in [
            ("text", Array("not a program\n".utf8)), ("empty", []), ("header-only", Array(program.prefix(64))),
            ("cut", Array(program.prefix(100))),
        ] {
            _ = FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: Data(bytes))
            #expect(ProgramIdentity.gnuBuildID(path: "\(dir)/\(name)") == nil, "\(name)")
        }
        #expect(ProgramIdentity.gnuBuildID(path: "\(dir)/missing") == nil)
    }
}
