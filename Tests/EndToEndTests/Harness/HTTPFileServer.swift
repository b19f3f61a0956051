import Foundation
import Glibc
import VPNProvTestSupport

/// A static HTTP server in a network namespace (Python's `http.server`), serving one directory: what an
/// operator's web server does with a published CRL. Its request log (stderr) shows what was fetched.
final class HTTPFileServer: @unchecked Sendable {
    let directory: URL
    private let process: Process
    private let exited = ChildExit()
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
        logURL = scratch.appendingPathComponent("requests.log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = [
            "netns", "exec", namespace, "/usr/bin/python3", "-c", Self.script, directory.path, address, String(port),
        ]
        process.standardInput = FileHandle.nullDevice
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: logURL)
        exited.handle(process)
        try process.run()
        exited.watch(process.processIdentifier)
        // The script says "listening" once its socket is bound and listening: wait for that line (or the
        // process's end), bounded.
        let ready = OneShot()
        let reader = stdout.fileHandleForReading
        DispatchQueue.global().async {
            var seen = Data()
            while case let chunk = reader.availableData, !chunk.isEmpty {  // what one read returns; empty at EOF
                seen += chunk
                if String(decoding: seen, as: UTF8.self).contains("listening\n") { break }
            }
            ready.fire()
        }
        guard ready.wait(for: timeout), exited.status == nil else {
            stop()
            throw HarnessError("the HTTP server in \(namespace) did not start:\n\(requestLog)")
        }
    }

    /// What the server logged: one line per request (`"GET /path HTTP/1.1" 200 -`).
    var requestLog: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    func stop() {
        guard exited.status == nil else { return }
        kill(process.processIdentifier, SIGTERM)
        if !exited.wait(for: .seconds(5)) {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(for: .seconds(5))
        }
    }

    deinit { stop() }
}
