import Foundation
import Glibc
import Testing
import VPNProvModel
import VPNProvTestFixtures

@testable import VPNProvPKI

/// `file:` and `env:` secrets as an attacker or a careless editor leaves them: Windows line endings,
/// nothing but a line ending, huge, sparse or special files, invalid UTF-8. Each is either read
/// exactly or refused with a clear error, quickly, before anything is created.
@Suite(.temporaries) struct SecretInputTests {
    static let secret = "Xk9vBq2LmZt7Rw4Np8Hs"

    func resolve(file bytes: [UInt8]) throws -> String? {
        let dir = try temporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir + "/s", contents: Data(bytes)))
        return try SecretResolver.resolve(
            .file("s"), what: "user 'a' password", at: nil, inventoryDirectory: dir, environment: [:])
    }

    func failure(file bytes: [UInt8]) throws -> String {
        do {
            _ = try resolve(file: bytes)
            return "resolved"
        } catch let error as PKIError {
            #expect(error.code == .secretUnavailable)
            return error.message
        }
    }

    @Test func exactlyOneLineEndingIsTakenOff() throws {
        let s = Array(Self.secret.utf8)
        #expect(try resolve(file: s) == Self.secret)
        #expect(try resolve(file: s + [0x0A]) == Self.secret)
        #expect(try resolve(file: s + [0x0D, 0x0A]) == Self.secret, "CRLF keeps the last character")
        #expect(try resolve(file: s + [0x0A, 0x0A]) == Self.secret + "\n", "only one line ending")
        #expect(try resolve(file: s + [0x0D]) == Self.secret + "\r", "a lone CR is not a line ending")
        #expect(try resolve(file: s + [0x0D, 0x0A, 0x0D, 0x0A]) == Self.secret + "\r\n")
    }

    @Test func onlyALineEndingOrNothingIsAClearError() throws {
        #expect(try failure(file: [0x0D, 0x0A]).contains("holds only a line ending"))
        #expect(try failure(file: [0x0A]).contains("holds only a line ending"))
        #expect(try failure(file: []).contains("is empty"))
        #expect(try failure(file: [0xFF, 0xFE, 0x41]).contains("is not valid UTF-8 text"))
        #expect(try failure(file: Array("abc\u{FFFD}def".utf8)).contains("is not valid UTF-8 text"))
    }

    /// One node, one EAP user whose password is `password` (the fleet of `SecretSourceTests`).
    static func inventory(password: String) -> String { SecretSourceTests.inventory(password: password) }

    /// generate and check exit 1 with the message, create nothing, and never crash.
    func expectRefused(
        _ dir: String, environment: [String: String] = [:], _ message: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        for command in ["generate", "check"] {
            let r = vpnprov([command], in: dir, environment: environment, sourceLocation: sourceLocation)
            #expect(r.code == 1, "\(command): \(r.err)", sourceLocation: sourceLocation)
            #expect(
                r.err.contains("inventory.yaml:10:15: error: user 'alice' password: "), "\(r.err)",
                sourceLocation: sourceLocation)
            #expect(r.err.contains(message), "\(r.err)", sourceLocation: sourceLocation)
            #expect(
                !FileManager.default.fileExists(atPath: dir + "/state"), "\(command) created the state",
                sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"), sourceLocation: sourceLocation)
        }
    }

    @Test func lineEndingOnlyFileStopsTheRunBeforeTheState() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "file:pw").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: dir + "/pw", contents: Data([0x0D, 0x0A])))
        expectRefused(dir, "file \(dir)/pw holds only a line ending (file:pw)")
    }

    @Test func crlfSecretFileReachesTheOutputWhole() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "file:pw").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: dir + "/pw", contents: Data((Self.secret + "\r\n").utf8)))
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let secrets = try String(contentsOfFile: dir + "/out/servers/n1/swanctl/conf.d/secrets.conf", encoding: .utf8)
        // Secrets are written base64-encoded ("0s..."): the whole secret, not one character less.
        let whole = secrets.contains("0s" + Data(Self.secret.utf8).base64EncodedString())
        #expect(whole)
    }

    // MARK: bounded reads

    @Test func hugeSparseSecretFileIsRefusedAtOnce() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "file:pw").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        // 1 GiB without a byte on disk: only its size says how big it is.
        let fd = open(dir + "/pw", O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0 && ftruncate(fd, 1 << 30) == 0)
        close(fd)
        expectRefused(dir, "holds more than a 1024-byte secret")
        // Just over the limit, written out.
        #expect(
            FileManager.default.createFile(
                atPath: dir + "/pw", contents: Data(repeating: 0x41, count: SecretPolicy.maxBytes + 3)))
        expectRefused(dir, "holds more than a 1024-byte secret")
    }

    @Test func secretOfExactlyTheLimitIsAccepted() throws {
        let dir = try temporaryDirectory()
        // 1024 bytes of a non-repeating, strong secret and a CRLF.
        let value = String(
            (0..<SecretPolicy.maxBytes).map { i in
                SecretResolver.alphabet[(i * 7 + i / 13) % SecretResolver.alphabet.count]
            })
        #expect(value.utf8.count == SecretPolicy.maxBytes)
        #expect(FileManager.default.createFile(atPath: dir + "/s", contents: Data((value + "\r\n").utf8)))
        #expect(
            try SecretResolver.resolve(.file("s"), what: "x", at: nil, inventoryDirectory: dir, environment: [:])
                == value)
    }

    @Test(arguments: ["fifo", "directory", "/dev/zero", "/dev/urandom"])
    func nonRegularSecretFileIsRefusedWithoutBlocking(_ kind: String) throws {
        let dir = try temporaryDirectory()
        let path: String
        switch kind {
        case "fifo":
            path = "pw"
            #expect(mkfifo(dir + "/pw", 0o600) == 0)
        case "directory":
            path = "pw"
            try FileManager.default.createDirectory(atPath: dir + "/pw", withIntermediateDirectories: false)
        default:
            path = kind
        }
        // A device is outside the inventory's directory: the operator widens the secrets directory to /dev
        // (docs/inventory.md, `secrets`), so the file is opened and refused as what it is.
        let widened = path.hasPrefix("/") ? "secrets:\n  file_dir: /dev\n" : ""
        try (Self.inventory(password: "file:\(path)") + widened).write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        expectRefused(
            dir,
            "cannot read file \(path.hasPrefix("/") ? path : dir + "/" + path): is not a regular file (file:\(path))")
    }

    @Test func oversizedOrSpecialTemplateIsRefused() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "gen").write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir + "/t/server", withIntermediateDirectories: true)
        let template = dir + "/t/server/README.tmpl"
        let fd = open(template, O_WRONLY | O_CREAT, 0o644)
        #expect(fd >= 0 && ftruncate(fd, 1 << 30) == 0)
        close(fd)
        let big = vpnprov(["generate", "--templates", "t"], in: dir)
        #expect(big.code == 2)
        #expect(big.err.contains("README.tmpl: cannot read template: is larger than 1 MiB"), "\(big.err)")
        try FileManager.default.removeItem(atPath: template)
        #expect(mkfifo(template, 0o644) == 0)
        let fifo = vpnprov(["generate", "--templates", "t"], in: dir)
        #expect(fifo.code == 2)
        #expect(fifo.err.contains("README.tmpl: cannot read template: is not a regular file"), "\(fifo.err)")
    }

    @Test func fifoInventoryIsRefusedWithoutBlocking() throws {
        let dir = try temporaryDirectory()
        #expect(mkfifo(dir + "/inventory.yaml", 0o644) == 0)
        let r = vpnprov(["validate"], in: dir)
        #expect(r.code == 2)
        #expect(r.err.contains("is not a regular file"), "\(r.err)")
    }

    // MARK: env:

    @Test func environmentSecretWithReplacementCharacterIsRefused() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "env:VPN_PW").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        expectRefused(
            dir, environment: ["VPN_PW": "Xk9vBq2Lm\u{FFFD}Zt7Rw4Np8Hs"],
            "environment variable VPN_PW is not valid UTF-8 text (env:VPN_PW)")
        expectRefused(
            dir, environment: ["VPN_PW": String(repeating: "Xk9vBq2LmZt7Rw4Np8Hs", count: 60)],
            "environment variable VPN_PW is longer than 1024 bytes (env:VPN_PW)")
    }

    /// The real process environment: invalid bytes reach vpnprov as U+FFFD and are refused like the
    /// same bytes in a file.
    @Test func environmentSecretWithInvalidUTF8IsRefusedByTheBinary() throws {
        let dir = try temporaryDirectory()
        try Self.inventory(password: "env:VPN_PW").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generated = try Subprocess.run(
            "/bin/sh",
            ["-c", "VPN_PW=\"$(printf 'Xk9vBq2Lm\\377Zt7Rw4Np8Hs')\" exec \"$0\" generate", VPNProvBinary.path],
            directory: dir, timeout: .seconds(300))
        let text = generated.stderr
        #expect(generated.exitCode == 1 && !generated.timedOut, "\(text)")
        #expect(text.contains("environment variable VPN_PW is not valid UTF-8 text (env:VPN_PW)"), "\(text)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/state"))
    }

    @Test func literalSecretOverTheLimitIsUnrepresentable() {
        let inventory = Fixture.good().with {
            $0.users[1].password = .literal(String(repeating: "Xk9vBq2LmZt7Rw4Np8Hs", count: 60))
        }
        #expect(
            Fixture.found(inventory) == [
                Found(.literalSecret, 111, 14, .warning), Found(.unrepresentableSecret, 111, 14),
            ])
    }
}
