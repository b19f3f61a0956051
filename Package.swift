// swift-tools-version:6.0
import PackageDescription

// vpnprov: YAML inventory -> strongSwan server configs, PKI and client profiles.
// No package dependencies: C libraries come from Debian (libyaml-dev, libssl-dev).
let package = Package(
    name: "vpnprov",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "vpnprov", targets: ["vpnprov"]),
        .library(name: "VPNProvKit", targets: ["VPNProvKit"]),
    ],
    targets: [
        // C system libraries: each is imported by exactly one Swift module.
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // YAML documents with source positions, on libyaml.
        .target(name: "VPNProvYAML", dependencies: ["CYAML"]),
        // Keys, certificates, CRLs, PKCS#12, hashes and randomness, on OpenSSL 3 libcrypto.
        .target(name: "VPNProvCrypto", dependencies: ["CCrypto"]),
        // Everything else: inventory model, validation, PKI/state, planning, renderers, CLI.
        .target(
            name: "VPNProvKit",
            dependencies: ["VPNProvYAML", "VPNProvCrypto"],
            resources: []
        ),
        .executableTarget(name: "vpnprov", dependencies: ["VPNProvKit"]),
        // Fleet-scale benchmark: `swift run -c release vpnprov-bench` (prints figures, asserts nothing).
        .executableTarget(name: "vpnprov-bench"),
        // libFuzzer target for the loader and validator (README "Fuzzing"); a corpus replayer otherwise.
        .executableTarget(name: "vpnprov-fuzz", dependencies: ["VPNProvKit"]),
        .testTarget(
            name: "VPNProvKitTests",
            dependencies: ["VPNProvKit", "VPNProvYAML", "VPNProvCrypto"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "EndToEndTests", dependencies: ["VPNProvKit", "VPNProvCrypto"]),
    ]
)
