import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `clients/<user>/networkmanager/`: NetworkManager connections for Linux desktops (docs/clients.md,
/// "NetworkManager"). One keyfile (`.nmconnection`, the format of /etc/NetworkManager/system-connections/)
/// per node and service the strongSwan plugin can express (ikev2-eap, ikev2-cert, ikev2-psk), for the VPN
/// service `org.freedesktop.NetworkManager.strongswan`, whose backend `charon-nm` reads the `[vpn]` keys
/// (src/charon-nm/nm/nm_service.c, `connect_`). Beside them the CA certificate and, for certificate
/// logins, the user's certificate and key, which the README installs into `credentialDirectory`: the
/// keyfiles name them by those absolute paths, where charon-nm (running as root) reads them.
package enum NetworkManagerClientRenderer {
    /// The plugin's D-Bus service name (`[vpn] service-type`).
    static let serviceType = "org.freedesktop.NetworkManager.strongswan"
    /// The folder of the user's files below `clients/<user>/`.
    package static let folder = "networkmanager"
    static let caFileName = "ca.pem"

    /// Where the README puts the CA certificate, the user's certificate and key on the desktop. Below
    /// /etc/NetworkManager, which every NetworkManager installation has and only root writes to.
    static func credentialDirectory(deployment: String, user: String) -> String {
        "/etc/NetworkManager/vpnprov/\(deployment)/\(user)"
    }

    /// The keyfile's name: the deployment in front, since every system connection shares one folder.
    package static func fileName(deployment: String, connection c: ClientConnection) -> String {
        "\(deployment)-\(c.name).nmconnection"
    }

    /// The connection's name (`nmcli connection up <id>`): `<deployment> <node> <service>`.
    static func connectionID(deployment: String, connection c: ClientConnection) -> String {
        "\(deployment) \(c.node) \(c.service.rawValue)"
    }

    package static func render(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials
    ) throws -> [OutputFile] {
        let mine = connections.filter { $0.user == user && $0.devices.contains(.networkmanager) }
        if mine.isEmpty { return [] }
        let base = ClientRenderer.folder(user: user) + "/\(folder)/"
        let namespace = NameBasedUUID.namespace(forDeployment: deployment.name)
        var files: [OutputFile] = []
        for c in mine {
            let text = try keyfile(c, user: user, deployment: deployment, materials: materials, namespace: namespace)
            // Private: EAP and PSK keyfiles hold the secret, and NetworkManager loads only keyfiles that
            // only root can read.
            files.append(
                OutputFile(
                    path: base + fileName(deployment: deployment.name, connection: c), text: text, isPrivate: true))
        }
        files += try LinuxClientRenderer.pemCredentials(
            user: user, connections: mine, materials: materials, ca: base + caFileName,
            certificate: base + "\(user).pem", key: base + "\(user).key")
        return files
    }

    /// The keyfile of one connection.
    static func keyfile(
        _ c: ClientConnection, user: String, deployment: DeploymentFacts, materials: Materials, namespace: NameBasedUUID
    ) throws -> String {
        let dir = credentialDirectory(deployment: deployment.name, user: user)
        let offer = c.offers[.networkmanager] ?? ProposalOffer(ike: [], esp: [])
        var vpn: [(String, String)] = [("service-type", serviceType), ("address", c.remoteAddress)]
        // Without `certificate` charon-nm trusts the desktop's CA directory (/etc/ssl/certs): ACME nodes.
        if c.credentials.contains(.caCertificate) { vpn.append(("certificate", "\(dir)/\(caFileName)")) }
        // Without remote-identity charon-nm would expect the dialled address (loosely) as identity.
        vpn.append(("remote-identity", c.remoteID.swanctlValue))
        var secret: String?
        switch c.service {
        case .ikev2EAP:
            guard let password = materials.users[user]?.password, !password.isEmpty else {
                throw ClientRenderError("user '\(user)': no password for \(c.service.rawValue)")
            }
            vpn.append(("method", "eap"))
            vpn.append(("user", c.localAuth.first { $0.method == .eapMSCHAPv2 }?.eapID ?? user))
            secret = password
        case .ikev2Cert:
            // "cert" with cert-source "file" is what the plugin's own dialog writes for a certificate and key file.
            vpn.append(("method", "cert"))
            vpn.append(("cert-source", "file"))
            vpn.append(("usercert", "\(dir)/\(user).pem"))
            vpn.append(("userkey", "\(dir)/\(user).key"))
        case .ikev2PSK:
            guard let psk = materials.nodes[c.node]?.psk, !psk.isEmpty else {
                throw ClientRenderError("node '\(c.node)': no pre-shared key")
            }
            vpn.append(("method", "psk"))
            secret = psk
        // Not among `NetworkManagerClientKind.services`: the plan gives NetworkManager no such connection.
        case .ikev2PSKEAP, .ipsecXauthPSK, .ipsecXauthHybrid:
            throw ClientRenderError("\(c.service.rawValue) cannot be expressed for NetworkManager")
        }
        if let id = c.localID { vpn.append(("local-identity", id.swanctlValue)) }
        vpn += [
            // Asks for an IPv4 and an IPv6 virtual IP (charon-nm always asks for both); a node without an
            // IPv6 pool assigns only the IPv4 one.
            ("virtual", "yes"),
            ("encap", "no"),
            ("ipcomp", "no"),
            ("proposal", "yes"),
            ("ike", offer.ike.joined(separator: ";")),
            ("esp", offer.esp.joined(separator: ";")),
            // 0: the secret is stored here (by NetworkManager, for every user of the machine); 4: no
            // secret, so no dialog asks for a private key password the unencrypted key does not have.
            ("password-flags", secret == nil ? "4" : "0"),
        ]
        let uuid = NameBasedUUID(namespace: namespace, name: "networkmanager/\(c.user)/\(c.node)/\(c.service.rawValue)")
        var lines = [
            "# NetworkManager connection (strongSwan plugin) of user \(user) to node \(c.node), \(c.service.rawValue);",
            "# generated by vpnprov (\(deployment.name)). Install it as the README beside this folder says.",
            "[connection]",
            "id=" + escaped(connectionID(deployment: deployment.name, connection: c)),
            "uuid=" + uuid.description.lowercased(),
            "type=vpn",
            "autoconnect=false",
            "",
            "[vpn]",
        ]
        lines += vpn.map { "\($0.0)=\(escaped($0.1))" }
        if let secret {
            lines += ["", "[vpn-secrets]", "password=" + escaped(secret)]
        }
        lines += ["", "[ipv4]", "method=auto", "", "[ipv6]", "method=auto"]
        if !c.wantsIPv6 {
            // The node carries no IPv6: a blackhole default route with metric 1 while the VPN is up wins over
            // every other IPv6 default route, so IPv6 cannot leave outside the tunnel (the attached
            // network's own prefix stays reachable). NetworkManager removes it with the connection.
            lines += ["route1=::/0,::,1", "route1_options=type=blackhole"]
        }
        lines.append("")
        return lines.joined(separator: "\n")
    }

    /// A GKeyFile string value (GLib's `g_key_file_set_string` escapes): backslash, newline, tab and
    /// carriage return become `\\`, `\n`, `\t`, `\r`; a space is written `\s` where GLib would strip it
    /// (first and last character).
    static func escaped(_ value: String) -> String {
        var out = ""
        let scalars = Array(value.unicodeScalars)
        for (i, s) in scalars.enumerated() {
            switch s {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case " " where i == 0 || i == scalars.count - 1: out += "\\s"
            default: out.unicodeScalars.append(s)
            }
        }
        return out
    }
}

// MARK: - ClientKindRenderer

extension NetworkManagerClientRenderer: ClientKindRenderer {
    package static func files(_ input: ClientRenderInput) throws -> [OutputFile] {
        try render(
            user: input.user, connections: input.connections, deployment: input.deployment,
            materials: input.materials)
    }

    /// The README's NetworkManager part: the commands that install the folder as root (credentials
    /// where the keyfiles name them, keyfiles 0600 into system-connections, which is what NetworkManager
    /// requires of a keyfile) and load each connection.
    package static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String] {
        let (user, connections, deployment) = (input.user, input.connections, input.deployment)
        let nm = NetworkManagerClientRenderer.self
        let folder = nm.folder
        let keyfiles = names.filter { $0.hasPrefix(folder + "/") && $0.hasSuffix(".nmconnection") }.sorted()
        if keyfiles.isEmpty { return [] }
        let target = nm.credentialDirectory(deployment: deployment.name, user: user)
        let system = "/etc/NetworkManager/system-connections"
        var lines = [
            "Linux desktop with NetworkManager: \(folder)/",
            "  Needs NetworkManager's strongSwan plugin (Debian/Ubuntu: apt install network-manager-strongswan).",
            "  As root, in this folder:",
            "    install -d -m 0755 -o root -g root \(target)",
        ]
        let public_ = ["ca.pem", "\(user).pem"].map { "\(folder)/\($0)" }.filter(names.contains)
        if !public_.isEmpty {
            lines.append("    install -m 0644 -o root -g root \(public_.joined(separator: " ")) \(target)/")
        }
        if names.contains("\(folder)/\(user).key") {
            lines.append("    install -m 0600 -o root -g root \(folder)/\(user).key \(target)/")
        }
        lines.append("    install -m 0600 -o root -g root \(folder)/*.nmconnection \(system)/")
        for file in keyfiles { lines.append("    nmcli connection load \(system)/\(file.dropFirst(folder.count + 1))") }
        lines += [
            "  Then connect from the network menu, or with `nmcli connection up id \"<name>\"`, one per server and service:"
        ]
        for c in connections where c.devices.contains(.networkmanager) {
            lines.append("    \(nm.connectionID(deployment: deployment.name, connection: c))")
        }
        lines += [
            "  Nothing to type: the password or key is in the connection file, which only root can read.",
            "",
        ]
        return lines
    }
}
