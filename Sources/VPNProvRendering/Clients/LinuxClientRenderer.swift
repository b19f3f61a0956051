import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `clients/<user>/linux/swanctl/`: a strongSwan (swanctl) client configuration with one connection
/// per node and service. A Linux user copies it to /etc/swanctl and runs
/// `swanctl --load-all; swanctl --initiate --child <name>`.
package enum LinuxClientRenderer {
    package static let swanctlTemplate = "client/swanctl.conf.tmpl"
    package static let secretsTemplate = "client/secrets.conf.tmpl"
    static let caFileName = "ca.pem"

    package static func render(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials,
        templates: TemplateSet
    ) throws -> [OutputFile] {
        let mine = connections.filter { $0.user == user && $0.devices.contains(.linux) }
        if mine.isEmpty { return [] }
        let base = ClientRenderer.folder(user: user) + "/linux/swanctl/"
        let contexts = try context(user: user, connections: mine, deployment: deployment, materials: materials)
        var files = [
            OutputFile(
                path: base + "swanctl.conf",
                contents: try templates.template(swanctlTemplate).renderBytes(contexts.swanctl)),
            OutputFile(
                path: base + "conf.d/secrets.conf",
                contents: try templates.template(secretsTemplate).renderBytes(contexts.secrets), isPrivate: true),
        ]
        files += try pemCredentials(
            user: user, connections: mine, materials: materials, ca: base + "x509ca/\(caFileName)",
            certificate: base + "x509/\(user).pem", key: base + "private/\(user).key")
        return files
    }

    /// The PEM files strongSwan-based clients read beside their configuration: the CA certificate when a
    /// server proves itself with a certificate of the deployment CA, the user's certificate and key (0600) when the user logs
    /// in with one. Shared with the NetworkManager renderer.
    static func pemCredentials(
        user: String, connections: [ClientConnection], materials: Materials, ca: String, certificate: String,
        key: String
    ) throws -> [OutputFile] {
        var files: [OutputFile] = []
        // Not for ACME nodes, whose certificates chain to a public root (docs/acme.md).
        if connections.contains(where: { $0.credentials.contains(.caCertificate) }) {
            files.append(OutputFile(path: ca, text: materials.caCertificatePEM))
        }
        if connections.contains(where: { $0.credentials.contains(.clientCertificate) }) {
            guard let cert = materials.users[user]?.certificatePEM,
                let privateKey = materials.users[user]?.privateKeyPEM
            else {
                throw ClientRenderError("user '\(user)': no client certificate and key")
            }
            files.append(OutputFile(path: certificate, text: cert))
            files.append(OutputFile(path: key, text: privateKey, isPrivate: true))
        }
        return files
    }

    /// The CAs a connection's server must chain to: the deployment CA in the client's `x509ca/`, or for an ACME
    /// node the ACME CA's roots where the client's system keeps them (`acme.roots`; charon reads no system
    /// trust store); "" when the server authenticates with a PSK.
    static func cacerts(_ c: ClientConnection, deployment: DeploymentFacts) -> String {
        guard c.serverAuth == .pubkey else { return "" }
        if c.credentials.contains(.caCertificate) { return caFileName }
        return deployment.acmeRoots.joined(separator: ",")
    }

    /// `0s<base64>`: no character of the secret can break the syntax or be read as hex/base64 prefix.
    static func encodedSecret(_ secret: String) -> String { "0s" + Data(secret.utf8).base64EncodedString() }

    /// The contexts of `client/swanctl.conf.tmpl` and `client/secrets.conf.tmpl`.
    package static func context(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials
    ) throws -> (swanctl: TemplateValue, secrets: TemplateValue) {
        let conns = connections.map { connectionContext($0, user: user, deployment: deployment) }
        let (eap, ike, ppk) = try secretsContext(user: user, connections: connections, materials: materials)
        let common: TemplateObject = [
            "user": .string(user),
            "deployment": .string(deployment.name),
        ]
        var swanctl = common
        swanctl["connections"] = .list(conns)
        // Only Aggressive Mode with a PSK needs the strongswan.conf setting; hybrid signs instead.
        swanctl["aggressive_mode"] = .bool(connections.contains { $0.aggressive && $0.serverAuth == .psk })
        var secrets = common
        secrets["eap"] = .list(eap)
        secrets["ike"] = .list(ike)
        secrets["ppk"] = .list(ppk)
        return (.object(swanctl), .object(secrets))
    }

    /// One connection of `client/swanctl.conf.tmpl`.
    static func connectionContext(_ c: ClientConnection, user: String, deployment: DeploymentFacts) -> TemplateValue {
        var rounds: [TemplateValue] = []
        for (index, round) in c.localAuth.enumerated() {
            // Every key is always present (the engine refuses unknown names); "" = not written.
            // The IKE identity belongs to the first round.
            rounds.append(
                .object([
                    "section": .identifier(
                        c.localAuth.count == 1
                            ? "local" : "local-\(round.method == .xauth ? "xauth" : round.method.rawValue)"),
                    "auth": .string(round.method.rawValue),
                    "id": .string(index == 0 ? c.localID?.swanctlValue ?? "" : ""),
                    "eap_id": .string(round.eapID ?? ""),
                    "xauth_id": .string(round.xauthID ?? ""),
                    "certs": .string(round.method == .pubkey ? "\(user).pem" : ""),
                ]))
        }
        let remote: TemplateObject = [
            "auth": .string(c.serverAuth.rawValue),
            "id": .string(c.remoteID.swanctlValue),
            "cacerts": .string(cacerts(c, deployment: deployment)),
        ]
        let offer = c.offers[.linux] ?? ProposalOffer(ike: [], esp: [])
        return .object([
            "name": .identifier(TextCheck.swanctlSectionName(c.name)),
            "node": .string(c.node),
            "service": .string(c.service.rawValue),
            "version": .int(c.ikeVersion),
            "aggressive": .bool(c.aggressive),
            "remote_addrs": .string(c.remoteAddress),
            "vips": .string(c.wantsIPv6 && c.ikeVersion == 2 ? "0.0.0.0, ::" : "0.0.0.0"),
            "proposals": .string(offer.ike.joined(separator: ", ")),
            "esp_proposals": .string(offer.esp.joined(separator: ", ")),
            "remote_ts": .string(c.wantsIPv6 && c.ikeVersion == 2 ? "0.0.0.0/0, ::/0" : "0.0.0.0/0"),
            "local_rounds": .list(rounds),
            "remote": .object(remote),
            "ppk_id": .string(c.ppkID ?? ""),
            "ppk_required": .bool(c.ppkRequired),
        ])
    }

    /// The secrets of `client/secrets.conf.tmpl`: EAP/XAuth, the nodes' PSKs, the post-quantum preshared key.
    static func secretsContext(user: String, connections: [ClientConnection], materials: Materials) throws -> (
        eap: [TemplateValue], ike: [TemplateValue], ppk: [TemplateValue]
    ) {
        // Secrets: the user's password once (EAP and XAuth share `eap` secrets), one PSK per node.
        var eap: [TemplateValue] = []
        let passwordRounds = connections.flatMap(\.localAuth).compactMap { $0.eapID ?? $0.xauthID }
        if let first = passwordRounds.first {
            guard let password = materials.users[user]?.password, !password.isEmpty else {
                throw ClientRenderError("user '\(user)': no password")
            }
            var ids: [String] = []
            for id in [first] + passwordRounds where !ids.contains(id) { ids.append(id) }
            eap.append(
                .object([
                    "section": .identifier("eap-1"),
                    "ids": .list(
                        ids.enumerated().map {
                            .object(["key": .identifier("id-\($0.offset + 1)"), "id": .string($0.element)])
                        }),
                    "secret": .string(encodedSecret(password)),
                ]))
        }
        var ike: [TemplateValue] = []
        var pskNodes: [String] = []
        for c in connections where c.credentials.contains(.psk) && !pskNodes.contains(c.node) {
            pskNodes.append(c.node)
            guard let psk = materials.nodes[c.node]?.psk, !psk.isEmpty else {
                throw ClientRenderError("node '\(c.node)': no pre-shared key")
            }
            ike.append(
                .object([
                    "section": .identifier("ike-\(pskNodes.count)"),
                    "node": .string(c.node),
                    "id": .string(c.remoteID.swanctlValue),
                    "secret": .string(encodedSecret(psk)),
                ]))
        }
        // The user's post-quantum preshared key, once, under the PPK_ID every connection that asks for it names.
        var ppk: [TemplateValue] = []
        if let id = connections.lazy.compactMap(\.ppkID).first {
            guard let secret = materials.users[user]?.ppk else {
                throw ClientRenderError("user '\(user)': no post-quantum preshared key")
            }
            ppk.append(
                .object(["section": .identifier("ppk-1"), "id": .string(id), "secret": .string(encodedSecret(secret))]))
        }
        return (eap, ike, ppk)
    }
}

// MARK: - ClientKindRenderer

extension LinuxClientRenderer: ClientKindRenderer {
    package static func files(_ input: ClientRenderInput) throws -> [OutputFile] {
        try render(
            user: input.user, connections: input.connections, deployment: input.deployment,
            materials: input.materials, templates: input.templates)
    }

    /// The README's swanctl part: where the directory goes and the child names to initiate.
    package static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String] {
        let connections = input.connections
        guard names.contains(where: { $0.hasPrefix("linux/") }) else { return [] }
        var lines: [String] = []
        lines += [
            "Linux with strongSwan (swanctl): linux/swanctl/",
            "  Copy the directory's contents to /etc/swanctl, keep conf.d/secrets.conf and private/",
            "  readable by root only, run `swanctl --load-all`, then",
            "  `swanctl --initiate --child <name>` with a child name from swanctl.conf:",
        ]
        for c in connections where c.devices.contains(.linux) { lines.append("    \(c.name)") }
        let quantumSafe = connections.filter {
            $0.devices.contains(.linux)
                && ($0.ppkID != nil || $0.offers[.linux]?.ike.contains { $0.containsUTF8("-ke1_") } == true)
        }
        if !quantumSafe.isEmpty {
            lines += [
                "  " + quantumSafe.map(\.name).joined(separator: ", ") + " are quantum-safe: ML-KEM needs",
                "  strongSwan 6.1 or later (`swanctl --version`), a post-quantum preshared key 5.7 or later.",
            ]
        }
        if connections.contains(where: { $0.devices.contains(.linux) && $0.aggressive }) {
            lines += [
                "  IKEv1 with a group name uses Aggressive Mode, which strongSwan refuses unless",
                "  strongswan.conf sets charon { i_dont_care_about_security_and_use_aggressive_mode_psk = yes }.",
            ]
        }
        lines.append("")
        return lines
    }
}
