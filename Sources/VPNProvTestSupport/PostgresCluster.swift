import Foundation
import Glibc

/// A throw-away PostgreSQL server for tests: a cluster in a directory of the test's, reachable only
/// through its unix socket (no TCP), trust authentication, started and stopped by the process id
/// of the server. Both test targets use it (the accounts tests, the RADIUS
/// end-to-end tests).
///
/// PostgreSQL refuses to run as root, so initdb and the server run as the `postgres` user
/// (Debian's package creates it) through `setpriv`, keeping only CAP_DAC_READ_SEARCH so that they
/// can reach a cluster below a directory only root may enter (the tests' 0700 temporary root).
/// Clients (psql, vpnprov) run as the test process (root).
package final class PostgresCluster: @unchecked Sendable {
    /// The socket directory: a short directory of its own below /tmp (a unix socket path has at most
    /// 107 bytes, which a test's directory can exceed), removed by `stop`.
    package let directory: String
    /// The cluster's files (`dir/postgres` of `start(in:)`).
    package let dataDirectory: String
    /// The server's process id (the postgres postmaster, which `setpriv` execs into); a new one after `restart()`.
    package var pid: Int32 { lock.withLock { server.processIdentifier } }
    /// Its log (stdout and stderr).
    package let logPath: String
    private let lock = NSLock()
    private var stopped = false

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

    private var server: Process

    private init(directory: String, dataDirectory: String, server: Process, logPath: String) {
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.server = server
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
        let server: Process
        do {
            server = try postmaster(bin: bin, dataDirectory: dataDirectory, socketDirectory: directory, log: logPath)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let cluster = PostgresCluster(
            directory: directory, dataDirectory: dataDirectory, server: server, logPath: logPath)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if (try? cluster.psql("SELECT 1", database: "postgres")) == "1" { break }
            if !server.isRunning || Date() > deadline {
                cluster.stop()
                throw Failure(description: "the PostgreSQL server did not come up: \(tail(logPath))")
            }
            usleep(50_000)
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
        throws -> Process
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
        let process = lock.withLock { server }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
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
            lock.withLock { server = process }
            while process.isRunning {
                if (try? psql("SELECT 1", database: "postgres")) == "1" { return }
                if Date() > deadline {
                    throw Failure(description: "the PostgreSQL server did not come back: \(Self.tail(logPath))")
                }
                usleep(50_000)
            }
            process.waitUntilExit()
            if Date() > deadline {
                throw Failure(description: "the PostgreSQL server did not come back: \(Self.tail(logPath))")
            }
            usleep(100_000)
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.psqlPath)
        process.arguments = [
            "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory, "-U", Self.superuser, "-d", database,
            "-c", sql,
        ]
        process.environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // psql exits after answering: reading both pipes to the end cannot block forever.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "psql exited \(process.terminationStatus): \(String(decoding: err, as: UTF8.self))")
        }
        var text = String(decoding: out, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// Stops the server (fast shutdown: SIGINT, then SIGKILL after 30 s), reaps it and removes the
    /// socket directory. Safe to call twice.
    package func stop() {
        lock.lock()
        defer { lock.unlock() }
        if stopped { return }
        stopped = true
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard server.isRunning else { return }
        let pid = server.processIdentifier
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(30)
        while server.isRunning {
            if Date() > deadline {
                kill(pid, SIGKILL)
                break
            }
            usleep(20_000)
        }
        server.waitUntilExit()
    }

    /// `setpriv` arguments that run a command as postgres, able to search directories it does not own.
    private static var asPostgresPrefix: [String] {
        [
            "--reuid=postgres", "--regid=postgres", "--init-groups", "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
        ]
    }

    /// Starts `arguments` as postgres, output appended to `log`.
    private static func start(asPostgres arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: setprivPath)
        process.arguments = asPostgresPrefix + arguments
        let handle = FileHandle(forWritingAtPath: log)
        handle?.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `arguments` as postgres to the end, output appended to `log`; returns the exit status.
    private static func run(asPostgres arguments: [String], log: String) throws -> Int32 {
        let process = try start(asPostgres: arguments, log: log)
        process.waitUntilExit()
        return process.terminationStatus
    }

    private static func tail(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return String(text.suffix(1500))
    }
}
