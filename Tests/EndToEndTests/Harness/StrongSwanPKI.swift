import Foundation
import VPNProvTestHarness

/// A throw-away CA made with strongSwan's `pki` (and `openssl` for PKCS#12), as an independent checker of
/// what vpnprov produces. Test code only.
struct StrongSwanPKI: Sendable {
    let directory: URL
    var caCert: String { directory.appendingPathComponent("ca.pem").path }
    var caKey: String { directory.appendingPathComponent("ca.key").path }

    /// A private strongswan.conf for `pki`: without a load list it tries every compiled-in plugin and
    /// prints "failed to load" lines on stderr.
    private static let pkiSettings: String = {
        let path = Scratch.directory.appendingPathComponent("pki-strongswan.conf").path
        try?
            "pki {\n  load = random nonce openssl pem pkcs1 pkcs8 x509 pubkey sha1 sha2 gmp revocation constraints\n}\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }()

    @discardableResult
    static func pki(_ args: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.pkiPath, args, environment: ["STRONGSWAN_CONF": pkiSettings])
    }

    /// Runs `pki` and writes its stdout (5.9.8 has no `--outfile`) to `path`.
    static func pki(_ args: [String], into path: String) throws {
        try pki(args).stdout.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// New CA "CN=<name>" (ECDSA P-256, 30 days) in a fresh directory.
    static func make(name: String = "vpnprov e2e CA", keyType: String = "ecdsa") throws -> StrongSwanPKI {
        let pki = StrongSwanPKI(directory: try Scratch.makeDirectory("pki"))
        try pki.generateKey(to: pki.caKey, type: keyType)
        try Self.pki(
            [
                "--self", "--ca", "--lifetime", "30", "--in", pki.caKey, "--type", pkiKeyType(keyType),
                "--dn", "CN=\(name)", "--outform", "pem",
            ], into: pki.caCert)
        return pki
    }

    private static func pkiKeyType(_ type: String) -> String { type == "ecdsa" ? "ecdsa" : "rsa" }

    private func generateKey(to path: String, type: String) throws {
        var args = ["--gen", "--type", type, "--outform", "pem"]
        if type == "ecdsa" { args += ["--size", "256"] } else { args += ["--size", "2048"] }
        try Self.pki(args, into: path)
    }

    /// Issues an end-entity certificate; returns (certificate path, key path), both PEM.
    @discardableResult
    func issue(
        name: String, dn: String? = nil, sans: [String], flags: [String] = [], keyType: String = "ecdsa"
    ) throws -> (cert: String, key: String) {
        let key = directory.appendingPathComponent("\(name).key").path
        let cert = directory.appendingPathComponent("\(name).pem").path
        try generateKey(to: key, type: keyType)
        var args = [
            "--issue", "--cacert", caCert, "--cakey", caKey, "--in", key, "--type", "priv",
            "--dn", dn ?? "CN=\(sans.first ?? name)", "--lifetime", "30", "--outform", "pem",
        ]
        for san in sans { args += ["--san", san] }
        for flag in flags { args += ["--flag", flag] }
        try Self.pki(args, into: cert)
        return (cert, key)
    }

    /// PKCS#12 of cert+key(+CA) the way Apple/Android need it. `rc2CertBag`: `openssl -legacy` (RC2-40 cert bag)
    /// instead of 3DES for both bags.
    func pkcs12(cert: String, key: String, password: String, rc2CertBag: Bool = false) throws -> Data {
        let out = directory.appendingPathComponent("\(Scratch.next()).p12").path
        var args = [
            "pkcs12", "-export", "-in", cert, "-inkey", key, "-certfile", caCert,
            "-passout", "env:E2E_P12_PASSWORD", "-out", out,
        ]
        if rc2CertBag {
            args += ["-legacy"]
        } else {
            args += ["-legacy", "-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-3DES", "-macalg", "sha1"]
        }
        try Subprocess.check(StrongSwanEnvironment.openSSLPath, args, environment: ["E2E_P12_PASSWORD": password])
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// DER bytes of a PEM certificate.
    static func der(ofPEM path: String) throws -> Data {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let data = Data(base64Encoded: body) else { throw HarnessError("not PEM: \(path)") }
        return data
    }
}

/// A swanctl directory (`swanctl.conf` + `x509/`, `x509ca/`, `private/`, `pkcs12/` …) assembled for a test.
struct SwanctlDirectory: Sendable {
    let root: URL
    var confFile: String { root.appendingPathComponent("swanctl.conf").path }

    /// Writes `conf` as swanctl.conf and each `files` entry (path relative to the swanctl dir) with mode 0600.
    static func make(label: String, conf: String, files: [String: Data] = [:]) throws -> SwanctlDirectory {
        let dir = SwanctlDirectory(root: try Scratch.makeDirectory("swanctl-\(label)"))
        try conf.write(toFile: dir.confFile, atomically: true, encoding: .utf8)
        for (relative, data) in files {
            let url = dir.root.appendingPathComponent(relative)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        }
        return dir
    }

    /// Convenience: file contents from paths.
    static func contents(of path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
}
