import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvCLI

/// `vpnprov accounts` refuses what it must before it touches a database: a password or a conninfo on
/// the command line, actions without their arguments, options of another action, bad names and limits.
@Suite(.temporaries) struct AccountsCommandTests {
    func refused(_ arguments: [String], _ message: String, environment: [String: String] = [:]) {
        let r = vpnprov(["accounts"] + arguments, environment: environment)
        #expect(r.code == 2, "\(arguments): \(r.err)")
        #expect(r.err.contains(message), "\(arguments): \(r.err)")
        #expect(r.out.isEmpty)
    }

    @Test func refusalsBeforeAnyDatabase() throws {
        let db = ["--database", "env:VPN_ACCOUNTS_DB"]
        refused(["add", "carol", "Carol-Pw-1618", "--tier", "free"] + db, "takes no password argument")
        refused(["add", "carol", "--tier", "free"] + db, "exactly one of --password-file FILE and --password-stdin")
        refused(
            ["add", "carol", "--tier", "free", "--password-stdin", "--password-file", "pw"] + db,
            "exactly one of --password-file FILE and --password-stdin")
        refused(["add", "carol", "--password-stdin"] + db, "'add' needs --tier <tier>")
        refused(
            ["add", "carol", "--tier", "free", "--devices", "0", "--password-stdin"] + db, "invalid device limit '0'")
        refused(["add", "bad name", "--tier", "free", "--password-stdin"] + db, "invalid account name")
        refused(["set-tier", "carol"] + db, "'set-tier' needs <value>")
        refused(["disable"] + db, "'disable' needs <user>")
        refused(["list", "carol"] + db, "unexpected argument 'carol' for 'list'")
        refused(["list", "--tier", "pro"] + db, "'--tier' is not an option of 'list'")
        refused(["frobnicate"] + db, "unknown action 'frobnicate'")
        refused(["disabel", "carol"] + db, "did you mean 'disable'?")
        refused(["list"], "no inventory given and none found")
        try "vpnprov: 1\nname: acme\nnodes:\n  n1: { address: 192.0.2.1, pool: 10.1.0.0/24 }\n".write(
            toFile: try #require(TestTemporaries.current) + "/inventory.yaml", atomically: true, encoding: .utf8)
        refused(["list"], "inventory.yaml has no 'accounts:' section")
        refused(["list", "--database", "host=/tmp user=x password=Secret-77"], "expected env:VAR or file:PATH")
        #expect(!vpnprov(["accounts", "list", "--database", "password=Secret-77"]).err.contains("Secret-77"))
        // A password file that is not there is named, and nothing is printed from it.
        let dir = try #require(TestTemporaries.current)
        let r = vpnprov(
            [
                "accounts", "add", "carol", "--tier", "free", "--password-file", "missing.pw", "--database",
                "env:VPN_DB",
            ],
            in: dir, environment: ["VPN_DB": "host=\(dir) dbname=x"])
        #expect(r.code == 2)
        #expect(r.err.contains("cannot read password file missing.pw"), "\(r.err)")
        // A short password is refused from the file before any connection is tried.
        try "short\n".write(toFile: dir + "/short.pw", atomically: true, encoding: .utf8)
        let short = vpnprov(
            ["accounts", "add", "carol", "--tier", "free", "--password-file", "short.pw", "--database", "env:VPN_DB"],
            in: dir, environment: ["VPN_DB": "host=\(dir) dbname=x"])
        #expect(short.code == 2)
        #expect(short.err.contains("shorter than 8"), "\(short.err)")
        #expect(!short.err.contains("cannot connect"))
    }

    @Test func helpListsTheActions() {
        let r = vpnprov(["accounts", "--help"])
        #expect(r.code == 0)
        for action in AccountsCommand.actions { #expect(r.out.contains("'\(action)"), "\(action)") }
        #expect(vpnprov(["--help"]).out.contains("accounts"))
    }
}
