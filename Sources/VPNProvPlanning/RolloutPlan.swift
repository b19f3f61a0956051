import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The Ansible rollout (docs/deploy.md): who is rolled out where (deploy/inventory.yml) and what the role checks
// on each node (deploy/host_vars/<node>.yml). Decided here; the deploy renderer only writes it.

/// One host of deploy/inventory.yml.
package struct RolloutHost: Sendable, Hashable {
    package var name: String
    /// How Ansible reaches it (`deploy.host`, else its address).
    package var host: String
    package var port: Int
    package var user: String
    package var become: Bool
    /// A node's `region`, which puts it into the region's group.
    package var region: String?
}

/// deploy/inventory.yml: the nodes (in inventory order), the RADIUS servers when a node uses them, the
/// hand-off site.
package struct RolloutPlan: Sendable, Hashable {
    package var deployment: String
    package var nodes: [RolloutHost]
    /// `accounts.servers` when a node uses them (the group is there, empty, otherwise).
    package var radiusServers: [RadiusHost]
    /// The hand-off site (`handoff:`), a group of its own.
    package var handOff: RolloutHost?
    /// The accounts database cluster (`accounts.cluster`): its hosts, playbook and role; nil without one.
    package var accountsDatabase: AccountsDatabasePlan?

    /// A RADIUS server as the rollout reaches it: its name and address as written.
    package struct RadiusHost: Sendable, Hashable {
        package var name: String
        package var address: String
    }

    static func make(_ inventory: Inventory, handOff: HandOffPlan?) -> RolloutPlan {
        let nodes = inventory.nodes.map { node in
            RolloutHost(
                name: node.name, host: node.deployHost, port: node.deploy.port, user: node.deploy.user,
                become: node.deploy.become, region: node.region)
        }
        let usesRadius = inventory.nodes.contains(where: \.usesRadius)
        let radius = (usesRadius ? inventory.accounts?.servers ?? [] : []).map {
            RadiusHost(name: $0.name, address: $0.address)
        }
        let site = handOff.map {
            RolloutHost(
                name: $0.address, host: $0.sshHost, port: $0.deploy.port, user: $0.deploy.user,
                become: $0.deploy.become)
        }
        return RolloutPlan(
            deployment: inventory.name, nodes: nodes, radiusServers: radius, handOff: site,
            accountsDatabase: AccountsDatabasePlan.make(inventory))
    }
}

/// What the role checks and sets up on one node (deploy/host_vars/<node>.yml).
package struct HostVarsPlan: Sendable, Hashable {
    /// The node's collector (docs/monitoring.md), with `monitoring:`.
    package struct Monitoring: Sendable, Hashable {
        package var port: Int
        package var userLabels: Bool
        package var interval: Int
        /// Each connection of the node and the service it carries.
        package var services: [MonitoringPlan.LabelledConnection]
        /// The RADIUS servers the collector asks for their status.
        package var radius: [RadiusPlan.Server]
    }

    /// An ACME node's certificate (docs/acme.md).
    package struct ACME: Sendable, Hashable {
        package var directory: String
        package var email: String
        package var domain: String
        package var keyType: String
        package var renewDays: Int
        package var caBundle: Bool
        package var roots: [String]
    }

    /// A redirected connection of a draining node and the addresses of the siblings that take its clients.
    package struct DrainConnection: Sendable, Hashable {
        package var name: String
        package var addresses: [String]
    }

    package var node: String
    /// The node's connections as its plan names them, and a RADIUS node's IPsec connections to its servers.
    package var connections: [String]
    /// The remote identities allowed on the node (EAP/XAuth user names, certificate users' identities),
    /// sorted by UTF-8 bytes.
    package var identities: [String]
    /// The least strongSwan version the node needs ("" for any): ML-KEM needs 6.1.
    package var strongSwanMinimum: String
    package var monitoring: Monitoring?
    package var acme: ACME?
    /// With `state: draining`: the connections whose clients the drain playbook redirects (`DrainGroups`).
    package var drain: [DrainConnection]?

    /// The identities a certificate user can connect as, by user: the user's IKE identity and the subject
    /// of the certificate vpnprov issues the user (from `certificates`, as the PKI issued it). Made once for
    /// all of the user's nodes.
    static func certificateIdentities(_ inventory: Inventory, certificates: CertificatePlan) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for user in inventory.users where !user.revoked && user.cert {
            var identities = [user.id.swanctlValue]
            if let subject = certificates.client(user.name)?.subject { identities.append(subject.description) }
            out[user.name] = identities
        }
        return out
    }

    /// A certificate user is listed under every identity a client can present with the certificate: the
    /// identity as the inventory writes it (the certificate's SAN, or its subject when the identity is a DN)
    /// and the certificate's subject DN as strongSwan prints it ("O=acme, CN=dave@acme"), which a client may
    /// send instead (the role compares DNs RDN by RDN, whatever the spacing or order).
    static func make(
        node: Node, in inventory: Inventory, server: NodePlan, radius: RadiusPlan?, monitoring: MonitoringPlan?,
        certificateIdentities: [String: [String]]
    ) -> HostVarsPlan {
        var identities = server.passwordUsers
        if node.services.contains(.ikev2Cert) {
            for user in inventory.users where !user.revoked && user.cert && user.nodes.contains(node.name) {
                identities += certificateIdentities[user.name] ?? []
            }
        }
        var connections = server.connections.map(\.name)
        if let radius, radius.protection == .ipsec {
            connections += radius.servers.map { RadiusPlan.connectionName($0.name) }
        }
        var plan = HostVarsPlan(
            node: node.name, connections: connections,
            identities: Set(identities).sorted { $0.precedesByUTF8($1) },
            // ML-KEM needs strongSwan 6.1 on the node (6.0.1 negotiates it and then fails every handshake; 5.9
            // refuses the keyword): the role checks the installed version before it puts anything live.
            strongSwanMinimum: node.quantumSafe?.mlKEM.isEmpty == false ? QuantumSafe.mlKEMStrongSwan : "")
        if let monitoring {
            plan.monitoring = Monitoring(
                port: monitoring.port, userLabels: monitoring.userLabels, interval: MonitoringPlan.collectorInterval,
                services: MonitoringPlan.services(server, radius: radius), radius: radius?.servers ?? [])
        }
        // The validator holds an ACME node to a DNS-name identity and the `acme:` section to an e-mail.
        if node.certificate == .acme, let acme = inventory.acme, case .fqdn(let domain) = node.id {
            plan.acme = ACME(
                directory: acme.directory, email: acme.email ?? "", domain: domain,
                keyType: acme.key(for: node).rawValue, renewDays: acme.renewDays, caBundle: acme.caBundle != nil,
                roots: acme.roots)
        }
        if node.state == .draining {
            let siblings = DrainGroups.siblings(of: node, in: inventory)
            plan.drain = server.connections.filter { DrainGroups.redirectedServices.contains($0.service) }.compactMap {
                connection in
                let takers = siblings.filter { DrainGroups.services(of: node, at: $0).contains(connection.service) }
                guard !takers.isEmpty else { return nil }
                return DrainConnection(name: connection.name, addresses: takers.map(\.address))
            }
        }
        return plan
    }
}
