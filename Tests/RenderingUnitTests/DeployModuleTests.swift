import Foundation
import Testing
import VPNProvTemplates
import VPNProvTestFixtures

/// The role's module (deploy/roles/vpnprov_node/library/vpnprov_swanctl.py, as vpnprov writes it) run by
/// python3 with a stand-in for Ansible's AnsibleModule: it gets the parameters and `swanctl --list-sas
/// --pretty` output given here, and the test sees which `swanctl --terminate` calls it makes.
@Suite(.temporaries) struct DeployModuleTests {
    static let python = "/usr/bin/python3"

    /// Runs the module's main() (as vpnprov writes it) with python3 and a stand-in for Ansible's
    /// AnsibleModule: `input` is what the stand-in reads (`params`, `check_mode` and whatever `runCommand`
    /// uses), `runCommand` the stand-in's `run_command` method (Python, indented as a method of the class),
    /// which records the swanctl calls in `calls`; returns the JSON object the Python expression `printed`
    /// makes of them and of `result` after the run.
    static func runModule(_ input: [String: Any], runCommand: String, printed: String) throws -> [String: Any] {
        let source = try #require(BuiltinDeployFiles.files["roles/vpnprov_node/library/vpnprov_swanctl.py"])
        let dir = URL(fileURLWithPath: try temporaryDirectory("module"))
        defer { try? FileManager.default.removeItem(at: dir) }
        let module = dir.appendingPathComponent("vpnprov_swanctl.py")
        try source.write(to: module, atomically: true, encoding: .utf8)
        let inputFile = dir.appendingPathComponent("input.json")
        try JSONSerialization.data(withJSONObject: input).write(to: inputFile)
        let driver = """
            import json, os, sys, types
            data = json.load(open(sys.argv[2]))
            calls, result, state = [], {}, {"loaded": False}
            class FakeModule:
                def __init__(self, argument_spec, supports_check_mode):
                    self.params = dict(data["params"])
                    self.check_mode = data["check_mode"]
                def get_bin_path(self, name, required=False, opt_dirs=None):
                    return "/usr/sbin/swanctl"
            \(runCommand)
                def exit_json(self, **kw):
                    result.update(kw); raise SystemExit(0)
                def fail_json(self, **kw):
                    result.update(kw, failed=True); raise SystemExit(1)
            for name in ["ansible", "ansible.module_utils", "ansible.module_utils.basic"]:
                sys.modules[name] = types.ModuleType(name)
            sys.modules["ansible.module_utils.basic"].AnsibleModule = FakeModule
            code = compile(open(sys.argv[1]).read(), sys.argv[1], "exec")
            namespace = {"__name__": "vpnprov_swanctl"}
            exec(code, namespace)
            try:
                namespace["main"]()
            except SystemExit:
                pass
            print(json.dumps(\(printed)))
            """
        let run = try runTool([Self.python, "-c", driver, module.path, inputFile.path])
        guard run.status == 0, let data = run.output.split(separator: "\n").last.map({ Data($0.utf8) }),
            let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw ModuleRunError(output: run.output) }
        return json
    }

    /// Runs the module's main() with `identities` against `listing`; returns (IKE SA ids it terminated, its result).
    static func terminate(_ identities: [String], listing: String, checkMode: Bool = false) throws -> (
        ended: [String], result: [String: Any]
    ) {
        let input: [String: Any] = [
            "params": ["state": "terminated", "connections": [String](), "identities": identities],
            "check_mode": checkMode, "listing": listing,
        ]
        let runCommand = """
                def run_command(self, args):
                    calls.append(args[1:])
                    if args[1:] == ["--list-sas", "--pretty"]:
                        return 0, data["listing"], ""
                    if args[1] == "--terminate":
                        return 0, "", ""
                    return 1, "", "unexpected call"
            """
        let json = try runModule(
            input, runCommand: runCommand,
            printed: #"{"ended": [c[2] for c in calls if c[:1] == ["--terminate"]], "result": result}"#)
        return ((json["ended"] as? [String]) ?? [], (json["result"] as? [String: Any]) ?? [:])
    }

    struct ModuleRunError: Error, CustomStringConvertible {
        var output: String
        var description: String { "the module did not run: \(output)" }
    }

    /// Runs the module's main() with state=ordered against a fake swanctl whose `--list-conns --pretty`
    /// lists `held` until a `--load-conns --file <file>` loads `file` again, and `reloaded` after; returns the
    /// swanctl calls (the temporary empty file's path as "EMPTY") and the module's result.
    static func order(
        _ connections: [String], held: [String], reloaded: [String], checkMode: Bool = false
    ) throws -> (calls: [[String]], result: [String: Any]) {
        func listing(_ names: [String]) -> String {
            names.map { "list-conn event {\n  \($0) {\n    local_addrs = [\n      %any\n    ]\n  }\n}\n" }.joined()
        }
        let input: [String: Any] = [
            "params": [
                "state": "ordered", "connections": connections, "identities": [String](),
                "file": "/etc/swanctl/swanctl.conf",
            ],
            "check_mode": checkMode, "held": listing(held), "reloaded": listing(reloaded),
        ]
        let runCommand = """
                def run_command(self, args):
                    args = args[1:]
                    if args[:2] == ["--load-conns", "--file"] and args[2] != data["params"]["file"]:
                        # The file that unloads everything: it exists, and names no connection.
                        text = open(args[2]).read()
                        calls.append(["--load-conns", "--file", "EMPTY" if "{" not in text else text])
                        return 0, "no connections found, 2 unloaded", ""
                    calls.append(args)
                    if args == ["--list-conns", "--pretty"]:
                        return 0, data["reloaded"] if state["loaded"] else data["held"], ""
                    if args == ["--load-conns", "--file", data["params"]["file"]]:
                        state["loaded"] = True
                        return 0, "successfully loaded 2 connections, 0 unloaded", ""
                    return 1, "", "unexpected call"
            """
        let json = try runModule(input, runCommand: runCommand, printed: #"{"calls": calls, "result": result}"#)
        return ((json["calls"] as? [[String]]) ?? [], (json["result"] as? [String: Any]) ?? [:])
    }

    @Test(.needs(.python3)) func loadsTheConnectionsAgainOnlyWhenCharonHoldsThemInAnotherOrder() throws {
        let generated = ["ikev2-cert", "ikev2-eap"]
        let list = ["--list-conns", "--pretty"]
        // A service added to a running node: charon appended it. Everything is unloaded, then loaded in order.
        let added = try Self.order(generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: generated)
        #expect(
            added.calls == [
                list, ["--load-conns", "--file", "EMPTY"], ["--load-conns", "--file", "/etc/swanctl/swanctl.conf"],
                list,
            ])
        #expect(added.result["changed"] as? Bool == true && added.result["failed"] == nil)
        #expect(added.result["loaded"] as? [String] == generated)
        // In order (an operator's own connection after them is fine): nothing is loaded.
        let same = try Self.order(generated, held: generated + ["office"], reloaded: [])
        #expect(same.calls == [list])
        #expect(same.result["changed"] as? Bool == false)
        // Check mode reports the change and loads nothing.
        let checked = try Self.order(generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: [], checkMode: true)
        #expect(checked.calls == [list])
        #expect(checked.result["changed"] as? Bool == true)
        // Still out of order after loading again: the host fails, naming the order.
        let stuck = try Self.order(
            generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: ["ikev2-eap", "ikev2-cert"])
        #expect(stuck.result["failed"] as? Bool == true)
        #expect((stuck.result["msg"] as? String)?.contains("another order") == true)
    }

    /// One IKE SA as `swanctl --list-sas --pretty` prints it (vici's dumper: two spaces per level, one
    /// line per value), with a CHILD_SA whose own uniqueid and lists sit deeper.
    static func sa(_ id: Int, conn: String, remoteID: String, eap: String? = nil, xauth: String? = nil) -> String {
        var text = """
            list-sa event {
              \(conn) {
                uniqueid = \(id)
                version = 2
                state = ESTABLISHED
                local-host = 192.0.2.1
                local-port = 4500
                local-id = fra-1.vpn.example.com
                remote-host = 192.0.2.\(100 + id)
                remote-port = 4500
                remote-id = \(remoteID)

            """
        if let eap { text += "    remote-eap-id = \(eap)\n" }
        if let xauth { text += "    remote-xauth-id = \(xauth)\n" }
        text += """
                initiator-spi = 0123456789abcdef
                responder-spi = fedcba9876543210
                encr-alg = AES_GCM_16
                remote-vips = [
                  10.10.0.\(id)
                ]
                child-sas {
                  \(conn)-\(1000 + id) {
                    name = \(conn)
                    uniqueid = \(1000 + id)
                    state = INSTALLED
                    local-ts = [
                      0.0.0.0/0
                    ]
                    remote-ts = [
                      10.10.0.\(id)/32
                    ]
                  }
                }
              }
            }

            """
        return text
    }

    @Test(.needs(.python3)) func endsEveryFormOfARemovedIdentityAndNothingElse() throws {
        let listing = [
            Self.sa(1, conn: "ikev2-eap", remoteID: "192.0.2.101", eap: "ann"),  // stays
            // A hostile identity listed first: it must neither hide the SAs after it nor be taken for a section.
            Self.sa(2, conn: "ikev2-cert", remoteID: "CN=eve {"),
            Self.sa(3, conn: "ikev2-cert", remoteID: "}"),
            Self.sa(4, conn: "ikev2-cert", remoteID: "CN=carol, O=acme"),  // inventory wrote CN=carol,O=acme
            Self.sa(5, conn: "ikev2-cert", remoteID: "O=acme, CN=dave@acme"),  // the certificate's subject
            Self.sa(6, conn: "ikev2-cert", remoteID: "dave@acme"),  // the certificate's e-mail SAN
            Self.sa(7, conn: "ikev2-eap", remoteID: "192.0.2.107", eap: "gina"),
            Self.sa(8, conn: "ikev2-cert", remoteID: "CN=carolyn, O=acme"),  // stays: another name
            Self.sa(9, conn: "ipsec-xauth-psk", remoteID: "192.0.2.109", xauth: "hal = x"),
            Self.sa(10, conn: "ikev2-cert", remoteID: "O=acme, CN=frank@acme"),  // stays
            Self.sa(11, conn: "ikev2-cert", remoteID: "CN=carol, O=acme, OU=ops"),  // stays: another DN
            Self.sa(12, conn: "ikev2-cert", remoteID: "\"quoted\", O=acme"),  // stays
            Self.sa(13, conn: "ikev2-cert", remoteID: "DAVE@ACME"),  // e-mail identities ignore case
        ].joined()
        let removed = ["CN=eve {", "}", "CN=carol,O=acme", "dave@acme", "O=acme, CN=dave@acme", "gina", "hal = x"]
        let (ended, result) = try Self.terminate(removed, listing: listing)
        #expect(ended == ["2", "3", "4", "5", "6", "7", "9", "13"], "\(result)")
        #expect(result["terminated"] as? [String] == ended)
        #expect(result["changed"] as? Bool == true)
    }

    @Test(.needs(.python3)) func comparesDistinguishedNamesRDNByRDN() throws {
        let listing = Self.sa(1, conn: "ikev2-cert", remoteID: "O=acme, CN=dave@acme")
        for form in [
            "CN=dave@acme,O=acme", "O=acme,CN=dave@acme", " o = acme , cn = dave@acme ", "/O=acme/CN=dave@acme",
        ] {
            #expect(try Self.terminate([form], listing: listing).ended == ["1"], "\(form)")
        }
        for form in ["CN=dave@acme", "O=acme, CN=dave", "O=acme, CN=dave@acme, OU=x"] {
            #expect(try Self.terminate([form], listing: listing).ended == [], "\(form)")
        }
    }

    /// vici prints a value with a byte outside printable ASCII as 0x<hex>, and charon prints such bytes of an
    /// identity as "?": both forms still match.
    @Test(.needs(.python3)) func matchesIdentitiesCharonPrintsAsHexOrWithQuestionMarks() throws {
        let listing =
            Self.sa(
                1, conn: "ikev2-eap", remoteID: "192.0.2.101",
                eap: "0x" + Data("new\nline".utf8).map { String(format: "%02x", $0) }.joined())
            + Self.sa(2, conn: "ikev2-eap", remoteID: "192.0.2.102", eap: "jos??")
        #expect(try Self.terminate(["new\nline"], listing: listing).ended == ["1"])
        #expect(try Self.terminate(["josé"], listing: listing).ended == ["2"])
    }

    @Test(.needs(.python3)) func checkModeOnlyReports() throws {
        let listing = Self.sa(1, conn: "ikev2-eap", remoteID: "192.0.2.101", eap: "gina")
        let (ended, result) = try Self.terminate(["gina"], listing: listing, checkMode: true)
        #expect(ended == [])
        #expect(result["terminated"] as? [String] == ["1"] && result["changed"] as? Bool == true, "\(result)")
    }
}
