import Foundation
import Glibc
import VPNProvCrypto
import VPNProvTestHarness

/// Let's Encrypt's RFC 8555 test server (Debian `pebble`) on a server host of an `AnsibleLab`, as the ACME
/// directory of the lab's nodes: an independent ACME server that validates HTTP-01 challenges for real,
/// by connecting to port 80 of the address the name resolves to.
///
/// - Its HTTPS certificate (`192.0.2.(200+n)` as IP SAN) is issued by a throw-away `StrongSwanPKI` CA:
///   `httpsCA` is what a node must trust for the directory (the role's `ca-bundle.pem`).
/// - It resolves the names it validates with the system resolver: its host's own `/etc/hosts`
///   (`PrivateView`) maps each node's DNS name to the node's lab address (`hosts`).
/// - Its issuing root and intermediate are new on every start (Pebble makes them at start-up) and
///   served on the management port (`issuingRoot()`, `issuingIntermediate()`).
/// - As little randomness in what the tests see as Pebble allows: no validation delay (`PEBBLE_VA_NOSLEEP`),
///   no nonces rejected for testing (`PEBBLE_WFE_NONCEREJECT=0`), validation always done for real
///   (`PEBBLE_VA_ALWAYS_VALID=0`, whatever the test process's environment says), and authorizations reused
///   as seldom as it can (`PEBBLE_AUTHZREUSE=0`). That is not never: Pebble 2.4.0 (Debian 12) gives a new
///   order an account's earlier valid authorization for the name unless `rand.Intn(100)` exceeds the
///   percentage (`wfe/wfe.go`, `makeAuthorizations`), so with 0 it still does for 1 order in 100 (a draw of
///   0), and lego then obtains the certificate without a challenge ("authorization already valid; skipping
///   challenge"). A test that needs an order validated, e.g. one that must fail with the node's port 80
///   closed, orders with an account that has no valid authorization, and can see the attempt in
///   `validationRequests(for:)`.
final class PebbleServer: Sendable {
    static let path = "/usr/bin/pebble"
    static let curlPath = "/usr/bin/curl"
    static let legoPath = "/usr/bin/lego"

    /// Why Pebble cannot run here, or nil.
    static var unavailableReason: String? {
        for (path, what) in [
            (path, "pebble (apt: pebble)"), (curlPath, "curl (apt: curl)"), ("/usr/bin/lego", "lego (apt: lego)"),
        ]
        where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(what) not found at \(path)"
        }
        return nil
    }

    let namespace: String
    let address: String
    /// The ACME directory, e.g. `https://192.0.2.201:14000/dir`.
    let directoryURL: String
    /// PEM file: the CA of the server's HTTPS certificate.
    let httpsCA: String
    private let pki: StrongSwanPKI
    private let scratch: URL
    private let daemon: Daemon
    private var logPath: String { scratch.appendingPathComponent("pebble.log").path }

    private init(
        namespace: String, address: String, pki: StrongSwanPKI, scratch: URL, daemon: Daemon
    ) {
        self.namespace = namespace
        self.address = address
        self.directoryURL = "https://\(address):14000/dir"
        self.httpsCA = pki.caCert
        self.pki = pki
        self.scratch = scratch
        self.daemon = daemon
    }

    /// Starts Pebble on a new server host of `lab`, resolving `hosts` (DNS name -> address), and waits
    /// (bounded) until its management port serves the issuing root.
    static func start(in lab: AnsibleLab, hosts: [String: String], timeout: Duration = .seconds(30)) throws
        -> PebbleServer
    {
        if let reason = unavailableReason { throw HarnessError("Pebble cannot run: \(reason)") }
        let host = try lab.addServerHost("pebble", ownEtc: ["hosts"])
        let hostsFile =
            "127.0.0.1 localhost\n" + hosts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)\n" }.joined()
        try hostsFile.write(toFile: host.etc + "/hosts", atomically: true, encoding: .utf8)
        return try start(namespace: host.namespace, address: host.address, timeout: timeout)
    }

    /// Starts Pebble in `namespace` (whose `PrivateView` /etc resolves the names it validates), listening on
    /// `address`, and waits (bounded) until its management port serves the issuing root.
    static func start(namespace: String, address: String, timeout: Duration = .seconds(30)) throws -> PebbleServer {
        if let reason = unavailableReason { throw HarnessError("Pebble cannot run: \(reason)") }
        let host = (namespace: namespace, address: address)
        let pki = try StrongSwanPKI.make(name: "lab ACME server CA")
        let scratch = try Scratch.makeDirectory("pebble")
        do {
            let (cert, key) = try pki.issue(name: "pebble", sans: [host.address])
            let config: [String: Any] = [
                "pebble": [
                    "listenAddress": "\(host.address):14000",
                    "managementListenAddress": "\(host.address):15000",
                    "certificate": cert,
                    "privateKey": key,
                    "httpPort": 80,
                    "tlsPort": 443,
                    "ocspResponderURL": "",
                    "externalAccountBindingRequired": false,
                ]
            ]
            let configPath = scratch.appendingPathComponent("pebble-config.json").path
            try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys])
                .write(to: URL(fileURLWithPath: configPath))
            let daemon = try Daemon.start(
                StrongSwanEnvironment.ipPath,
                PrivateView.exec(host.namespace, path, ["-config", configPath]),
                environment: [
                    "PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "0", "PEBBLE_VA_ALWAYS_VALID": "0",
                    "PEBBLE_AUTHZREUSE": "0",
                ],
                outputPath: scratch.appendingPathComponent("pebble.log").path)
            let server = PebbleServer(
                namespace: host.namespace, address: host.address, pki: pki, scratch: scratch, daemon: daemon)
            let deadline = ContinuousClock.now + timeout
            while true {
                if !daemon.isRunning { throw HarnessError("pebble exited:\n\(server.log)") }
                if (try? server.management("/roots/0", timeout: .seconds(2)))?.succeeded == true { break }
                if ContinuousClock.now > deadline { throw HarnessError("pebble did not start:\n\(server.log)") }
                usleep(20_000)
            }
            return server
        } catch {
            try? FileManager.default.removeItem(at: scratch)
            try? FileManager.default.removeItem(at: pki.directory)
            throw error
        }
    }

    /// Obtains a certificate for `domain` with lego run in `namespace` (the node's: HTTP-01 on its port 80) and
    /// installs it below `swanctlDirectory` as the role's renewal script does: one certificate per file
    /// (`x509/vpnprov-acme.pem`, `x509ca/vpnprov-acme-N.pem`), the key (`private/vpnprov-acme.pem`), and Pebble's
    /// root as the ACME CA's root (`x509ca/vpnprov-acme-root-1.pem`). For labs whose nodes are not rolled out by
    /// the role (AcmeRolloutTests proves the role itself).
    func issue(domain: String, inNamespace namespace: String, swanctlDirectory: URL) throws {
        let state = scratch.appendingPathComponent("lego-\(domain)")
        let lego = try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, Self.legoPath, "--accept-tos", "--server", directoryURL, "--email",
                "ops@vpn.test", "--path", state.path, "--key-type", "rsa2048", "--domains", domain, "--http",
                "--http.port", ":80", "run",
            ], environment: ["LEGO_CA_CERTIFICATES": httpsCA], timeout: .seconds(60))
        guard lego.succeeded else { throw HarnessError("lego for \(domain): \(lego)\n\(log)") }
        let issued = state.appendingPathComponent("certificates/\(domain)")
        let chain = try X509Certificate.all(pem: try String(contentsOfFile: issued.path + ".crt", encoding: .utf8))
        guard chain.count >= 2 else { throw HarnessError("lego's chain for \(domain): \(chain.count) certificates") }
        var files = [
            "x509/vpnprov-acme.pem": chain[0].pem, "x509ca/vpnprov-acme-root-1.pem": try issuingRoot(),
            "private/vpnprov-acme.pem": try String(contentsOfFile: issued.path + ".key", encoding: .utf8),
        ]
        for (index, ca) in chain.dropFirst().enumerated() { files["x509ca/vpnprov-acme-\(index + 1).pem"] = ca.pem }
        for (relative, pem) in files {
            let url = swanctlDirectory.appendingPathComponent(relative)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try pem.write(to: url, atomically: true, encoding: .utf8)
        }
    }

    /// What Pebble logged so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Pebble has issued a certificate (its log says "Issued certificate serial …" for each).
    var issuedAny: Bool { log.contains("Issued certificate serial") }

    /// How many HTTP-01 requests Pebble's validation authority has made for `domain` so far (it logs
    /// "Attempting to validate w/ HTTP: http://<domain>:80/…" for each, several per validation). An order whose
    /// authorization Pebble reused adds none.
    func validationRequests(for domain: String) -> Int {
        log.components(separatedBy: "Attempting to validate w/ HTTP: http://\(domain):80/").count - 1
    }

    private func management(_ path: String, timeout: Duration = .seconds(10)) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", namespace, Self.curlPath, "-sS", "--fail", "--max-time", "5", "--cacert", httpsCA,
                "https://\(address):15000\(path)",
            ], timeout: timeout)
    }

    /// The PEM the management port serves at `path`, which must answer.
    private func pem(_ path: String) throws -> String {
        let result = try management(path)
        guard result.succeeded, result.stdout.contains("-----BEGIN CERTIFICATE-----") else {
            throw HarnessError("pebble \(path): \(result)")
        }
        return result.stdout
    }

    /// Pebble's issuing root (PEM), new with every start.
    func issuingRoot() throws -> String { try pem("/roots/0") }

    /// The intermediate that signs Pebble's certificates (PEM).
    func issuingIntermediate() throws -> String { try pem("/intermediates/0") }

    func stop() {
        daemon.stop()
        try? FileManager.default.removeItem(at: scratch)
        try? FileManager.default.removeItem(at: pki.directory)
    }

    deinit { stop() }
}
