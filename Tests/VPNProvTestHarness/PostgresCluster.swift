import Foundation
import Glibc
import VPNProvSupport

/// A throw-away PostgreSQL server for tests: a cluster in a directory of the test's, reachable only
/// through its unix socket (no TCP), trust authentication, started and stopped by the process id
/// of the server. Both test targets use it (the accounts tests, the RADIUS
/// end-to-end tests).
///
/// PostgreSQL refuses to run as root, so initdb and the server run as the `postgres` user
/// (Debian's package creates it) through `setpriv`, keeping only CAP_DAC_READ_SEARCH so that they
/// can reach a cluster below a directory only root may enter (the tests' 0700 temporary root).
/// Clients (psql, vpnprov) run as the test process (root).
package final class PostgresCluster: Sendable {
    /// The socket directory: a short directory of its own below /tmp (a unix socket path has at most
    /// 107 bytes, which a test's directory can exceed), removed by `stop`.
    package let directory: String
    /// The cluster's files (`dir/postgres` of `start(in:)`).
    package let dataDirectory: String
    /// The server's process id (the postgres postmaster, which `setpriv` execs into); a new one after `restart()`.
    package var pid: Int32 { server.value.pid }
    /// Its log (stdout and stderr).
    package let logPath: String
    /// The running postmaster (another after `restart()`), and whether `stop()` has run.
    private let server: Locked<Daemon>
    private let stopped = Locked(false)

    /// The database `start` creates for the test.
    package static let database = "accounts"
    /// The superuser of the cluster.
    package static let superuser = "postgres"

    /// The newest installed server's bin directory (/usr/lib/postgresql/<version>/bin), if any.
    package static var binDirectory: String? {
        let base = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).compactMap { Int($0) }
        for version in versions.sorted(by: >) {
            let bin = "\(base)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return bin }
        }
        return nil
    }

    package static let psqlPath = "/usr/bin/psql"
    package static let setprivPath = "/usr/bin/setpriv"

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    private init(directory: String, dataDirectory: String, server: Daemon, logPath: String) {
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.server = Locked(server)
        self.logPath = logPath
    }

    deinit { stop() }

    /// Creates a cluster in `dir/postgres` (its socket in a fresh `/tmp/vpnp-pg-*`), starts its server, waits (up to `timeout` seconds) until
    /// it answers, and creates the database `accounts`. Throws when any step fails; a server that
    /// started is stopped again before the error is thrown.
    package static func start(in dir: String, timeout: TimeInterval = 90) throws -> PostgresCluster {
        guard let bin = binDirectory else { throw Failure(description: "no PostgreSQL server in /usr/lib/postgresql") }
        guard let account = getpwnam("postgres") else { throw Failure(description: "no user 'postgres'") }
        let uid = account.pointee.pw_uid
        let gid = account.pointee.pw_gid
        let dataDirectory = dir + "/postgres"
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        var template = Array("/tmp/vpnp-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(description: "cannot create a socket directory: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        for path in [dataDirectory, directory] {
            guard chown(path, uid, gid) == 0, chmod(path, 0o755) == 0 else {
                try? FileManager.default.removeItem(atPath: directory)
                throw Failure(description: "cannot hand \(path) to postgres: \(String(cString: strerror(errno)))")
            }
        }
        let logPath = dir + "/postgres.log"
        guard FileManager.default.createFile(atPath: logPath, contents: nil), chown(logPath, uid, gid) == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure(description: "cannot create \(logPath)")
        }
        let initdb = try run(
            asPostgres: [
                bin + "/initdb", "-D", dataDirectory + "/data", "-A", "trust", "-U", superuser, "-E", "UTF8",
                "--locale=C",
                "--no-sync",
            ], log: logPath)
        guard initdb == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure(description: "initdb exited \(initdb): \(tail(logPath))")
        }
        let server: Daemon
        do {
            server = try postmaster(bin: bin, dataDirectory: dataDirectory, socketDirectory: directory, log: logPath)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let cluster = PostgresCluster(
            directory: directory, dataDirectory: dataDirectory, server: server, logPath: logPath)
        do {
            try Poll.wait(
                "the PostgreSQL server", timeout: .seconds(timeout), interval: .milliseconds(50),
                while: { server.isRunning }, until: { (try? cluster.psql("SELECT 1", database: "postgres")) == "1" })
        } catch {
            cluster.stop()
            throw Failure(description: "the PostgreSQL server did not come up (\(error)): \(tail(logPath))")
        }
        do {
            _ = try cluster.psql("CREATE DATABASE \(database)", database: "postgres")
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// The postmaster on `dataDirectory`, listening only on its socket in `socketDirectory`, started. No fsync (a
    /// test needs no data to survive the machine), but every commit is written to the WAL before it is
    /// acknowledged (`synchronous_commit` on): a killed server (`crash()`) loses no transaction it acknowledged,
    /// as a production server would not.
    private static func postmaster(bin: String, dataDirectory: String, socketDirectory: String, log logPath: String)
        throws -> Daemon
    {
        try start(
            asPostgres: [
                bin + "/postgres", "-D", dataDirectory + "/data", "-k", socketDirectory, "-c", "listen_addresses=",
                "-c", "fsync=off", "-c", "full_page_writes=off",
            ], log: logPath)
    }

    /// Kills the postmaster with SIGKILL, as a crash or the OOM killer ends it (no shutdown, no checkpoint), and
    /// reaps it. Its backends notice their postmaster is gone and exit by themselves; `restart()` waits for that.
    package func crash() {
        let process = server.value
        guard process.isRunning else { return }
        kill(process.pid, SIGKILL)
        _ = process.wait(for: .seconds(30))
    }

    /// Starts the server again on the same cluster and socket after `crash()` (crash recovery runs first), and
    /// waits up to `timeout` seconds until it answers. A postmaster started while the old one's backends still
    /// hold its shared memory refuses to run; it is started again until they are gone.
    package func restart(timeout: TimeInterval = 60) throws {
        guard let bin = Self.binDirectory else { throw Failure(description: "no PostgreSQL server") }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let process = try Self.postmaster(
                bin: bin, dataDirectory: dataDirectory, socketDirectory: directory, log: logPath)
            server.withLock { $0 = process }
            let answers = { (try? self.psql("SELECT 1", database: "postgres")) == "1" }
            let left = Duration.seconds(max(0, deadline.timeIntervalSinceNow))
            if (try? Poll.wait(
                "PostgreSQL", timeout: left, interval: .milliseconds(50), while: { process.isRunning }, until: answers))
                != nil
            {
                return
            }
            // It exited (refused to run beside the old backends) or the deadline passed.
            _ = process.wait(for: .seconds(5))
            if Date() > deadline {
                throw Failure(description: "the PostgreSQL server did not come back: \(Self.tail(logPath))")
            }
            Thread.sleep(forTimeInterval: 0.1)  // the old backends are still going: the next start's pace
        }
    }

    /// A libpq conninfo for `user` on the test database, through the socket.
    package func conninfo(user: String = PostgresCluster.superuser, database: String = PostgresCluster.database)
        -> String
    {
        "host=\(directory) user=\(user) dbname=\(database)"
    }

    /// Runs `sql` with psql as the superuser (unaligned, tuples only, stops at the first error) and
    /// returns its output without the last newline; throws with psql's error text.
    @discardableResult
    package func psql(_ sql: String, database: String = PostgresCluster.database) throws -> String {
        let result = try Subprocess.run(
            Self.psqlPath,
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory, "-U", Self.superuser, "-d", database,
                "-c", sql,
            ], inheriting: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"], timeout: .seconds(120))
        guard result.succeeded else {
            throw Failure(
                description: "psql: \(result.timedOut ? "timed out" : "exited \(result.exitCode)"): \(result.stderr)")
        }
        var text = result.stdout
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// Stops the server (fast shutdown: SIGINT, then SIGKILL after 30 s), reaps it and removes the
    /// socket directory. Safe to call twice.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        server.value.stop(signal: SIGINT, timeout: .seconds(30))
    }

    /// `setpriv` arguments that run a command as postgres, able to search directories it does not own.
    private static var asPostgresPrefix: [String] {
        [
            "--reuid=postgres", "--regid=postgres", "--init-groups", "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
        ]
    }

    /// Starts `arguments` as postgres, output appended to `log`.
    private static func start(asPostgres arguments: [String], log: String) throws -> Daemon {
        try Daemon.start(setprivPath, asPostgresPrefix + arguments, outputPath: log)
    }

    /// Runs `arguments` as postgres to the end, output appended to `log`; returns the exit status.
    private static func run(asPostgres arguments: [String], log: String) throws -> Int32 {
        let process = try start(asPostgres: arguments, log: log)
        guard process.wait(for: .seconds(300)) else {
            process.stop()
            throw Failure(description: "\(arguments[0]) did not finish within 300 s")
        }
        return process.status?.code ?? -1
    }

    private static func tail(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return String(text.suffix(1500))
    }
}
