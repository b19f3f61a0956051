import Foundation
import Testing
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvTestFixtures
import VPNProvTestSupport

@testable import VPNProvCLI
@testable import VPNProvCrypto
@testable import VPNProvEngine
@testable import VPNProvPlanning

/// `generate`, `check` and `revoke` run in-process on a copy of the shipped example inventory.
@Suite(.temporaries) struct PipelineTests {
    static let example = Repository.example

    /// A temp directory holding `inventory.yaml` (the example unless `text` is given).
    /// `generate` of the workspace `dir`'s inventory into its `out` and `state`, at the tests' time.
    func generateOptions(in dir: String) -> GenerateOptions {
        GenerateOptions(
            inventory: "inventory.yaml", inventoryPath: dir + "/inventory.yaml", outDirectory: dir + "/out",
            stateDirectory: dir + "/state", now: testNow)
    }

    func workspace(_ text: String? = nil) throws -> String {
        let dir = try temporaryDirectory()
        let contents = try text ?? String(contentsOfFile: Self.example, encoding: .utf8)
        try contents.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return dir
    }

    /// One node offering ikev2-psk with the given `psk` reference (on line 8), one user.
    static func pskNode(psk: String) -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.1.0.0/24
            services: [ikev2-psk]
            psk: \(psk)
        users:
          u1:
            password: gen
        """
    }

    /// sha256 of every file below `dir`, by relative path.
    func snapshot(_ dir: String) throws -> [String: String] {
        var result: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(atPath: dir) else { return [:] }
        for case let path as String in walker {
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: dir + "/" + path, isDirectory: &isDir)
            if isDir.boolValue { continue }
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + path)))
            result[path] = hexString(Digest.sha256(bytes))
        }
        return result
    }

    /// Every generated secret of the state, for "never printed" checks.
    func stateSecrets(_ dir: String) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/state/secrets.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var secrets: [String] = []
        for key in ["psks", "passwords", "p12Passwords"] {
            secrets += ((json[key] as? [String: String]) ?? [:]).values
        }
        return secrets
    }

    @Test func secondGenerateRewritesNothingAndIsByteIdentical() throws {
        let dir = try workspace()
        let first = vpnprov(["generate"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        let before = try snapshot(dir)
        #expect(before.keys.contains("out/servers/fra-1/swanctl/swanctl.conf"))
        #expect(before.keys.contains("out/clients/alice/alice.mobileconfig"))
        #expect(before.keys.contains("state/index.json"))
        let second = vpnprov(["generate"], in: dir)
        #expect(second.code == 0)
        #expect(second.err.contains(" 0 files written,"), "\(second.err)")
        #expect(!second.err.contains("issued"))
        #expect(try snapshot(dir) == before)
        let secrets = try stateSecrets(dir)
        #expect(secrets.count >= 5)
        for secret in secrets {
            #expect(
                !first.out.contains(secret) && !first.err.contains(secret) && !second.err.contains(secret),
                "a generated secret was printed")
        }
    }

    @Test func checkPassesThenReportsDriftAfterAnInventoryEditWithoutWriting() throws {
        let dir = try workspace()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let clean = vpnprov(["check"], in: dir)
        #expect(clean.code == 0, "\(clean.out)\(clean.err)")
        #expect(clean.err.contains("is up to date"))

        var text = try String(contentsOfFile: dir + "/inventory.yaml", encoding: .utf8)
        text = text.replacingOccurrences(of: "pool: 10.30.0.0/24", with: "pool: 10.31.0.0/24")
        text += "\n  frank:\n    password: gen\n"
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let before = try snapshot(dir)
        let drift = vpnprov(["check"], in: dir)
        #expect(drift.code == 1)
        #expect(drift.out.contains("stale: servers/sgp-1/swanctl/swanctl.conf"))
        #expect(drift.out.contains("missing: clients/frank/frank.mobileconfig"))
        #expect(drift.out.contains("state: would generate secret for user 'frank': password"))
        #expect(try snapshot(dir) == before, "check must write nothing")
        // A file vpnprov never wrote is drift too (the tree is deployed as it is), and check says why
        // it stays drift after 'generate'.
        #expect(vpnprov(["generate"], in: dir).code == 0)
        try "x".write(toFile: dir + "/out/servers/stray.conf", atomically: true, encoding: .utf8)
        let stray = vpnprov(["check"], in: dir)
        #expect(stray.code == 1)
        #expect(stray.out == "untracked: servers/stray.conf\n")
        #expect(stray.err.contains("were not written by vpnprov, so 'generate' leaves them alone"), "\(stray.err)")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(vpnprov(["check"], in: dir).code == 1)
        try FileManager.default.removeItem(atPath: dir + "/out/servers/stray.conf")
        #expect(vpnprov(["check"], in: dir).code == 0)
    }

    /// `revoke` printed "revoked user 'alice'" and "updated CRL" and committed the state, then failed
    /// (exit 1) on another user's unset `env:` secret without regenerating: out/ kept the old CRL and
    /// alice's files. Now everything is resolved and rendered before anything is committed.
    @Test func revokeThatCannotFinishChangesNothingAndSaysSo() throws {
        let dir = try workspace(
            String(contentsOfFile: Self.example, encoding: .utf8)
                + "\n  zed:\n    password: env:VPN_ZED_PASSWORD\n    nodes: [fra-1]\n")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let env = ["VPN_ZED_PASSWORD": "Qm7vRt2xLp9sKw4nZc8j"]
        let first = vpnprov(["generate"], in: dir, environment: env)
        #expect(first.code == 0, "\(first.err)")
        let stateBefore = CrashSafetyTests.snapshot(dir + "/state")
        let outBefore = CrashSafetyTests.snapshot(dir + "/out")

        let revoke = vpnprov(["revoke", "carol"], in: dir)
        #expect(revoke.code == 1, "\(revoke.err)")
        #expect(revoke.err.contains("environment variable VPN_ZED_PASSWORD is not set"), "\(revoke.err)")
        #expect(!revoke.err.contains("revoked user 'carol'") && !revoke.err.contains("updated CRL"), "\(revoke.err)")
        #expect(
            revoke.err.contains("user 'carol' is not revoked: the run stopped before changing anything"),
            "\(revoke.err)")
        #expect(
            CrashSafetyTests.snapshot(dir + "/state").filter { $0.key != ".lock" }
                == stateBefore.filter { $0.key != ".lock" })
        #expect(CrashSafetyTests.snapshot(dir + "/out") == outBefore)
        #expect(vpnprov(["check"], in: dir, environment: env).code == 0)

        // With the secret at hand, the same command revokes and regenerates.
        let done = vpnprov(["revoke", "carol"], in: dir, environment: env)
        #expect(done.code == 0 && done.err.contains("revoked user 'carol'"), "\(done.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/carol"))
        #expect(vpnprov(["check"], in: dir, environment: env).code == 0)
    }

    @Test func revokeListsTheSerialKeepsTheUserOutAndReAddingIssuesAFreshCertificate() throws {
        let dir = try workspace()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let oldCert = try X509Certificate(
            pem: String(contentsOfFile: dir + "/out/clients/carol/linux/swanctl/x509/carol.pem", encoding: .utf8))

        let revoke = vpnprov(["revoke", "carol"], in: dir)
        #expect(revoke.code == 0, "\(revoke.err)")
        #expect(revoke.err.contains("revoked user 'carol' (\(oldCert.serialHex))"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/carol"))
        let crl = try CertificateRevocationList(
            pem: String(contentsOfFile: dir + "/out/servers/fra-1/swanctl/x509crl/crl.pem", encoding: .utf8))
        #expect(crl.revoked.map { hexString($0.serial) }.contains(oldCert.serialHex))
        // carol's EAP secret is gone from the servers.
        let fraSecrets = try String(
            contentsOfFile: dir + "/out/servers/fra-1/swanctl/conf.d/secrets.conf", encoding: .utf8)
        #expect(!fraSecrets.contains("\"carol\""))

        // The inventory still lists carol as active: the next run keeps her out and says so.
        let again = vpnprov(["generate"], in: dir)
        #expect(again.code == 0)
        #expect(again.err.contains("user 'carol' was revoked with 'vpnprov revoke'"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/carol"))

        // Recording the revocation in the inventory clears the hold; re-adding her later issues anew.
        var text = try String(contentsOfFile: dir + "/inventory.yaml", encoding: .utf8)
        text = text.replacingOccurrences(
            of: "    nodes: [fra-1, nyc-1]\n", with: "    nodes: [fra-1, nyc-1]\n    revoked: true\n")
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let recorded = vpnprov(["generate"], in: dir)
        #expect(recorded.code == 0)
        #expect(!recorded.err.contains("was revoked with"))
        text = text.replacingOccurrences(
            of: "    nodes: [fra-1, nyc-1]\n    revoked: true\n", with: "    nodes: [fra-1, nyc-1]\n")
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let newCert = try X509Certificate(
            pem: String(contentsOfFile: dir + "/out/clients/carol/linux/swanctl/x509/carol.pem", encoding: .utf8))
        #expect(newCert.serialHex != oldCert.serialHex)
    }

    @Test func revokeOfAnUnknownUserIsAnInventoryError() throws {
        let dir = try workspace()
        let r = vpnprov(["revoke", "carl"], in: dir)
        #expect(r.code == 1)
        #expect(r.err.contains("user 'carl' is not in inventory.yaml; did you mean 'carol'?"))
    }

    @Test func aMissingSecretReferenceStopsBeforeAnythingIsWritten() throws {
        let dir = try workspace(Self.pskNode(psk: "env:VPN_PSK_N1"))
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 1)
        #expect(r.err.contains("env:VPN_PSK_N1"), "\(r.err)")
        #expect(r.err.contains("inventory.yaml:8:"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/state/index.json"))
    }

    @Test func aWeakSecretFromAFileIsRefusedWithoutPrintingIt() throws {
        let dir = try workspace(Self.pskNode(psk: "file:psk.txt"))
        try "password1234\n".write(toFile: dir + "/psk.txt", atomically: true, encoding: .utf8)
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 1)
        #expect(r.err.contains("[weak-psk]"), "\(r.err)")
        #expect(!r.err.contains("password1234") && !r.out.contains("password1234"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
    }

    @Test func aHeldLockIsAnEnvironmentError() throws {
        let dir = try workspace()
        let lock = try StateLock(stateDirectory: dir + "/state")
        defer { lock.release() }
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 3)
        #expect(r.err.contains("lock"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
    }

    @Test func aDNServerIdentityIsCheckedAgainstTheCertificateSubject() throws {
        let dir = try workspace(
            """
            vpnprov: 1
            name: acme
            nodes:
              dn-1:
                address: 2001:db8::10
                id: "C=DE, O=acme, CN=dn-1"
                pool: 10.5.0.0/24
                services: [ikev2-eap]
            users:
              u1:
                password: gen
            """)
        let r = vpnprov(["generate"], in: dir)
        #expect(r.code == 0, "\(r.err)")
        let cert = try X509Certificate(
            pem: String(contentsOfFile: dir + "/out/servers/dn-1/swanctl/x509/dn-1.pem", encoding: .utf8))
        #expect(cert.subject.description == "C=DE, O=acme, CN=dn-1")
        let facts = CertificateFacts(subject: cert.subject.description)
        #expect(facts.contains(.dn("C=DE,O=acme,CN=dn-1")))
        #expect(!facts.contains(.dn("C=DE, O=acme, CN=dn-2")))
    }

    @Test func unchangedUsersAreTakenFromTheRenderCacheAndAnyInputChangeRendersAgain() throws {
        let dir = try workspace()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let cachePath = dir + "/out/.vpnprov-cache"
        let cache = try String(contentsOfFile: cachePath, encoding: .utf8)
        #expect(cache.hasPrefix("vpnprov-cache 1\nuser @servers "))
        #expect(cache.contains("\nuser alice "))

        // Proof that a fresh user is not rendered: replace alice's README and record its digest in the
        // cache; the next run keeps it (her inputs did not change, the file is as recorded).
        let readme = dir + "/out/clients/alice/README"
        let original = try String(contentsOfFile: readme, encoding: .utf8)
        let replaced = original + "kept\n"
        try replaced.write(toFile: readme, atomically: false, encoding: .utf8)
        let oldDigest = hexString(Digest.sha256(Array(original.utf8)))
        let newDigest = hexString(Digest.sha256(Array(replaced.utf8)))
        try cache.replacingOccurrences(of: oldDigest, with: newDigest).write(
            toFile: cachePath, atomically: false, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(try String(contentsOfFile: readme, encoding: .utf8) == replaced)

        // Without the matching digest the edit is drift, and generate repairs it.
        try cache.write(toFile: cachePath, atomically: false, encoding: .utf8)
        let drift = vpnprov(["check"], in: dir)
        #expect(drift.code == 1)
        #expect(drift.out == "stale: clients/alice/README\n")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(try String(contentsOfFile: readme, encoding: .utf8) == original)

        // A node change reaches every user's profiles although no user entry changed.
        var text = try String(contentsOfFile: dir + "/inventory.yaml", encoding: .utf8)
        text = text.replacingOccurrences(of: "address: sgp-1.vpn.example.com", with: "address: sgp-2.vpn.example.com")
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let moved = vpnprov(["check"], in: dir)
        #expect(moved.code == 1)
        #expect(moved.out.contains("stale: clients/alice/alice.mobileconfig"))
        #expect(moved.out.contains("stale: clients/alice/sgp-1-ikev2-eap.sswan"))
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(
            try String(contentsOfFile: dir + "/out/clients/alice/sgp-1-ikev2-eap.sswan", encoding: .utf8).contains(
                "sgp-2.vpn.example.com"))
        #expect(vpnprov(["check"], in: dir).code == 0)

        // A run where every user is fresh leaves the cache file alone (same inode: not even rewritten);
        // a removed user's entry goes with the next change.
        func inode() throws -> UInt64 {
            (try FileManager.default.attributesOfItem(atPath: cachePath)[.systemFileNumber] as? UInt64) ?? 0
        }
        let before = try inode()
        let kept = try String(contentsOfFile: cachePath, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        #expect(try inode() == before)
        #expect(try String(contentsOfFile: cachePath, encoding: .utf8) == kept)
        text = text.replacingOccurrences(of: "\n  alice:", with: "\n  alicia:")
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let renamed = try String(contentsOfFile: cachePath, encoding: .utf8)
        #expect(!renamed.contains("\nuser alice ") && renamed.contains("\nuser alicia "))
        #expect(vpnprov(["check"], in: dir).code == 0)
    }

    @Test func fingerprintsIgnoreDictionaryOrderAndSourceLocations() {
        let a = SourceLocation(file: "a.yaml", line: 1, column: 1)
        let b = SourceLocation(file: "a.yaml", line: 9, column: 3)
        var node = Node(
            name: "n", address: "192.0.2.1", id: .ipv4("192.0.2.1"), services: [.ikev2EAP], location: a,
            fieldLocations: ["pool": a, "psk": b, "id": a, "dns": b])
        let first = Fingerprint.digest([node])
        node.location = b
        node.fieldLocations = ["dns": a, "id": b, "psk": a, "pool": b]
        #expect(Fingerprint.digest([node]) == first)
        node.tier = .pro
        #expect(Fingerprint.digest([node]) != first)
        #expect(Fingerprint.digest([["x": 1, "y": 2, "z": 3]]) == Fingerprint.digest([["z": 3, "y": 2, "x": 1]]))
        #expect(Fingerprint.digest(["ab", "c"]) != Fingerprint.digest(["a", "bc"]))
    }

    @Test func aTamperedStateCertificateOrKeyStopsTheRunAndChangesNothing() throws {
        let dir = try workspace()
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let certs = try FileManager.default.contentsOfDirectory(atPath: dir + "/state/certs").sorted()
        let keys = try FileManager.default.contentsOfDirectory(atPath: dir + "/state/keys").sorted()
        for path in [dir + "/state/certs/" + certs[0], dir + "/state/keys/" + keys[0]] {
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            try (original + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
            let before = try snapshot(dir)
            let r = vpnprov(["generate"], in: dir)
            #expect(r.code == 3)
            #expect(r.err.contains("has changed"), "\(r.err)")
            #expect(try snapshot(dir) == before)
            try original.write(to: URL(fileURLWithPath: path))
        }
        #expect(vpnprov(["check"], in: dir).code == 0)
    }

    /// The consistency check runs inside the rendering workers. A mismatch there (here: a server
    /// view that lost its password users) is reported with its rule and stops the run: no output
    /// file, no temporary file and no state are left, and `check` fails the same way.
    @Test func aConsistencyErrorFoundWhileRenderingWritesNothing() throws {
        let dir = try workspace()
        let options = generateOptions(in: dir)
        let (console, capture) = Console.capturing()
        let output = CommandOutput(command: "generate", console: console)
        var built = try #require(try Pipeline.build(options, output: output, persist: false))
        // The state stays locked from loading to committing: another run cannot prepare from the
        // same state in between and then commit over this one.
        #expect(throws: StateError.self) { try StateLock(stateDirectory: dir + "/state") }
        let materials = built.prepared.materials
        let views = built.prepared.inventory.nodes.map { node -> ServerView in
            var view = ServerView(
                ServerPlan.make(for: node, in: built.prepared.inventory), caCertificatePEM: materials.caCertificatePEM)
            view.passwordUsers = []
            return view
        }
        built.servers = Consistency.Servers(views, materials: materials, inspect: Pipeline.inspectCertificate)
        #expect(try Pipeline.commitAndWrite(built, options: options, output: output) == false)
        #expect(capture.stderr.contains("does not know the user's password [missing-secret]"), "\(capture.stderr)")
        let left = try snapshot(dir + "/out")
        #expect(left.isEmpty, "\(left.keys.sorted())")
        #expect(!FileManager.default.fileExists(atPath: dir + "/state/index.json"))

        let session = try OutputTree.Session(directory: dir + "/out", mode: .compare)
        let rendered = try Pipeline.render(built, into: session, stage: .comparingProfiles, progress: nil)
        #expect(rendered.count == 0 && rendered.diagnostics.hasErrors)
        // Each finding once, although every batch of users found it.
        #expect(Set(rendered.diagnostics).count == rendered.diagnostics.count)

        // The real server views agree: the same run writes.
        built.servers = Consistency.Servers(plan: try #require(built.plan), inspect: Pipeline.inspectCertificate)
        #expect(try Pipeline.commitAndWrite(built, options: options, output: output))
        #expect(vpnprov(["check"], in: dir).code == 3)  // still locked by this run
        built.lock.release()
        #expect(vpnprov(["check"], in: dir).code == 0)
    }

    /// The consistency check reads the certificates a run has just issued from the PKI's parsed copies
    /// instead of parsing their PEM text again: what it reads must be what the PEM says, certificate by
    /// certificate, and a PEM the PKI holds no parsed copy of is still read.
    @Test func certificatesHeldParsedReadAsTheirPEMText() throws {
        let dir = try workspace()
        let options = generateOptions(in: dir)
        let (console, _) = Console.capturing()
        let built = try #require(
            try Pipeline.build(options, output: CommandOutput(command: "generate", console: console), persist: false))
        defer { built.lock.release() }
        let materials = built.prepared.materials
        let pems =
            materials.nodes.values.map(\.certificatePEM) + materials.users.values.compactMap(\.certificatePEM)
        let parsed = built.prepared.parsedCertificates
        // A first run issued every one of them, so the PKI holds each parsed.
        #expect(!pems.isEmpty && pems.allSatisfy { parsed[$0] != nil })
        let inspect = Pipeline.inspector(parsed: parsed)
        for pem in pems {
            let facts = try #require(Pipeline.inspectCertificate(pem))
            #expect(inspect(pem) == facts)
        }
        let withoutCopies = Pipeline.inspector(parsed: [:])
        #expect(pems.allSatisfy { withoutCopies($0) == Pipeline.inspectCertificate($0) })
        #expect(inspect("not a certificate") == nil)
    }
}
