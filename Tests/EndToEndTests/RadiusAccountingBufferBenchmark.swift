import Foundation
import Testing
import VPNProvTestHarness

/// What the RADIUS servers' accounting buffer costs and how fast it empties (docs/benchmarks.md, "The accounting
/// buffer"): with PostgreSQL killed, `sessions` sessions' Start and Stop are sent to the preferred RADIUS server
/// as the free node sends them (radclient in the node's namespace, the node's secret, through its IPsec); each must be
/// answered, so each is in the buffer. Then PostgreSQL starts again and the run waits until every session's row
/// is closed. Prints `bench radius-buffer: …` (records per second into the buffer, bytes per record on disk, the
/// replay's time and rate) and asserts only that nothing was lost or doubled, never a speed.
///
/// Not part of `swift test` or CI: skipped unless `VPNPROV_BENCHMARK=1`. Run it with
///
///     VPNPROV_BENCHMARK=1 VPNPROV_REQUIRE_E2E=1 swift test --skip-build --filter RadiusAccountingBufferBenchmark
///
/// `VPNPROV_BENCHMARK_SESSIONS` sets the number of sessions (default 2000, so 4000 records).
@Suite(.serialized, .strongSwan, .radius)
struct RadiusAccountingBufferBenchmark {
    static let sessions =
        Int(ProcessInfo.processInfo.environment["VPNPROV_BENCHMARK_SESSIONS"] ?? "") ?? 2000

    @Test(
        "The accounting buffer: records per second into it during a database outage, and its replay",
        .enabled(
            if: RadiusAuthBenchmark.isEnabled,
            Comment(
                rawValue:
                    "a benchmark: VPNPROV_BENCHMARK=1 VPNPROV_REQUIRE_E2E=1 swift test --skip-build --filter RadiusAccountingBufferBenchmark"
            )))
    func bufferAndReplay() async throws {
        try RadiusEnvironment.require()
        try StrongSwanBuild.host.requireEAPRadius()
        try await Subprocess.onOwnThread { try Self.run(sessions: Self.sessions) }
    }

    static func report(_ line: String) { print("bench radius-buffer: \(line)") }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func run(sessions: Int) throws {
        let (lab, inputs) = try RadiusGeneratedInputs.startLab(build: .host, clients: 1)
        defer { lab.teardown() }
        guard let postgres = lab.postgres else { throw HarnessError("no database") }
        let node = inputs.nodes[0]
        let server = try lab.radiusMember(inputs.radiusServers[0].name)
        let radius = try lab.radius(server.name)
        let secretFile = try Scratch.makeDirectory("buffer-bench").appendingPathComponent("secret")
        try (try inputs.radiusSecret(node.name) + "\n").write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        func record(_ status: String, _ i: Int) -> String {
            var text =
                "Acct-Status-Type = \(status)\nUser-Name = \"bench\(i)\"\nAcct-Session-Id = \"bench-\(i)\"\n"
                + "NAS-Identifier = \"\(node.name)\"\nNAS-IP-Address = \(node.address)\nNAS-Port = \(i)\n"
                + "Framed-IP-Address = 10.27.\(i / 250 % 250).\(i % 250 + 1)\nClass = \"free\"\n"
            if status == "Stop" {
                text +=
                    "Acct-Session-Time = 60\nAcct-Input-Octets = \(1000 + i)\nAcct-Output-Octets = \(2000 + i)\n"
                    + "Acct-Terminate-Cause = User-Request\n"
            }
            return text
        }
        func send(_ status: String) throws -> (answered: Int, seconds: Double) {
            let start = ContinuousClock.now
            let result = try lab.radclient(
                inNamespace: try lab.node(node.name).namespace,
                arguments: ["-p", "32", "-r", "3", "-t", "5", "-S", secretFile.path, "\(server.address):1813", "acct"],
                input: (0..<sessions).map { record(status, $0) }.joined(separator: "\n"))
            return (
                result.output.components(separatedBy: "Received Accounting-Response").count - 1, seconds(since: start)
            )
        }

        postgres.crash()
        let outage = ContinuousClock.now
        let starts = try send("Start")
        let stops = try send("Stop")
        let buffer = radius.stateDirectory.appendingPathComponent("accounting")
        let bytes = try FileManager.default.contentsOfDirectory(atPath: buffer.path).filter { $0.hasPrefix("detail") }
            .reduce(0) { total, name in
                total
                    + ((try? FileManager.default.attributesOfItem(atPath: buffer.appendingPathComponent(name).path))?[
                        .size] as? Int ?? 0)
            }
        let records = 2 * sessions
        report(
            "\(records) records sent with PostgreSQL down: \(starts.answered + stops.answered) answered in "
                + String(
                    format: "%.1f s (%.0f records/s)", starts.seconds + stops.seconds,
                    Double(records) / (starts.seconds + stops.seconds))
                + "; the buffer holds \(bytes) bytes (\(bytes / max(records, 1)) bytes a record)")
        try #require(starts.answered == sessions && stops.answered == sessions, "a record was not answered")

        let back = ContinuousClock.now
        try postgres.restart()
        let deadline = ContinuousClock.now + .seconds(600)
        var closed = 0
        while closed < sessions {
            closed =
                Int(
                    try postgres.psql(
                        "SELECT count(*) FROM radacct WHERE username LIKE 'bench%' AND acctstoptime IS NOT NULL")) ?? 0
            if ContinuousClock.now > deadline { break }
            usleep(200_000)
        }
        let replay = seconds(since: back)
        let rows = Int(try postgres.psql("SELECT count(*) FROM radacct WHERE username LIKE 'bench%'")) ?? -1
        report(
            String(
                format: "outage %.1f s; replay of %d records: %.1f s after PostgreSQL was back (%.0f records/s); ",
                seconds(since: outage) - replay, records, replay, Double(records) / replay)
                + "\(closed) sessions closed, \(rows) rows")
        try #require(closed == sessions && rows == sessions, "lost or doubled: \(closed) closed, \(rows) rows")
    }
}
