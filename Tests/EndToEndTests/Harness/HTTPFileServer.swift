import Foundation
import Glibc
import VPNProvTestHarness

/// A static HTTP server in a network namespace (Python's `http.server`), serving one directory: what an
/// operator's web server does with a published CRL. Its request log (stderr) shows what was fetched.
final class HTTPFileServer: Sendable {
    let directory: URL
    private let daemon: Daemon
    private let logURL: URL

    private static let script = """
        import functools, http.server, socket, sys
        directory, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
        class Server(http.server.ThreadingHTTPServer):
            # "::" serves IPv6 and (as ::ffff:a.b.c.d) IPv4.
            address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        server = Server((address, port), handler)
        print("listening", flush=True)
        server.serve_forever()
        """

    /// Starts serving `directory` on `address`:`port` in `namespace`; returns once the socket listens.
    init(namespace: String, address: String, port: Int, directory: URL, timeout: Duration = .seconds(15)) throws {
        self.directory = directory
        let scratch = try Scratch.makeDirectory("http")
        let logURL = scratch.appendingPathComponent("requests.log")
        self.logURL = logURL
        daemon = try Daemon.start(
            "/usr/sbin/ip",
            ["netns", "exec", namespace, "/usr/bin/python3", "-c", Self.script, directory.path, address, String(port)],
            outputPath: logURL.path)
        // The script says "listening" once its socket is bound and listening.
        do {
            let daemon = daemon
            try Poll.wait(
                "the HTTP server in \(namespace)", timeout: timeout, while: { daemon.isRunning },
                until: { (try? String(contentsOf: logURL, encoding: .utf8))?.contains("listening\n") == true })
        } catch {
            stop()
            throw HarnessError("the HTTP server in \(namespace) did not start (\(error)):\n\(requestLog)")
        }
    }

    /// What the server logged: one line per request (`"GET /path HTTP/1.1" 200 -`).
    var requestLog: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    func stop() { daemon.stop() }

    deinit { stop() }
}
