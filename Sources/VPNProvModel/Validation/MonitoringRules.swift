import VPNProvSupport

// Monitoring (`monitoring:`, docs/monitoring.md).
//
// Decisions: the exporters tell who is connected where and how loaded each node is, so `monitoring.from`
// may not be every address (`/0`) nor reach into a node's pool or pool6 (`monitoring-from-wide`): a tunnel
// client would then read every node's exporter through the tunnel (with `user_labels`, the names of
// everyone connected).

extension RuleCode {
    /// A `monitoring.from` entry admits every address, or a node's pool.
    static let monitoringFromWide = RuleCode("monitoring-from-wide")
}

enum MonitoringRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        guard let monitoring = inventory.monitoring else { return }
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
            for node in inventory.nodes {
                for (key, pool) in [(InventoryDecoder.NodeKey.pool, node.pool), (.pool6, node.pool6)] {
                    guard let pool, NetworkRules.overlaps(pool, network) else { continue }
                    d.append(
                        .error(
                            .monitoringFromWide,
                            "'monitoring.from': \(network) overlaps node '\(node.name)''s \(key.rawValue) \(pool); the node's tunnel clients could read the exporters. Name only the Prometheus servers' addresses",
                            at: location,
                            notes: [.init(location: node.location(of: key), message: "the pool is here")]))
                }
            }
        }
    }
}
