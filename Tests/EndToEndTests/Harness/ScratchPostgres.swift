import Foundation
import Glibc

/// A throw-away PostgreSQL server for the RADIUS lab: `initdb` into a scratch directory, then the postmaster in the
/// foreground as the `postgres` user (`setpriv` execs it in place, so the pid we hold is the postmaster's) inside
/// a network namespace, listening on one TCP address there and on a unix socket in its directory (the test's psql
/// uses the socket); trust authentication, durability off (a test database). Not started with `pg_ctl`: the
/// postmaster it forks keeps every inherited descriptor, which keeps Foundation's Process waiting for pg_ctl.
/// Stopped by pid (SIGINT: fast shutdown).
///
/// Temporary: replaced by VPNProvTestSupport's `PostgresCluster` once that exists.
final class ScratchPostgres: @unchecked Sendable {
    static let setprivPath = "/usr/bin/setpriv"

    let directory: URL
    let address: String
    let port = 5432
    let database: String
    private var process: DaemonProcess?
    var socketDirectory: String { directory.path }
    var dataDirectory: String { directory.appendingPathComponent("data").path }
    var logPath: String { directory.appendingPathComponent("postgres.log").path }

    private init(directory: URL, address: String, database: String) {
        self.directory = directory
        self.address = address
        self.database = database
    }

    /// initdb, start in `namespace` on `address` (TCP from `clients`, a CIDR, authenticated with
    /// `hostAuthentication`, a pg_hba method), create `database`.
    static func start(
        in namespace: String, address: String, clients: String, hostAuthentication: String = "trust",
        database: String, timeout: Duration = .seconds(60)
    ) throws -> ScratchPostgres {
        guard let bin = RadiusEnvironment.postgresBin else { throw HarnessError("no PostgreSQL server installed") }
        let pg = ScratchPostgres(directory: try Scratch.makeDirectory("pg"), address: address, database: database)
        guard let user = getpwnam("postgres") else { throw HarnessError("no user postgres") }
        guard chown(pg.directory.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw HarnessError("chown \(pg.directory.path) failed: errno \(errno)")
        }
        try Command.check(
            RadiusEnvironment.runuserPath,
            ["-u", "postgres", "--", bin + "/initdb", "-D", pg.dataDirectory, "-A", "trust", "-U", "postgres", "-N"],
            timeout: timeout)
        let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: pg.dataDirectory + "/pg_hba.conf"))
        hba.seekToEndOfFile()
        hba.write(Data("host all all \(clients) \(hostAuthentication)\n".utf8))
        try hba.close()

        let process = try DaemonProcess.start(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, setprivPath, "--reuid=postgres", "--regid=postgres", "--init-groups",
                bin + "/postgres", "-D", pg.dataDirectory, "-k", pg.socketDirectory, "-c",
                "listen_addresses=\(address)", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                "full_page_writes=off",
            ], outputPath: pg.logPath)
        pg.process = process
        do {
            let deadline = ContinuousClock.now + timeout
            while !pg.log.contains("ready to accept connections") {
                if !process.isRunning || ContinuousClock.now > deadline {
                    throw HarnessError(
                        "PostgreSQL did not start (\(process.isRunning ? "timeout" : "exited")):\n\(pg.log)")
                }
                usleep(20_000)
            }
            _ = try pg.psql("CREATE DATABASE \(database)", database: "postgres")
        } catch {
            pg.stop()
            throw error
        }
        return pg
    }

    /// Runs SQL as the superuser (through the socket); returns psql's unaligned, tuples-only output, trimmed.
    @discardableResult
    func psql(_ sql: String, database: String? = nil) throws -> String {
        let result = try Command.check(
            RadiusEnvironment.psqlPath,
            [
                "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-U", "postgres", "-d",
                database ?? self.database, "-At", "-F", "|", "-c", sql,
            ])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs an SQL file as the superuser in one transaction.
    func apply(file: String) throws {
        try Command.check(
            RadiusEnvironment.psqlPath,
            [
                "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-U", "postgres", "-d", database,
                "-1", "-f", file,
            ])
    }

    /// The server's log (a leaked password would show here too).
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGINT to the postmaster (fast shutdown), wait (bounded), then SIGKILL. Safe to call twice.
    func stop() {
        process?.stop(signal: SIGINT, timeout: .seconds(15))
        process = nil
    }

    deinit { stop() }
}
