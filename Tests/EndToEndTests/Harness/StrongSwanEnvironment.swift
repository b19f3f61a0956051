import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

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
        guard let netns = try? Command.run(ipPath, ["netns", "list"], timeout: .seconds(10)), netns.succeeded else {
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
}
