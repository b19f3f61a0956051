import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// Writes servers/<node>/ for every node, from the node's parts of the deployment plan: swanctl.conf (its
// NodePlan), secrets.conf, the certificates and key from Materials, strongswan.d/vpnprov.conf when the
// connections need daemon settings, its RADIUS files, its network files and a README. Text files come
// from the templates, which escape every value.

/// Why a node's server files could not be produced. Never contains a secret value.
package struct ServerRenderError: Error, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        /// Materials has no certificate/key for the node.
        case missingNodeMaterials(node: String)
        /// The node offers a PSK service but Materials has no PSK for it.
        case missingPSK(node: String)
        /// A user allowed on the node has a password in the inventory but none in Materials.
        case missingPassword(user: String, node: String)
        /// A user allowed on a node with `quantum_safe.ppk` has no PPK in Materials.
        case missingPPK(user: String, node: String)
    }
    package var kind: Kind
    package var description: String {
        switch kind {
        case .missingNodeMaterials(let node): return "node '\(node)': no certificate or key in the PKI materials"
        case .missingPSK(let node): return "node '\(node)': offers a PSK service but no PSK was resolved"
        case .missingPassword(let user, let node):
            return "user '\(user)': no password resolved (needed on node '\(node)')"
        case .missingPPK(let user, let node):
            return "user '\(user)': no PPK in the state (needed on node '\(node)')"
        }
    }
}

package enum ServerRenderer: TreeRenderer {
    package static let swanctlTemplate = "server/swanctl.conf.tmpl"
    package static let secretsTemplate = "server/secrets.conf.tmpl"
    static let daemonTemplate = "server/strongswan-vpnprov.conf.tmpl"
    static let readmeTemplate = "server/README.tmpl"
    package static let nftablesTemplate = "server/nftables.nft.tmpl"
    static let sysctlTemplate = "server/sysctl.conf.tmpl"
    /// Where a node's network files go under `servers/<node>/` (and, on the node, under /etc).
    static let nftablesFile = "network/vpnprov.nft"
    static let sysctlFile = "network/60-vpnprov.conf"

    /// What the renderer reads of the plan: every node's parts, and whether the CRL is published.
    package struct Part: Sendable {
        package var nodes: [NodeParts]
        package var publishesCRL: Bool
    }

    package static func part(of plan: DeploymentPlan) -> Part {
        Part(nodes: plan.nodes, publishesCRL: plan.deployment.crlURL != nil)
    }

    /// Every node's files, handed to `each` a node at a time (nodes in inventory order, each node's files
    /// sorted by path), then the published CRL: a fleet's node files, which each hold every user's secrets,
    /// need not all be in memory at once.
    package static func render(_ part: Part, _ shared: RenderShared, each: ([OutputFile]) throws -> Void) throws {
        for node in part.nodes { try each(render(node: node, shared)) }
        if part.publishesCRL { try each([publishedCRL(shared.materials)]) }
    }

    /// Where the published CRL is written: the file to serve at `pki.crl_url`.
    package static let publishedCRLPath = "crl/crl.der"

    /// The current CA's CRL in DER, as devices expect it at a certificate's CRL distribution point
    /// (RFC 5280 4.2.1.13). During a CA rotation the nodes' certificates come from the new CA, so its
    /// CRL is the one they point to.
    static func publishedCRL(_ materials: Materials) throws -> OutputFile {
        let crl = try CertificateRevocationList(pem: materials.crlPEM)
        return OutputFile(path: publishedCRLPath, contents: crl.der)
    }

    /// One node's files (paths relative to the output directory: `servers/<node>/...`).
    package static func render(node parts: NodeParts, _ shared: RenderShared) throws -> [OutputFile] {
        let (plan, materials, templates) = (parts.server, shared.materials, shared.templates)
        guard let nodeMaterials = materials.nodes[plan.node] else {
            throw ServerRenderError(kind: .missingNodeMaterials(node: plan.node))
        }
        let dir = "servers/\(plan.node)"
        var files: [OutputFile] = []
        let swanctl = try templates.template(swanctlTemplate).render(swanctlContext(plan))
        files.append(OutputFile(path: "\(dir)/swanctl/swanctl.conf", text: swanctl))
        let secrets = try templates.template(secretsTemplate).render(
            secretsContext(plan, materials: materials, nodeMaterials: nodeMaterials))
        files.append(OutputFile(path: "\(dir)/swanctl/conf.d/secrets.conf", text: secrets, isPrivate: true))
        files += certificateFiles(parts.files, dir: dir, materials: materials, nodeMaterials: nodeMaterials)
        if plan.needsAggressiveModePSK {
            let conf = try templates.template(daemonTemplate).render([
                "node": .string(plan.node),
                "aggressive_mode_psk": .bool(plan.needsAggressiveModePSK),
            ])
            files.append(OutputFile(path: "\(dir)/strongswan.d/vpnprov.conf", text: conf))
        }
        if let radius = parts.radius {
            files += try RadiusRenderer.nodeFiles(radius, nodeMaterials: nodeMaterials, templates: templates)
        }
        let network = networkContext(plan)
        files.append(
            OutputFile(path: "\(dir)/\(nftablesFile)", text: try templates.template(nftablesTemplate).render(network)))
        files.append(
            OutputFile(path: "\(dir)/\(sysctlFile)", text: try templates.template(sysctlTemplate).render(network)))
        files.append(
            OutputFile(
                path: "\(dir)/README",
                text: try templates.template(readmeTemplate).render(readmeContext(parts, materials: materials))))
        return files.sorted { $0.path.precedesByUTF8($1.path) }
    }

    /// The node's trust roots, CRLs and (from the CA) its own certificate and key.
    ///
    /// During a CA rotation the previous CA stays the trust root (ca.pem, crl.pem) and the new CA
    /// comes as its cross certificate (ca-next.pem, crl-next.pem): strongSwan then sends the cross
    /// certificate with the node's own, and accepts client certificates of both CAs. The new
    /// CA's self-signed certificate must not be here as well: charon would pick either as the
    /// issuer of the node certificate and might stop sending the cross certificate.
    static func certificateFiles(
        _ node: ServerFilesPlan, dir: String, materials: Materials, nodeMaterials: NodeMaterials
    ) -> [OutputFile] {
        let rotation = materials.rotation
        var files = [
            OutputFile(
                path: "\(dir)/swanctl/x509ca/\(ServerPlan.caFileName)",
                text: rotation?.previousCACertificatePEM ?? materials.caCertificatePEM)
        ]
        if let rotation {
            files.append(
                OutputFile(
                    path: "\(dir)/swanctl/x509ca/\(ServerPlan.nextCAFileName)", text: rotation.crossCertificatePEM))
            files.append(
                OutputFile(path: "\(dir)/swanctl/x509crl/\(ServerPlan.nextCRLFileName)", text: materials.crlPEM))
        }
        // An ACME node's certificate and key are made on the node by the rollout; the key never leaves it.
        switch node.certificate {
        case .ca:
            files.append(OutputFile(path: "\(dir)/swanctl/x509/\(node.node).pem", text: nodeMaterials.certificatePEM))
            files.append(
                OutputFile(
                    path: "\(dir)/swanctl/private/\(node.node).key", text: nodeMaterials.privateKeyPEM,
                    isPrivate: true))
        case .acme:
            if let bundle = materials.acmeCABundlePEM {
                files.append(OutputFile(path: "\(dir)/acme/ca-bundle.pem", text: bundle))
            }
        }
        files.append(
            OutputFile(
                path: "\(dir)/swanctl/x509crl/\(ServerPlan.crlFileName)",
                text: rotation?.previousCRLPEM ?? materials.crlPEM))
        return files
    }

    /// The context of server/README.tmpl.
    static func readmeContext(_ parts: NodeParts, materials: Materials) -> TemplateValue {
        let node = parts.files
        let acme = node.certificate == .acme
        return [
            "node": .string(node.node),
            "address": .string(node.address),
            "services": .string(node.services.map(\.rawValue).joined(separator: ", ")),
            "connections": .list(
                parts.server.connections.map { ["name": .string($0.name), "summary": .string($0.summary)] }),
            "daemon_settings": .bool(parts.server.needsAggressiveModePSK),
            "ikev1": .bool(node.ikev1),
            // The file table's rows that hold the node name, padded to the table's description column.
            "certificate_column": .string(readmeColumn("swanctl/x509/\(node.node).pem")),
            "key_column": .string(readmeColumn("swanctl/private/\(node.node).key")),
            "acme": .bool(acme),
            "acme_bundle": .bool(acme && materials.acmeCABundlePEM != nil),
            "acme_directory": .string(node.acmeDirectory),
            "acme_domain": .string(node.acmeDomain),
        ]
    }

    /// Column of the descriptions in the README's file table (after "  ").
    static let readmeDescriptionColumn = 30

    /// `path` padded to the README's description column (two spaces at least, for long node names).
    static func readmeColumn(_ path: String) -> String {
        path + String(repeating: " ", count: max(2, readmeDescriptionColumn - path.count))
    }

    // MARK: - Contexts

    /// One `network` per entry: an nftables set's elements, one to a line.
    static func networks(_ list: [CIDR]) -> TemplateValue {
        .list(list.map { ["network": .string($0.description)] })
    }

    /// The context of server/nftables.nft.tmpl and server/sysctl.conf.tmpl.
    package static func networkContext(_ plan: NodePlan) -> TemplateValue {
        let n = plan.network
        // `network.mss` is the IPv4 value; IPv6's header is 20 bytes longer.
        var mssFixed = ""
        var mss6Fixed = ""
        if case .fixed(let value) = n.mss {
            mssFixed = String(value)
            mss6Fixed = String(value - 20)
        }
        return [
            "node": .string(plan.node),
            "pool4": .string(n.pool4?.description ?? ""),
            "pool6": .string(n.pool6?.description ?? ""),
            "pool6_nat": .bool(n.ipv6Mode == .nat),
            "uplink": .string(n.uplink ?? ""),
            "mss_fixed": .string(mssFixed),
            "mss6_fixed": .string(mss6Fixed),
            "mss_route": .bool(n.mss == .routeMTU),
            "isolate": .bool(n.isolateClients),
            "xfrm": .bool(n.ipsec == .xfrm),
            "libipsec": .bool(n.ipsec == .libipsec),
            "dae": .bool(n.daePort != nil),
            "dae_port": .string(n.daePort.map(String.init) ?? ""),
            "radius_peers": .list(
                n.radiusPeers.map {
                    [
                        "family": .string($0.address.isIPv6 ? "ip6" : "ip"),
                        "address": .string($0.address.description),
                        "auth_port": .int($0.authPort), "acct_port": .int($0.acctPort),
                        "dae_port": .string(n.daePort.map(String.init) ?? ""),
                    ]
                }),
            "dae_from": .list(
                n.disconnectFrom.map {
                    ["family": .string($0.isIPv6 ? "ip6" : "ip"), "network": .string($0.description)]
                }),
            "exporter": .bool(n.exporterPort != nil),
            "exporter_port": .string(n.exporterPort.map(String.init) ?? ""),
            "exporter_from": .list(
                n.exporterFrom.map {
                    ["family": .string($0.isIPv6 ? "ip6" : "ip"), "network": .string($0.description)]
                }),
            // Where clients may go (docs/security.md §14): never, the DNS the node pushes, what the
            // inventory allows of the private and internal networks, which are refused otherwise.
            "never4": networks(ClientReach.never4.map(\.cidr)),
            "never6": networks(ClientReach.never6.map(\.cidr)),
            "internal4": networks(ClientReach.internal4.map(\.cidr)),
            "internal6": networks(ClientReach.internal6.map(\.cidr)),
            "allow4": networks(n.allowPrivate4),
            "allow6": networks(n.allowPrivate6),
            "has_allow4": .bool(!n.allowPrivate4.isEmpty),
            "has_allow6": .bool(!n.allowPrivate6.isEmpty),
            "dns4": .list(n.dns4.map { ["address": .string($0)] }),
            "dns6": .list(n.dns6.map { ["address": .string($0)] }),
            "has_dns4": .bool(!n.dns4.isEmpty),
            "has_dns6": .bool(!n.dns6.isEmpty),
            "radius4": .list(n.radiusServers4.map { ["address": .string($0)] }),
            "radius6": .list(n.radiusServers6.map { ["address": .string($0)] }),
        ]
    }

    /// The context of server/swanctl.conf.tmpl for a plan (public so tests and custom templates can
    /// see exactly what a template receives).
    static func swanctlContext(_ plan: NodePlan) -> TemplateValue {
        func yesNo(_ b: Bool) -> TemplateValue { .string(b ? "yes" : "no") }
        func seconds(_ n: Int) -> TemplateValue { .string("\(n)s") }
        func list(_ items: [String]) -> TemplateValue { .string(items.joined(separator: ", ")) }

        let connections: [TemplateValue] = plan.connections.map { c in
            var rounds: [TemplateValue] = [
                [
                    "section": .identifier("local"),
                    "auth": .string(c.local.auth.rawValue),
                    "id": .string(c.local.id.swanctlValue),
                    "eap_id": "",
                    "certs": list(c.local.certificates),
                    "cacerts": "",
                    "revocation": "",
                    "cert_policy": "",
                    "groups": "",
                ]
            ]
            for r in c.remote {
                rounds.append([
                    "section": .identifier(r.section),
                    "auth": .string(r.auth.rawValue),
                    // An XAuth round takes no IKE identity: strongSwan checks `id` of every round against the
                    // identity that round authenticated, and an XAuth round authenticates none, so `id = %any`
                    // there fails every IKEv1 client ("constraint check failed: identity '%any' required").
                    "id": r.auth.isXAuth ? "" : .string(r.id.swanctlValue),
                    "eap_id": .string(r.eapID?.swanctlValue ?? ""),
                    "certs": "",
                    "cacerts": list(r.caCertificates),
                    "revocation": .string(r.revocation ?? ""),
                    "cert_policy": list(r.certPolicies),
                    "groups": list(r.groups),
                ])
            }
            return [
                "name": .identifier(c.name),
                "summary": .string(c.summary),
                "version": .int(c.version),
                "ikev1": .bool(c.version == 1),
                "aggressive": yesNo(c.aggressive ?? false),
                "proposals": list(c.ikeProposals),
                "pools": list(c.pools),
                "send_cert": .string(c.sendCert.rawValue),
                "send_certreq": yesNo(c.sendCertreq),
                "unique": .string(c.unique),
                "fragmentation": .string(c.fragmentation),
                "dpd_delay": seconds(c.dpdDelay),
                "dpd_timeout": c.dpdTimeout.map(seconds) ?? "",
                "rekey_time": seconds(c.rekeyTime),
                "ppk_required": .bool(c.ppkRequired),
                "rounds": .list(rounds),
                "child": [
                    "name": .identifier(c.child.name),
                    "local_ts": list(c.child.localTS),
                    "esp_proposals": list(c.child.espProposals),
                    "rekey_time": seconds(c.child.rekeyTime),
                    "dpd_action": .string(c.child.dpdAction),
                ],
            ]
        }
        let pools: [TemplateValue] = plan.pools.map { p in
            ["name": .identifier(p.name), "addrs": .string(p.addrs.description), "dns": list(p.dns)]
        }
        return [
            "node": .string(plan.node),
            "connections": .list(connections),
            "has_pools": .bool(!pools.isEmpty),
            "pool_sections": .list(pools),
        ]
    }

    static func secretsContext(_ plan: NodePlan, materials: Materials, nodeMaterials: NodeMaterials) throws
        -> TemplateValue
    {
        var psk: [TemplateValue] = []
        if !plan.pskIdentities.isEmpty {
            guard let secret = nodeMaterials.psk else { throw ServerRenderError(kind: .missingPSK(node: plan.node)) }
            let ids: [TemplateValue] = plan.pskIdentities.enumerated().map { i, id in
                ["key": .identifier("id-\(i + 1)"), "id": .string(id.swanctlValue)]
            }
            psk.append(["section": .identifier("ike-psk"), "ids": .list(ids), "secret": .string(base64Secret(secret))])
        }
        var users: [TemplateValue] = []
        for (i, name) in plan.passwordUsers.enumerated() {
            guard let password = materials.users[name]?.password else {
                throw ServerRenderError(kind: .missingPassword(user: name, node: plan.node))
            }
            users.append([
                "section": .identifier(numbered("eap-u", i + 1)),
                "name": .string(name),
                "id": .string(name),
                "secret": .string(base64Secret(password)),
            ])
        }
        var ppks: [TemplateValue] = []
        for (i, name) in plan.ppkUsers.enumerated() {
            guard let ppk = materials.users[name]?.ppk else {
                throw ServerRenderError(kind: .missingPPK(user: name, node: plan.node))
            }
            ppks.append([
                "section": .identifier(numbered("ppk-u", i + 1)),
                "name": .string(name),
                "id": .string(QuantumSafe.ppkID(user: name)),
                "secret": .string(base64Secret(ppk)),
            ])
        }
        return ["node": .string(plan.node), "psk": .list(psk), "users": .list(users), "ppks": .list(ppks)]
    }

    /// `prefix` and `number` with at least four digits ("eap-u0007"), as `%04d` writes it, without
    /// Foundation's formatter (a call per user and node).
    static func numbered(_ prefix: String, _ number: Int) -> String {
        let digits = String(number)
        return prefix + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `0s` + base64 of the UTF-8 bytes: strongSwan decodes it to exactly those bytes, whatever they are.
    package static func base64Secret(_ secret: String) -> String {
        "0s" + Data(secret.utf8).base64EncodedString()
    }
}
