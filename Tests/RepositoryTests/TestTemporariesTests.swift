import Foundation
import Glibc
import Testing
import VPNProvTestFixtures

@Suite(.temporaries) struct TestTemporariesTests {
    @Test func eachTestHasADirectoryOfItsOwnBelowTheRoot() throws {
        let directory = try #require(TestTemporaries.current)
        #expect(directory.hasPrefix(TestTemporaries.root + "/test-"))
        #expect(try temporaryDirectory().hasPrefix(directory + "/"))
        if geteuid() == 0 && ProcessInfo.processInfo.environment["VPNPROV_TEST_TMPFS"] != "0" {
            #expect(TestTemporaries.isMountPoint(TestTemporaries.root), "the root is no tmpfs of its own")
        }
    }

    /// The exit check is no rubber stamp: this test bundle, run on the one test that leaves a
    /// directory behind (outside a `.temporaries` suite), exits 1 and names what was left, and its
    /// root is gone afterwards.
    @Test func aRunThatLeavesADirectoryFails() throws {
        let dir = try temporaryDirectory()
        let run = try Subprocess.run(
            CommandLine.arguments[0], ["--testing-library", "swift-testing", "--filter", "TemporariesLeftOnPurpose"],
            environment: ["VPNPROV_TEST_LEAVE_A_DIRECTORY": "1"],
            inheriting: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("VPNPROV_") }, directory: dir,
            timeout: .seconds(300))
        let output = run.output
        #expect(run.exitCode == 1 && !run.timedOut, "\(output.suffix(500))")
        #expect(output.contains("error: the tests left 1 temporary entry in "), "\(output.suffix(500))")
        #expect(output.contains("left-on-purpose-"), "\(output.suffix(500))")
        let root =
            (TestTemporaries.root as NSString).deletingLastPathComponent
            + "/\(TestTemporaries.prefix)\(run.pid)"
        #expect(!FileManager.default.fileExists(atPath: root), "\(root) is still there")
    }
}

/// Leaves a directory behind on purpose, for `aRunThatLeavesADirectoryFails` (which runs it alone).
@Suite("Leaves a directory on purpose (run alone by aRunThatLeavesADirectoryFails)") struct TemporariesLeftOnPurpose {
    @Test(
        .enabled(
            if: ProcessInfo.processInfo.environment["VPNPROV_TEST_LEAVE_A_DIRECTORY"] == "1",
            "run only by TestTemporariesTests.aRunThatLeavesADirectoryFails"))
    func leavesADirectory() throws {
        _ = try temporaryDirectory("left-on-purpose")
    }
}
