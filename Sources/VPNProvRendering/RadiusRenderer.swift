import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// The AAA path of the nodes with `accounts: radius` (docs/accounts.md): the eap-radius settings of
// each such node (servers/<node>/strongswan.d/vpnprov-radius.conf) and a complete FreeRADIUS 3.2
// configuration directory per RADIUS server (radius/<server>/). Both come from the same RadiusPlan,
// so a node and its RADIUS servers agree on names, ports and secrets.

/// Why the RADIUS files could not be produced. Never contains a secret value.
package struct RadiusRenderError: Error, Hashable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

package enum RadiusRenderer {
    package static let nodeTemplate = "server/strongswan-radius.conf.tmpl"
    package static let daeTemplate = "server/strongswan-radius-dae.conf.tmpl"
    /// Where a node's RADIUS settings go under `servers/<node>/` (and under /etc on the node): the
    /// servers, which `swanctl --reload-settings` applies, and the Disconnect-Request listener, which
    /// strongSwan starts only with the daemon (eap_radius_plugin.c creates it once), apart so a
    /// rollout restarts the daemon only when the listener changed.
    package static let nodeFile = "strongswan.d/vpnprov-radius.conf"
    package static let daeFile = "strongswan.d/vpnprov-radius-dae.conf"
    /// The files of one RADIUS server: template under templates/radius/, path under radius/<server>/,
    /// private (0600) when it holds a secret.
    package static let serverFiles: [(template: String, path: String, isPrivate: Bool)] = [
        ("radius/radiusd.conf.tmpl", "radiusd.conf", false),
        ("radius/clients.conf.tmpl", "clients.conf", true),
        ("radius/mods-enabled/always.tmpl", "mods-enabled/always", false),
        ("radius/mods-enabled/eap.tmpl", "mods-enabled/eap", false),
        ("radius/mods-enabled/expiration.tmpl", "mods-enabled/expiration", false),
        ("radius/mods-enabled/expr.tmpl", "mods-enabled/expr", false),
        ("radius/mods-enabled/mschap.tmpl", "mods-enabled/mschap", false),
        ("radius/mods-enabled/pap.tmpl", "mods-enabled/pap", false),
        ("radius/mods-enabled/sql.tmpl", "mods-enabled/sql", true),
        ("radius/policy.d/vpnprov.tmpl", "policy.d/vpnprov", false),
        ("radius/policy.d/vpnprov-identities.tmpl", "policy.d/vpnprov-identities", false),
        ("radius/mods-enabled/vpnprov_log.tmpl", "mods-enabled/vpnprov_log", false),
        ("radius/sites-enabled/vpnprov.tmpl", "sites-enabled/vpnprov", false),
        ("radius/README.tmpl", "README", false),
    ]

    /// A node's two RADIUS files under `servers/<node>/strongswan.d/`; none for a node without RADIUS.
    package static func nodeFiles(
        node: Node, inventory: Inventory, nodeMaterials: NodeMaterials, templates: TemplateSet
    ) throws -> [OutputFile] {
        guard let plan = RadiusPlan.make(for: node, in: inventory) else { return [] }
        guard let secret = nodeMaterials.radiusSecret, let daeSecret = nodeMaterials.daeSecret else {
            throw RadiusRenderError(message: "node '\(node.name)': no RADIUS secret in the state")
        }
        let servers: [TemplateValue] = plan.servers.map { s in
            [
                "section": .identifier(s.section), "name": .string(s.name), "address": .string(s.address),
                "secret": .string(secret), "auth_port": .int(s.authPort), "acct_port": .int(s.acctPort),
                "preference": .int(s.preference),
            ]
        }
        let text = try templates.template(nodeTemplate).render([
            "node": .string(node.name),
            "nas_identifier": .string(plan.nasIdentifier),
            "accounting_interval": .int(plan.accountingInterval),
            "servers": .list(servers),
        ])
        let dae = try templates.template(daeTemplate).render([
            "node": .string(node.name), "dae_port": .int(plan.daePort), "dae_secret": .string(daeSecret),
        ])
        return [
            OutputFile(path: "servers/\(node.name)/\(nodeFile)", text: text, isPrivate: true),
            OutputFile(path: "servers/\(node.name)/\(daeFile)", text: dae, isPrivate: true),
        ]
    }

    /// `radius/<server>/...` for every RADIUS server; nothing when no node uses RADIUS.
    package static func render(inventory: Inventory, materials: Materials, templates: TemplateSet) throws
        -> [OutputFile]
    {
        let nodes = inventory.nodes.filter(\.usesRadius)
        guard let accounts = inventory.accounts, !nodes.isEmpty else { return [] }
        guard let database = materials.radiusDatabase else {
            throw RadiusRenderError(message: "accounts: radius_database was not resolved")
        }
        var clients: [TemplateValue] = []
        for node in nodes {
            guard let secret = materials.nodes[node.name]?.radiusSecret else {
                throw RadiusRenderError(message: "node '\(node.name)': no RADIUS secret in the state")
            }
            clients.append([
                "name": .string(node.name), "address": .string(node.address), "secret": .string(secret),
                "tier": .string(node.tier.rawValue),
            ])
        }
        var files: [OutputFile] = []
        for server in accounts.servers {
            let context: TemplateValue = [
                "server": .string(server.name),
                "nodes": .list(clients),
                "database": .string(database),
                "auth_port": .int(server.authPort),
                "acct_port": .int(server.acctPort),
                "node_names": .string(nodes.map(\.name).joined(separator: ", ")),
                "identities": .list(
                    RadiusPlan.inventoryIdentities(in: inventory).map { ["identity": .string($0.identity)] }),
            ]
            for file in serverFiles {
                let text = try templates.template(file.template).render(context)
                files.append(
                    OutputFile(path: "radius/\(server.name)/\(file.path)", text: text, isPrivate: file.isPrivate))
            }
        }
        // The database's migrations, for a DBA who applies them by hand (`vpnprov accounts migrate`
        // applies the same files).
        for migration in BuiltinMigrations.files {
            files.append(OutputFile(path: "radius/migrations/\(migration.name)", text: migration.sql))
        }
        return files.sorted { $0.path.precedesByUTF8($1.path) }
    }
}
