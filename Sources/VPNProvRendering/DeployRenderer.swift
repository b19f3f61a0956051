import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// Writes deploy/: the Ansible rollout of the fleet, from the plan's RolloutPlan and each node's
// HostVarsPlan. inventory.yml (one host per node, in the group vpnprov_nodes and in one group per region)
// and host_vars/<node>.yml (what the role checks on the node: the connection names of the node's plan and
// the identities allowed there) come from the templates; site.yml and the vpnprov_node role are written as they are (BuiltinDeployFiles). Nothing
// here holds a secret: the role copies each node's files from servers/<node>/ of the same tree.
// docs/deploy.md describes the role.

package enum DeployRenderer: TreeRenderer {
    static let inventoryTemplate = "deploy/inventory.yml.tmpl"
    static let hostVarsTemplate = "deploy/host_vars.yml.tmpl"
    /// The Ansible group every node is in.
    static let nodesGroup = "vpnprov_nodes"

    /// What the renderer reads of the plan: the rollout's hosts and each node's host_vars.
    package struct Part: Sendable {
        package var rollout: RolloutPlan
        package var hostVars: [HostVarsPlan]
    }

    package static func part(of plan: DeploymentPlan) -> Part {
        Part(rollout: plan.rollout, hostVars: plan.nodes.map(\.hostVars))
    }

    /// Every file of deploy/, sorted by path.
    package static func render(_ part: Part, _ shared: RenderShared, each: ([OutputFile]) throws -> Void) throws {
        let templates = shared.templates
        var files: [OutputFile] = []
        files.append(
            OutputFile(
                path: "deploy/inventory.yml",
                text: try templates.template(inventoryTemplate).render(inventoryContext(part.rollout))))
        for node in part.hostVars {
            let text = try templates.template(hostVarsTemplate).render(hostVarsContext(node))
            files.append(OutputFile(path: "deploy/host_vars/\(node.node).yml", text: text))
        }
        // The accounts database cluster's hosts, playbook and role: only with accounts.cluster.
        let cluster = part.rollout.accountsDatabase
        files += try AccountsDatabaseRenderer.render(plan: cluster, templates: templates)
        for (path, text) in BuiltinDeployFiles.files
        where cluster != nil || !AccountsDatabaseRenderer.isClusterFile(path) {
            files.append(OutputFile(path: "deploy/\(path)", text: text))
        }
        try each(files.sorted { $0.path.precedesByUTF8($1.path) })
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

    static func inventoryContext(_ plan: RolloutPlan) -> TemplateValue {
        func host(_ host: RolloutHost) -> TemplateValue {
            [
                "name": .string(host.name), "host": .string(host.host), "port": .int(host.port),
                "user": .string(host.user), "become": .identifier(host.become ? "true" : "false"),
            ]
        }
        // Regions in order of first appearance; hosts in inventory order.
        var order: [String] = []
        var members: [String: [String]] = [:]
        for node in plan.nodes {
            guard let region = node.region else { continue }
            let group = regionGroup(region)
            if members[group] == nil { order.append(group) }
            members[group, default: []].append(node.name)
        }
        let regions: [TemplateValue] = order.map { group in
            ["group": .identifier(group), "hosts": .list(members[group]!.map { .string($0) })]
        }
        // The accounts database cluster (`accounts.cluster`): its monitor and its data nodes, two groups that
        // deploy/accounts-db.yml rolls out in that order; absent without a cluster. Its RADIUS servers are told
        // where the operator's TLS files are (the client certificate they log in with).
        let databaseGroups: [TemplateValue] =
            plan.accountsDatabase.map { cluster in
                [
                    [
                        "monitor": .list([
                            ["name": .string(cluster.monitor.name), "host": .string(cluster.monitor.address)]
                        ]),
                        "data": .list(
                            cluster.dataNodes.map { ["name": .string($0.name), "host": .string($0.address)] }),
                        "tls_source": .string(cluster.operatorTLSDirectory),
                    ]
                ]
            } ?? []
        return [
            "deployment": .string(plan.deployment), "nodes": .list(plan.nodes.map(host)), "regions": .list(regions),
            // The RADIUS servers when a node uses them, and the hand-off site: groups of their own (empty without).
            "radius": .list(plan.radiusServers.map { ["name": .string($0.name), "host": .string($0.address)] }),
            "handoff": .list(plan.handOff.map { [host($0)] } ?? []),
            "accounts_db": .list(databaseGroups),
        ]
    }

    /// What the role checks on a node (`HostVarsPlan`): its connections, the remote identities allowed there,
    /// the strongSwan it needs, its collector's settings and its ACME certificate's.
    package static func hostVarsContext(_ plan: HostVarsPlan) -> TemplateValue {
        var context: TemplateObject = [
            "node": .string(plan.node),
            "connections": .list(plan.connections.map { .string($0) }),
            "identities": .list(plan.identities.map { .string($0) }),
            "acme": .bool(false),
            "monitoring": .bool(false),
            "strongswan_minimum": .string(plan.strongSwanMinimum),
        ]
        if let monitoring = plan.monitoring {
            context["monitoring"] = .object([
                "port": .int(monitoring.port),
                "user_labels": .identifier(monitoring.userLabels ? "true" : "false"),
                "interval": .int(monitoring.interval),
                "services": .list(
                    monitoring.services.map {
                        ["connection": .string($0.connection), "service": .string($0.carries.label)]
                    }),
                "radius": .list(
                    monitoring.radius.map {
                        ["name": .string($0.name), "address": .string($0.address), "port": .int($0.authPort)]
                    }),
            ])
        }
        // A draining node: per redirected connection, the addresses of the siblings that take its clients.
        if let drain = plan.drain {
            context["drain"] = .object([
                "connections": .list(
                    drain.map {
                        .object(["name": .string($0.name), "addresses": .list($0.addresses.map { .string($0) })])
                    })
            ])
        } else {
            context["drain"] = .bool(false)
        }
        if let acme = plan.acme {
            context["acme"] = .object([
                "directory": .string(acme.directory),
                "email": .string(acme.email),
                "domain": .string(acme.domain),
                "key_type": .string(acme.keyType),
                "renew_days": .int(acme.renewDays),
                "ca_bundle": .bool(acme.caBundle),
                "roots": .list(acme.roots.map { .string($0) }),
            ])
        }
        return .object(context)
    }
}
