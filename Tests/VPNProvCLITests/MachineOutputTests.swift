import Foundation
import Testing
import VPNProvPKI
import VPNProvTestFixtures

@testable import VPNProvEngine
@testable import VPNProvModel

/// `--format json` (one document, the `vpnprov: 1` envelope) and `--format sarif` (checked against
/// the OASIS SARIF 2.1.0 schema), `validate --secrets`, the end-of-run summary and `--quiet`.
@Suite(.temporaries) struct MachineOutputTests {
    static let root = Repository.root
    static let example = Repository.example

    func workspace(_ text: String? = nil) throws -> String {
        let dir = try temporaryDirectory()
        let contents = try text ?? String(contentsOfFile: Self.example, encoding: .utf8)
        try contents.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return dir
    }

    /// Standard output as the one JSON document it must be, with the envelope checked: `vpnprov: 1`,
    /// the command, `ok` matching the exit status, a diagnostics array of well-formed entries.
    func document(
        _ r: (code: Int32, out: String, err: String), _ command: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        // JSONSerialization rejects anything after the first value: this is exactly one document.
        let doc = try #require(
            try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "stdout: \(r.out)",
            sourceLocation: sourceLocation)
        #expect(doc["vpnprov"] as? Int == 1, sourceLocation: sourceLocation)
        #expect(doc["command"] as? String == command, sourceLocation: sourceLocation)
        #expect(doc["ok"] as? Bool == (r.code == 0), sourceLocation: sourceLocation)
        let diagnostics = try #require(doc["diagnostics"] as? [[String: Any]], sourceLocation: sourceLocation)
        for d in diagnostics {
            #expect(["error", "warning", "note"].contains(d["severity"] as? String), sourceLocation: sourceLocation)
            #expect((d["code"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
            #expect((d["message"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        }
        return doc
    }

    func codes(_ doc: [String: Any]) -> [String] {
        ((doc["diagnostics"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
    }

    @Test(.needs(.schemaPython)) func everyCommandPrintsExactlyOneJSONDocument() throws {
        let dir = try workspace()
        // Every document printed, checked against docs/json-output.schema.json at the end.
        var printed: [String] = []
        func document(_ r: (code: Int32, out: String, err: String), _ command: String) throws -> [String: Any] {
            printed.append(r.out)
            return try self.document(r, command)
        }
        // init
        let created = vpnprov(["init", "fresh", "--format", "json"], in: dir)
        #expect(created.code == 0)
        #expect(try document(created, "init")["created"] as? String == "fresh/inventory.yaml")
        #expect(created.err.contains("next: edit it"))

        // validate: clean (warnings only) and broken
        let valid = try document(vpnprov(["validate", "--format", "json"], in: dir), "validate")
        #expect((valid["inventory"] as? [String: Any])?["nodes"] as? Int == 3)
        #expect(codes(valid).contains("weak-psk-service"))
        try "vpnprov: 1\nname: x\nnodes:\n  a:\n    adress: 192.0.2.1\n".write(
            toFile: dir + "/broken.yaml", atomically: true, encoding: .utf8)
        let broken = vpnprov(["validate", "broken.yaml", "--format", "json"], in: dir)
        #expect(broken.code == 1)
        #expect(codes(try document(broken, "validate")) == ["missing-key", "unknown-key"])

        // generate: the summary names what changed and what to do next
        let first = vpnprov(["generate", "--format", "json"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        let summary = try #require(try document(first, "generate")["summary"] as? [String: Any])
        let nodes = try #require(summary["nodes"] as? [String: Any])
        #expect(nodes["changed"] as? [String] == ["fra-1", "nyc-1", "sgp-1"])
        let users = try #require(summary["users"] as? [String: Any])
        #expect(users["changed"] as? [String] == ["alice", "bob", "carol", "dave", "erin"])
        let files = try #require(summary["files"] as? [String: Any])
        #expect(
            (files["written"] as? Int ?? 0) > 0
                && files["written"] as? Int == (files["writtenPaths"] as? [String])?.count)
        let certificates = try #require(summary["certificates"] as? [String: Any])
        #expect(
            ((certificates["issued"] as? [[String: Any]]) ?? []).contains {
                $0["holder"] as? String == "node" && $0["name"] as? String == "fra-1"
            })
        let next = try #require(summary["next"] as? [String: Any])
        let rollout = "ansible-playbook -i out/deploy/inventory.yml out/deploy/site.yml --limit fra-1,nyc-1,sgp-1"
        #expect(next["rollout"] as? String == rollout)
        #expect(first.err.contains(rollout))
        #expect(first.err.contains("hand new profiles to alice, bob, carol, dave, erin"))

        // a no-op run changes nothing; until the rollout is recorded it still proposes it
        let again = try #require(
            try document(vpnprov(["generate", "--format", "json"], in: dir), "generate")["summary"] as? [String: Any])
        #expect((again["files"] as? [String: Any])?["written"] as? Int == 0)
        #expect((again["nodes"] as? [String: Any])?["changed"] as? [String] == [])
        #expect((again["next"] as? [String: Any])?["rollout"] as? String == rollout)
        let recorded = try #require(
            try document(vpnprov(["rolled-out", "--all", "--format", "json"], in: dir), "rolled-out")["rolledOut"]
                as? [String: Any])
        #expect(recorded["recorded"] as? [String] == ["fra-1", "nyc-1", "sgp-1"])
        let rolledOut = try #require(
            try document(vpnprov(["generate", "--format", "json"], in: dir), "generate")["summary"] as? [String: Any])
        #expect((rolledOut["next"] as? [String: Any])?["rollout"] == nil)

        // check: clean, then drift of every kind
        let clean = try document(vpnprov(["check", "--format", "json"], in: dir), "check")
        let cleanDrift = try #require(clean["drift"] as? [String: Any])
        for key in ["missing", "stale", "unexpected", "untracked", "state"] {
            #expect((cleanDrift[key] as? [String]) == [], "\(key)")
        }
        var text = try String(contentsOfFile: dir + "/inventory.yaml", encoding: .utf8)
        text =
            text.replacingOccurrences(of: "pool: 10.30.0.0/24", with: "pool: 10.31.0.0/24")
            + "\n  frank:\n    password: gen\n"
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try "mine".write(toFile: dir + "/out/notes.txt", atomically: true, encoding: .utf8)
        let drifted = vpnprov(["check", "--format", "json"], in: dir)
        #expect(drifted.code == 1)
        let drift = try #require(try document(drifted, "check")["drift"] as? [String: Any])
        #expect((drift["missing"] as? [String])?.contains("clients/frank/frank.mobileconfig") == true)
        #expect((drift["stale"] as? [String])?.contains("servers/sgp-1/swanctl/swanctl.conf") == true)
        #expect(drift["untracked"] as? [String] == ["notes.txt"])
        #expect(drift["state"] as? [String] == ["generate secret for user 'frank': password"])
        #expect(drifted.err.contains("untracked: notes.txt"))
        try FileManager.default.removeItem(atPath: dir + "/out/notes.txt")

        // revoke: the revoked user, their profiles removed, the restore hint as a diagnostic
        let revoked = vpnprov(["revoke", "bob", "--format", "json"], in: dir)
        #expect(revoked.code == 0, "\(revoked.err)")
        let revokeDoc = try document(revoked, "revoke")
        #expect((revokeDoc["revoked"] as? [String: Any])?["user"] as? String == "bob")
        #expect(
            ((revokeDoc["summary"] as? [String: Any])?["users"] as? [String: Any])?["removed"] as? [String] == ["bob"])
        let revokedCertificates =
            ((revokeDoc["summary"] as? [String: Any])?["certificates"] as? [String: Any])?["revoked"]
            as? [[String: Any]]
        #expect(revokedCertificates?.first?["name"] as? String == "bob")
        let hold = ((revokeDoc["diagnostics"] as? [[String: Any]]) ?? []).filter {
            $0["code"] as? String == "state-notice"
        }
        #expect(hold.count == 1)
        #expect((hold.first?["message"] as? String)?.contains("vpnprov unrevoke bob") == true)

        // usage and environment failures still print their one document
        let usage = vpnprov(["validate", "nope.yaml", "--format", "json"], in: dir)
        #expect(usage.code == 2)
        #expect(codes(try document(usage, "validate")) == ["usage"])
        #expect(usage.err.contains("inventory 'nope.yaml' not found"))
        let lock = try StateLock(stateDirectory: dir + "/state")
        let locked = vpnprov(["generate", "--format", "json"], in: dir)
        lock.release()
        #expect(locked.code == 3)
        #expect(codes(try document(locked, "generate")).contains("state-locked"))

        var documentFiles: [String] = []
        for (i, text) in printed.enumerated() {
            documentFiles.append(dir + "/doc-\(i).json")
            try text.write(toFile: documentFiles.last!, atomically: true, encoding: .utf8)
        }
        #expect(printed.count == 12)
        let (status, report) = try OutputSchema.check("json", documentFiles)
        #expect(status == 0, "\(report)")
    }

    @Test func longNameListsInTheTextSummaryAreCut() {
        #expect(Pipeline.listed(["a", "b"]) == "a, b")
        let many = (1...25).map { "u\($0)" }
        #expect(Pipeline.listed(many) == many.prefix(20).joined(separator: ", ") + " and 5 more (all in --format json)")
    }

    @Test func sarifIsOnlyOfferedByValidateAndCheck() {
        let r = vpnprov(["generate", "--format", "sarif"])
        #expect(r.code == 2)
        #expect(r.err.contains("expected text or json"))
        #expect(vpnprov(["validate", "--help"]).out.contains("--format <text|json|sarif>"))
    }

    @Test(.needs(.schemaPython)) func sarifOfValidateAndCheckMatchesTheSchemaAndPointsAtTheLines() throws {
        let dir = try workspace()
        let bad = try String(
            contentsOfFile: InventoryFixtures.root.appendingPathComponent("bad/duplicate-node-key.yaml").path,
            encoding: .utf8)
        try bad.write(toFile: dir + "/bad.yaml", atomically: true, encoding: .utf8)
        let invalid = vpnprov(["validate", "bad.yaml", "--format", "sarif"], in: dir)
        #expect(invalid.code == 1)
        try invalid.out.write(toFile: dir + "/validate.sarif", atomically: true, encoding: .utf8)

        #expect(vpnprov(["generate"], in: dir).code == 0)
        try "x".write(toFile: dir + "/out/stray", atomically: true, encoding: .utf8)
        let drift = vpnprov(["check", "--format", "sarif"], in: dir)
        #expect(drift.code == 1)
        try drift.out.write(toFile: dir + "/check.sarif", atomically: true, encoding: .utf8)
        let clean = vpnprov(["validate", "--format", "sarif"], in: dir)
        try clean.out.write(toFile: dir + "/clean.sarif", atomically: true, encoding: .utf8)
        // An inventory named by absolute path (with a space) is a file: URI.
        try bad.write(toFile: dir + "/my bad.yaml", atomically: true, encoding: .utf8)
        let absolute = vpnprov(["validate", dir + "/my bad.yaml", "--format", "sarif"], in: dir)
        try absolute.out.write(toFile: dir + "/absolute.sarif", atomically: true, encoding: .utf8)
        #expect(absolute.out.contains("\"uri\" : \"file://\(dir)/my%20bad.yaml\""), "\(absolute.out)")

        let (status, report) = try OutputSchema.check(
            "sarif", [dir + "/validate.sarif", dir + "/check.sarif", dir + "/clean.sarif", dir + "/absolute.sarif"])
        #expect(status == 0, "\(report)")
        // The checker is not a rubber stamp: a log without its version fails.
        var broken = try #require(try JSONSerialization.jsonObject(with: Data(invalid.out.utf8)) as? [String: Any])
        broken["version"] = nil
        try JSONSerialization.data(withJSONObject: broken).write(to: URL(fileURLWithPath: dir + "/broken.sarif"))
        #expect(try OutputSchema.check("sarif", [dir + "/broken.sarif"]).0 == 1)

        // One rule per code with its help; results at file, line and column; notes as related locations.
        let log = try #require(try JSONSerialization.jsonObject(with: Data(invalid.out.utf8)) as? [String: Any])
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let rules = try #require(
            ((run["tool"] as? [String: Any])?["driver"] as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(rules.map { $0["id"] as? String } == ["duplicate-key"])
        #expect(((rules[0]["help"] as? [String: Any])?["text"] as? String)?.contains("same key twice") == true)
        let result = try #require((run["results"] as? [[String: Any]])?.first)
        #expect(result["ruleId"] as? String == "duplicate-key")
        #expect(result["level"] as? String == "error")
        let physical = try #require(
            ((result["locations"] as? [[String: Any]])?.first?["physicalLocation"]) as? [String: Any])
        #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == "bad.yaml")
        #expect((physical["region"] as? [String: Any])?["startLine"] as? Int == 8)
        #expect((physical["region"] as? [String: Any])?["startColumn"] as? Int == 5)
        #expect((result["relatedLocations"] as? [[String: Any]])?.count == 1)

        let checkLog = try #require(try JSONSerialization.jsonObject(with: Data(drift.out.utf8)) as? [String: Any])
        let checkResults = try #require((checkLog["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        let driftResult = try #require(checkResults.first { $0["ruleId"] as? String == "drift" })
        let uri =
            (((driftResult["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?[
                "artifactLocation"]
            as? [String: Any])?["uri"] as? String
        #expect(uri == "out/stray")
    }

    /// A command writes its part of the document through a result type naming one of `DocumentKey`'s cases; the
    /// documentation's table of command-specific keys and the schema list exactly those cases.
    @Test func theDocumentedKeysAreTheResultTypesKeys() throws {
        let keys = Set(DocumentKey.allCases.map(\.rawValue))
        let schemaData = try Data(contentsOf: URL(fileURLWithPath: Self.root + "/docs/json-output.schema.json"))
        let schema = try #require(try JSONSerialization.jsonObject(with: schemaData) as? [String: Any])
        let properties = try #require(schema["properties"] as? [String: Any])
        #expect(Set(properties.keys).subtracting(["vpnprov", "command", "ok", "diagnostics"]) == keys)

        let page = try String(contentsOfFile: Self.root + "/docs/json-output.md", encoding: .utf8)
        let table = try #require(
            page.components(separatedBy: "Command-specific keys:").last?.components(separatedBy: "`summary`:").first)
        var documented = Set<String>()
        for row in table.split(separator: "\n") where row.hasPrefix("| `") {
            let cell = row.dropFirst(2).prefix { $0 != "|" }
            for name in cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter({
                $0.offset % 2 == 1
            }) {
                documented.insert(String(name.element))
            }
        }
        #expect(documented == keys)
    }

    @Test func validateSecretsResolvesReferencesWithoutPrintingThem() throws {
        let text = """
            vpnprov: 1
            name: acme
            nodes:
              n1:
                address: 192.0.2.1
                pool: 10.1.0.0/24
                services: [ikev2-eap, ikev2-psk]
                psk: env:VPN_PSK_N1
              n2:
                address: 192.0.2.2
                pool: 10.2.0.0/24
                services: [ikev2-eap, ikev2-psk]
                psk: file:secrets/n2.psk
            users:
              u1:
                password: env:VPN_U1_PASSWORD
              u2:
                password: file:secrets/missing
              u3:
                password: env:VPN_U3_PASSWORD
            """
        let dir = try workspace(text)
        try FileManager.default.createDirectory(atPath: dir + "/secrets", withIntermediateDirectories: true)
        try "Kq7mZt2RwX9pLv4NcB8hYd3F\n".write(toFile: dir + "/secrets/n2.psk", atomically: true, encoding: .utf8)
        let environment = ["VPN_U1_PASSWORD": "password1234", "VPN_U3_PASSWORD": "vT8qLm2XzR4wNk9P"]
        // Without --secrets only the references' form is checked.
        let plain = vpnprov(["validate"], in: dir, environment: environment)
        #expect(plain.code == 0)
        #expect(
            plain.out
                == "inventory.yaml: no errors, 4 warnings (2 nodes, 3 users; 5 env:/file: secrets not resolved (--secrets))\n"
        )
        let r = vpnprov(["validate", "--secrets", "--format", "json"], in: dir, environment: environment)
        #expect(r.code == 1)
        let diagnostics = try #require(try document(r, "validate")["diagnostics"] as? [[String: Any]])
        let found = diagnostics.filter { $0["severity"] as? String == "error" }.map {
            "\($0["line"] as? Int ?? 0) \($0["code"] as? String ?? "")"
        }
        #expect(found == ["8 secret-unavailable", "16 weak-password", "18 secret-unavailable"], "\(r.err)")
        #expect(r.err.contains("environment variable VPN_PSK_N1 is not set"))
        #expect(r.err.contains("cannot read file"))
        // The weak value is judged, never shown (the vpnprov helper also checks every value above).
        #expect(!r.err.contains("password1234") && !r.out.contains("password1234"))

        let fixed = environment.merging([
            "VPN_PSK_N1": "Zr8kWm3QxT7nLp2VbH9cJd4G", "VPN_U1_PASSWORD": "Hx4mPq9TzW2kRv7L",
        ]) { $1 }
        try "Yt6nKw2RmX8qLz4PcV9bHd3J\n".write(toFile: dir + "/secrets/missing", atomically: true, encoding: .utf8)
        let ok = vpnprov(["validate", "--secrets"], in: dir, environment: fixed)
        #expect(ok.code == 0, "\(ok.err)")
    }

    @Test func quietPrintsErrorsOnly() throws {
        let dir = try workspace()
        let quiet = vpnprov(["generate", "--quiet"], in: dir)
        #expect(quiet.code == 0)
        #expect(quiet.err.isEmpty, "\(quiet.err)")
        #expect(quiet.out.isEmpty)
        #expect(vpnprov(["check", "--quiet"], in: dir).err.isEmpty)
        let validated = vpnprov(["validate", "--quiet"], in: dir)
        #expect(validated.code == 0 && validated.out.isEmpty && validated.err.isEmpty)
        try
            "vpnprov: 1\nname: x\nnodes:\n  a:\n    address: 192.0.2.1\n    pool: 10.1.0.0/24\n    tier: on\n    services: [ikev2-eap, ikev2-eap]\n"
            .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let failed = vpnprov(["validate", "--quiet"], in: dir)
        #expect(failed.code == 1)
        #expect(failed.err.contains("error: node 'a': 'tier'"))
        #expect(!failed.err.contains("warning"))
    }
}
