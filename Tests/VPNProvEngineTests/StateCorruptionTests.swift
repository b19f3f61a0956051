import Foundation
import Testing
import VPNProvTestFixtures

/// A damaged state is refused before anything is signed or written (docs/state.md, "What survives
/// what"). Every file a run reads from the state is corrupted in turn (single-byte flips at several
/// places, a flip inside the CA's private scalar that leaves the PKCS#8 file's public key as it was,
/// truncations), and `generate` must stop with exit 3 naming that file, with the state directory and
/// the output tree byte for byte (and mode for mode) as they were.
@Suite(.serialized, .temporaries) struct StateCorruptionTests {
    /// Two nodes (one with a generated PSK, one a RADIUS node, whose generated secrets include its
    /// relay's), password, certificate and revoked users, a CA rotation in its overlap (two CAs, a cross
    /// certificate, a CRL of each), nodes waiting for a rollout, the recorded output tree, the hand-off
    /// links, and the issuing journal of a run killed after it signed: every kind of file a state
    /// directory holds.
    static let inventory = """
        vpnprov: 1
        name: acme
        acme: {email: ops@example.com}
        handoff:
          address: get.vpn.example.com
          deploy: {host: 192.0.2.80}
        accounts:
          radius_database: env:VPN_RADIUS_DB
          servers:
            rad-1: { address: 192.0.2.11 }
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
            tier: free
            accounts: radius
        users:
          alice: {password: gen}
          bob: {cert: true}
          carol: {password: gen, cert: true}
          dave: {cert: true}

        """

    /// The RADIUS servers' database, which nothing connects to.
    static let environment = ["VPN_RADIUS_DB": "host=db.example.com dbname=vpn user=radius sslmode=verify-full"]

    /// The base site, built once per test (a few runs of the binary).
    static func base() throws -> String {
        let dir = try temporaryDirectory() + "/site"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        for arguments in [["generate"], ["handoff", "--no-publish", "--all"], ["revoke", "dave"], ["rotate-ca"]] {
            let run = try VPNProvBinary.run(arguments, in: dir, environment: environment)
            try #require(run.status == 0, "\(arguments): \(run.err.suffix(400))")
        }
        // A run that signs (a new certificate user) killed right after its issuing journal is written:
        // the journal stays for the next run, which records the certificate it names as revoked.
        try (inventory + "  erin: {cert: true}\n").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let killed = try VPNProvBinary.run(
            ["generate"], in: dir, environment: environment.merging(["VPNPROV_CRASH_AFTER_WRITES": "2"]) { $1 },
            testHooks: true)
        try #require(killed.killed, "the signing run was not killed: \(killed.err.suffix(300))")
        try #require(FileManager.default.fileExists(atPath: dir + "/state/issuing.json"))
        return dir
    }

    /// The files of the state a run reads: the records at fixed names, the CAs' files, the current
    /// holders' certificates, keys and PKCS#12 files, the cross certificate and the current CRLs (from
    /// index.json). Certificates, keys and CRLs that are no longer current are kept for the record and
    /// never read again (docs/state.md).
    static func filesInUse(_ state: String) throws -> [String] {
        let index = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: state + "/index.json")))
                as? [String: Any])
        var files = Set<String>()
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            var st = stat()
            if lstat(state + "/" + name, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0 {
                files.insert(name)
            }
        }
        files.formUnion(try FileManager.default.contentsOfDirectory(atPath: state + "/ca").map { "ca/" + $0 })
        for group in ["nodes", "users"] {
            for case let holder as [String: Any] in (index[group] as? [String: Any] ?? [:]).values {
                files.insert("certs/\(holder["serial"] as! String).pem")
                files.insert("keys/\(holder["key"] as! String).pem")
                for p12 in ["p12", "openP12"] {
                    if let record = holder[p12] as? [String: Any] { files.insert("p12/\(record["file"] as! String)") }
                }
            }
        }
        let ca = try #require(index["ca"] as? [String: Any])
        let rotation = try #require(index["rotation"] as? [String: Any])
        files.insert("certs/\(rotation["crossSerial"] as! String).pem")
        let current = try #require(index["crl"] as? [String: Any])
        files.insert("crl/\(ca["serial"] as! String)-\(current["number"] as! Int).pem")
        let previous = try #require(rotation["previousCRL"] as? [String: Any])
        files.insert("crl/\(previous["number"] as! Int).pem")
        return files.sorted()
    }

    /// One way to damage a file: its name in messages and what it does to the bytes.
    struct Corruption: CustomStringConvertible, Sendable {
        var description: String
        var apply: @Sendable ([UInt8]) -> [UInt8]?
    }

    static func flip(at fraction: Double) -> Corruption {
        Corruption(description: "bit flip at \(Int(fraction * 100)) %") { bytes in
            guard !bytes.isEmpty else { return nil }
            var out = bytes
            let i = min(bytes.count - 1, Int(Double(bytes.count) * fraction))
            out[i] ^= 0x01
            return out
        }
    }

    static let generic: [Corruption] = [
        flip(at: 0), flip(at: 0.25), flip(at: 0.5), flip(at: 0.75), flip(at: 1),
        Corruption(description: "emptied") { _ in [] },
        Corruption(description: "cut in half") { Array($0.prefix($0.count / 2)) },
        Corruption(description: "last byte cut") { Array($0.dropLast()) },
    ]

    /// One bit flipped in the middle of an EC key's private scalar, the key's public half in the file
    /// untouched.
    static let scalarFlip = Corruption(description: "bit flip inside the private scalar") {
        StateDamage.flipScalar($0)
    }

    /// One byte changed inside a value of a JSON or line record: the first character of the value of
    /// the first line that contains `marker`, or the first character of the line itself.
    static func valueFlip(_ what: String, after marker: String, offset: Int = 0) -> Corruption {
        Corruption(description: what) { bytes in
            guard let range = bytes.firstRange(of: Array(marker.utf8)) else { return nil }
            var out = bytes
            out[range.upperBound + offset] ^= 0x01
            return out
        }
    }

    /// The corruptions of one file: every generic one, and those aimed at what a run takes from it.
    static func corruptions(of file: String) -> [Corruption] {
        var list = generic
        if file.hasPrefix("ca/") && file.hasSuffix(".key") { list.append(scalarFlip) }
        switch file {
        case "secrets.json":
            list.append(valueFlip("a flipped byte in a generated PSK", after: "\"fra-1\" : \"", offset: 5))
            list.append(
                valueFlip(
                    "a flipped byte in the relay's secret", after: "\"radiusRelaySecrets\" : {\n    \"nyc-1\" : \""))
            list.append(valueFlip("the relay's secrets under an unknown key", after: "\"radiusRelaySecre"))
        case "rollout-pending":
            list.append(valueFlip("a flipped byte in a node name", after: "nyc", offset: 1))
        case "handoff.json":
            list.append(valueFlip("a flipped byte in a link id", after: "\"id\" : \"", offset: 7))
        case "index.json":
            list.append(
                Corruption(description: "another hex digit in a key id") { bytes in
                    guard let range = bytes.firstRange(of: Array("\"key\" : \"".utf8)) else { return nil }
                    var out = bytes
                    let digit = out[range.upperBound + 3]
                    out[range.upperBound + 3] =
                        digit == UInt8(ascii: "9")
                        ? UInt8(ascii: "0") : digit == UInt8(ascii: "F") ? UInt8(ascii: "A") : digit + 1
                    return out
                })
            // An optional field's name: the decoder would ignore the unknown key and lose the value.
            list.append(valueFlip("an unknown key", after: "\"revocationRea"))
            list.append(
                Corruption(description: "an impossible time") { bytes in
                    guard let range = bytes.firstRange(of: Array("\"notAfter\" : \"".utf8)) else { return nil }
                    var out = bytes
                    out[range.upperBound + 11] = UInt8(ascii: "4")
                    return out
                })
        default: break
        }
        return list
    }

    @Test func everyCorruptionOfAStateFileIsRefusedWithItsNameAndNothingChanges() throws {
        try #require(FileManager.default.isExecutableFile(atPath: VPNProvBinary.path))
        let base = try Self.base()
        let files = try Self.filesInUse(base + "/state")
        for kind in [
            "index.json", "secrets.json", "rollout-pending", "output-location", "handoff.json", "issuing.json",
            "ca/ca.key", "ca/ca.pem",
        ] {
            #expect(files.contains(kind), "the base state has no \(kind)")
        }
        #expect(files.count >= 20, "\(files)")
        var tried = 0
        var refused = 0
        var missed: [String] = []
        for file in files {
            let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: base + "/state/" + file)))
            for corruption in Self.corruptions(of: file) {
                guard let damaged = corruption.apply(original), damaged != original else {
                    Issue.record("\(file): \(corruption) cannot be applied")
                    continue
                }
                let parent = try temporaryDirectory()
                defer { try? FileManager.default.removeItem(atPath: parent) }
                let dir = parent + "/site"
                try CrashSafetyTests.copyTree(base, to: dir)
                try Data(damaged).write(to: URL(fileURLWithPath: dir + "/state/" + file))
                let before = (snapshot(dir + "/state"), snapshot(dir + "/out"))
                let run = vpnprov(["generate"], in: dir, environment: Self.environment)
                tried += 1
                let named = run.err.contains("state/" + file)
                let unchanged = snapshot(dir + "/state") == before.0 && snapshot(dir + "/out") == before.1
                if run.code == 3 && named && unchanged {
                    refused += 1
                } else {
                    missed.append(
                        "\(file), \(corruption): exit \(run.code), \(named ? "named" : "not named"), "
                            + "\(unchanged ? "nothing changed" : "the state or the output changed"): "
                            + "\(run.err.split(separator: "\n").first { $0.contains("error") } ?? "")")
                }
            }
        }
        print(
            "state corruptions: \(files.count) files, \(tried) corruptions tried, \(refused) refused with the file named "
                + "and nothing changed")
        #expect(
            missed.isEmpty, "\(missed.count) of \(tried) corruptions not refused:\n\(missed.joined(separator: "\n"))")

        // The same state as an earlier vpnprov wrote it (no manifest): its records are read key by key
        // against what vpnprov writes. The relay's secrets are under a key vpnprov writes, so the state
        // loads and keeps them; under a misspelt key, which the decoder alone would skip (and the run would
        // give the relay and charon a new secret), they are refused, named, and nothing changes.
        let older = try temporaryDirectory() + "/site"
        try CrashSafetyTests.copyTree(base, to: older)
        try StateDamage.unseal(older + "/state")
        let secretsPath = older + "/state/secrets.json"
        let relaySecret = try Self.relaySecret(secretsPath)
        let unsealed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: secretsPath)))
        let misspelt = try #require(Self.valueFlip("a misspelt key", after: "\"radiusRelaySecre").apply(unsealed))
        try Data(misspelt).write(to: URL(fileURLWithPath: secretsPath))
        let before = (snapshot(older + "/state"), snapshot(older + "/out"))
        let misread = vpnprov(["generate"], in: older, environment: Self.environment)
        #expect(misread.code == 3 && misread.err.contains("the unknown key radiusRelaySecreus"), "\(misread.err)")
        #expect(snapshot(older + "/state") == before.0 && snapshot(older + "/out") == before.1)
        try Data(unsealed).write(to: URL(fileURLWithPath: secretsPath))
        let loaded = vpnprov(["generate"], in: older, environment: Self.environment)
        #expect(loaded.code == 0, "\(loaded.err.suffix(400))")
        let kept = try Self.relaySecret(secretsPath) == relaySecret
        #expect(kept, "the run gave the relay a new secret")
    }

    /// The RADIUS node's relay secret in secrets.json (never printed).
    static func relaySecret(_ path: String) throws -> String {
        let secrets = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        let relay = (secrets as? [String: Any])?["radiusRelaySecrets"] as? [String: String]
        return try #require(relay?["nyc-1"], "no relay secret of nyc-1")
    }
}
