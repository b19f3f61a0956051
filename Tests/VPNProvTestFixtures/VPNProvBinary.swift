import Foundation
import Testing
import VPNProvTestSupport

/// Runs the built `vpnprov` binary (next to the test bundle) as a child process, or with `testHooks`
/// `vpnprov-testhooks`, the same command with the test seams (crash steps, test clock) switched on.
package enum VPNProvBinary {
    package static var path: String { binary("vpnprov") }
    static var testHooksPath: String { binary("vpnprov-testhooks") }

    package static func binary(_ name: String) -> String {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path
    }

    package struct Outcome {
        package var status: Int32
        package var killed: Bool
        package var out: String
        package var err: String
    }

    struct DeadlineExceeded: Error, CustomStringConvertible {
        var what: String
        var seconds: Int
        var description: String { "\(what) did not finish within \(seconds) s: killed" }
    }

    /// How long one run of the binary may take (the longest, a generate of the crash fixtures, takes a few
    /// seconds on a quiet machine).
    static let deadlineSeconds = 300

    package static func run(
        _ arguments: [String], in directory: String, environment extra: [String: String] = [:], testHooks: Bool = false
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testHooks ? testHooksPath : path)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("VPNPROV_") }
        environment.merge(extra) { $1 }
        process.environment = environment
        // Files, not pipes: nothing can block on a full pipe.
        let outPath = directory + "/../\(UUID().uuidString).out"
        let errPath = directory + "/../\(UUID().uuidString).err"
        guard FileManager.default.createFile(atPath: outPath, contents: nil),
            FileManager.default.createFile(atPath: errPath, contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.standardInput = FileHandle.nullDevice
        let exited = ChildExit()
        exited.handle(process)
        try process.run()
        exited.watch(process.processIdentifier)
        // A deadline of the run's own (not the test's, which would count from when the test was queued).
        if !exited.wait(for: .seconds(deadlineSeconds)) {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(for: .seconds(30))
            throw DeadlineExceeded(what: "vpnprov \(arguments.joined(separator: " "))", seconds: deadlineSeconds)
        }
        let ended = exited.status ?? ChildExit.Status(code: -1, killedBySignal: false)
        return Outcome(
            status: ended.code, killed: ended.killedBySignal,
            out: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            err: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}
