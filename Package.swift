// swift-tools-version:6.0
import PackageDescription

// vpnprov: YAML inventory -> strongSwan server configs, PKI and client profiles.
// No package dependencies: C libraries come from Debian (libyaml-dev, libssl-dev, libpq-dev, libqrencode-dev,
// libpng-dev).
// Linux only (network namespaces, /proc and Glibc are used throughout); docs/decisions.md says why.
// One target per layer of docs/architecture.md; a target may import only the layers below it, so a
// layering mistake is a compile error. Nothing outside the package uses them: their API is `package`.
let package = Package(
    name: "vpnprov",
    products: [
        .executable(name: "vpnprov", targets: ["vpnprov"])
    ],
    targets: [
        // C system libraries: each is imported by exactly one Swift module.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        // YAML documents with source positions, on libyaml.
        .target(name: "VPNProvYAML", dependencies: ["CYAML"]),
        // Keys, certificates, CRLs, PKCS#12, hashes and randomness, on OpenSSL 3 libcrypto.
        .target(name: "VPNProvCrypto", dependencies: ["CCrypto"]),
        // QR codes of hand-off links (libqrencode) and their drawings: terminal text, PNG (libpng), SVG.
        .target(name: "VPNProvQR", dependencies: ["CQREncode", "CPNG"]),
        // The bounded reader, byte order, parallelMap, file-system sync, OutputFile, the version.
        .target(name: "VPNProvSupport"),
        // The logic-less template engine and the built-in copy of templates/.
        .target(name: "VPNProvTemplates", dependencies: ["VPNProvSupport"]),
        // The inventory, diagnostics and rule codes, validation, the capability tables.
        .target(name: "VPNProvModel", dependencies: ["VPNProvSupport", "VPNProvYAML", "VPNProvCrypto"]),
        // The accounts database (libpq), its migrations' runner, NT hashes, RADIUS Disconnect-Requests.
        .target(
            name: "VPNProvAccounts", dependencies: ["CPQ", "VPNProvCrypto", "VPNProvSupport", "VPNProvModel"]),
        // Staged writes, compare, publish, manifest, render and stat caches: paths and bytes only.
        .target(name: "VPNProvOutputTree", dependencies: ["VPNProvSupport", "VPNProvCrypto"]),
        // The state directory and the PKI that keeps it: CA, keys, certificates, CRL, secrets.
        .target(
            name: "VPNProvPKI", dependencies: ["VPNProvPlanning", "VPNProvModel", "VPNProvSupport", "VPNProvCrypto"]),
        // ServerPlan, ClientPlan and the consistency check between them.
        .target(name: "VPNProvPlanning", dependencies: ["VPNProvModel", "VPNProvSupport", "VPNProvCrypto"]),
        // Plans and materials to files: swanctl, client profiles, catalogue, the Ansible tree.
        .target(
            name: "VPNProvRendering",
            dependencies: ["VPNProvPlanning", "VPNProvModel", "VPNProvTemplates", "VPNProvSupport", "VPNProvCrypto"]),
        // generate, check, revoke, the lifecycle and accounts commands: a report value, no printing, no exit codes.
        .target(
            name: "VPNProvEngine",
            dependencies: [
                "VPNProvPKI", "VPNProvAccounts", "VPNProvRendering", "VPNProvOutputTree", "VPNProvPlanning",
                "VPNProvModel", "VPNProvTemplates", "VPNProvSupport", "VPNProvCrypto", "VPNProvYAML", "VPNProvQR",
            ]),
        // Argument parsing, commands, help, printers (text, JSON, SARIF), exit codes.
        .target(
            name: "VPNProvCLI",
            dependencies: [
                "VPNProvEngine", "VPNProvAccounts", "VPNProvPKI", "VPNProvModel", "VPNProvSupport", "VPNProvCrypto",
            ]),
        .executableTarget(name: "vpnprov", dependencies: ["VPNProvCLI"]),
        // For tests and the fuzzer only, never linked into vpnprov: the state readers on bytes, a
        // capturing console, the test clock, the crash hook.
        .target(
            name: "VPNProvTestSupport",
            dependencies: ["VPNProvCLI", "VPNProvEngine", "VPNProvPKI", "VPNProvModel", "VPNProvSupport"]),
        // vpnprov with the test seams switched on (VPNPROV_CRASH_AFTER_WRITES, VPNPROV_NOW); not a product.
        .executableTarget(name: "vpnprov-testhooks", dependencies: ["VPNProvTestSupport", "VPNProvCLI"]),
        // Fleet-scale benchmark: `swift run -c release vpnprov-bench` (prints figures, asserts nothing).
        .executableTarget(name: "vpnprov-bench"),
        // libFuzzer target for the loader and validator (README "Fuzzing"); a corpus replayer otherwise.
        .executableTarget(
            name: "vpnprov-fuzz", dependencies: ["VPNProvTestSupport", "VPNProvCLI", "VPNProvPKI", "VPNProvModel"]),
        // The harness every test target shares: the one process runner (`Subprocess`, `Daemon`, `ChildExit`),
        // the temporary directories and their exit check, deadlines and polling, the throw-away PostgreSQL.
        // On Swift Testing (the `.temporaries` trait), so never linked into the fuzzer.
        .target(name: "VPNProvTestHarness", dependencies: ["VPNProvSupport"], path: "Tests/VPNProvTestHarness"),
        // Fixtures the unit test targets share (the golden PKI, goldens, inventories, the in-process command
        // line, the built binary); on the harness, which it re-exports.
        .target(
            name: "VPNProvTestFixtures",
            dependencies: [
                "VPNProvCLI", "VPNProvPKI", "VPNProvPlanning", "VPNProvModel", "VPNProvSupport", "VPNProvCrypto",
                "VPNProvTestSupport", "VPNProvTestHarness",
            ],
            path: "Tests/VPNProvTestFixtures",
            resources: [.copy("Fixtures")]
        ),
        // The unit tests: one target per layer, named for the target it tests (and depending on the layers below
        // it that its tests build on); docs/architecture.md, "Targets", says what each holds.
        // The inventory: the loader, its keys, validation and rule codes, proposals.
        .testTarget(
            name: "VPNProvModelTests",
            dependencies: [
                "VPNProvModel", "VPNProvYAML", "VPNProvPlanning", "VPNProvCLI", "VPNProvTestSupport",
                "VPNProvTestFixtures",
            ]),
        // The crypto wrappers, the PKI, the state directory, secrets.
        .testTarget(
            name: "VPNProvPKITests",
            dependencies: [
                "VPNProvPKI", "VPNProvCrypto", "VPNProvSupport", "VPNProvModel", "VPNProvPlanning", "VPNProvEngine",
                "VPNProvTestSupport",
                "VPNProvTestFixtures",
            ]),
        // The plans: consistency, drain, fingerprints, Windows parameters, the accounts cluster.
        .testTarget(
            name: "VPNProvPlanningTests",
            dependencies: [
                "VPNProvPlanning", "VPNProvModel", "VPNProvPKI", "VPNProvCrypto", "VPNProvRendering",
                "VPNProvTemplates", "VPNProvEngine", "VPNProvTestFixtures",
            ]),
        // The output tree: staging, its caches, file modes, symlink safety.
        .testTarget(
            name: "VPNProvOutputTreeTests",
            dependencies: ["VPNProvOutputTree", "VPNProvCrypto", "VPNProvSupport", "VPNProvTestFixtures"]),
        // Every renderer and its goldens, the template engine, document writers, QR codes.
        .testTarget(
            name: "VPNProvRenderingTests",
            dependencies: [
                "VPNProvRendering", "VPNProvTemplates", "VPNProvQR", "VPNProvPlanning", "VPNProvModel", "VPNProvCrypto",
                "VPNProvSupport", "VPNProvEngine", "VPNProvTestFixtures",
            ]),
        // The accounts database (a throw-away PostgreSQL), its actions, RADIUS paths, Disconnect.
        .testTarget(
            name: "VPNProvAccountsTests",
            dependencies: [
                "VPNProvAccounts", "VPNProvCLI", "VPNProvEngine", "VPNProvPKI", "VPNProvPlanning", "VPNProvRendering",
                "VPNProvModel", "VPNProvTemplates", "VPNProvSupport", "VPNProvCrypto", "VPNProvTestSupport",
                "VPNProvTestFixtures", "vpnprov-testhooks",
            ]),
        // The engine's runs: the pipeline, lifecycle, crash safety, state faults, rollouts pending, hand-off, ACME.
        .testTarget(
            name: "VPNProvEngineTests",
            dependencies: [
                "VPNProvEngine", "VPNProvCLI", "VPNProvPKI", "VPNProvOutputTree", "VPNProvPlanning", "VPNProvModel",
                "VPNProvCrypto", "VPNProvTestSupport", "VPNProvTestFixtures", "vpnprov-testhooks",
            ]),
        // The command line: commands and options, machine output, install, secrets kept off the console.
        .testTarget(
            name: "VPNProvCLITests",
            dependencies: [
                "VPNProvCLI", "VPNProvEngine", "VPNProvPKI", "VPNProvModel", "VPNProvSupport", "VPNProvTestSupport",
                "VPNProvTestFixtures", "vpnprov-testhooks",
            ]),
        // The repository against its docs: the layering of Package.swift, CI's documentation, paths in comments.
        .testTarget(
            name: "RepositoryTests",
            dependencies: ["VPNProvCLI", "VPNProvEngine", "VPNProvPKI", "VPNProvYAML", "VPNProvTestFixtures"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "VPNProvCLI", "VPNProvEngine", "VPNProvPKI", "VPNProvRendering", "VPNProvOutputTree", "VPNProvPlanning",
                "VPNProvModel", "VPNProvTemplates", "VPNProvSupport", "VPNProvCrypto", "VPNProvAccounts", "VPNProvQR",
                "VPNProvTestSupport", "VPNProvTestHarness", "VPNProvTestFixtures",
            ]),
    ]
)

// .ci/run's sanitizer passes run unit tests only: VPNPROV_UNIT_TESTS_ONLY=1 leaves the end-to-end tests
// out of their builds (about a fifth of the code each would compile; docs/testing.md, "CI").
if Context.environment["VPNPROV_UNIT_TESTS_ONLY"] == "1" {
    package.targets.removeAll { $0.name == "EndToEndTests" }
}

// A file must import the module of every member it uses, not only of the types it names (SE-0444), so
// each file's imports say what it depends on.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("MemberImportVisibility")]
}
