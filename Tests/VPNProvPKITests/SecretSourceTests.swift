import Foundation
import Testing
import VPNProvModel
import VPNProvTestFixtures

/// Where `env:` and `file:` secrets may come from (docs/inventory.md): never vpnprov's own variables,
/// only variables with an allowed prefix, only files inside the secrets directory (symbolic links
/// followed). A user with `password: env:VPNPROV_CA_PASSPHRASE` passed `validate --secrets` and
/// `generate` wrote the CA passphrase into their `.sswan` and the nodes' `secrets.conf`.
@Suite(.temporaries) struct SecretSourceTests {
    static let passphrase = "correct horse battery staple 42"

    /// One node, one EAP user whose password is `password` (line 10, column 15); `extra` is appended.
    static func inventory(password: String, extra: String = "") -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
          n1:
            address: 192.0.2.1
            pool: 10.10.0.0/24
            services: [ikev2-eap]
        users:
          alice:
            password: \(password)

        """ + extra
    }

    static func site(_ text: String) throws -> String {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        return dir
    }

    /// validate, validate --secrets and generate refuse it at the referencing line with `secret-source`,
    /// write nothing and print no secret.
    static func expectRefused(
        _ dir: String, environment: [String: String], _ message: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        for command in [["validate"], ["validate", "--secrets"], ["generate"]] {
            let r = vpnprov(command, in: dir, environment: environment, sourceLocation: sourceLocation)
            #expect(r.code == 1, "\(command): \(r.err)", sourceLocation: sourceLocation)
            #expect(
                r.err.contains("inventory.yaml:10:15: error: user 'alice' password"), "\(command): \(r.err)",
                sourceLocation: sourceLocation)
            #expect(
                r.err.contains("[secret-source]") && r.err.contains(message), "\(command): \(r.err)",
                sourceLocation: sourceLocation)
            for value in environment.values {
                #expect(!r.err.contains(value) && !r.out.contains(value), sourceLocation: sourceLocation)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/state"), sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: dir + "/out"), sourceLocation: sourceLocation)
    }

    @Test func vpnprovsOwnVariablesAreNeverSecrets() throws {
        for text in [
            Self.inventory(password: "env:VPNPROV_CA_PASSPHRASE"),
            Self.inventory(password: "env:VPNPROV_CA_PASSPHRASE", extra: "secrets:\n  env_prefix: [VPN, VPNPROV_]\n"),
        ] {
            let dir = try Self.site(text)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            Self.expectRefused(dir, environment: ["VPNPROV_CA_PASSPHRASE": Self.passphrase], "vpnprov's own variables")
        }
    }

    @Test func onlyVariablesWithAnAllowedPrefix() throws {
        let dir = try Self.site(Self.inventory(password: "env:CI_TOKEN"))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let token = "Zr8kWm3QxT7nLp2VbH9c"
        Self.expectRefused(
            dir, environment: ["CI_TOKEN": token],
            "names must start with VPN_ ('secrets.env_prefix' in the inventory allows others)")
        // The operator allows the prefix: the same reference resolves.
        try Self.inventory(password: "env:CI_TOKEN", extra: "secrets:\n  env_prefix: [OTHER_, CI_]\n")
            .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let ok = vpnprov(["validate", "--secrets"], in: dir, environment: ["CI_TOKEN": token])
        #expect(ok.code == 0, "\(ok.err)")
        let generated = vpnprov(["generate"], in: dir, environment: ["CI_TOKEN": token])
        #expect(generated.code == 0, "\(generated.err)")
        // A prefix that is no start of a variable name is an error at its line.
        try Self.inventory(password: "gen", extra: "secrets:\n  env_prefix: [\"A-\"]\n").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let bad = vpnprov(["validate"], in: dir)
        #expect(
            bad.code == 1 && bad.err.contains("inventory.yaml:12:16: error: 'secrets.env_prefix' entry 'A-'"),
            "\(bad.err)")
    }

    @Test(arguments: ["/etc/passwd", "../outside/pw", "sub/../../outside/pw"])
    func filesOutsideTheInventorysDirectoryAreRefused(_ path: String) throws {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dir = parent + "/site"
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: parent + "/outside", withIntermediateDirectories: true)
        try "Qm7vRt2xLp9sKw4nZc8j\n".write(toFile: parent + "/outside/pw", atomically: true, encoding: .utf8)
        try Self.inventory(password: "file:\(path)").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        Self.expectRefused(
            dir, environment: [:], path.hasPrefix("/") ? "is an absolute path" : "is outside the inventory's directory")
    }

    /// A link inside the directory that leads out of it is followed before the check: refused when read.
    @Test func aSymbolicLinkOutOfTheDirectoryIsRefusedWhenRead() throws {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dir = parent + "/site"
        try FileManager.default.createDirectory(atPath: dir + "/secrets", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: parent + "/outside", withIntermediateDirectories: true)
        let secret = "Qm7vRt2xLp9sKw4nZc8j"
        try "\(secret)\n".write(toFile: parent + "/outside/pw", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: dir + "/secrets/pw", withDestinationPath: "../../outside/pw")
        try Self.inventory(password: "file:secrets/pw").write(
            toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        // Written, the path is inside: only reading it shows where it leads.
        #expect(vpnprov(["validate"], in: dir).code == 0)
        for command in [["validate", "--secrets"], ["generate"]] {
            let r = vpnprov(command, in: dir)
            #expect(r.code == 1, "\(command): \(r.err)")
            #expect(
                r.err.contains("inventory.yaml:10:15: error: user 'alice' password: file:secrets/pw resolves to "),
                "\(r.err)")
            #expect(r.err.contains("[secret-source]") && !r.err.contains(secret))
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/state"))
        // The operator widens the secrets directory to the parent: the same link is fine.
        try Self.inventory(password: "file:secrets/pw", extra: "secrets:\n  file_dir: \(parent)\n")
            .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let widened = vpnprov(["generate"], in: dir)
        #expect(widened.code == 0, "\(widened.err)")
        // An absolute path inside a widened (absolute) directory is fine too.
        try Self.inventory(password: "file:\(parent)/outside/pw", extra: "secrets:\n  file_dir: \(parent)/outside\n")
            .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["validate", "--secrets"], in: dir).code == 0)
    }

    @Test func writtenPathsAreJudgedWithoutTheFileSystem() {
        let home = SecretSettings()
        #expect(SecretSourcePolicy.problem(.file("pw"), home) == nil)
        #expect(SecretSourcePolicy.problem(.file("./a/../pw"), home) == nil)
        #expect(SecretSourcePolicy.problem(.file("a/../../pw"), home) != nil)
        #expect(SecretSourcePolicy.problem(.file("."), home) != nil)
        #expect(SecretSourcePolicy.problem(.file("/etc/shadow"), home) != nil)
        let sub = SecretSettings(fileDirectory: "secrets")
        #expect(SecretSourcePolicy.problem(.file("secrets/pw"), sub) == nil)
        #expect(SecretSourcePolicy.problem(.file("pw"), sub) != nil)
        #expect(SecretSourcePolicy.problem(.file("secrets/../pw"), sub) != nil)
        let up = SecretSettings(fileDirectory: "../vault")
        #expect(SecretSourcePolicy.problem(.file("../vault/pw"), up) == nil)
        #expect(SecretSourcePolicy.problem(.file("../other/pw"), up) != nil)
        let absolute = SecretSettings(fileDirectory: "/srv/vpn/")
        #expect(SecretSourcePolicy.problem(.file("/srv/vpn/pw"), absolute) == nil)
        #expect(SecretSourcePolicy.problem(.file("/srv/vpn/../pw"), absolute) != nil)
        #expect(SecretSourcePolicy.problem(.file("/srv/vpnx/pw"), absolute) != nil)
        #expect(SecretSourcePolicy.problem(.env("VPN_X"), home) == nil)
        #expect(SecretSourcePolicy.problem(.env("VPNPROV_CA_PASSPHRASE"), SecretSettings(envPrefixes: ["V"])) != nil)
        #expect(SecretSourcePolicy.problem(.env("HOME"), home) != nil)
    }
}
