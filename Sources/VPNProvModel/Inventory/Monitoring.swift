import VPNProvYAML

/// The fleet's monitoring (`monitoring:`, docs/monitoring.md): every node runs Debian's node exporter with
/// strongSwan's state as metrics, reachable only from `from`, and the output tree gets a Prometheus scrape
/// configuration and alert rules for the fleet.
package struct MonitoringSettings: Sendable, Hashable {
    /// The node exporter's own default port.
    static let defaultPort = 9100
    /// The ports accepted: not the privileged ones (the exporter runs as its own user).
    static let portRange = 1024...65535

    /// Who may scrape the exporters (Prometheus servers): addresses as /32 or /128 networks.
    package var from: [CIDR] = []
    /// Where each `from` entry was written (same order).
    package var fromLocations: [SourceLocation] = []
    /// The TCP port the exporter listens on, on every node.
    package var port = defaultPort
    /// Per-user series (an account's SAs and traffic): off by default, for the series' number and the
    /// users' privacy.
    package var userLabels = false
    package var location: SourceLocation
    /// Where each key's value was written.
    package var fieldLocations: [InventoryDecoder.MonitoringKey: SourceLocation] = [:]

    package init(location: SourceLocation) { self.location = location }

    /// Best location for a key: its own, else the section's.
    package func location(of key: InventoryDecoder.MonitoringKey) -> SourceLocation {
        fieldLocations[key] ?? location
    }
}
