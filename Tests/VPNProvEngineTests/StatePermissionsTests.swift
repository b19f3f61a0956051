import Foundation
import Testing
import VPNProvTestFixtures

/// The state directory is the operator's alone (docs/security.md, section 9): a directory or file in
/// it that another user owns or can write is refused before anything is read from it, by every command
/// that reads the state; modes that only let others read are reported by `check` and narrowed by
/// `generate`. The tests run as root and hand entries to `nobody` with chown.
@Suite(.temporaries) struct StatePermissionsTests {
    static let inventory = """
        vpnprov: 1
        name: acme
        nodes:
          fra-1: {address: fra-1.vpn.example.com, pool: 10.10.0.0/24, services: [ikev2-eap, ikev2-psk], psk: gen}
        users:
          alice: {password: gen}
          bob: {password: gen}

        """

    /// A generated site.
    static func site() throws -> String {
        let dir = try temporaryDirectory()
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let first = vpnprov(["generate"], in: dir)
        try #require(first.code == 0, "\(first.err)")
        return dir
    }

    static var nobody: (uid: uid_t, gid: gid_t) {
        guard let entry = getpwnam("nobody") else { return (65534, 65534) }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// Each way another user can hold a part of the state, and the path the refusal must name. `status`
    /// and `rolled-out` read only the state directory's own files: they refuse what is in it, not what
    /// is in a subdirectory they never open.
    static let cases: [(what: String, path: String, everyReader: Bool, change: @Sendable (String) -> Void)] = [
        ("secrets.json owned by nobody", "state/secrets.json", true, { own($0 + "/state/secrets.json") }),
        ("state/ca owned by nobody", "state/ca", true, { own($0 + "/state/ca") }),
        ("the state directory writable by everyone", "state", true, { chmod($0 + "/state", 0o777) }),
        ("index.json writable by its group", "state/index.json", true, { chmod($0 + "/state/index.json", 0o660) }),
        (
            "a file planted by nobody", "state/planted", true,
            { dir in
                _ = FileManager.default.createFile(atPath: dir + "/state/planted", contents: Data("x".utf8))
                own(dir + "/state/planted")
            }
        ),
        ("ca.key writable by everyone", "state/ca/ca.key", false, { chmod($0 + "/state/ca/ca.key", 0o666) }),
        (
            "a node key owned by nobody", "state/keys/", false,
            { dir in
                let keys = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/state/keys")) ?? []
                own(dir + "/state/keys/" + (keys.first ?? "none"))
            }
        ),
    ]

    static func own(_ path: String) { chown(path, nobody.uid, nobody.gid) }

    @Test(arguments: cases.indices)
    func aStateAnotherUserOwnsOrCanWriteIsRefusedBeforeItIsRead(_ i: Int) throws {
        let (what, path, everyReader, change) = Self.cases[i]
        let dir = try Self.site()
        change(dir)
        let before = (snapshot(dir + "/state"), snapshot(dir + "/out"))
        for command in [["generate"], ["check"]] + (everyReader ? [["status"], ["rolled-out", "--all"]] : []) {
            let run = vpnprov(command, in: dir)
            #expect(run.code == 3, "\(what): \(command) exit \(run.code): \(run.err)")
            #expect(
                run.err.contains("[state-permissions]") && run.err.contains(path), "\(what): \(command): \(run.err)")
        }
        #expect(
            snapshot(dir + "/state") == before.0 && snapshot(dir + "/out") == before.1, "\(what): something changed")
    }

    /// A state directory someone created for vpnprov with mode 0777 is not used: nothing is written into it.
    @Test func aPreCreatedWorldWritableStateDirectoryIsNotUsed() throws {
        let dir = try temporaryDirectory()
        try Self.inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: false)
        chmod(dir + "/state", 0o777)
        let run = vpnprov(["generate"], in: dir)
        #expect(run.code == 3 && run.err.contains("[state-permissions]"), "\(run.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/state").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
    }

    /// A state copied with `cp -r` under a umask of 022 (directories 0755, files 0644): others can read
    /// the CA key and every secret. `check` names each such entry and fails; `generate` makes them
    /// 0700 and 0600 again and says so; then `check` passes.
    @Test func modesReadableByOthersAreReportedByCheckAndNarrowedByGenerate() throws {
        let dir = try Self.site()
        let state = dir + "/state"
        let wide = [state, state + "/ca", state + "/ca/ca.key", state + "/secrets.json", state + "/index.json"]
        for path in wide {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            chmod(path, isDirectory.boolValue ? 0o755 : 0o644)
        }
        let contents = snapshot(state).mapValues { $0.split(separator: " ").last! }
        let check = vpnprov(["check"], in: dir)
        #expect(check.code == 1, "\(check.err)")
        for path in wide {
            #expect(check.out.contains("state: would give \(path) mode 0"), "\(path): \(check.out)")
        }
        let status = vpnprov(["status"], in: dir)
        #expect(status.code == 0, "reading is not refused: \(status.err)")

        let generate = vpnprov(["generate"], in: dir)
        #expect(generate.code == 0, "\(generate.err)")
        #expect(generate.err.contains("\(state)/ca/ca.key had mode 0644"), "\(generate.err)")
        for (path, entry) in snapshot(state) {
            #expect(entry.hasPrefix(entry.hasSuffix(" dir") ? "700 " : "600 "), "\(path): \(entry)")
        }
        #expect(snapshot(state).mapValues { $0.split(separator: " ").last! } == contents, "a file's contents changed")
        let again = vpnprov(["check"], in: dir)
        #expect(again.code == 0, "\(again.out) \(again.err)")
    }
}
