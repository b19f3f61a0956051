import Foundation
import Testing
import VPNProvTestFixtures
import VPNProvTestSupport

/// The harness's wait for a child (`ChildExit`) does not depend on Foundation's own report, which waits for every
/// holder of a socket the child inherited: here a grandchild the child leaves behind holds it, as a daemon that
/// another thread started at the same moment can.
@Suite struct ChildExitTests {
    /// `sh -c script`, started and watched.
    static func shell(_ script: String, stdin: Any = FileHandle.nullDevice) throws -> (Process, ChildExit) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exited = ChildExit()
        exited.handle(process)
        try process.run()
        exited.watch(process.processIdentifier)
        return (process, exited)
    }

    @Test func anExitIsSeenWhileAGrandchildHoldsFoundationsSocket() throws {
        // The grandchild ends when the pipe the test holds closes: no timer involved. (Its input is named as
        // descriptor 3: sh gives a background job /dev/null as standard input.)
        let stdin = Pipe()
        let (process, exited) = try Self.shell("exec 3<&0; cat <&3 >/dev/null & exit 3", stdin: stdin)
        defer { try? stdin.fileHandleForWriting.close() }

        #expect(exited.wait(for: .seconds(60)), "the shell's exit was not seen")
        #expect(exited.status == ChildExit.Status(code: 3, killedBySignal: false))
        // The failure mode is real: Foundation still counts the shell as running, its socket held by `cat`.
        #expect(process.isRunning)
    }

    @Test func aKilledChildIsReportedAsKilled() throws {
        let (_, exited) = try Self.shell("kill -KILL $$")
        #expect(exited.wait(for: .seconds(60)))
        #expect(exited.status == ChildExit.Status(code: SIGKILL, killedBySignal: true))
    }
}
