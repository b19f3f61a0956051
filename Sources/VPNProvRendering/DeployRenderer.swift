import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// Writes deploy/: the Ansible rollout of the fleet. inventory.yml (one host per node, in the group
// vpnprov_nodes and in one group per region) and host_vars/<node>.yml (what the role checks on the
// node: the connection names of the node's plan and the identities allowed there) come from the
// templates; site.yml and the vpnprov_node role are written as they are (BuiltinDeployFiles). Nothing
// here holds a secret: the role copies each node's files from servers/<node>/ of the same tree.
// docs/deploy.md describes the role.

package enum DeployRenderer {
    static let inventoryTemplate = "deploy/inventory.yml.tmpl"
    static let hostVarsTemplate = "deploy/host_vars.yml.tmpl"
    /// The Ansible group every node is in.
    static let nodesGroup = "vpnprov_nodes"

    /// Every file of deploy/, sorted by path.
    package static func render(inventory: Inventory, templates: TemplateSet) throws -> [OutputFile] {
        var files: [OutputFile] = []
        files.append(
            OutputFile(
                path: "deploy/inventory.yml",
                text: try templates.template(inventoryTemplate).render(inventoryContext(inventory))))
        // Each certificate user's identities, made once for all of the user's nodes.
        let certificateIdentities = certificateIdentities(inventory)
        for node in inventory.nodes {
            let text = try templates.template(hostVarsTemplate).render(
                hostVarsContext(node: node, inventory: inventory, certificateIdentities: certificateIdentities))
            files.append(OutputFile(path: "deploy/host_vars/\(node.name).yml", text: text))
        }
        // The accounts database cluster's hosts, playbook and role: only with accounts.cluster.
        let cluster = AccountsDatabasePlan.make(inventory)
        files += try AccountsDatabaseRenderer.render(plan: cluster, templates: templates)
        for (path, text) in BuiltinDeployFiles.files
        where cluster != nil || !AccountsDatabaseRenderer.isClusterFile(path) {
            files.append(OutputFile(path: "deploy/\(path)", text: text))
        }
        return files.sorted { $0.path.precedesByUTF8($1.path) }
    }

    /// The identities a certificate user can connect as, by user: the user's IKE identity and the subject
    /// of the certificate vpnprov issues the user.
    static func certificateIdentities(_ inventory: Inventory) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for user in inventory.users where !user.revoked && user.cert {
            var identities = [user.id.swanctlValue]
            if let subject = try? CertificateProfile.client(user, inventory: inventory).subject {
                identities.append(subject.description)
            }
            out[user.name] = identities
        }
        return out
    }

    /// The Ansible group of a region: `vpnprov_region_` and the region with every character outside
    /// [A-Za-z0-9_] replaced by `_` (Ansible warns about group names that are not Python identifiers).
    package static func regionGroup(_ region: String) -> String {
        "vpnprov_region_"
            + String(
                String.UnicodeScalarView(
                    region.unicodeScalars.map {
                        TextCheck.isASCIILetterOrDigit($0) || $0 == "_" ? $0 : "_"
                    }))
    }

    static func inventoryContext(_ inventory: Inventory) -> TemplateValue {
        let nodes: [TemplateValue] = inventory.nodes.map { node in
            [
                "name": .string(node.name),
                "host": .string(node.deployHost),
                "port": .int(node.deploy.port),
                "user": .string(node.deploy.user),
                "become": .identifier(node.deploy.become ? "true" : "false"),
            ]
        }
        // Regions in order of first appearance; hosts in inventory order.
        var order: [String] = []
        var members: [String: [String]] = [:]
        for node in inventory.nodes {
            guard let region = node.region else { continue }
            let group = regionGroup(region)
            if members[group] == nil { order.append(group) }
            members[group, default: []].append(node.name)
        }
        let regions: [TemplateValue] = order.map { group in
            ["group": .identifier(group), "hosts": .list(members[group]!.map { .string($0) })]
        }
        // The RADIUS servers of `accounts:` when a node uses them (the group is there, empty, otherwise).
        let usesRadius = inventory.nodes.contains(where: \.usesRadius)
        let radius: [TemplateValue] = (usesRadius ? inventory.accounts?.servers ?? [] : []).map { server in
            ["name": .string(server.name), "host": .string(server.address)]
        }
        // The hand-off site (`handoff:`), a group of its own (empty without it).
        let handOff: [TemplateValue] =
            HandOffPlan.make(inventory, acmeCABundlePEM: nil).map { site in
                [
                    [
                        "name": .string(site.address), "host": .string(site.sshHost), "port": .int(site.deploy.port),
                        "user": .string(site.deploy.user), "become": .identifier(site.deploy.become ? "true" : "false"),
                    ]
                ]
            } ?? []
        // The accounts database cluster (`accounts.cluster`): its monitor and its data nodes, two groups that
        // deploy/accounts-db.yml rolls out in that order; absent without a cluster. Its RADIUS servers are told
        // where the operator's TLS files are (the client certificate they log in with).
        let cluster = AccountsDatabasePlan.make(inventory)
        let databaseGroups: [TemplateValue] =
            cluster.map { plan in
                [
                    [
                        "monitor": .list([["name": .string(plan.monitor.name), "host": .string(plan.monitor.address)]]),
                        "data": .list(plan.dataNodes.map { ["name": .string($0.name), "host": .string($0.address)] }),
                        "tls_source": .string(plan.operatorTLSDirectory),
                    ]
                ]
            } ?? []
        return [
            "deployment": .string(inventory.name), "nodes": .list(nodes), "regions": .list(regions),
            "radius": .list(radius), "handoff": .list(handOff), "accounts_db": .list(databaseGroups),
        ]
    }

    /// What the role checks on a node: its connections, as the node's plan names them, and the remote
    /// identities allowed there (EAP/XAuth user names and client certificate identities).
    ///
    /// A certificate user is listed under every identity a client can present with the certificate:
    /// the identity as the inventory writes it (the certificate's SAN, or its subject when the identity
    /// is a DN) and the certificate's subject DN as strongSwan prints it ("O=acme, CN=dave@acme"), which
    /// a client may send instead (the role compares DNs RDN by RDN, whatever the spacing or order).
    /// `certificateIdentities`: `certificateIdentities(inventory)`, or nil to make them here.
    package static func hostVarsContext(
        node: Node, inventory: Inventory, certificateIdentities: [String: [String]]? = nil
    ) -> TemplateValue {
        let plan = ServerPlan.make(for: node, in: inventory)
        var identities = plan.passwordUsers
        if node.services.contains(.ikev2Cert) {
            let byUser = certificateIdentities ?? Self.certificateIdentities(inventory)
            for user in inventory.users where !user.revoked && user.cert && user.nodes.contains(node.name) {
                identities += byUser[user.name] ?? []
            }
        }
        let sorted = Set(identities).sorted { $0.precedesByUTF8($1) }
        // A RADIUS node's IPsec connections to its RADIUS servers (swanctl/conf.d/vpnprov-radius-ipsec.conf).
        var connections = plan.connections.map(\.name)
        let radius = RadiusPlan.make(for: node, in: inventory)
        if let radius, radius.protection == .ipsec {
            connections += radius.servers.map { RadiusPlan.connectionName($0.name) }
        }
        var context: TemplateObject = [
            "node": .string(node.name),
            "connections": .list(connections.map { .string($0) }),
            "identities": .list(sorted.map { .string($0) }),
            "acme": .bool(false),
            "monitoring": .bool(false),
            // ML-KEM needs strongSwan 6.1 on the node (6.0.1 negotiates it and then fails every handshake; 5.9
            // refuses the keyword): the role checks the installed version before it puts anything live.
            "strongswan_minimum": .string(node.quantumSafe?.mlKEM.isEmpty == false ? QuantumSafe.mlKEMStrongSwan : ""),
        ]
        // The node's exporter and collector (docs/monitoring.md): the port, whether SAs carry user labels,
        // the service each connection carries, and the RADIUS servers the collector asks for their status.
        if let monitoring = MonitoringPlan.make(inventory) {
            let services = MonitoringPlan.services(plan, radius: radius)
            context["monitoring"] = .object([
                "port": .int(monitoring.port),
                "user_labels": .identifier(monitoring.userLabels ? "true" : "false"),
                "interval": .int(MonitoringPlan.collectorInterval),
                "services": .list(
                    services.map { ["connection": .string($0.connection), "service": .string($0.service)] }),
                "radius": .list(
                    (radius?.servers ?? []).map {
                        ["name": .string($0.name), "address": .string($0.address), "port": .int($0.authPort)]
                    }),
            ])
        }
        // The validator holds an ACME node to a DNS-name identity and the `acme:` section to an e-mail.
        if node.certificate == .acme, let acme = inventory.acme, case .fqdn(let domain) = node.id {
            context["acme"] = .object([
                "directory": .string(acme.directory),
                "email": .string(acme.email ?? ""),
                "domain": .string(domain),
                "key_type": .string(acme.key(for: node).rawValue),
                "renew_days": .int(acme.renewDays),
                "ca_bundle": .bool(acme.caBundle != nil),
                "roots": .list(acme.roots.map { .string($0) }),
            ])
        }
        return .object(context)
    }
}
