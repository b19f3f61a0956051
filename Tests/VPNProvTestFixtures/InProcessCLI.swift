import Foundation
import Testing
import VPNProvCLI
import VPNProvTestHarness
import VPNProvTestSupport

/// Runs `vpnprov <arguments>` in-process in `directory` and returns (exit code, stdout, stderr), within a
/// deadline of its own (`Deadline`: a command that blocks, on a FIFO say, ends the run instead of hanging it;
/// a loaded machine only slows it). Afterwards it checks that neither output holds a secret of the inventory or the state involved
/// (see `SecretLeaks`).
package func vpnprov(
    _ arguments: [String], in directory: String = TestTemporaries.current ?? TestTemporaries.root,
    environment: [String: String] = [:], now: Date = Date(), sourceLocation: Testing.SourceLocation = #_sourceLocation
) -> (code: Int32, out: String, err: String) {
    let (console, capture) = Console.capturing()
    let code = Deadline.watch("vpnprov \(arguments.first ?? "")", seconds: 300) {
        CommandLineTool.run(
            arguments: arguments, console: console, environment: environment, currentDirectory: directory, now: now)
    }
    let (inventories, states) = involvedPaths(arguments, in: directory)
    let secrets = SecretLeaks.secrets(stateDirectories: states, inventories: inventories, environment: environment)
    SecretLeaks.expectNone(
        in: capture.stdout + "\n" + capture.stderr, secrets, what: "output of vpnprov \(arguments.first ?? "")",
        sourceLocation: sourceLocation)
    return (code, capture.stdout, capture.stderr)
}

/// The inventories and state directories a command line may touch: the named ones and the defaults.
func involvedPaths(_ arguments: [String], in directory: String) -> (inventories: [String], states: [String]) {
    func absolute(_ p: String) -> String { p.hasPrefix("/") ? p : directory + "/" + p }
    var inventories = [absolute("inventory.yaml"), absolute("inventory.yml")]
    var states = [absolute("state")]
    var i = 0
    while i < arguments.count {
        let a = arguments[i]
        if a == "--state", i + 1 < arguments.count {
            states.append(absolute(arguments[i + 1]))
            i += 1
        } else if a.hasPrefix("--state=") {
            states.append(absolute(String(a.dropFirst("--state=".count))))
        } else if a.hasSuffix(".yaml") || a.hasSuffix(".yml") {
            let path = absolute(a)
            inventories.append(path)
            states.append((path as NSString).deletingLastPathComponent + "/state")
        }
        i += 1
    }
    return (inventories, states)
}
