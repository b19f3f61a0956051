import Foundation
import VPNProvCLI
import VPNProvTestSupport

// `vpnprov` with the test seams switched on, built for the tests and never installed: the crash tests
// kill it at a chosen write step (VPNPROV_CRASH_AFTER_WRITES, VPNPROV_CRASH_SIGNAL) or count the steps
// (VPNPROV_WRITE_STEPS_FILE), and VPNPROV_NOW replaces the clock. docs/testing.md describes them.
let environment = ProcessInfo.processInfo.environment
CrashAfterWrites.install(from: environment)
var now = Date()
if let text = environment[TestClock.variable], !text.isEmpty {
    guard let date = TestClock.parse(text) else {
        FileHandle.standardError.write(
            Data(
                "vpnprov-testhooks: \(TestClock.variable) must be seconds since 1970 or an ISO 8601 date or time, found '\(text)'\n"
                    .utf8))
        exit(2)
    }
    now = date
}
let status = CommandLineTool.main(arguments: Array(CommandLine.arguments.dropFirst()), now: now)
CrashAfterWrites.recordCount(from: environment)
exit(status)
