import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvTestFixtures
import VPNProvTestSupport

/// Crash safety: `generate` killed at many points never leaves a half-written file, the state
/// always loads afterwards, and the CA never changes once created. The binary is killed with
/// SIGKILL at the n-th write step (VPNPROV_CRASH_AFTER_WRITES in vpnprov-testhooks, see WriteSteps): each atomic write
/// has a step with its temporary file complete but not renamed and a step after the rename, so the
/// points cover both sides of every rename in the state commit and across the output tree.
@Suite(.serialized, .temporaries) struct CrashSafetyTests {
    static let userCount = 80

    /// `userCount` users, every fourth a certificate user; `changed` adds users, revokes one and
    /// narrows another, so a run touches state (new keys, certificates, p12, CRL) and output.
    static func inventory(changed: Bool) -> String {
        var text = """
            vpnprov: 1
            name: acme
            nodes:
              fra-1:
                address: fra-1.vpn.example.com
                pool: 10.10.0.0/24
                services: [ikev2-eap, ikev2-cert, ikev2-psk]
                psk: gen
              nyc-1:
                address: 203.0.113.10
                pool: 10.20.0.0/24
                services: [ikev2-eap, ikev2-cert]
            users:

            """
        for i in 0..<(changed ? userCount + 8 : userCount) {
            text += "  user\(i):\n"
            text += i % 4 == 0 ? "    cert: true\n" : "    password: gen\n"
            if changed && i == 4 { text += "    revoked: true\n" }
            if changed && i == 5 { text += "    devices: [linux]\n" }
        }
        return text
    }

    /// Temporary files, files in a staged folder (a new user's folder under a temporary name), and
    /// the marker that a run is between its first temporary file and publish (it tells the next run to
    /// look for temporaries; empty, never an output).
    static func isTemporary(_ path: String) -> Bool {
        path.split(separator: "/").contains { $0.hasPrefix(".") && $0.contains(".tmp-") } || path == ".vpnprov-writing"
    }

    static func snapshot(_ root: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for file in SecretLeaks.filesBelow(root) {
            files[file] = FileManager.default.contents(atPath: root + "/" + file)
        }
        return files
    }

    static func copyTree(_ from: String, to: String) throws {
        try Subprocess.check("/bin/cp", ["-a", from, to])
    }

    /// Runs `arguments` on a copy of `base`, killed at write step 1 and then at every step (or, with
    /// `growing`, at steps a fifth further apart each time), handing each killed copy and its step to
    /// `body`, until a run finishes before its step (it must succeed); returns that step.
    static func killAtSteps(
        _ arguments: [String], base: String, growing: Bool, _ body: (String, Int) throws -> Void
    ) throws -> Int {
        var n = 1
        while true {
            let parent = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: parent) }
            let dir = parent + "/site"
            try copyTree(base, to: dir)
            let crashed = try VPNProvBinary.run(
                arguments, in: dir, environment: ["VPNPROV_CRASH_AFTER_WRITES": "\(n)"], testHooks: true)
            if !crashed.killed {
                #expect(
                    crashed.status == 0,
                    "step \(n): \(arguments.joined(separator: " ")) failed without being killed: \(crashed.err.suffix(300))"
                )
                return n
            }
            try body(dir, n)
            n += growing ? max(1, n / 5) : 1
        }
    }

    /// A complete state file: PEM blocks end with their END line, JSON parses.
    static func expectComplete(_ path: String, _ data: Data) {
        if path.hasSuffix(".pem") || path.hasSuffix(".key") || path.hasSuffix(".crt") {
            let text = String(decoding: data, as: UTF8.self)
            #expect(text.hasSuffix("-----\n") && text.contains("-----END "), "state file \(path) is cut off")
        } else if path.hasSuffix(".json") {
            #expect((try? JSONSerialization.jsonObject(with: data)) != nil, "state file \(path) is not whole JSON")
        }
    }

    /// Kills `generate` of `inventory` at step `n` in a copy of `base` (nil: empty), then checks the
    /// invariants and recovers. Returns false when the run finished before reaching step `n`.
    static func crashAndRecover(base: String?, inventory: String, at n: Int) throws -> Bool {
        let parent = try temporaryDirectory()
        let dir = parent + "/site"
        if let base {
            try copyTree(base, to: dir)
        } else {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let outBefore = snapshot(dir + "/out")
        let caBefore = snapshot(dir + "/state/ca")

        let crashed = try VPNProvBinary.run(
            ["generate"], in: dir, environment: ["VPNPROV_CRASH_AFTER_WRITES": "\(n)"], testHooks: true)
        if !crashed.killed {
            #expect(crashed.status == 0, "step \(n): generate failed without being killed: \(crashed.err.suffix(300))")
            return false
        }
        let outCrashed = snapshot(dir + "/out")
        let stateCrashed = snapshot(dir + "/state")
        for (path, data) in stateCrashed where !isTemporary(path) { expectComplete(path, data) }
        if !caBefore.isEmpty {
            #expect(snapshot(dir + "/state/ca") == caBefore, "step \(n): the CA changed")
        }

        // (a) The state loads and a fresh run completes.
        let recovered = try VPNProvBinary.run(["generate"], in: dir)
        #expect(recovered.status == 0 && !recovered.killed, "step \(n): recovery failed: \(recovered.err.suffix(400))")
        let outFinal = snapshot(dir + "/out")
        let stateFinal = snapshot(dir + "/state")
        // (b) Every output file the kill left was whole: the old version or the final one.
        var halfWritten = 0
        for (path, data) in outCrashed where !isTemporary(path) {
            if data != outBefore[path] && data != outFinal[path] { halfWritten += 1 }
        }
        #expect(halfWritten == 0, "step \(n): \(halfWritten) output file(s) are neither the old nor the new version")
        let leftovers = (outFinal.keys.filter(isTemporary) + stateFinal.keys.filter(isTemporary)).count
        #expect(leftovers == 0, "step \(n): \(leftovers) temporary file(s) left after a completed run")
        // (c) The CA never changes once created (committed by the crashed run or before it).
        let caCommitted =
            caBefore.isEmpty
            && (stateCrashed["index.json"].map { String(decoding: $0, as: UTF8.self).contains("\"ca\"") } ?? false)
        if !caBefore.isEmpty {
            #expect(snapshot(dir + "/state/ca") == caBefore, "step \(n): the CA changed on recovery")
        }
        if caCommitted {
            #expect(
                stateFinal.filter { $0.key.hasPrefix("ca/") } == stateCrashed.filter { $0.key.hasPrefix("ca/") },
                "step \(n): the committed CA changed")
        }
        // No drift, and nothing printed a secret.
        try expectRecovered(dir, runs: [crashed, recovered], "step \(n)")
        return true
    }

    @Test func binaryIsBuilt() {
        #expect(
            FileManager.default.isExecutableFile(atPath: VPNProvBinary.path),
            "swift test builds vpnprov next to the tests")
    }

    /// First run: the CA, node and user material are created; kills inside the state commit.
    @Test
    func killedFirstRunRecovers() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        for n in [1, 2, 3, 4, 5, 7, 10, 30, 100, 250] {
            #expect(
                try Self.crashAndRecover(base: nil, inventory: Self.inventory(changed: false), at: n),
                "step \(n) was never reached")
        }
    }

    /// The write steps of a changing `generate`, in the order WriteSteps counts them: the issuing
    /// journal (2: complete, renamed), one per staged output file (`staged`), two per state file
    /// (`stateFiles`: the new keys, certificates, p12 and CRL first, complete and renamed; then
    /// index.json and secrets.json under their pending names, one step each, the manifest, complete and
    /// renamed (the commit point), and the two renamed into place, one step each: the manifest counts
    /// among the state files, so the commit still takes two steps a file), then one rename per staged
    /// file or staged folder (a new user's) to publish it, up to `total`. The kill points are the edges and the middle
    /// of each phase, and every step of the state commit's first, middle and last three files: what
    /// separates one outcome from another (nothing committed, the journal only, output staged, state
    /// files without their index, the index committed with the output unpublished, partly published).
    /// Steps inside a phase differ only in which file is cut, so the rest of each phase adds no case.
    static func changingRunKillPoints(staged: Int, stateFiles: Int, total: Int) -> [Int] {
        let commit = 2 + staged
        let publish = commit + 2 * stateFiles
        let renames = total - publish
        let middleFile = commit + 2 * (stateFiles / 2)
        let points =
            [
                1, 2, 3, 3 + staged / 2, commit,
                commit + 1, commit + 2, middleFile + 1, middleFile + 2,
            ]
            + Array(max(commit + 1, publish - 5)...publish)
            + [publish + 1, publish + renames / 2, publish + renames]
        return Array(Set(points)).sorted()
    }

    /// A changing run on an existing state and output tree, killed at every kill point its layout
    /// gives; the step after the last one finishes the run, which proves the layout is the whole run.
    @Test
    func killedChangingRunRecoversAtEveryPoint() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let base = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        try Self.inventory(changed: false).write(toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        let first = try VPNProvBinary.run(["generate"], in: base)
        try #require(first.status == 0, "\(first.err.suffix(300))")
        // The layout, read off a completed run of the same change.
        let parent = try temporaryDirectory()
        try Self.copyTree(base, to: parent + "/site")
        try Self.inventory(changed: true).write(
            toFile: parent + "/site/inventory.yaml", atomically: true, encoding: .utf8)
        let stateBefore = Self.snapshot(base + "/state")
        let (staged, total) = try Self.writeSteps(["generate"], in: parent + "/site")
        let stateFiles = Self.snapshot(parent + "/site/state").filter { stateBefore[$0.key] != $0.value }.count
        try FileManager.default.removeItem(atPath: parent)
        #expect(staged > 40 && stateFiles > 5, "the change writes \(staged) output and \(stateFiles) state files")
        // The new users' folders are renamed whole: fewer renames than staged files.
        let renames = total - (2 + staged + 2 * stateFiles)
        #expect(renames > 0 && renames < staged, "the change publishes \(staged) files in \(renames) renames")
        let points = Self.changingRunKillPoints(staged: staged, stateFiles: stateFiles, total: total)
        for n in points {
            #expect(
                try Self.crashAndRecover(base: base, inventory: Self.inventory(changed: true), at: n),
                "step \(n) was never reached")
        }
        #expect(
            try !Self.crashAndRecover(base: base, inventory: Self.inventory(changed: true), at: total + 1),
            "the run has more than the \(total) write steps it counted")
    }

    /// `rotate-ca` killed at growing intervals through its state commit and output: the state is
    /// afterwards either the old one (index.json and secrets.json byte for byte as before, no
    /// rotation) or the new one (the rotation committed), never a mix; it loads, the CA files from
    /// before are untouched, a plain `generate` brings the output in line, and an interrupted
    /// rotation can simply be started again.
    @Test
    func killedCARotationLeavesTheOldOrTheNewState() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let base = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        // Few users: the kill points cover the state commit densely without running for minutes.
        let small = Self.inventory(changed: false).components(separatedBy: "\n  user12:\n")[0] + "\n"
        try small.write(toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        let first = try VPNProvBinary.run(["generate"], in: base)
        try #require(first.status == 0, "\(first.err.suffix(300))")
        let indexBefore = FileManager.default.contents(atPath: base + "/state/index.json")
        let secretsBefore = FileManager.default.contents(atPath: base + "/state/secrets.json")
        let caBefore = Self.snapshot(base + "/state/ca")
        var (old, new) = (0, 0)
        _ = try Self.killAtSteps(["rotate-ca"], base: base, growing: true) { dir, n in
            let state = Self.snapshot(dir + "/state")
            for (path, data) in state where !Self.isTemporary(path) { Self.expectComplete(path, data) }
            #expect(
                Self.snapshot(dir + "/state/ca").filter { caBefore[$0.key] != nil } == caBefore,
                "step \(n): a CA file changed")
            let index = state["index.json"]
            let status = try VPNProvBinary.run(["status"], in: dir)
            #expect(status.status == 0, "step \(n): status after the kill: \(status.err.suffix(300))")
            if index == indexBefore {
                old += 1
                #expect(
                    state["secrets.json"] == secretsBefore,
                    "step \(n): index.json is the old one but secrets.json changed")
                #expect(status.out.contains("CA rotation: none"), "step \(n)")
                // Leftovers of the killed run (a new CA key without its index entry) do not block a new start.
                let again = try VPNProvBinary.run(["rotate-ca"], in: dir)
                #expect(again.status == 0, "step \(n): rotate-ca after the kill: \(again.err.suffix(300))")
            } else {
                new += 1
                #expect(
                    String(decoding: index ?? Data(), as: UTF8.self).contains("\"rotation\""),
                    "step \(n): index.json changed without the rotation")
                #expect(status.out.contains("CA rotation: overlap since"), "step \(n)")
                let recovered = try VPNProvBinary.run(["generate"], in: dir)
                #expect(recovered.status == 0, "step \(n): generate after the kill: \(recovered.err.suffix(300))")
                let twice = try VPNProvBinary.run(["rotate-ca"], in: dir)
                #expect(twice.status == 1, "step \(n): a committed rotation must not start again")
            }
            let check = try VPNProvBinary.run(["check"], in: dir)
            #expect(check.status == 0, "step \(n): check after recovery: \(check.err.suffix(300))")
        }
        print("rotate-ca kill points: \(old) left the old state, \(new) the new one")
        #expect(old >= 3 && new >= 2, "kill points: \(old) left the old state, \(new) the new one")
    }

    // MARK: One commit point (docs/state.md, "One commit point")

    /// The records of the state directory `state` as a run loads them, read here on their own: each
    /// record `manifest.sha256` lists, from the file under its name or, after a commit killed before it
    /// renamed them, under its pending name `.<record>.next-<sha256>`, whichever has the listed digest;
    /// without a manifest (a state from before), the files as they are.
    static func committedRecords(_ state: String) -> [String: Data] {
        func read(_ name: String) -> Data? { FileManager.default.contents(atPath: state + "/" + name) }
        guard let manifest = read("manifest.sha256") else {
            return ["index.json", "secrets.json"].reduce(into: [:]) { $0[$1] = read($1) }
        }
        var records: [String: Data] = [:]
        for line in String(decoding: manifest, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2 else { continue }
            let (digest, name) = (String(parts[0]), String(parts[1]))
            records[name] = [read(name), read(".\(name).next-\(digest)")].compactMap { $0 }.first {
                hexString(Digest.sha256([UInt8]($0))).lowercased() == digest
            }
        }
        return records
    }

    /// `generate` of a change that touches index.json and secrets.json together (a new certificate
    /// user with a p12 password, a new password user, a user revoked with their password dropped)
    /// killed at every one of its write steps: what the state holds afterwards is all of the old state
    /// or all of the new one, never index.json of one and secrets.json of the other (a kill between
    /// the two renames used to leave the secrets one run ahead), and it loads (`status`).
    @Test
    func aKillAtEveryWriteStepLeavesTheWholeOldOrTheWholeNewState() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let base = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        // One node and few users: few output files, so every step of the run is killed in seconds.
        let small = """
            vpnprov: 1
            name: acme
            nodes:
              fra-1:
                address: fra-1.vpn.example.com
                pool: 10.10.0.0/24
                services: [ikev2-eap, ikev2-cert, ikev2-psk]
                psk: gen
            users:
              user0:
                cert: true
              user1:
                password: gen

            """
        try small.write(toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        let first = try VPNProvBinary.run(["generate"], in: base)
        try #require(first.status == 0, "\(first.err.suffix(300))")
        let changed =
            small.replacingOccurrences(of: "  user1:\n    password: gen\n", with: "  user1:\n    revoked: true\n")
            + "  erin:\n    cert: true\n  frank:\n    password: gen\n"
        try changed.write(toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        let before = Self.committedRecords(base + "/state")
        try #require(before["index.json"] != nil && before["secrets.json"] != nil)
        func json(_ data: Data?) -> [String: Any] {
            (data.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]) ?? [:]
        }
        var (old, new) = (0, 0)
        let steps = try Self.killAtSteps(["generate"], base: base, growing: false) { dir, n in
            let records = Self.committedRecords(dir + "/state")
            let (index, secrets) = (records["index.json"], records["secrets.json"])
            #expect(index != nil && secrets != nil, "step \(n): a record the manifest lists is nowhere")
            if index == before["index.json"] {
                old += 1
                #expect(
                    secrets == before["secrets.json"], "step \(n): index.json is the old one, secrets.json a new one")
            } else {
                new += 1
                #expect(
                    secrets != before["secrets.json"], "step \(n): index.json is a new one, secrets.json the old one")
                // ... and the two are the same run's.
                let users = json(index)["users"] as? [String: Any] ?? [:]
                let generated = json(secrets)
                #expect(users["erin"] != nil && users["user1"] == nil, "step \(n): index.json is not the new run's")
                #expect(
                    (generated["p12Passwords"] as? [String: String])?["erin"] != nil
                        && (generated["passwords"] as? [String: String])?["frank"] != nil
                        && (generated["passwords"] as? [String: String])?["user1"] == nil,
                    "step \(n): secrets.json is not the new run's")
            }
            let status = vpnprov(["status"], in: dir)
            #expect(status.code == 0, "step \(n): the state does not load after the kill: \(status.err.suffix(300))")
        }
        print("one commit point: \(steps - 1) write steps killed, \(old) left the old state, \(new) the new one")
        #expect(old > 5 && new > 5, "\(old) kills left the old state, \(new) the new one")
    }

    // MARK: SIGINT and SIGTERM (docs/state.md, "Interrupted runs")

    /// A small site (12 users, fra-1 with a generated PSK) after `generate` and `revoke user8`, so every
    /// state-changing command has something to work on.
    static func signalBase() throws -> String {
        let base = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let small = Self.inventory(changed: false).components(separatedBy: "\n  user12:\n")[0] + "\n"
        try small.write(toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        for arguments in [["generate"], ["revoke", "user8"]] {
            let run = try VPNProvBinary.run(arguments, in: base)
            try #require(run.status == 0, "\(arguments): \(run.err.suffix(300))")
        }
        return base
    }

    /// Serials of the certificates a state directory holds as files (certs/<serial>.pem), and those
    /// index.json records, with their status.
    static func certificateFiles(_ state: String) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: state + "/certs")) ?? []
        return Set(names.filter { $0.hasSuffix(".pem") && !$0.hasPrefix(".") }.map { String($0.dropLast(4)) })
    }

    static func indexedCertificates(_ data: Data?) -> [String: String] {
        guard let data, let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let certificates = json["certificates"] as? [String: [String: Any]]
        else { return [:] }
        return certificates.compactMapValues { $0["status"] as? String }
    }

    /// Kills `arguments` with `signal` at write step `n` in a copy of `base`, then checks that the run
    /// ended where the signal arrived (the state is the old or the new one and loads), that the next
    /// `generate` removes every temporary file the killed run left anywhere in the tree, and that
    /// every certificate it signed is recorded in index.json (revoked when the run never committed
    /// it), so none is left that vpnprov could not revoke. False when the run finished before step `n`.
    static func signalAndRecover(_ arguments: [String], base: String, signal: String, at n: Int) throws -> Bool {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dir = parent + "/site"
        try copyTree(base, to: dir)
        let indexBefore = FileManager.default.contents(atPath: dir + "/state/index.json")
        let caBefore = snapshot(dir + "/state/ca")
        let what = "\(arguments.joined(separator: " ")) SIG\(signal) at step \(n)"
        let crashed = try VPNProvBinary.run(
            arguments, in: dir, environment: ["VPNPROV_CRASH_AFTER_WRITES": "\(n)", "VPNPROV_CRASH_SIGNAL": signal],
            testHooks: true)
        if !crashed.killed {
            #expect(crashed.status == 0, "\(what): failed without being killed: \(crashed.err.suffix(300))")
            return false
        }
        #expect(crashed.status == (signal == "INT" ? SIGINT : SIGTERM), "\(what): ended by signal \(crashed.status)")
        let stateCrashed = snapshot(dir + "/state")
        for (path, data) in stateCrashed where !isTemporary(path) { expectComplete(path, data) }
        #expect(
            snapshot(dir + "/state/ca").filter { caBefore[$0.key] != nil } == caBefore, "\(what): a CA file changed")
        // Every certificate the killed run may have left in a file is named: in index.json or in the journal.
        let committed = stateCrashed["index.json"] != indexBefore
        let journal = indexedCertificates(stateCrashed["issuing.json"])
        let indexCrashed = indexedCertificates(stateCrashed["index.json"])
        for serial in certificateFiles(dir + "/state") where indexCrashed[serial] == nil {
            #expect(journal[serial] != nil, "\(what): certs/\(serial).pem is in neither index.json nor issuing.json")
        }
        let status = try VPNProvBinary.run(["status"], in: dir)
        #expect(status.status == 0, "\(what): status after the kill: \(status.err.suffix(300))")

        let recovered = try VPNProvBinary.run(["generate"], in: dir)
        #expect(
            recovered.status == 0 && !recovered.killed, "\(what): generate after the kill: \(recovered.err.suffix(400))"
        )
        let outFinal = snapshot(dir + "/out")
        let stateFinal = snapshot(dir + "/state")
        let leftovers = outFinal.keys.filter(isTemporary) + stateFinal.keys.filter(isTemporary)
        #expect(leftovers.isEmpty, "\(what): temporaries left after the next run: \(leftovers.sorted().prefix(5))")
        #expect(stateFinal["issuing.json"] == nil, "\(what): the issuing journal outlived the next run")
        let indexFinal = indexedCertificates(stateFinal["index.json"])
        for serial in certificateFiles(dir + "/state") {
            #expect(indexFinal[serial] != nil, "\(what): certs/\(serial).pem is not in index.json after the next run")
        }
        if !committed, let journalData = stateCrashed["issuing.json"] {
            // Signed by the killed run and never committed: revoked, and on the CRL of the CA that
            // signed it when the index knows that CA (a CA from an interrupted rotation never was).
            let final = (try? JSONSerialization.jsonObject(with: stateFinal["index.json"] ?? Data())) as? [String: Any]
            let listed = Set((final?["crl"] as? [String: Any])?["revokedSerials"] as? [String] ?? [])
            let caSerial = (final?["ca"] as? [String: Any])?["serial"] as? String
            let records =
                ((try? JSONSerialization.jsonObject(with: journalData)) as? [String: Any])?["certificates"]
                as? [String: [String: Any]] ?? [:]
            for (serial, record) in records where indexedCertificates(indexBefore)[serial] == nil {
                #expect(
                    indexFinal[serial] == "revoked",
                    "\(what): \(serial), signed by the killed run, is \(indexFinal[serial] ?? "unrecorded")")
                if (record["issuer"] as? String ?? caSerial) == caSerial {
                    #expect(listed.contains(serial), "\(what): \(serial), signed by the killed run, is not on the CRL")
                }
            }
        }
        try expectRecovered(dir, runs: [crashed, recovered], what)
        return true
    }

    /// After the recovery of a killed run: `check` finds the tree up to date, and neither `runs` nor
    /// `check` printed a secret of the state or the inventory.
    static func expectRecovered(
        _ dir: String, runs: [VPNProvBinary.Outcome], _ what: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let check = try VPNProvBinary.run(["check"], in: dir)
        #expect(
            check.status == 0, "\(what): check after recovery: \(check.out.suffix(300)) \(check.err.suffix(300))",
            sourceLocation: sourceLocation)
        let secrets = SecretLeaks.secrets(stateDirectories: [dir + "/state"], inventories: [dir + "/inventory.yaml"])
        for run in runs + [check] {
            for output in [run.out, run.err] {
                SecretLeaks.expectNone(in: output, secrets, what: "\(what) output", sourceLocation: sourceLocation)
            }
        }
    }

    /// How many output files `arguments` writes on a copy of `base` (its staging steps come first).
    static func filesWritten(_ arguments: [String], base: String) throws -> Int {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        try copyTree(base, to: parent + "/site")
        return try filesWritten(arguments, in: parent + "/site")
    }

    /// How many output files `arguments` writes when run in `dir`, and how many write steps it takes.
    static func writeSteps(_ arguments: [String], in dir: String) throws -> (files: Int, steps: Int) {
        let countFile = try temporaryDirectory() + "/steps"
        defer { try? FileManager.default.removeItem(atPath: (countFile as NSString).deletingLastPathComponent) }
        let run = try VPNProvBinary.run(
            arguments, in: dir, environment: [CrashAfterWrites.countVariable: countFile], testHooks: true)
        try #require(run.status == 0, "\(arguments): \(run.err.suffix(300))")
        let steps = try String(contentsOfFile: countFile, encoding: .utf8)
        return (filesWrittenCount(run.err), try #require(Int(steps.trimmingCharacters(in: .whitespacesAndNewlines))))
    }

    /// The number in the "N files written" line of a run's stderr.
    static func filesWrittenCount(_ err: String) -> Int {
        let match = err.split(separator: "\n").first { $0.contains(" files written") }
        let words = match?.split(separator: ";").last?.split(separator: " ") ?? []
        return Int(words.first ?? "") ?? 0
    }

    /// How many output files `arguments` writes when run in `dir`.
    static func filesWritten(_ arguments: [String], in dir: String) throws -> Int {
        let run = try VPNProvBinary.run(arguments, in: dir)
        try #require(run.status == 0, "\(arguments): \(run.err.suffix(300))")
        return filesWrittenCount(run.err)
    }

    /// SIGINT and SIGTERM (Ctrl-C, a service manager) end every state-changing command the way a kill
    /// does, at two points each: early (while the output tree is staged, before the state commit) and
    /// inside the state commit (a few files past the staged output and the issuing journal).
    @Test(
        arguments: [
            ["unrevoke", "user8"], ["generate"], ["revoke", "user4"], ["rotate-ca"], ["rotate-psk", "fra-1"],
            ["rotate-password", "user1"],
        ])
    func interruptedCommandLeavesNothingBehind(_ arguments: [String]) throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let base = try Self.signalBase()
        defer { try? FileManager.default.removeItem(atPath: (base as NSString).deletingLastPathComponent) }
        // `generate` on an unchanged site writes nothing: give it a change (a new certificate user).
        if arguments == ["generate"] {
            let text = try String(contentsOfFile: base + "/inventory.yaml", encoding: .utf8)
            try (text + "  user12:\n    cert: true\n").write(
                toFile: base + "/inventory.yaml", atomically: true, encoding: .utf8)
        }
        let staged = try Self.filesWritten(arguments, base: base)
        #expect(staged > 0, "\(arguments) writes no output file")
        // Steps 1-2: the issuing journal (when the command signs), then one step per staged file.
        #expect(
            try Self.signalAndRecover(arguments, base: base, signal: "INT", at: 3), "\(arguments): step 3 never reached"
        )
        #expect(
            try Self.signalAndRecover(arguments, base: base, signal: "TERM", at: staged + 6),
            "\(arguments): step \(staged + 6) never reached")
    }
}
