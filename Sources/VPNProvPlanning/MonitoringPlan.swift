import VPNProvModel
import VPNProvSupport

// The fleet's monitoring (docs/monitoring.md): what Prometheus scrapes, the alert thresholds, and what
// each node's collector is told. The Prometheus files of monitoring/ and the nodes' host_vars are
// rendered from this one plan.

package struct MonitoringPlan: Sendable, Hashable {
    /// One node as Prometheus scrapes it.
    package struct Target: Sendable, Hashable {
        package var node: String
        /// `host:port`, the host as Ansible reaches the node (`deploy.host`, else `address`); an IPv6
        /// address in brackets.
        package var address: String
        package var region: String?
        package var country: String?
        package var tier: Tier
    }

    /// The scrape job's name, which the alert rules select on.
    package static let job = "vpnprov-nodes"
    /// How often the nodes' collector writes strongSwan's state (systemd timer) and the scrape interval
    /// the job sets.
    package static let collectorInterval = 15
    package static let scrapeInterval = 30
    /// The CA's warning: a rotation has to reach every device first (lifecycle.md: 180 days).
    package static let caWarningDays = 180
    /// Certificates and CRLs: `generate` renews them within 30 days of their end, so the daily job
    /// checks `status --expiring 21`: what is still within 21 days was not renewed by itself.
    package static let renewalWarningDays = 21
    /// A pool with more than this share of its addresses online.
    package static let poolFullRatio = 0.9

    package var targets: [Target]
    package var port: Int
    package var userLabels: Bool
    /// Days before a node certificate's end that alert: 21, or one less than `acme.renew_days` when an
    /// ACME node renews later than that (its renewal would otherwise look like a failure).
    package var certificateWarningDays: Int

    package static func make(_ inventory: Inventory) -> MonitoringPlan? {
        guard let monitoring = inventory.monitoring else { return nil }
        var days = renewalWarningDays
        if let acme = inventory.acme, inventory.nodes.contains(where: { $0.certificate == .acme }) {
            days = max(1, min(days, acme.renewDays - 1))
        }
        let targets = inventory.nodes.map { node in
            let host = node.deployHost
            let bracketed = IPAddressText.parse(host).map { $0.count == 16 } == true ? "[\(host)]" : host
            return Target(
                node: node.name, address: "\(bracketed):\(monitoring.port)", region: node.region,
                country: node.country, tier: node.tier)
        }
        return MonitoringPlan(
            targets: targets, port: monitoring.port, userLabels: monitoring.userLabels,
            certificateWarningDays: days)
    }

    /// A connection of a node and what it carries, as the node's collector labels its SAs.
    package struct LabelledConnection: Sendable, Hashable {
        package enum Carries: Sendable, Hashable {
            case service(Service)
            /// The node's IPsec connection to a RADIUS server.
            case radius

            /// The `service` label.
            package var label: String {
                switch self {
                case .service(let service): service.rawValue
                case .radius: "radius"
                }
            }
        }
        package var connection: String
        package var carries: Carries
    }

    /// What a node's collector labels its SAs with: each connection of the node's plan and the vpnprov
    /// service it carries; a RADIUS node's connections to its RADIUS servers carry `radius`.
    package static func services(_ plan: NodePlan, radius: RadiusPlan?) -> [LabelledConnection] {
        var result = plan.connections.map { LabelledConnection(connection: $0.name, carries: .service($0.service)) }
        if let radius, radius.protection == .ipsec {
            result += radius.servers.map {
                LabelledConnection(connection: RadiusPlan.connectionName($0.name), carries: .radius)
            }
        }
        return result
    }
}
