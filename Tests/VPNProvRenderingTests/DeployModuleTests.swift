import Foundation
import Testing
import VPNProvTemplates
import VPNProvTestFixtures

/// The role's module (deploy/roles/vpnprov_node/library/vpnprov_swanctl.py, as vpnprov writes it) run by
/// python3 with a stand-in for Ansible's AnsibleModule and for charon: it gets the parameters and the
/// `swanctl` output given here (and, for state=loaded, what a stand-in vici connection answers), and the
/// test sees which `swanctl` calls it makes.
@Suite(.temporaries) struct DeployModuleTests {
    static let python = "/usr/bin/python3"

    /// Runs the module's main() (as vpnprov writes it) with python3 and a stand-in for Ansible's
    /// AnsibleModule: `input` is what the stand-in reads (`params`, `check_mode` and whatever `runCommand`
    /// uses), `runCommand` the stand-in's `run_command` method (Python, indented as a method of the class),
    /// which records the swanctl calls in `calls`; returns the JSON object the Python expression `printed`
    /// makes of them and of `result` after the run.
    /// `vici`: what the stand-in for charon's vici socket answers (Python, indented as the body of the stand-in's
    /// `request(self, command)`; `streamed(self, command)` answers the streaming commands), with the module's
    /// own vici client (module_utils/vpnprov_vici.py) around it; `files`: files written below the run's
    /// directory first, whose path the module's parameters name as `DIR/…`.
    static func runModule(
        _ input: [String: Any], runCommand: String, printed: String, vici: String = "        return {}",
        files: [String: String] = [:]
    ) throws -> [String: Any] {
        let source = try #require(BuiltinDeployFiles.files["roles/vpnprov_node/library/vpnprov_swanctl.py"])
        let client = try #require(BuiltinDeployFiles.files["roles/vpnprov_node/module_utils/vpnprov_vici.py"])
        let dir = URL(fileURLWithPath: try temporaryDirectory("module"))
        defer { try? FileManager.default.removeItem(at: dir) }
        let module = dir.appendingPathComponent("vpnprov_swanctl.py")
        try source.write(to: module, atomically: true, encoding: .utf8)
        try client.write(to: dir.appendingPathComponent("vpnprov_vici.py"), atomically: true, encoding: .utf8)
        for (path, text) in files {
            let file = dir.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        // The parameters name the run's directory as DIR.
        let input = Self.replacingDIR(input, with: dir.path) as! [String: Any]
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
            client = types.ModuleType("ansible.module_utils.vpnprov_vici")
            exec(compile(open(os.path.join(os.path.dirname(sys.argv[1]), "vpnprov_vici.py")).read(), "vpnprov_vici", "exec"),
                 client.__dict__)
            class FakeVici:
                def __init__(self, path, timeout):
                    calls.append(["vici", path])
                def close(self):
                    pass
                def stream(self, command, event, message=None):
                    return self.streamed(command)
                def streamed(self, command):
                    return []
                def request(self, command, message=None):
            \(vici)
            client.Vici = FakeVici
            sys.modules["ansible.module_utils.vpnprov_vici"] = client
            os.environ["STRONGSWAN_CONF"] = os.path.join(os.path.dirname(sys.argv[1]), "strongswan.conf")
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

    /// `value` with every string's "DIR" replaced by `path`.
    static func replacingDIR(_ value: Any, with path: String) -> Any {
        switch value {
        case let text as String: return text.replacingOccurrences(of: "DIR", with: path)
        case let list as [Any]: return list.map { replacingDIR($0, with: path) }
        case let object as [String: Any]: return object.mapValues { replacingDIR($0, with: path) }
        default: return value
        }
    }

    struct ModuleRunError: Error, CustomStringConvertible {
        var output: String
        var description: String { "the module did not run: \(output)" }
    }

    /// A node's installed configuration for state=loaded (paths below the run's directory): two connections
    /// and two shared secrets, no certificate (the end-to-end tests load real ones).
    static let installed = [
        "swanctl/swanctl.conf": """
        # a comment { with a brace
        connections {
           ikev2-cert {
              proposals = aes256gcm16-prfsha256-ecp256, aes256-sha256-modp2048   # unquoted, with a comma
              local {
                 id = "n1 {"
              }
           }
           ikev2-eap { version = 2 }
        }
        include conf.d/*.conf

        """,
        "swanctl/conf.d/secrets.conf": """
        secrets {
           ike-psk {
              secret = "0sYWJj"
           }
           eap-u0001 {
              id = ann
              secret = 0sZGVm
           }
           private-n1 {
              file = n1.key
           }
        }

        """,
        "strongswan.d/vpnprov.conf": "charon {\n}\n",
        "strongswan.conf": "swanctl {\n  socket = unix://DIR/charon.vici\n}\n",
    ]

    struct LoadRun {
        var calls: [[String]]
        var result: [String: Any]
        var recorded: Bool
    }

    /// Runs the module's main() with state=loaded against the `installed` files and a fake charon: swanctl's
    /// `--list-conns --pretty` lists `held` until a `--load-conns --file <file>` loads the file again and
    /// `reloaded` after (`--load-all` keeps the order, as charon does); vici's get-shared answers `shared`
    /// until `--load-all` and `sharedAfter` after. `recorded`: whether a record of the installed digest is
    /// in place first (a run that loaded it completed). Returns the swanctl calls (the temporary empty file's
    /// path as "EMPTY"), the result and whether the record is in place after.
    static func load(
        _ connections: [String], held: [String], reloaded: [String], shared: [String] = ["eap-u0001", "ike-psk"],
        sharedAfter: [String] = ["eap-u0001", "ike-psk"], recorded: Bool, checkMode: Bool = false
    ) throws -> LoadRun {
        func listing(_ names: [String]) -> String {
            names.map { "list-conn event {\n  \($0) {\n    local_addrs = [\n      %any\n    ]\n  }\n}\n" }.joined()
        }
        let input: [String: Any] = [
            "params": [
                "state": "loaded", "connections": connections, "extra_connections": [String](),
                "identities": [String](), "file": "DIR/swanctl/swanctl.conf", "directory": "DIR/swanctl",
                "settings_directory": "DIR/strongswan.d", "record": "DIR/swanctl/.vpnprov-loaded/strongswan.json",
                "exclude": [String](),
            ],
            "check_mode": checkMode, "held": listing(held), "reloaded": listing(reloaded), "shared": shared,
            "shared_after": sharedAfter, "recorded": recorded,
        ]
        let runCommand = """
                def run_command(self, args):
                    args = args[1:]
                    if args[:2] == ["--load-conns", "--file"] and args[2] != self.params["file"]:
                        # The file that unloads everything: it exists, and names no connection.
                        text = open(args[2]).read()
                        calls.append(["--load-conns", "--file", "EMPTY" if "{" not in text else text])
                        return 0, "no connections found, 2 unloaded", ""
                    calls.append([a.replace(os.path.dirname(sys.argv[1]), "DIR") for a in args])
                    if args == ["--list-conns", "--pretty"]:
                        return 0, data["reloaded"] if state["loaded"] else data["held"], ""
                    if args == ["--load-conns", "--file", self.params["file"]]:
                        state["loaded"] = True
                        return 0, "successfully loaded 2 connections, 0 unloaded", ""
                    if args == ["--load-all", "--clear", "--noprompt", "--file", self.params["file"]]:
                        state["cleared"] = True
                        return 0, "successfully loaded 2 connections, 0 unloaded", ""
                    if args == ["--reload-settings"]:
                        return 0, "", ""
                    return 1, "", "unexpected call"
            """
        // The record of a completed run: the digest the module computes of the same files, made by a first
        // run that loads (its result's digest) and written as the module writes it.
        let vici = """
                    if command == "get-shared":
                        return {"keys": data["shared_after"] if state.get("cleared") else data["shared"]}
                    return {"keys": []}
            """
        var digest: String?
        if recorded {
            let first = try runModule(
                input.merging(["check_mode": true]) { $1 }, runCommand: runCommand,
                printed: #"{"result": result}"#, vici: vici, files: Self.installed)
            digest = ((first["result"] as? [String: Any])?["digest"] as? String)
        }
        var files = Self.installed
        if let digest { files["swanctl/.vpnprov-loaded/strongswan.json"] = "{\"digest\": \"\(digest)\"}\n" }
        let json = try runModule(
            input, runCommand: runCommand,
            printed: #"""
                {"calls": calls, "result": result, "recorded": json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "swanctl/.vpnprov-loaded/strongswan.json")))["digest"] == result.get("digest") if os.path.exists(os.path.join(os.path.dirname(sys.argv[1]), "swanctl/.vpnprov-loaded/strongswan.json")) else False}
                """#, vici: vici, files: files)
        let calls = ((json["calls"] as? [[String]]) ?? []).filter { $0.first != "vici" }
        return LoadRun(
            calls: calls, result: (json["result"] as? [String: Any]) ?? [:], recorded: json["recorded"] as? Bool == true
        )
    }

    static let list = ["--list-conns", "--pretty"]
    static let loadAll = ["--load-all", "--clear", "--noprompt", "--file", "DIR/swanctl/swanctl.conf"]

    @Test(.needs(.python3)) func loadsWhatIsInstalledUnlessItsRecordSaysItIsLoaded() throws {
        let generated = ["ikev2-cert", "ikev2-eap"]
        // The last run loaded these files: nothing to do.
        let current = try Self.load(generated, held: generated, reloaded: [], recorded: true)
        #expect(current.calls == [Self.list], "\(current.result)")
        #expect(current.result["changed"] as? Bool == false && current.result["failed"] == nil, "\(current.result)")
        // A run that copied the files and stopped before loading them: charon looks the same (a secret given a
        // new value keeps its id), but the record is not these files'. Loaded, checked, recorded.
        let interrupted = try Self.load(generated, held: generated, reloaded: [], recorded: false)
        #expect(
            interrupted.calls == [Self.list, ["--reload-settings"], Self.loadAll, Self.list, Self.list],
            "\(interrupted.result)")
        #expect(interrupted.result["changed"] as? Bool == true && interrupted.result["failed"] == nil)
        #expect(interrupted.recorded, "the record names the loaded files")
        // Check mode reports the pending load and loads nothing.
        let checked = try Self.load(generated, held: generated, reloaded: [], recorded: false, checkMode: true)
        #expect(checked.calls == [Self.list], "\(checked.result)")
        #expect(checked.result["changed"] as? Bool == true && !checked.recorded)
        #expect((checked.result["pending"] as? [String])?.first?.contains("not the one charon last loaded") == true)
    }

    @Test(.needs(.python3)) func loadsWhenCharonHoldsOtherSecretsThanTheFiles() throws {
        let generated = ["ikev2-cert", "ikev2-eap"]
        // A removed user's secret is still loaded although the record is the files': loaded again.
        let stale = try Self.load(
            generated, held: generated, reloaded: [], shared: ["eap-u0001", "eap-u0002", "ike-psk"], recorded: true)
        #expect(stale.calls == [Self.list, ["--reload-settings"], Self.loadAll, Self.list, Self.list])
        #expect(
            (stale.result["pending"] as? [String]) == ["shared secrets: missing none, unexpected ['eap-u0002']"],
            "\(stale.result)")
        // Still there after the load: the host fails, naming it.
        let stuck = try Self.load(
            generated, held: generated, reloaded: [], shared: ["ike-psk"], sharedAfter: ["ike-psk"], recorded: true)
        #expect(stuck.result["failed"] as? Bool == true && !stuck.recorded)
        #expect((stuck.result["msg"] as? String)?.contains("missing ['eap-u0001']") == true, "\(stuck.result)")
    }

    @Test(.needs(.python3)) func loadsTheConnectionsAgainWhenCharonHoldsThemInAnotherOrder() throws {
        let generated = ["ikev2-cert", "ikev2-eap"]
        // A service added to a running node: charon appended it, and --load-all keeps that order. Everything is
        // unloaded, then loaded in order.
        let added = try Self.load(generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: generated, recorded: true)
        #expect(
            added.calls == [
                Self.list, ["--reload-settings"], Self.loadAll, Self.list, ["--load-conns", "--file", "EMPTY"],
                ["--load-conns", "--file", "DIR/swanctl/swanctl.conf"], Self.list,
            ], "\(added.result)")
        #expect(added.result["changed"] as? Bool == true && added.result["failed"] == nil)
        #expect(added.result["loaded"] as? [String] == generated)
        // Check mode reports it and loads nothing.
        let checked = try Self.load(
            generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: [], recorded: true, checkMode: true)
        #expect(checked.calls == [Self.list])
        #expect(checked.result["changed"] as? Bool == true)
        // Still out of order after loading again: the host fails, naming the order.
        let stuck = try Self.load(
            generated, held: ["ikev2-eap", "ikev2-cert"], reloaded: ["ikev2-eap", "ikev2-cert"], recorded: true)
        #expect(stuck.result["failed"] as? Bool == true && !stuck.recorded)
        #expect((stuck.result["msg"] as? String)?.contains("another order") == true, "\(stuck.result)")
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
