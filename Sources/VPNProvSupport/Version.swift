/// The version of vpnprov, in one place below every layer: the `--version` line, the SARIF driver and
/// the render cache's fingerprint all name it.
package enum ProductVersion {
    package static let current = "0.1.0"
}
