import Foundation
import Testing
import VPNProvEngine
import VPNProvPKI
import VPNProvTestFixtures
import VPNProvYAML

@testable import VPNProvCLI

/// docs/ci.md is copied into real pipelines: its two YAML blocks (GitHub Actions, GitLab CI) are
/// read as YAML and every shell step of every job is run, with the vpnprov just built, against a
/// copy of the example inventory. Ansible is a stub that records what it was asked to do.
@Suite(.serialized, .temporaries) struct CIDocumentationTests {
    static let root = Repository.root

    /// A job as CI would run it: its shell scripts in order, and which of them may fail.
    struct Job {
        var name: String
        var scripts: [(script: String, mayFail: Bool)]
        var shell: [String]
        /// Whether the scheduled (daily) pipeline runs it.
        var runsOnSchedule = false
    }

    /// N of `status ... --expiring N` in a script.
    static func expiringDays(_ script: String) -> Int? {
        guard script.contains("vpnprov status"), let range = script.range(of: "--expiring ") else { return nil }
        return Int(script[range.upperBound...].prefix { $0.isNumber })
    }

    struct Pipeline {
        var environment: [String: String]
        var jobs: [String: Job]
    }

    static func blocks() throws -> [YAMLNode] {
        let text = try String(contentsOfFile: root + "/docs/ci.md", encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if current == nil, line == "```yaml" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return try blocks.map { try #require(try YAMLLoader.load(bytes: Array($0.utf8))) }
    }

    static func value(_ node: YAMLNode, _ key: String) -> YAMLNode? {
        guard case .mapping(let pairs) = node.kind else { return nil }
        return pairs.first { $0.key.scalar == key }?.value
    }

    static func pairs(_ node: YAMLNode?) -> [(String, YAMLNode)] {
        guard let node, case .mapping(let pairs) = node.kind else { return [] }
        return pairs.compactMap { p in p.key.scalar.map { ($0, p.value) } }
    }

    static func items(_ node: YAMLNode?) -> [YAMLNode] {
        guard let node, case .sequence(let items) = node.kind else { return [] }
        return items
    }

    /// Variables without CI expressions (`${{ ... }}`), as the job's environment.
    static func variables(_ node: YAMLNode?) -> [String: String] {
        var out: [String: String] = [:]
        for (key, value) in pairs(node) { if let v = value.scalar, !v.contains("${{") { out[key] = v } }
        return out
    }

    static func github(_ doc: YAMLNode) -> Pipeline {
        var jobs: [String: Job] = [:]
        for (name, job) in pairs(value(doc, "jobs")) {
            var scripts: [(String, Bool)] = []
            for step in items(value(job, "steps")) {
                guard let run = value(step, "run")?.scalar else { continue }  // `uses:` steps are other actions
                scripts.append((run, value(step, "continue-on-error")?.scalar == "true"))
            }
            // GitHub runs each `run:` with `bash -e`.
            jobs[name] = Job(
                name: name, scripts: scripts, shell: ["-e", "-c"],
                runsOnSchedule: value(job, "if")?.scalar?.contains("'schedule'") == true)
        }
        return Pipeline(environment: variables(value(doc, "env")), jobs: jobs)
    }

    static func gitlab(_ doc: YAMLNode) -> Pipeline {
        var jobs: [String: Job] = [:]
        for (name, job) in pairs(doc) {
            guard let script = value(job, "script") else { continue }
            // One shell for the whole script, `set -eo pipefail` as GitLab's bash runs it.
            let lines = items(script).compactMap(\.scalar)
            let schedule = items(value(job, "rules")).contains {
                value($0, "if")?.scalar?.contains("$CI_PIPELINE_SOURCE == \"schedule\"") == true
            }
            jobs[name] = Job(
                name: name, scripts: [(lines.joined(separator: "\n"), value(job, "allow_failure")?.scalar == "true")],
                shell: ["-e", "-o", "pipefail", "-c"], runsOnSchedule: schedule)
        }
        return Pipeline(environment: variables(value(doc, "variables")), jobs: jobs)
    }

    /// A checkout with the example inventory at `$INVENTORY`, a private `$VPNPROV_HOME`, and a PATH
    /// with vpnprov and the Ansible stub.
    struct Sandbox {
        var repo: String
        var home: String
        var environment: [String: String]
        var ansibleLog: String
        var base: String

        /// `example`: the inventory copied to `$INVENTORY`, with the files beside it it names (`besides`).
        init(_ pipeline: Pipeline, example: String = Repository.example, besides: [String] = []) throws {
            let base = try temporaryDirectory()
            self.base = base
            repo = base + "/repo"
            home = base + "/home"
            ansibleLog = base + "/ansible.log"
            let inventory = try #require(pipeline.environment["INVENTORY"])
            let fm = FileManager.default
            try fm.createDirectory(
                atPath: repo + "/" + (inventory as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true)
            try fm.copyItem(atPath: example, toPath: repo + "/" + inventory)
            let exampleDirectory = (example as NSString).deletingLastPathComponent
            let inventoryDirectory = repo + "/" + (inventory as NSString).deletingLastPathComponent
            for name in besides {
                try fm.copyItem(atPath: exampleDirectory + "/" + name, toPath: inventoryDirectory + "/" + name)
            }
            try fm.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let bin = base + "/bin"
            try fm.createDirectory(atPath: bin, withIntermediateDirectories: true)
            let vpnprov = VPNProvBinary.path
            try #require(
                fm.isExecutableFile(atPath: vpnprov), "the vpnprov binary is not built: run `swift build` first")
            try fm.createSymbolicLink(atPath: bin + "/vpnprov", withDestinationPath: vpnprov)
            // Records its arguments; with a deploy/ tree in the output, the paths it is given must exist.
            let stub = """
                #!/bin/sh
                printf '%s\\n' "$*" >> '\(ansibleLog)'
                if [ -f '\(base)/ansible-fails' ]; then rm '\(base)/ansible-fails'; echo "ansible-playbook stub: failing once" >&2; exit 4; fi
                [ "$1" = "-i" ] && [ "$4" = "--limit" ] || { echo "ansible-playbook stub: unexpected arguments: $*" >&2; exit 2; }
                if [ -d "$VPNPROV_HOME/out/deploy" ]; then [ -f "$2" ] && [ -f "$3" ] || { echo "missing $2 or $3" >&2; exit 2; }; fi

                """
            try stub.write(toFile: bin + "/ansible-playbook", atomically: true, encoding: .utf8)
            try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/ansible-playbook")
            var environment = ProcessInfo.processInfo.environment.merging(pipeline.environment) { $1 }
            environment["VPNPROV_HOME"] = home
            environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            self.environment = environment
        }

        /// Runs one job's scripts; the exit status of each.
        func run(_ job: Job) throws -> [Int32] {
            var statuses: [Int32] = []
            for (script, mayFail) in job.scripts {
                let result = try Subprocess.run(
                    "/bin/bash", job.shell + [script], inheriting: environment, directory: repo, timeout: .seconds(600))
                let text = result.output
                let secrets = SecretLeaks.secrets(stateDirectories: [home + "/state"], inventories: [])
                SecretLeaks.expectNone(in: text, secrets, what: "job \(job.name)")
                #expect(
                    mayFail || result.succeeded, "job \(job.name) failed (\(result.exitCode)):\n\(script)\n\(text)")
                statuses.append(result.timedOut ? -1 : result.exitCode)
            }
            return statuses
        }

        func read(_ name: String) throws -> String { try String(contentsOfFile: repo + "/" + name, encoding: .utf8) }
    }

    /// `status` comes with the lifecycle commands; until then the expiry job cannot run here.
    static var hasStatus: Bool { CommandLineTool.commandNames.contains("status") }

    func exercise(_ pipeline: Pipeline, deploy: String, gate: String, expiry: String) throws {
        let sandbox = try Sandbox(pipeline)
        let deployJob = try #require(pipeline.jobs[deploy])
        let gateJob = try #require(pipeline.jobs[gate])
        let expiryJob = try #require(pipeline.jobs[expiry])
        // The expiry gate's window is below the renewal window (a wider one fails every day for what the
        // next run renews by itself), and the renewal itself runs on the schedule: `generate` renews.
        let window = try #require(expiryJob.scripts.lazy.compactMap { Self.expiringDays($0.script) }.first)
        #expect(TimeInterval(window) * 86400 < PKIManager.renewalWindow, "--expiring \(window)")
        #expect(deployJob.runsOnSchedule, "the deploy job (which renews) does not run on the schedule")

        // First push to main: everything is new, but the rollout fails. The job fails.
        let rollout =
            "-i \(sandbox.home)/out/deploy/inventory.yml \(sandbox.home)/out/deploy/site.yml --limit fra-1,nyc-1,sgp-1\n"
        #expect(FileManager.default.createFile(atPath: sandbox.base + "/ansible-fails", contents: nil))
        let failed = try sandbox.run(
            Job(
                name: deploy, scripts: deployJob.scripts.map { ($0.script, true) }, shell: deployJob.shell,
                runsOnSchedule: true))
        #expect(failed.contains { $0 != 0 }, "the deploy job passed although the rollout failed")
        #expect(try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8) == rollout)
        // The job is retried: generate changes nothing now, and the same nodes are rolled out.
        _ = try sandbox.run(deployJob)
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(sandbox.read("vpnprov-summary.json").utf8)) as? [String: Any])
        #expect(summary["ok"] as? Bool == true)
        #expect(((summary["summary"] as? [String: Any])?["nodes"] as? [String: Any])?["changed"] as? [String] == [])
        let ansible = try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8)
        #expect(ansible == rollout + rollout)
        // An unchanged run after a successful rollout rolls nothing out.
        _ = try sandbox.run(deployJob)
        #expect(try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8) == ansible)

        // A request: the gate passes (warnings only) and leaves SARIF logs that match the schema.
        _ = try sandbox.run(gateJob)
        let logs = ["vpnprov-validate.sarif", "vpnprov-check.sarif"].map { sandbox.repo + "/" + $0 }
        let (status, report) = try OutputSchema.check("sarif", logs)
        #expect(status == 0, "\(report)")
        #expect(try sandbox.read("vpnprov-validate.sarif").contains("\"uri\" : \"inventory/vpn.yaml\""))

        // A request with an inventory error fails the gate, and still leaves its log.
        let inventory = try #require(pipeline.environment["INVENTORY"])
        let path = sandbox.repo + "/" + inventory
        let original = try String(contentsOfFile: path, encoding: .utf8)
        try original.replacingOccurrences(of: "tier: free", with: "tier: gold").write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect(
            try sandbox.run(Job(name: gate, scripts: gateJob.scripts.map { ($0.script, true) }, shell: gateJob.shell))
                .contains { $0 != 0 })
        #expect(try sandbox.read("vpnprov-validate.sarif").contains("\"ruleId\" : \"invalid-value\""))
        try original.write(toFile: path, atomically: true, encoding: .utf8)

        if Self.hasStatus { _ = try sandbox.run(expiryJob) }
    }

    @Test(.needs(.schemaPython)) func theGitHubActionsWorkflowRuns() throws {
        let doc = try #require(try Self.blocks().first { Self.value($0, "jobs") != nil })
        try exercise(Self.github(doc), deploy: "deploy", gate: "gate", expiry: "expiry")
    }

    @Test(.needs(.schemaPython)) func theGitLabPipelineRunsAndItsCodeQualityReportHasGitLabsShape() throws {
        let doc = try #require(try Self.blocks().first { Self.value($0, "stages") != nil })
        let pipeline = Self.gitlab(doc)
        try exercise(pipeline, deploy: "vpnprov-deploy", gate: "vpnprov-gate", expiry: "vpnprov-expiry")

        // The report of the gate run with the error (the last one): GitLab's Code Quality fields.
        let sandbox = try Sandbox(pipeline)
        let inventory = sandbox.repo + "/" + pipeline.environment["INVENTORY"]!
        let text = try String(contentsOfFile: inventory, encoding: .utf8).replacingOccurrences(
            of: "tier: free", with: "tier: gold")
        try text.write(toFile: inventory, atomically: true, encoding: .utf8)
        let gate = try #require(pipeline.jobs["vpnprov-gate"])
        #expect(
            try sandbox.run(Job(name: gate.name, scripts: gate.scripts.map { ($0.script, true) }, shell: gate.shell))
                == [1])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(sandbox.read("gl-code-quality-report.json").utf8))
                as? [[String: Any]])
        #expect(!report.isEmpty)
        var fingerprints = Set<String>()
        for issue in report {
            #expect((issue["description"] as? String)?.isEmpty == false)
            #expect(["info", "minor", "major", "critical", "blocker"].contains(issue["severity"] as? String))
            let location = try #require(issue["location"] as? [String: Any])
            #expect(location["path"] as? String == "inventory/vpn.yaml")
            #expect(((location["lines"] as? [String: Any])?["begin"] as? Int ?? 0) >= 1)
            fingerprints.insert(issue["fingerprint"] as? String ?? "")
        }
        #expect(fingerprints.count == report.count)
        #expect(
            report.contains { $0["check_name"] as? String == "invalid-value" && $0["severity"] as? String == "major" })
        // The example's acknowledged warnings (suppressed in the SARIF log) are no Code Quality issues.
        #expect(try sandbox.read("vpnprov-validate.sarif").contains("\"suppressions\""))
        #expect(!report.contains { $0["check_name"] as? String == "weak-psk-service" })
    }

    /// With central accounts the deploy job also rolls out the RADIUS servers whose directory changed,
    /// before the nodes: on the app example's first run every server and node, after
    /// `rotate-radius-secret fra-2` both servers and fra-2 (the rotated secret is on both sides), and a
    /// run after a successful rollout nothing.
    @Test(.needs(.schemaPython), arguments: ["github", "gitlab"]) func theDeployJobRollsOutTheRadiusServers(
        _ flavour: String
    ) throws {
        let blocks = try Self.blocks()
        let pipeline =
            flavour == "github"
            ? Self.github(try #require(blocks.first { Self.value($0, "jobs") != nil }))
            : Self.gitlab(try #require(blocks.first { Self.value($0, "stages") != nil }))
        let deploy = try #require(pipeline.jobs[flavour == "github" ? "deploy" : "vpnprov-deploy"])
        let sandbox = try Sandbox(pipeline, example: Self.root + "/inventory/app.yaml", besides: ["radius-db.conf"])
        defer { try? FileManager.default.removeItem(atPath: sandbox.base) }
        let limit = "-i \(sandbox.home)/out/deploy/inventory.yml \(sandbox.home)/out/deploy/site.yml --limit "
        _ = try sandbox.run(deploy)
        #expect(try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8) == limit + "rad-1,rad-2,ams-1,fra-2\n")

        let inventory = try #require(pipeline.environment["INVENTORY"])
        let rotate = try Subprocess.run(
            sandbox.base + "/bin/vpnprov",
            [
                "rotate-radius-secret", "fra-2", inventory, "--state", sandbox.home + "/state", "--out",
                sandbox.home + "/out", "--quiet",
            ], inheriting: sandbox.environment, directory: sandbox.repo, timeout: .seconds(300))
        #expect(rotate.succeeded, "\(rotate)")
        _ = try sandbox.run(deploy)
        let rolled = try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8)
        #expect(rolled == limit + "rad-1,rad-2,ams-1,fra-2\n" + limit + "rad-1,rad-2,fra-2\n", "\(rolled)")
        _ = try sandbox.run(deploy)
        #expect(try String(contentsOfFile: sandbox.ansibleLog, encoding: .utf8) == rolled)
    }
}
