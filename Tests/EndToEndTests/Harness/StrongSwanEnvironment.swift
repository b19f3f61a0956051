import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// Whether this machine can run real strongSwan daemons in network namespaces, and where the tools are.
///
/// Use the `.strongSwan` trait on every end-to-end test (or suite) and call `StrongSwanEnvironment.require()`
/// first in the body:
/// - tools missing, `VPNPROV_REQUIRE_E2E` unset: the test is skipped and the skip names the reason;
/// - tools missing, `VPNPROV_REQUIRE_E2E=1` (CI, `.ci/run`): the test runs and `require()` throws, so it fails.
enum StrongSwanEnvironment {
    enum Availability: Sendable, Equatable {
        case available
        case unavailable(String)
    }

    static let charonPath = "/usr/sbin/charon-systemd"
    static let swanctlPath = "/usr/sbin/swanctl"
    static let pkiPath = "/usr/bin/pki"
    static let openSSLPath = firstExecutable(["/usr/bin/openssl", "/bin/openssl"]) ?? "/usr/bin/openssl"
    static let ipPath = firstExecutable(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]) ?? "/usr/sbin/ip"
    static let pingPath = firstExecutable(["/usr/bin/ping", "/bin/ping"]) ?? "/usr/bin/ping"

    /// Set by `.ci/run`: unavailability is then a failure, not a skip.
    static var isRequired: Bool { ProcessInfo.processInfo.environment["VPNPROV_REQUIRE_E2E"] == "1" }

    /// Checked once per process.
    static let availability: Availability = check()

    /// Whether `.strongSwan` lets a test run.
    static var shouldRun: Bool { availability == .available || isRequired }

    /// The skip comment.
    static var skipReason: String {
        if case .unavailable(let reason) = availability {
            return "real strongSwan unavailable: \(reason) (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"
        }
        return "real strongSwan available"
    }

    /// Throws (failing the test) when the environment cannot run the test.
    static func require() throws {
        if case .unavailable(let reason) = availability {
            throw HarnessError("VPNPROV_REQUIRE_E2E=1 but real strongSwan is unavailable: \(reason)")
        }
    }

    private static func check() -> Availability {
        if getuid() != 0 { return .unavailable("not running as root (uid \(getuid()))") }
        for (path, what) in [
            (charonPath, "charon-systemd (apt: charon-systemd)"),
            (swanctlPath, "swanctl (apt: strongswan-swanctl)"),
            (pkiPath, "pki (apt: strongswan-pki)"),
            (ipPath, "ip (apt: iproute2)"),
            (pingPath, "ping (apt: iputils-ping)"),
            (openSSLPath, "openssl"),
        ] where !FileManager.default.isExecutableFile(atPath: path) {
            return .unavailable("\(what) not found at \(path)")
        }
        for plugin in ["kernel-libipsec", "eap-mschapv2", "xauth-generic", "eap-identity", "vici"] {
            let path = "/usr/lib/ipsec/plugins/libstrongswan-\(plugin).so"
            if !FileManager.default.fileExists(atPath: path) {
                return .unavailable("strongSwan plugin \(plugin) missing (\(path); apt: libcharon-extra-plugins)")
            }
        }
        if !FileManager.default.fileExists(atPath: "/dev/net/tun") {
            return .unavailable("/dev/net/tun missing (kernel-libipsec needs a TUN device)")
        }
        guard let netns = try? Subprocess.run(ipPath, ["netns", "list"], timeout: .seconds(10)), netns.succeeded else {
            return .unavailable("`ip netns list` does not work")
        }
        return .available
    }

    private static func firstExecutable(_ paths: [String]) -> String? {
        paths.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when real strongSwan is usable, or when `VPNPROV_REQUIRE_E2E=1` (then `require()` fails it).
    static var strongSwan: Self {
        .enabled(if: StrongSwanEnvironment.shouldRun, Comment(rawValue: StrongSwanEnvironment.skipReason))
    }

    /// Like `.strongSwan`, for tests that also need the strongSwan 6 tree (`StrongSwanBuild.trixie`): skipped
    /// with the reason when it is missing, run (and failed by `StrongSwanBuild.trixie.require()`) under
    /// `VPNPROV_REQUIRE_E2E=1`.
    /// Like `.strongSwan6`, for tests that need the Debian testing tree (`StrongSwanBuild.testing`, strongSwan 6.1).
    static var strongSwan61: Self {
        .enabled(
            if: StrongSwanEnvironment.isRequired
                || (StrongSwanEnvironment.availability == .available
                    && StrongSwanBuild.testing.availability == .available),
            Comment(rawValue: StrongSwanBuild.testing.skipReason))
    }

    static var strongSwan6: Self {
        .enabled(
            if: StrongSwanEnvironment.isRequired
                || (StrongSwanEnvironment.availability == .available
                    && StrongSwanBuild.trixie.availability == .available),
            Comment(rawValue: StrongSwanBuild.trixie.skipReason))
    }
}

/// One strongSwan build the harness runs daemons and `swanctl` from.
///
/// - `.host`: the machine's own packages (Debian 12: strongSwan 5.9.8), run directly.
/// - `.trixie`: a Debian 13 tree (strongSwan 6.0.1) that `scripts/install-test-deps` (run by `.ci/run`) builds with
/// debootstrap into
///   `<package>/.build/trixie-root` (or `VPNPROV_TRIXIE_ROOT`). Every program of it runs as
///   `ip netns exec <ns> sh -c '<mounts>; exec chroot <root> <program> …'`: `ip netns exec` gives the process a
///   private mount namespace (mounts made there never reach the host or another run, whatever our pid), in which
///   the wrapper bind-mounts `/dev` (kernel-libipsec opens /dev/net/tun), `/proc`, the namespace's `/etc/hosts`
///   (so a client resolves the lab's DNS names) and this process's scratch directory at the same path (configs,
///   credentials, vici socket and logs keep their paths inside and outside). A tmpfs over the tree's `/tmp`
///   holds that mount point, so nothing is ever created in the shared tree. The kernel drops all of these mounts
///   when the last process of that mount namespace exits: stopping (or killing) the daemon is the teardown, and
///   no failure can leave a mount behind.
struct StrongSwanBuild: Sendable, Hashable, CustomStringConvertible {
    /// "5.9" or "6.0": what tests and summaries call it.
    let name: String
    /// nil: the host; else the root of the tree to chroot into.
    let root: String?
    /// Plugins charon loads. Only plugins the build ships, so charon never logs "failed to load".
    let charonPlugins: String
    /// Plugins swanctl loads to parse credentials (its default is "all compiled in", which prints "failed to
    /// load" lines for plugins a distribution does not ship; so does naming one the build lacks, which
    /// `loadAllCleanly` rightly counts as a problem).
    let swanctlPlugins: String

    var description: String { "strongSwan \(name)" }

    static let charonPath = "/usr/sbin/charon-systemd"
    static let swanctlPath = "/usr/sbin/swanctl"

    /// Plugins in the order Debian's charon loads them (its default list): x509 before openssl, so
    /// certificates are parsed by the x509 plugin, the one that reads certificate policies (the openssl
    /// plugin's parser reports none, and nodes require their policy of client certificates).
    /// Debian 12 packages. `des` and `curve25519` are not packaged as plugins there (openssl provides both);
    /// rc2 opens `openssl pkcs12 -legacy` cert bags.
    static let host = StrongSwanBuild(
        name: "5.9", root: nil,
        charonPlugins: """
            random nonce x509 revocation constraints pubkey pkcs1 pkcs8 pkcs12 pem openssl sha1 sha2 md5 hmac kdf \
            gmp aes gcm kernel-libipsec kernel-netlink socket-default vici updown eap-identity eap-mschapv2 eap-md5 \
            xauth-generic attr
            """,
        swanctlPlugins: "random nonce openssl pem pkcs1 pkcs8 pkcs12 x509 pubkey sha1 sha2 md5 hmac aes gcm rc2 gmp")

    /// Debian 13 packages: the same set without `gcm`, which Debian 13 no longer ships as a plugin (the
    /// `openssl` plugin provides AES-GCM; naming `gcm` there logs "plugin 'gcm': failed to load").
    static let trixie = StrongSwanBuild(
        name: "6.0", root: trixieRoot,
        charonPlugins: """
            random nonce x509 revocation constraints pubkey pkcs1 pkcs8 pkcs12 pem openssl sha1 sha2 md5 hmac kdf \
            gmp aes kernel-libipsec kernel-netlink socket-default vici updown eap-identity eap-mschapv2 eap-md5 \
            xauth-generic attr
            """,
        swanctlPlugins: "random nonce openssl pem pkcs1 pkcs8 pkcs12 x509 pubkey sha1 sha2 md5 hmac aes rc2 gmp")

    /// Debian testing's packages (strongSwan 6.1), for the quantum-safe pieces only: ML-KEM in an additional key
    /// exchange and post-quantum preshared keys, which no earlier Debian build computes
    /// (docs/strongswan-versions.md). Debian's 6.1 is built without IKEv1, so it has no `xauth-generic`.
    static let testing = StrongSwanBuild(
        name: "6.1", root: testingRoot,
        charonPlugins: """
            random nonce x509 revocation constraints pubkey pkcs1 pkcs8 pkcs12 pem openssl sha1 sha2 md5 hmac kdf \
            gmp aes kernel-libipsec kernel-netlink socket-default vici updown eap-identity eap-mschapv2 eap-md5 \
            attr
            """,
        swanctlPlugins: "random nonce openssl pem pkcs1 pkcs8 pkcs12 x509 pubkey sha1 sha2 md5 hmac aes rc2 gmp")

    /// The generated matrix's builds (`testing` is not part of it).
    static let all = [host, trixie]

    /// `VPNPROV_TRIXIE_ROOT`, else `<package>/.build/trixie-root`.
    static let trixieRoot = treeRoot(variable: "VPNPROV_TRIXIE_ROOT", directory: "trixie-root")
    /// `VPNPROV_TESTING_ROOT`, else `<package>/.build/testing-root`.
    static let testingRoot = treeRoot(variable: "VPNPROV_TESTING_ROOT", directory: "testing-root")

    private static func treeRoot(variable: String, directory: String) -> String {
        if let root = ProcessInfo.processInfo.environment[variable], !root.isEmpty { return root }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/" + directory).path
    }

    /// Written by `scripts/install-test-deps` as the last step of building the tree: a tree without it is incomplete.
    static let stampName = ".vpnprov-tree-complete"

    static let shPath = "/bin/sh"
    static let mountPath = "/usr/bin/mount"
    static let chrootPath = "/usr/sbin/chroot"

    /// The daemon's full version line, e.g. "5.9.8" or "6.0.1" (from the package database; checked once).
    var version: String { Self.versions[name] ?? name }
    private static let versions: [String: String] = {
        var out: [String: String] = [:]
        for build in [host, trixie, testing] {
            let status = (build.root ?? "") + "/var/lib/dpkg/status"
            guard let text = try? String(contentsOfFile: status, encoding: .utf8) else { continue }
            for stanza in text.components(separatedBy: "\n\n") where stanza.hasPrefix("Package: charon-systemd\n") {
                if let line = stanza.split(separator: "\n").first(where: { $0.hasPrefix("Version: ") }) {
                    // "6.0.1-6+deb13u7" -> "6.0.1"
                    out[build.name] = String(line.dropFirst("Version: ".count).prefix { $0 != "-" })
                }
            }
        }
        return out
    }()

    /// The command line that runs `program arguments…` of this build inside `namespace`.
    func command(in namespace: String, _ program: String, _ arguments: [String]) -> (String, [String]) {
        guard let root else {
            return (StrongSwanEnvironment.ipPath, PrivateView.exec(namespace, program, arguments))
        }
        let scratch = Scratch.directory.path
        // $1 root, $2 scratch directory; the rest is the program and its arguments. The namespace's own
        // /etc (PrivateView) first, so the tree gets that host's /etc/hosts.
        let script = """
            set -e; r="$1"; s="$2"; shift 2
            \(PrivateView.mountScript(for: namespace))
            \(Self.mountPath) --bind /dev "$r/dev"
            \(Self.mountPath) --bind /proc "$r/proc"
            \(Self.mountPath) --bind /etc/hosts "$r/etc/hosts"
            \(Self.mountPath) -t tmpfs -o size=1m,mode=0755 vpnprov-e2e "$r/tmp"
            mkdir -p "$r$s"
            \(Self.mountPath) --bind "$s" "$r$s"
            exec \(Self.chrootPath) "$r" "$@"
            """
        return (
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", namespace, Self.shPath, "-c", script, "sh", root, scratch, program] + arguments
        )
    }

    enum Availability: Sendable, Equatable {
        case available
        case unavailable(String)
    }

    /// Checked once per process (the host build: `StrongSwanEnvironment.availability`).
    var availability: Availability {
        if root == nil {
            if case .unavailable(let reason) = StrongSwanEnvironment.availability { return .unavailable(reason) }
            return .available
        }
        return root == Self.testingRoot ? Self.testingAvailability : Self.trixieAvailability
    }

    var skipReason: String {
        if case .unavailable(let reason) = availability {
            return "\(self) unavailable: \(reason) (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"
        }
        return "\(self) available"
    }

    /// Throws (failing the test) when this build cannot run here.
    func require() throws {
        try StrongSwanEnvironment.require()
        if case .unavailable(let reason) = availability {
            throw HarnessError("\(self) is unavailable: \(reason)")
        }
    }

    private static let trixieAvailability = treeAvailability(trixie, "Debian 13")
    private static let testingAvailability = treeAvailability(testing, "Debian testing")

    private static func treeAvailability(_ build: StrongSwanBuild, _ what: String) -> Availability {
        let root = build.root ?? "/"
        let fm = FileManager.default
        guard fm.fileExists(atPath: root + "/" + stampName) else {
            return .unavailable(
                "no complete \(what) tree at \(root) (`scripts/install-test-deps` builds it with debootstrap)")
        }
        for path in [charonPath, swanctlPath] where !fm.isExecutableFile(atPath: root + path) {
            return .unavailable("\(root + path) missing")
        }
        for plugin in build.charonPlugins.split(whereSeparator: \.isWhitespace).map(String.init) + ["rc2"] {
            let path = root + "/usr/lib/ipsec/plugins/libstrongswan-\(plugin).so"
            if !fm.fileExists(atPath: path) { return .unavailable("\(path) missing") }
        }
        for path in [root + "/etc/hosts", root + "/tmp", root + "/dev", root + "/proc"]
        where !fm.fileExists(atPath: path) {
            return .unavailable("\(path) missing (a bind mount needs it)")
        }
        for path in [shPath, mountPath, chrootPath] where !fm.isExecutableFile(atPath: path) {
            return .unavailable("\(path) missing")
        }
        if !Scratch.path.hasPrefix("/tmp/") {
            return .unavailable("the scratch directory \(Scratch.path) is not below /tmp (unset TMPDIR)")
        }
        return .available
    }
}
