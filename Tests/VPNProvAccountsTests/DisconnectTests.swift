import Foundation
import Glibc
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvAccounts

/// A UDP socket of the test's, bound to a loopback address on a free port.
final class TestUDPSocket: Sendable {
    let fd: Int32
    let port: Int
    let host: String

    init(host: String = "127.0.0.1") throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST
        var info: UnsafeMutablePointer<addrinfo>? = nil
        guard getaddrinfo(host, "0", &hints, &info) == 0, let info else { throw CocoaError(.featureUnsupported) }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0, bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw CocoaError(.featureUnsupported)
        }
        self.fd = fd
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let raw = withUnsafeBytes(of: &storage) { Array($0) }
        // sin_port and sin6_port are both at offset 2, big-endian.
        port = Int(raw[2]) << 8 | Int(raw[3])
        self.host = host
    }

    deinit { close(fd) }

    /// The next datagram and its sender, or nil after `timeout` seconds.
    func receive(timeout: Double) -> (bytes: [UInt8], from: sockaddr_storage, length: socklen_t)? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var from = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &from) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                buffer.withUnsafeMutableBytes { recvfrom(fd, $0.baseAddress, $0.count, 0, address, &length) }
            }
        }
        guard n > 0 else { return nil }
        return (Array(buffer[0..<n]), from, length)
    }

    func send(_ bytes: [UInt8], to address: sockaddr_storage, length: socklen_t) {
        var address = address
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, target, length) }
            }
        }
    }
}

/// RFC 5176 Disconnect-Requests: the packet is byte for byte what FreeRADIUS's radclient sends for
/// the same attributes, secret and identifier (so its Request Authenticator and
/// Message-Authenticator are right), a response our fake node signs is accepted by radclient (so
/// the Response Authenticator we verify is the one a node computes), and the client's retries,
/// deadline and NAK handling against a fake node in this process.
@Suite(.temporaries) struct DisconnectTests {
    static let secret = "dae-Secret-4711"

    /// Runs radclient against `socket`; `answer` builds the reply to the packet radclient sent
    /// (nil: no reply). Returns the packet, radclient's exit status and output.
    func radclient(
        _ attributes: String, secret: String, to socket: TestUDPSocket, answer: ([UInt8]) throws -> [UInt8]?
    ) throws -> (packet: [UInt8], status: Int32, output: String) {
        let dir = try temporaryDirectory("radclient")
        try attributes.write(toFile: dir + "/request", atomically: true, encoding: .utf8)
        try secret.write(toFile: dir + "/secret", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestDependency.radclient.path)
        process.arguments = [
            "-f", dir + "/request", "-S", dir + "/secret", "-r", "1", "-t", "2", "\(socket.host):\(socket.port)",
            "disconnect",
        ]
        _ = FileManager.default.createFile(atPath: dir + "/out", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: dir + "/out")
        process.standardError = process.standardOutput
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let received = socket.receive(timeout: 20)
        if let received, let reply = try answer(received.bytes) {
            socket.send(reply, to: received.from, length: received.length)
        }
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? ""
        return (try #require(received?.bytes, "radclient sent nothing: \(output)"), process.terminationStatus, output)
    }

    @Test(.needs(.radclient)) func theRequestIsRadclientsAndRadclientAcceptsOurAnswer() throws {
        try TestDependency.radclient.require()
        let socket = try TestUDPSocket()
        let attributes = """
            User-Name = "alice@example.com"
            NAS-Identifier = "fra-1"
            Event-Timestamp = 1700000000
            Message-Authenticator = 0x00

            """
        let run = try radclient(attributes, secret: Self.secret, to: socket) { packet in
            try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: packet, secret: Array(Self.secret.utf8))
        }
        let ours = try RadiusPacket.disconnectRequest(
            identifier: run.packet[1], userName: "alice@example.com", nasIdentifier: "fra-1",
            eventTimestamp: 1_700_000_000, secret: Array(Self.secret.utf8))
        #expect(hexString(ours) == hexString(run.packet))
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("Received Disconnect-ACK"), "\(run.output)")

        // radclient does check what we sign: an answer signed with another secret is refused.
        let wrong = try radclient(attributes, secret: Self.secret, to: socket) { packet in
            try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: packet, secret: Array("other".utf8))
        }
        #expect(wrong.status != 0)
        #expect(wrong.output.contains("invalid Response Authenticator"), "\(wrong.output)")

        // And our verifier agrees with radclient's signing: we check its request's authenticator
        // the way a node does (MD5 over the packet with a zero authenticator and the secret).
        var zeroed = run.packet
        zeroed.replaceSubrange(4..<20, with: [UInt8](repeating: 0, count: 16))
        #expect(Digest.md5(zeroed + Array(Self.secret.utf8)) == Array(run.packet[4..<20]))
    }

    /// A fake node in this process: answers each request with `answer(request, attempt)` (nil: stays silent).
    func fakeNode(
        host: String = "127.0.0.1", answer: @escaping @Sendable ([UInt8], Int) throws -> [UInt8]?
    ) throws -> (TestUDPSocket, Thread) {
        let socket = try TestUDPSocket(host: host)
        let thread = Thread {
            var attempt = 0
            while let received = socket.receive(timeout: 5) {
                attempt += 1
                if let reply = try? answer(received.bytes, attempt) {
                    socket.send(reply, to: received.from, length: received.length)
                }
            }
        }
        thread.start()
        return (socket, thread)
    }

    func verifiesAsRequest(_ packet: [UInt8], secret: String) -> Bool {
        var zeroed = packet
        zeroed.replaceSubrange(4..<20, with: [UInt8](repeating: 0, count: 16))
        return Digest.md5(zeroed + Array(secret.utf8)) == Array(packet[4..<20])
    }

    @Test func ackNakSilenceAndRetries() throws {
        let secret = Array(Self.secret.utf8)
        let client = DisconnectClient(attemptTimeoutMilliseconds: 300, attempts: 3)
        let now = Date(timeIntervalSince1970: 1_700_000_000)

        let (ack, _) = try fakeNode { request, _ in
            try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: request, secret: secret)
        }
        let target = DisconnectTarget(node: "fra-1", host: "127.0.0.1", port: ack.port, secret: Self.secret)
        #expect(try client.disconnect(user: "alice", at: target, now: now) == .acknowledged)

        // IPv6 and a host name resolved with getaddrinfo.
        let (ack6, _) = try fakeNode(host: "::1") { request, _ in
            try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: request, secret: secret)
        }
        #expect(
            try client.disconnect(
                user: "alice", at: .init(node: "n6", host: "::1", port: ack6.port, secret: Self.secret), now: now)
                == .acknowledged)
        #expect(
            try client.disconnect(
                user: "alice", at: .init(node: "n", host: "localhost", port: ack.port, secret: Self.secret), now: now)
                == .acknowledged)

        // NAK with Error-Cause 503 (Session Context Not Found).
        let (nak, _) = try fakeNode { request, _ in
            try RadiusPacket.response(
                code: RadiusPacket.disconnectNAK, to: request,
                attributes: [(RadiusPacket.errorCause, [0, 0, 1, 0xF7])],
                secret: secret)
        }
        #expect(
            try client.disconnect(
                user: "alice", at: .init(node: "n", host: "127.0.0.1", port: nak.port, secret: Self.secret), now: now)
                == .refused(errorCause: 503))

        // The first request is lost: the same packet is sent again and answered.
        let (lossy, _) = try fakeNode { request, attempt in
            attempt == 1
                ? nil : try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: request, secret: secret)
        }
        #expect(
            try client.disconnect(
                user: "alice", at: .init(node: "n", host: "127.0.0.1", port: lossy.port, secret: Self.secret), now: now)
                == .acknowledged)

        // An answer signed with another secret is ignored, as is one for another identifier: no answer.
        let (forged, _) = try fakeNode { request, attempt in
            if attempt == 1 {
                var other = request
                other[1] &+= 1
                return try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: other, secret: secret)
            }
            return try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: request, secret: Array("x".utf8))
        }
        #expect(
            try client.disconnect(
                user: "alice", at: .init(node: "n", host: "127.0.0.1", port: forged.port, secret: Self.secret), now: now
            )
                == .noAnswer)

        // What the fake node received verifies as a request under the node's secret, and holds
        // the user, the node's name and the time.
        let (recorder, _) = try fakeNode { request, _ in
            let parsed = try #require(RadiusPacket.parse(request))
            guard self.verifiesAsRequest(request, secret: Self.secret), parsed.code == RadiusPacket.disconnectRequest,
                parsed.value(RadiusPacket.userName) == Array("bob".utf8),
                parsed.value(RadiusPacket.nasIdentifier) == Array("fra-2".utf8),
                parsed.value(RadiusPacket.eventTimestamp) == [0x65, 0x53, 0xF1, 0x00],
                parsed.value(RadiusPacket.messageAuthenticator)?.count == 16
            else { return nil }
            return try RadiusPacket.response(code: RadiusPacket.disconnectACK, to: request, secret: secret)
        }
        #expect(
            try client.disconnect(
                user: "bob", at: .init(node: "fra-2", host: "127.0.0.1", port: recorder.port, secret: Self.secret),
                now: now)
                == .acknowledged)
    }

    /// A node's answer is outside input: one that is no RADIUS packet — an attribute longer than the packet,
    /// a header length beyond the datagram, a datagram shorter than a header — is ignored like a forged one,
    /// even with its Response Authenticator computed over its bytes under the right secret, and the client
    /// ends with "no answer" instead of stopping the process.
    @Test func malformedAnswersSignedWithTheSecretAreNoAnswer() throws {
        let secret = Array(Self.secret.utf8)
        let client = DisconnectClient(attemptTimeoutMilliseconds: 200, attempts: 2)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        /// An ACK to `request` whose bytes after the header are `tail` and whose length field says `length`,
        /// signed the way a DAE server signs (MD5 over the packet with the request's authenticator, then the secret).
        @Sendable func answer(_ request: [UInt8], tail: [UInt8], length: Int) -> [UInt8] {
            var packet =
                [RadiusPacket.disconnectACK, request[1], UInt8(length >> 8), UInt8(length & 0xFF)]
                + Array(request[4..<20]) + tail
            packet.replaceSubrange(4..<20, with: Digest.md5(packet + secret))
            return packet
        }
        let malformed: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
            ("an attribute longer than the packet", { answer($0, tail: [101, 10, 0, 0], length: 24) }),
            ("a length beyond the datagram", { answer($0, tail: [101, 6, 0, 0, 1, 0xF7], length: 40) }),
            ("shorter than a header", { Array(answer($0, tail: [], length: 20)[0..<12]) }),
        ]
        for (what, reply) in malformed {
            let (node, _) = try fakeNode { request, _ in reply(request) }
            let target = DisconnectTarget(node: "fra-1", host: "127.0.0.1", port: node.port, secret: Self.secret)
            #expect(try client.disconnect(user: "alice", at: target, now: now) == .noAnswer, "\(what)")
        }
    }

    /// The fan-out: one request per node with an open session, each with that node's target;
    /// nodes without a target are reported, not skipped silently.
    @Test func oneRequestPerNodeWithASession() throws {
        let secret = Array(Self.secret.utf8)
        let (node, _) = try fakeNode { request, _ in
            try RadiusPacket.response(code: RadiusPacket.disconnectNAK, to: request, secret: secret)
        }
        let port = node.port
        func session(_ node: String?) -> OpenSession {
            OpenSession(
                username: "carol", node: node, nasAddress: "192.0.2.1", framedAddress: nil, started: nil, updated: nil,
                sessionID: "1", tier: "free")
        }
        let targets = DisconnectTargets { name in
            name == "fra-1" ? DisconnectTarget(node: name, host: "127.0.0.1", port: port, secret: Self.secret) : nil
        }
        let results = Disconnector.disconnect(
            user: "carol", sessions: [session("fra-1"), session("fra-1"), session("ams-1")], targets: targets,
            client: DisconnectClient(attemptTimeoutMilliseconds: 300, attempts: 2), now: Date())
        #expect(results.map(\.node) == ["fra-1", "ams-1"])
        #expect(results.map(\.outcome) == [.noSession, .unknownNode])
    }
}

/// MD5, HMAC-MD5 and the NT hash from libcrypto, against published vectors and openssl.
@Suite(.temporaries) struct RadiusDigestTests {
    @Test func knownAnswers() throws {
        #expect(hexString(Digest.md5(Array("abc".utf8))) == "900150983CD24FB0D6963F7D28E17F72")
        // RFC 2104 test case 2.
        #expect(
            hexString(try Digest.hmacMD5(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "750C783E6AB0B503EAA86E310A5DB738")
        #expect(try NTHash.hex(password: "password") == "8846F7EAEE8FB117AD06BDD830B7586C")
    }

    /// A password outside ASCII (UTF-16 surrogate pair included) against openssl's MD4 from the
    /// legacy provider over the UTF-16LE bytes.
    @Test(.needs(.openssl)) func ntHashMatchesOpenSSL() throws {
        try TestDependency.openssl.require()
        let password = "Pässwörd-€-😀"
        let dir = try temporaryDirectory("nthash")
        var bytes: [UInt8] = []
        for unit in password.utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        _ = FileManager.default.createFile(atPath: dir + "/in", contents: Data(bytes))
        let result = try runTool(
            ["openssl", "dgst", "-md4", "-provider", "legacy", "-provider", "default", "-r", dir + "/in"])
        #expect(result.status == 0, "\(result.output)")
        let expected = String(result.output.prefix(32)).uppercased()
        #expect(try NTHash.hex(password: password) == expected)
    }
}
