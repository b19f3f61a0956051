import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// Whether this machine can run the central-accounts lab (FreeRADIUS 3.2 with its PostgreSQL module, PostgreSQL,
/// the FreeRADIUS utilities, strongSwan's eap-radius plugin) on top of what `StrongSwanEnvironment` needs.
/// Same rule as there: missing tools skip the test locally and fail it under `VPNPROV_REQUIRE_E2E=1`
/// (`scripts/install-test-deps` installs them).
enum RadiusEnvironment {
    static let radclientPath = "/usr/bin/radclient"
    static let nftPath = "/usr/sbin/nft"
    /// Captures the node-RADIUS link (and reads the capture back) in the path-protection step.
    static let tcpdumpPath = "/usr/bin/tcpdump"
    /// The Debian package's SQL module configuration (its queries.conf and schema.sql are used as shipped).
    static let sqlModuleConfig = "/etc/freeradius/3.0/mods-config/sql/main/postgresql"

    static let availability: StrongSwanEnvironment.Availability = check()

    static var shouldRun: Bool { availability == .available || StrongSwanEnvironment.isRequired }

    static var skipReason: String {
        if case .unavailable(let reason) = availability {
            return "RADIUS lab unavailable: \(reason) (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"
        }
        return "RADIUS lab available"
    }

    /// Throws (failing the test) when the lab cannot run here.
    static func require() throws {
        try StrongSwanEnvironment.require()
        if case .unavailable(let reason) = availability {
            throw HarnessError("VPNPROV_REQUIRE_E2E=1 but the RADIUS lab is unavailable: \(reason)")
        }
    }

    private static func check() -> StrongSwanEnvironment.Availability {
        if case .unavailable(let reason) = StrongSwanEnvironment.availability { return .unavailable(reason) }
        let fm = FileManager.default
        let install =
            "apt: freeradius freeradius-postgresql freeradius-utils postgresql tcpdump (scripts/install-test-deps)"
        for path in [
            FreeRADIUSServer.path, radclientPath, PostgresCluster.psqlPath, nftPath, tcpdumpPath,
            PostgresCluster.setprivPath,
        ]
        where !fm.isExecutableFile(atPath: path) {
            return .unavailable("\(path) missing (\(install))")
        }
        for path in [
            "/usr/lib/freeradius/rlm_sql_postgresql.so", sqlModuleConfig + "/queries.conf",
            sqlModuleConfig + "/schema.sql", "/usr/lib/ipsec/plugins/libstrongswan-eap-radius.so",
        ] where !fm.fileExists(atPath: path) {
            return .unavailable("\(path) missing (\(install), libcharon-extra-plugins)")
        }
        guard let bin = PostgresCluster.binDirectory, fm.isExecutableFile(atPath: bin + "/postgres") else {
            return .unavailable("no PostgreSQL server under /usr/lib/postgresql (\(install))")
        }
        guard getpwnam("postgres") != nil else { return .unavailable("no user `postgres` (\(install))") }
        return .available
    }
}

extension StrongSwanBuild {
    /// Throws when this build lacks the eap-radius plugin (the host's is checked by `RadiusEnvironment`).
    func requireEAPRadius() throws {
        try require()
        guard let root else { return }
        let plugin = root + "/usr/lib/ipsec/plugins/libstrongswan-eap-radius.so"
        guard FileManager.default.fileExists(atPath: plugin) else {
            throw HarnessError("\(self): \(plugin) missing (libcharon-extra-plugins in the tree)")
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when the RADIUS lab can run (or when `VPNPROV_REQUIRE_E2E=1`, then `require()` fails it).
    static var radius: Self {
        .enabled(if: RadiusEnvironment.shouldRun, Comment(rawValue: RadiusEnvironment.skipReason))
    }
}
