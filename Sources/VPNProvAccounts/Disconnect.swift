import Foundation
import Glibc
import VPNProvCrypto

/// RADIUS packets of Dynamic Authorization (RFC 5176) as strongSwan's DAE listener
/// (eap_radius_dae.c) receives them: Disconnect-Request with User-Name, NAS-Identifier,
/// Event-Timestamp and Message-Authenticator, answered by Disconnect-ACK or -NAK.
package enum RadiusPacket {
    package static let disconnectRequest: UInt8 = 40
    package static let disconnectACK: UInt8 = 41
    package static let disconnectNAK: UInt8 = 42

    package static let userName: UInt8 = 1
    package static let nasIdentifier: UInt8 = 32
    package static let eventTimestamp: UInt8 = 55
    package static let messageAuthenticator: UInt8 = 80
    package static let errorCause: UInt8 = 101

    /// The header (code, identifier, length) and attributes of a packet.
    package struct Parsed: Sendable, Equatable {
        package var code: UInt8
        package var identifier: UInt8
        package var authenticator: [UInt8]
        package var attributes: [(type: UInt8, value: [UInt8])]

        package static func == (a: Parsed, b: Parsed) -> Bool {
            a.code == b.code && a.identifier == b.identifier && a.authenticator == b.authenticator
                && a.attributes.map(\.type) == b.attributes.map(\.type)
                && a.attributes.map(\.value) == b.attributes.map(\.value)
        }

        package func value(_ type: UInt8) -> [UInt8]? { attributes.first { $0.type == type }?.value }
    }

    /// A packet's fields, or nil when it is malformed (RFC 2865 §3: length 20...4096, attributes that fit).
    package static func parse(_ bytes: [UInt8]) -> Parsed? {
        guard bytes.count >= 20 else { return nil }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length >= 20, length <= 4096, length <= bytes.count else { return nil }
        var attributes: [(UInt8, [UInt8])] = []
        var i = 20
        while i < length {
            guard i + 2 <= length else { return nil }
            let size = Int(bytes[i + 1])
            guard size >= 2, i + size <= length else { return nil }
            attributes.append((bytes[i], Array(bytes[(i + 2)..<(i + size)])))
            i += size
        }
        return Parsed(
            code: bytes[0], identifier: bytes[1], authenticator: Array(bytes[4..<20]), attributes: attributes)
    }

    /// A packet: `authenticator` in place, attributes in order, Message-Authenticator (when asked for)
    /// computed over the packet with its authenticator field as given and the attribute zeroed.
    static func assemble(
        code: UInt8, identifier: UInt8, authenticator: [UInt8], attributes: [(UInt8, [UInt8])],
        signed: Bool, secret: [UInt8]
    ) throws -> [UInt8] {
        var body: [UInt8] = []
        for (type, value) in attributes {
            guard value.count <= 253 else { throw AccountError("a RADIUS attribute is longer than 253 bytes") }
            body += [type, UInt8(value.count + 2)] + value
        }
        var maOffset: Int?
        if signed {
            maOffset = 20 + body.count + 2
            body += [Self.messageAuthenticator, 18] + [UInt8](repeating: 0, count: 16)
        }
        let length = 20 + body.count
        guard length <= 4096 else { throw AccountError("a RADIUS packet is longer than 4096 bytes") }
        var packet = [code, identifier, UInt8(length >> 8), UInt8(length & 0xFF)] + authenticator + body
        if let maOffset {
            let mac = try Digest.hmacMD5(key: secret, packet)
            packet.replaceSubrange(maOffset..<(maOffset + 16), with: mac)
        }
        return packet
    }

    /// A Disconnect-Request (RFC 5176 §3.5): Message-Authenticator over the packet with a zero
    /// Request Authenticator, then Request Authenticator = MD5(Code|Identifier|Length|16 zero
    /// octets|Attributes|Secret).
    package static func disconnectRequest(
        identifier: UInt8, userName: String, nasIdentifier: String?, eventTimestamp: UInt32?, secret: [UInt8]
    ) throws -> [UInt8] {
        var attributes: [(UInt8, [UInt8])] = [(Self.userName, Array(userName.utf8))]
        if let nasIdentifier { attributes.append((Self.nasIdentifier, Array(nasIdentifier.utf8))) }
        if let eventTimestamp {
            attributes.append(
                (
                    Self.eventTimestamp,
                    [
                        UInt8(eventTimestamp >> 24), UInt8(eventTimestamp >> 16 & 0xFF),
                        UInt8(eventTimestamp >> 8 & 0xFF),
                        UInt8(eventTimestamp & 0xFF),
                    ]
                ))
        }
        var packet = try assemble(
            code: disconnectRequest, identifier: identifier, authenticator: [UInt8](repeating: 0, count: 16),
            attributes: attributes, signed: true, secret: secret)
        packet.replaceSubrange(4..<20, with: Digest.md5(packet + secret))
        return packet
    }

    /// A response to `request` (ACK or NAK), as a DAE server signs it: Response Authenticator =
    /// MD5(Code|Identifier|Length|Request Authenticator|Attributes|Secret). For the tests' fake node.
    package static func response(
        code: UInt8, to request: [UInt8], attributes: [(UInt8, [UInt8])] = [], messageAuthenticator: Bool = false,
        secret: [UInt8]
    ) throws -> [UInt8] {
        let requestAuthenticator = Array(request[4..<20])
        var packet = try assemble(
            code: code, identifier: request[1], authenticator: requestAuthenticator, attributes: attributes,
            signed: messageAuthenticator, secret: secret)
        packet.replaceSubrange(4..<20, with: Digest.md5(packet + secret))
        return packet
    }

    /// Whether `response` answers `request` under `secret`: same identifier, a valid Response
    /// Authenticator and, when present, a valid Message-Authenticator (computed with the Request
    /// Authenticator in the authenticator field).
    static func verifyResponse(_ response: [UInt8], to request: [UInt8], secret: [UInt8]) -> Bool {
        guard let parsed = parse(response), parsed.identifier == request[1] else { return false }
        let length = Int(response[2]) << 8 | Int(response[3])
        var copy = Array(response[0..<length])
        copy.replaceSubrange(4..<20, with: request[4..<20])
        guard constantTimeEqual(Digest.md5(copy + secret), parsed.authenticator) else { return false }
        // Message-Authenticator, if any.
        var i = 20
        while i + 2 <= length {
            let size = Int(copy[i + 1])
            if copy[i] == messageAuthenticator {
                guard size == 18 else { return false }
                let given = Array(copy[(i + 2)..<(i + 18)])
                copy.replaceSubrange((i + 2)..<(i + 18), with: [UInt8](repeating: 0, count: 16))
                guard let mac = try? Digest.hmacMD5(key: secret, copy), constantTimeEqual(mac, given) else {
                    return false
                }
                break
            }
            i += size
        }
        return true
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// RFC 5176 §3.6 Error-Cause values a node may send.
    static func describeErrorCause(_ value: Int) -> String {
        let names: [Int: String] = [
            201: "Residual Session Context Removed", 401: "Unsupported Attribute", 402: "Missing Attribute",
            403: "NAS Identification Mismatch", 404: "Invalid Request", 405: "Unsupported Service",
            406: "Unsupported Extension", 407: "Invalid Attribute Value", 501: "Administratively Prohibited",
            502: "Request Not Routable (Proxy)", 503: "Session Context Not Found", 504: "Session Context Not Removable",
            505: "Other Proxy Processing Error", 506: "Resources Unavailable", 507: "Request Initiated",
            508: "Multiple Session Selection Unsupported",
        ]
        return "\(value)" + (names[value].map { " (\($0))" } ?? "")
    }
}

/// Where a node's DAE listener is and the secret it checks requests with.
package struct DisconnectTarget: Sendable, Equatable {
    package var node: String
    package var host: String
    package var port: Int
    package var secret: String

    package init(node: String, host: String, port: Int = 3799, secret: String) {
        self.node = node
        self.host = host
        self.port = port
        self.secret = secret
    }
}

/// How a node answered a Disconnect-Request.
package enum DisconnectOutcome: Sendable, Equatable {
    /// Disconnect-ACK: the node closed the user's sessions.
    case acknowledged
    /// Disconnect-NAK, with the Error-Cause the node sent (strongSwan sends none when it has no
    /// session of the user).
    case refused(errorCause: Int?)
    /// No valid answer before the last attempt timed out.
    case noAnswer
}

/// Sends Disconnect-Requests over UDP (IPv4 or IPv6; a host name is resolved with getaddrinfo) and
/// waits for a verified answer, resending the same packet after each timeout.
package struct DisconnectClient: Sendable {
    package var attemptTimeoutMilliseconds: Int
    package var attempts: Int

    package init(attemptTimeoutMilliseconds: Int = 1500, attempts: Int = 3) {
        self.attemptTimeoutMilliseconds = attemptTimeoutMilliseconds
        self.attempts = attempts
    }

    /// Asks `target` to end every session of `user`.
    package func disconnect(user: String, at target: DisconnectTarget, now: Date) throws -> DisconnectOutcome {
        let secret = Array(target.secret.utf8)
        let identifier = try RandomBytes.generate(count: 1)[0]
        let request = try RadiusPacket.disconnectRequest(
            identifier: identifier, userName: user, nasIdentifier: target.node,
            eventTimestamp: UInt32(clamping: Int64(now.timeIntervalSince1970)), secret: secret)
        let fd = try connect(target)
        defer { close(fd) }
        for _ in 0..<max(1, attempts) {
            let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard sent == request.count else {
                throw AccountError(
                    "cannot send to \(target.host) port \(target.port): \(String(cString: strerror(errno)))")
            }
            if let response = try awaitResponse(fd, to: request, secret: secret),
                let parsed = RadiusPacket.parse(response)
            {
                if parsed.code == RadiusPacket.disconnectACK { return .acknowledged }
                let cause = parsed.value(RadiusPacket.errorCause).flatMap { bytes -> Int? in
                    bytes.count == 4 ? bytes.reduce(0) { $0 << 8 | Int($1) } : nil
                }
                return .refused(errorCause: cause)
            }
        }
        return .noAnswer
    }

    /// A UDP socket connected to the first address of `target` that takes one.
    private func connect(_ target: DisconnectTarget) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(target.host, String(target.port), &hints, &list)
        guard status == 0, let list else {
            throw AccountError(
                "cannot resolve node '\(target.node)' address \(target.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = ECONNREFUSED
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno
            close(fd)
        }
        throw AccountError(
            "cannot reach node '\(target.node)' at \(target.host) port \(target.port): \(String(cString: strerror(lastError)))"
        )
    }

    /// The first packet within the attempt's timeout that verifies as the answer to `request`;
    /// nil when none came. Packets that do not verify (another identifier, a wrong secret) are ignored.
    private func awaitResponse(_ fd: Int32, to request: [UInt8], secret: [UInt8]) throws -> [UInt8]? {
        var clock = timespec()
        clock_gettime(CLOCK_MONOTONIC, &clock)
        let deadline = Int(clock.tv_sec) * 1000 + Int(clock.tv_nsec) / 1_000_000 + attemptTimeoutMilliseconds
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            clock_gettime(CLOCK_MONOTONIC, &clock)
            let left = deadline - (Int(clock.tv_sec) * 1000 + Int(clock.tv_nsec) / 1_000_000)
            if left <= 0 { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(left))
            if ready < 0 {
                if errno == EINTR { continue }
                throw AccountError("waiting for a Disconnect answer failed: \(String(cString: strerror(errno)))")
            }
            if ready == 0 { return nil }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // ECONNREFUSED: an ICMP port unreachable from an earlier send; nothing listens (yet).
            if n < 0 { continue }
            let response = Array(buffer[0..<n])
            guard let parsed = RadiusPacket.parse(response),
                parsed.code == RadiusPacket.disconnectACK || parsed.code == RadiusPacket.disconnectNAK,
                RadiusPacket.verifyResponse(response, to: request, secret: secret)
            else { continue }
            return response
        }
    }
}

/// What happened at one node when an account's sessions were ended.
package struct DisconnectResult: Sendable, Equatable, Encodable {
    package var node: String
    /// "disconnected", "no-session" (the node has none: a stale radacct row), "refused", "no-answer",
    /// "unknown-node" (no DAE target for it), "failed".
    package var outcome: String
    package var detail: String?
}

/// Where the nodes' DAE listeners are: the inventory's nodes and the state's per-node DAE secrets,
/// wired by the command line (one lookup per node name, nil for a name it does not know).
package struct DisconnectTargets: Sendable {
    package var lookup: @Sendable (String) -> DisconnectTarget?

    package init(lookup: @escaping @Sendable (String) -> DisconnectTarget?) { self.lookup = lookup }

    /// Targets from a table of node name → target.
    package init(_ targets: [String: DisconnectTarget]) { self.init { targets[$0] } }

    package static let none = DisconnectTargets { _ in nil }
}

/// Ends `user`'s sessions: one Disconnect-Request to every node with an open session of the user
/// (a node only knows its own sessions, and User-Name closes all of them there).
package enum Disconnector {
    package static func disconnect(
        user: String, sessions: [OpenSession], targets: DisconnectTargets, client: DisconnectClient, now: Date
    ) -> [DisconnectResult] {
        var nodes: [String] = []
        for session in sessions where session.username == user {
            let node = session.node ?? "(node at \(session.nasAddress))"
            if !nodes.contains(node) { nodes.append(node) }
        }
        return nodes.map { node in
            guard let target = targets.lookup(node) else {
                return DisconnectResult(
                    node: node, outcome: "unknown-node", detail: "no node of that name with accounts: radius")
            }
            do {
                switch try client.disconnect(user: user, at: target, now: now) {
                case .acknowledged:
                    return DisconnectResult(node: node, outcome: "disconnected", detail: nil)
                case .refused(let cause) where cause == nil || cause == 503:
                    return DisconnectResult(
                        node: node, outcome: "no-session", detail: "the node has no session of \(user)")
                case .refused(let cause):
                    return DisconnectResult(
                        node: node, outcome: "refused",
                        detail: "Disconnect-NAK, Error-Cause \(RadiusPacket.describeErrorCause(cause ?? 0))")
                case .noAnswer:
                    return DisconnectResult(
                        node: node, outcome: "no-answer",
                        detail:
                            "no valid answer from \(target.host) port \(target.port) (down, filtered, or another DAE secret)"
                    )
                }
            } catch {
                return DisconnectResult(node: node, outcome: "failed", detail: "\(error)")
            }
        }
    }
}
