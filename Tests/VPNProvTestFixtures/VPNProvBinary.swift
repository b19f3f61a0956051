import Foundation
import Testing
import VPNProvTestHarness

/// Runs the built `vpnprov` binary (next to the test bundle) as a child process, or with `testHooks`
/// `vpnprov-testhooks`, the same command with the test seams (crash steps, test clock) switched on.
package enum VPNProvBinary {
    package static var path: String { binary("vpnprov") }
    package static var testHooksPath: String { binary("vpnprov-testhooks") }

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

    /// Runs the binary in `directory`, with the test process's environment less its `VPNPROV_` variables plus
    /// `extra`; a run past its own deadline (not the test's, which would count from when the test was queued)
    /// is killed and thrown.
    package static func run(
        _ arguments: [String], in directory: String, environment extra: [String: String] = [:], testHooks: Bool = false
    ) throws -> Outcome {
        let result = try Subprocess.run(
            testHooks ? testHooksPath : path, arguments, environment: extra,
            inheriting: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("VPNPROV_") },
            directory: directory, timeout: .seconds(deadlineSeconds))
        guard !result.timedOut else {
            throw DeadlineExceeded(what: "vpnprov \(arguments.joined(separator: " "))", seconds: deadlineSeconds)
        }
        return Outcome(status: result.exitCode, killed: result.killedBySignal, out: result.stdout, err: result.stderr)
    }

    /// Runs the binary as an operator would (the end-to-end tests), with the test process's environment less its
    /// `VPNPROV_` variables plus `environment`: what it printed and how it ended, a run past `timeout` killed.
    package static func run(
        _ arguments: [String], environment extra: [String: String] = [:], timeout: Duration = .seconds(120)
    ) throws -> ProgramResult {
        try Subprocess.run(
            path, arguments, environment: extra,
            inheriting: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("VPNPROV_") },
            timeout: timeout)
    }
}
