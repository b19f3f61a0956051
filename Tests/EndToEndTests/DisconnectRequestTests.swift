import Foundation
import Glibc
import Testing
import VPNProvAccounts
import VPNProvSupport
import VPNProvTestHarness

/// `vpnprov accounts`' Disconnect-Requests (RFC 5176) against the receiver they are for: a real
/// charon's eap-radius DAE listener (strongSwan 5.9 and 6.0). Sent from the client namespace, a
/// request signed with the node's DAE secret is verified by charon, which looks the user up and
/// answers (a NAK here: the user has no IKE_SA), and the answer verifies in our client; a request
/// signed with another secret is dropped by charon and ends as "no answer".
@Suite(.serialized, .strongSwan)
struct DisconnectRequestTests {
    /// glibc's setns(2), which Swift's Glibc module does not declare (it is a _GNU_SOURCE function).
    static let setns: (@convention(c) (Int32, Int32) -> Int32)? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "setns") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()
    static let cloneNewNet: Int32 = 0x4000_0000

    /// Runs `body` on a thread of its own that has joined the network namespace `name`: sockets it
    /// creates live there (the namespace is per thread), the rest of the process stays where it was.
    static func inNamespace<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        // The result of the namespace thread.
        let box = Locked<Result<T, any Error>>(.failure(HarnessError("the namespace thread did not run")))
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            let fd = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
            guard fd >= 0, let setns = Self.setns, setns(fd, Self.cloneNewNet) == 0 else {
                let failure = HarnessError("cannot join network namespace \(name): \(String(cString: strerror(errno)))")
                box.withLock { $0 = .failure(failure) }
                if fd >= 0 { close(fd) }
                return
            }
            close(fd)
            let result = Result { try body() }
            box.withLock { $0 = result }
        }
        thread.start()
        done.wait()
        return try box.withLock { $0 }.get()
    }

    @Test(
        "charon's DAE listener verifies our Disconnect-Request and we verify its answer", arguments: StrongSwanBuild.all
    )
    func charonAnswersDisconnectRequests(_ build: StrongSwanBuild) throws {
        try build.require()
        let pair = try NetworkPair.create()
        defer { pair.teardown() }
        let secret = "dae-" + UUID().uuidString
        let charon = try Charon.start(
            in: pair.serverNamespace, build: build, label: "dae-\(build.name)",
            extraSettings: """
                charon-systemd {
                  load = \(build.charonPlugins) eap-radius
                  plugins {
                    eap-radius {
                      dae {
                        enable = yes
                        listen = \(pair.serverAddress)
                        port = 3799
                        secret = \(secret)
                      }
                    }
                  }
                }

                """)
        defer { charon.stop() }
        let client = DisconnectClient(attemptTimeoutMilliseconds: 1000, attempts: 3)
        let address = pair.serverAddress
        let answered = try Self.inNamespace(pair.clientNamespace) {
            try client.disconnect(
                user: "alice", at: DisconnectTarget(node: "n1", host: address, secret: secret), now: Date())
        }
        #expect(answered == .refused(errorCause: nil), "\(charon.log)")
        #expect(
            charon.logContains("received RADIUS DAE Disconnect-Request for alice from \(pair.clientAddress)"),
            "\(charon.log)")
        #expect(charon.logContains("no IKE_SA matches Disconnect-Request, sending Disconnect-NAK"), "\(charon.log)")

        let forged = try Self.inNamespace(pair.clientNamespace) {
            try client.disconnect(
                user: "bob", at: DisconnectTarget(node: "n1", host: address, secret: secret + "x"), now: Date())
        }
        #expect(forged == .noAnswer)
        #expect(!charon.logContains("Disconnect-Request for bob"), "\(charon.log)")
        #expect(charon.logContains("RADIUS Response-Authenticator verification failed"), "\(charon.log)")
    }
}
