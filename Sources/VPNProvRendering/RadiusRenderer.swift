import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// The AAA path of the nodes with `accounts: radius` (docs/accounts.md): the eap-radius settings of
// each such node (servers/<node>/strongswan.d/vpnprov-radius.conf), its local RADIUS relay
// (servers/<node>/radius-relay/, a FreeRADIUS 3.2 configuration directory) and a complete FreeRADIUS
// 3.2 configuration directory per RADIUS server (radius/<server>/). All come from the same
// RadiusPlan, so a node, its relay and its RADIUS servers agree on names, ports and secrets.

/// Why the RADIUS files could not be produced. Never contains a secret value.
struct RadiusRenderError: Error, Hashable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

package enum RadiusRenderer: TreeRenderer {
    /// `radius/<this>/` holds the database's migrations, not a server's directory (no server may be named so).
    package static let migrationsDirectory = "migrations"
    static let nodeTemplate = "server/strongswan-radius.conf.tmpl"
    static let daeTemplate = "server/strongswan-radius-dae.conf.tmpl"
    /// Where a node's RADIUS settings go under `servers/<node>/` (and under /etc on the node): the
    /// servers, which `swanctl --reload-settings` applies, and the Disconnect-Request listener, which
    /// strongSwan starts only with the daemon (eap_radius_plugin.c creates it once), apart so a
    /// rollout restarts the daemon only when the listener changed.
    static let nodeFile = "strongswan.d/vpnprov-radius.conf"
    static let daeFile = "strongswan.d/vpnprov-radius-dae.conf"
    /// With `accounts.protection: ipsec`: the node's IPsec connections to its RADIUS servers (swanctl.conf
    /// includes conf.d/*.conf), and each RADIUS server's connections to the nodes and its firewall table.
    static let nodeIPsecTemplate = "server/swanctl-radius-ipsec.conf.tmpl"
    static let nodeIPsecFile = "swanctl/conf.d/vpnprov-radius-ipsec.conf"
    static let serverIPsecTemplate = "radius/swanctl-ipsec.conf.tmpl"
    static let serverIPsecFile = "ipsec/swanctl.conf"
    static let serverFirewallTemplate = "radius/vpnprov-radius.nft.tmpl"
    static let serverFirewallFile = "ipsec/vpnprov-radius.nft"

    /// IKE identities of the two ends (FQDN type, apart from every identity clients use): the
    /// connections are bound to the peers' addresses, the identities choose the pre-shared key.
    static func nodeIdentity(_ node: String) -> String { "@node-\(node)" }
    static func serverIdentity(_ server: String) -> String { "@radius-\(server)" }
    /// A RADIUS node's relay (RadiusPlan.Relay): a FreeRADIUS configuration directory under `servers/<node>/`,
    /// which the node role installs as /etc/vpnprov/radius-relay. Template under templates/, path under the
    /// directory, private (0600) when it holds a secret.
    package static let relayDirectory = "radius-relay"
    static let relayFiles: [(template: String, path: String, isPrivate: Bool)] = [
        ("server/radius-relay/radiusd.conf.tmpl", "radiusd.conf", false),
        ("server/radius-relay/clients.conf.tmpl", "clients.conf", true),
        ("server/radius-relay/proxy.conf.tmpl", "proxy.conf", true),
        ("server/radius-relay/mods-enabled/always.tmpl", "mods-enabled/always", false),
        ("server/radius-relay/mods-enabled/detail.tmpl", "mods-enabled/detail", false),
        ("server/radius-relay/mods-enabled/linelog.tmpl", "mods-enabled/linelog", false),
        ("server/radius-relay/policy.d/vpnprov-relay.tmpl", "policy.d/vpnprov-relay", false),
        ("server/radius-relay/sites-enabled/vpnprov-relay.tmpl", "sites-enabled/vpnprov-relay", false),
        (
            "server/radius-relay/sites-enabled/vpnprov-relay-forward.tmpl", "sites-enabled/vpnprov-relay-forward",
            false
        ),
        ("server/radius-relay/README.tmpl", "README", false),
    ]

    /// The files of one RADIUS server: template under templates/radius/, path under radius/<server>/,
    /// private (0600) when it holds a secret.
    package static let serverFiles: [(template: String, path: String, isPrivate: Bool)] = [
        ("radius/radiusd.conf.tmpl", "radiusd.conf", false),
        ("radius/clients.conf.tmpl", "clients.conf", true),
        ("radius/mods-enabled/always.tmpl", "mods-enabled/always", false),
        ("radius/mods-enabled/detail.tmpl", "mods-enabled/detail", false),
        ("radius/mods-enabled/eap.tmpl", "mods-enabled/eap", false),
        ("radius/mods-enabled/expiration.tmpl", "mods-enabled/expiration", false),
        ("radius/mods-enabled/expr.tmpl", "mods-enabled/expr", false),
        ("radius/mods-enabled/linelog.tmpl", "mods-enabled/linelog", false),
        ("radius/mods-enabled/mschap.tmpl", "mods-enabled/mschap", false),
        ("radius/mods-enabled/pap.tmpl", "mods-enabled/pap", false),
        ("radius/mods-enabled/sql.tmpl", "mods-enabled/sql", true),
        ("radius/policy.d/vpnprov.tmpl", "policy.d/vpnprov", false),
        ("radius/policy.d/vpnprov-identities.tmpl", "policy.d/vpnprov-identities", false),
        ("radius/sites-enabled/vpnprov.tmpl", "sites-enabled/vpnprov", false),
        ("radius/sites-enabled/vpnprov-replay.tmpl", "sites-enabled/vpnprov-replay", false),
        ("radius/README.tmpl", "README", false),
    ]

    /// A RADIUS node's files (from its `RadiusPlan`): its two under `servers/<node>/strongswan.d/`, its relay's
    /// directory and, with IPsec, its connections to the servers.
    static func nodeFiles(_ plan: RadiusPlan, nodeMaterials: NodeMaterials, templates: TemplateSet) throws
        -> [OutputFile]
    {
        let node = plan.node
        guard let secret = nodeMaterials.radiusSecret, let daeSecret = nodeMaterials.daeSecret else {
            throw RadiusRenderError(message: "node '\(node)': no RADIUS secret in the state")
        }
        guard let relaySecret = nodeMaterials.radiusRelaySecret else {
            throw RadiusRenderError(message: "node '\(node)': no RADIUS relay secret in the state")
        }
        var files = try pluginFiles(plan, relaySecret: relaySecret, daeSecret: daeSecret, templates: templates)
        files += try relayFiles(plan, secret: secret, relaySecret: relaySecret, templates: templates)
        if plan.protection == .ipsec {
            guard let key = nodeMaterials.radiusIPsecSecret else {
                throw RadiusRenderError(message: "node '\(node)': no RADIUS IPsec key in the state")
            }
            files.append(try nodeIPsecFile(plan, key: key, templates: templates))
        }
        return files
    }

    /// The node's eap-radius settings (towards its relay) and its Disconnect-Request listener's.
    static func pluginFiles(_ plan: RadiusPlan, relaySecret: String, daeSecret: String, templates: TemplateSet)
        throws -> [OutputFile]
    {
        let relay = plan.relay
        let text = try templates.template(nodeTemplate).render([
            "node": .string(plan.node),
            "nas_identifier": .string(plan.nasIdentifier),
            "accounting_interval": .int(plan.accountingInterval),
            "server_names": .string(plan.servers.map(\.name).joined(separator: ", ")),
            "address": .string(relay.address), "secret": .string(relaySecret),
            "auth_port": .int(relay.authPort), "acct_port": .int(relay.acctPort),
            "sockets": .int(RadiusPlan.relaySockets),
            "retransmit_tries": .int(RadiusPlan.relayRetransmitTries),
            "retransmit_timeout": .string(RadiusPlan.relayRetransmitTimeout),
            "retransmit_base": .string(RadiusPlan.relayRetransmitBase),
        ])
        let dae = try templates.template(daeTemplate).render([
            "node": .string(plan.node), "dae_port": .int(plan.daePort), "dae_secret": .string(daeSecret),
            "block_threshold": .int(RadiusPlan.blockThreshold),
            "libipsec_bypass": .bool(plan.protection == .ipsec && plan.ipsecPath == .libipsec),
            "mark": .string(RadiusPlan.libipsecBypassMark), "not_mark": .string("!" + RadiusPlan.libipsecBypassMark),
        ])
        return [
            OutputFile(path: "servers/\(plan.node)/\(nodeFile)", text: text, isPrivate: true),
            OutputFile(path: "servers/\(plan.node)/\(daeFile)", text: dae, isPrivate: true),
        ]
    }

    /// The node's relay: a FreeRADIUS directory under `servers/<node>/radius-relay/`.
    static func relayFiles(_ plan: RadiusPlan, secret: String, relaySecret: String, templates: TemplateSet) throws
        -> [OutputFile]
    {
        let relay = plan.relay
        let homes: [TemplateValue] = plan.servers.map { s in
            [
                "name": .string(s.name), "address": .string(s.address), "secret": .string(secret),
                "auth_name": .identifier("\(s.section)-auth"), "acct_name": .identifier("\(s.section)-acct"),
                "auth_port": .int(s.authPort), "acct_port": .int(s.acctPort),
                "source": .string(s.relaySource ?? ""),
                "response_window": .string(RadiusPlan.relayResponseWindow),
                "zombie_period": .int(RadiusPlan.relayZombiePeriod),
                "check_interval": .int(RadiusPlan.relayCheckInterval),
                "check_timeout": .int(RadiusPlan.relayCheckTimeout),
                "answers_to_alive": .int(RadiusPlan.relayAnswersToAlive),
            ]
        }
        let context: TemplateValue = [
            "node": .string(plan.node), "address": .string(relay.address), "secret": .string(relaySecret),
            "auth_port": .int(relay.authPort), "acct_port": .int(relay.acctPort), "servers": .list(homes),
            "server_names": .string(plan.servers.map(\.name).joined(separator: ", ")),
            "nas_address": .string(relay.nasAddress ?? ""),
        ]
        return try relayFiles.map { file in
            OutputFile(
                path: "servers/\(plan.node)/\(relayDirectory)/\(file.path)",
                text: try templates.template(file.template).render(context), isPrivate: file.isPrivate)
        }
    }

    /// With `accounts.protection: ipsec`: the node's IPsec connections to its RADIUS servers.
    static func nodeIPsecFile(_ plan: RadiusPlan, key: String, templates: TemplateSet) throws -> OutputFile {
        let peers: [TemplateValue] = plan.servers.map { s in
            [
                "name": .string(s.name), "connection": .identifier(RadiusPlan.connectionName(s.name)),
                "secret_section": .identifier("ike-" + RadiusPlan.connectionName(s.name)),
                "address": .string(s.address), "local_id": .string(nodeIdentity(plan.node)),
                "local_address": .string(plan.nasAddress == nil ? "" : plan.pathAddress),
                "remote_id": .string(serverIdentity(s.name)), "secret": .string(ServerRenderer.base64Secret(key)),
                "proposals": .string(RadiusPlan.ipsecProposals),
                "esp_proposals": .string(RadiusPlan.ipsecESPProposals),
                "start_action": .string(plan.ipsecPath == .xfrm ? "trap|start" : "start"),
            ]
        }
        // The kernel's IPsec holds back traffic that a trap policy catches until the connection is up;
        // kernel-libipsec of strongSwan 5.9 drops it without starting the connection (no acquire).
        let ipsec = try templates.template(nodeIPsecTemplate).render([
            "node": .string(plan.node), "servers": .list(peers), "trap": .bool(plan.ipsecPath == .xfrm),
        ])
        return OutputFile(path: "servers/\(plan.node)/\(nodeIPsecFile)", text: ipsec, isPrivate: true)
    }

    package static func part(of plan: DeploymentPlan) -> RadiusServersPlan? { plan.radiusServers }

    /// `radius/<server>/...` for every RADIUS server, and the database's migrations; nothing when no node uses
    /// RADIUS.
    package static func render(_ plan: RadiusServersPlan?, _ shared: RenderShared, each: ([OutputFile]) throws -> Void)
        throws
    {
        guard let plan else { return }
        let materials = shared.materials
        // With a cluster, each server's connection string is rendered from the plan (its region's data nodes
        // first); otherwise it is the operator's, one for every server.
        guard plan.cluster != nil || materials.radiusDatabase != nil else {
            throw RadiusRenderError(message: "accounts: radius_database was not resolved")
        }
        var clients: [TemplateValue] = []
        var keys: [String] = []
        for client in plan.clients {
            guard let secret = materials.nodes[client.node]?.radiusSecret,
                let daeSecret = materials.nodes[client.node]?.daeSecret
            else {
                throw RadiusRenderError(message: "node '\(client.node)': no RADIUS secret in the state")
            }
            clients.append([
                "name": .string(client.node), "address": .string(client.pathAddress),
                "secret": .string(secret), "tier": .string(client.tier.rawValue),
                "dae_port": .int(AccountsSettings.daePort), "dae_secret": .string(daeSecret),
                "dae_server": .string(client.disconnectHomeServer),
                "nas_address": .string(client.nasAddress?.clientValue ?? ""),
            ])
            if plan.protection == .ipsec {
                guard let key = materials.nodes[client.node]?.radiusIPsecSecret else {
                    throw RadiusRenderError(message: "node '\(client.node)': no RADIUS IPsec key in the state")
                }
                keys.append(key)
            }
        }
        var files: [OutputFile] = []
        for server in plan.servers {
            if plan.protection == .ipsec { files += try serverIPsecFiles(plan, server, keys: keys, shared.templates) }
            let context: TemplateValue = [
                "server": .string(server.name),
                "nodes": .list(clients),
                "database": .string(
                    plan.cluster?.radiusConninfo(region: server.region) ?? materials.radiusDatabase ?? ""),
                "cluster": .bool(plan.cluster != nil),
                "stale_after": .int(plan.staleAfter),
                "accounting_interval": .int(plan.accountingInterval),
                "auth_port": .int(server.authPort),
                "acct_port": .int(server.acctPort),
                "node_names": .string(plan.clients.map(\.node).joined(separator: ", ")),
                "ipsec": .bool(plan.protection == .ipsec),
                "identities": .list(plan.identities.map { ["identity": .string($0)] }),
            ]
            for file in serverFiles {
                let text = try shared.templates.template(file.template).render(context)
                files.append(
                    OutputFile(path: "radius/\(server.name)/\(file.path)", text: text, isPrivate: file.isPrivate))
            }
        }
        // The database's migrations, for a DBA who applies them by hand (`vpnprov accounts migrate`
        // applies the same files).
        for migration in BuiltinMigrations.files {
            files.append(OutputFile(path: "radius/\(migrationsDirectory)/\(migration.name)", text: migration.sql))
        }
        try each(files.sorted { $0.path.precedesByUTF8($1.path) })
    }

    /// With `accounts.protection: ipsec`: a RADIUS server's connections to the nodes (`keys`: each node's IKE
    /// key, in `plan.clients` order) and its firewall table.
    static func serverIPsecFiles(
        _ plan: RadiusServersPlan, _ server: RadiusServersPlan.Server, keys: [String], _ templates: TemplateSet
    ) throws -> [OutputFile] {
        let peers: [TemplateValue] = zip(plan.clients, keys).map { client, key in
            [
                "name": .string(client.node), "connection": .identifier(RadiusPlan.connectionName(client.node)),
                "secret_section": .identifier("ike-" + RadiusPlan.connectionName(client.node)),
                "address": .string(client.pathAddress),
                "local_id": .string(serverIdentity(server.name)),
                "remote_id": .string(nodeIdentity(client.node)),
                "secret": .string(ServerRenderer.base64Secret(key)),
                "proposals": .string(RadiusPlan.ipsecProposals),
                "esp_proposals": .string(RadiusPlan.ipsecESPProposals),
            ]
        }
        let context: TemplateValue = [
            "server": .string(server.name), "nodes": .list(peers),
            "node_names": .string(plan.clients.map(\.node).joined(separator: ", ")),
            "auth_port": .int(server.authPort), "acct_port": .int(server.acctPort),
        ]
        return [
            OutputFile(
                path: "radius/\(server.name)/\(serverIPsecFile)",
                text: try templates.template(serverIPsecTemplate).render(context), isPrivate: true),
            OutputFile(
                path: "radius/\(server.name)/\(serverFirewallFile)",
                text: try templates.template(serverFirewallTemplate).render(context)),
        ]
    }
}
