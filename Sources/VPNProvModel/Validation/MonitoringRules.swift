import VPNProvSupport

// Monitoring (`monitoring:`, docs/monitoring.md).
//
// Decisions: the exporters tell who is connected where and how loaded each node is, so `monitoring.from`
// may not be every address (`/0`) nor hold an address a tunnel client can appear as (`monitoring-from-wide`):
// a node's pool or pool6, or a node's address or radius_address, which the node masquerades its clients to
// (NetworkRules.clientSources). A tunnel client would then read every node's exporter through the tunnel
// (with `user_labels`, the names of everyone connected, and node_exporter's host metrics).

enum MonitoringRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        guard let monitoring = inventory.monitoring else { return }
        let sources = NetworkRules.clientSources(inventory.nodes)
        for (index, network) in monitoring.from.enumerated() {
            let location =
                index < monitoring.fromLocations.count
                ? monitoring.fromLocations[index] : monitoring.location(of: .from)
            if network.prefix == 0 {
                d.append(
                    .error(
                        .monitoringFromWide,
                        "'monitoring.from': \(network) lets every address read the nodes' exporters (who is connected, every node's load); name the Prometheus servers' addresses or networks",
                        at: location))
                continue
            }
            for source in sources where NetworkRules.overlaps(source.network, network) {
                d.append(
                    .error(
                        .monitoringFromWide,
                        "'monitoring.from': \(network) overlaps node '\(source.node.name)''s \(source.what) (\(NetworkRules.clientReason(source))); a tunnel client could read the exporters. Name only the Prometheus servers' addresses, on hosts that are not nodes",
                        at: location,
                        notes: [
                            .init(
                                location: source.node.location(of: source.key),
                                message: "the \(source.key.rawValue) is here")
                        ]))
            }
        }
    }
}
