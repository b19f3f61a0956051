import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `clients/<user>/<user>-windows.ps1`: a PowerShell script that sets up Windows' built-in IKEv2
/// client (docs/windows.md): the CA into the machine's Trusted Root store, the user's p12 into
/// LocalMachine\My for certificate connections, and per node and service an `Add-VpnConnection`
/// (EAP-MSCHAPv2 or machine certificate) with `Set-VpnConnectionIPsecConfiguration` pinning the one
/// IKE/ESP proposal the plan chose. Every value reaches the script as a single-quoted literal
/// written by the template engine (TemplateSyntax.powershell).
package enum WindowsClientRenderer {
    package static let template = "client/windows.ps1.tmpl"

    package static func fileName(user: String) -> String { "\(user)-windows.ps1" }

    /// The file beside the script with the password Windows asks for at the first connect of a
    /// password (EAP) connection (0600). The script leaves it out (docs/windows.md).
    package static func passwordFile(user: String) -> String { "\(user)-windows-password.txt" }

    package static func render(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials,
        templates: TemplateSet
    ) throws -> [OutputFile] {
        let mine = connections.filter { $0.user == user && $0.devices.contains(.windows) && $0.windows != nil }
        if mine.isEmpty { return [] }
        let context = try context(user: user, connections: mine, deployment: deployment, materials: materials)
        let script = try templates.template(template).renderBytes(context)
        // Private: with a certificate connection it carries the p12 and its password.
        var files = [
            OutputFile(
                path: ClientRenderer.folder(user: user) + "/" + fileName(user: user), contents: script,
                isPrivate: true)
        ]
        if mine.contains(where: { $0.windows?.authenticationMethod == .eap }) {
            guard let password = materials.users[user]?.password, !password.isEmpty else {
                throw ClientRenderError("user '\(user)': no password for the Windows password connections")
            }
            files.append(
                ClientRenderer.secretFile(
                    user: user, name: passwordFile(user: user),
                    heading: [
                        "VPN PASSWORD of \(user) for Windows (the connections \(fileName(user: user)) adds).",
                        "At the first connect Windows asks for the user name '\(user)' and a password:",
                        "type or paste the line below.",
                    ],
                    secret: password))
        }
        return files
    }

    /// The context of `client/windows.ps1.tmpl`.
    package static func context(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials
    ) throws -> TemplateValue {
        var conns: [TemplateValue] = []
        var needsCertificate = false
        var needsEAP = false
        for c in connections {
            guard let w = c.windows else { continue }
            let isCert = w.authenticationMethod == .machineCertificate
            needsCertificate = needsCertificate || isCert
            needsEAP = needsEAP || !isCert
            conns.append(
                .object([
                    "comment": .identifier(TextCheck.swanctlSectionName(c.name)),
                    "name": .string(connectionName(deployment: deployment.name, connection: c)),
                    "server_address": .string(c.remoteAddress),
                    "authentication_method": .string(w.authenticationMethod.rawValue),
                    "eap": .bool(!isCert),
                    "certificate": .bool(isCert),
                    "ipv6": .bool(c.wantsIPv6),
                    "ipsec": .object([
                        "encryption_method": .string(w.ipsec.encryptionMethod),
                        "integrity_check_method": .string(w.ipsec.integrityCheckMethod),
                        "dh_group": .string(w.ipsec.dhGroup),
                        "cipher_transform_constants": .string(w.ipsec.cipherTransformConstants),
                        "authentication_transform_constants": .string(w.ipsec.authenticationTransformConstants),
                        "pfs_group": .string(w.ipsec.pfsGroup),
                    ]),
                ]))
        }
        let trustCA =
            needsCertificate || connections.contains { $0.windows != nil && $0.credentials.contains(.caCertificate) }
        var top: TemplateObject = [
            "user": .string(user),
            "deployment": .string(deployment.name),
            "ca_base64": .string(trustCA ? try derBase64(materials.caCertificatePEM) : ""),
            // The CA goes into the machine's root store for a server of the deployment CA, and for a
            // certificate login (its issuer filter); an ACME node chains to a root Windows holds already.
            "trust_ca": .bool(trustCA),
            "certificate": .bool(needsCertificate),
            "eap": .bool(needsEAP),
            "password_file": .string(passwordFile(user: user)),
            "connections": .list(conns),
        ]
        if needsCertificate {
            guard let p12 = materials.users[user]?.p12, let password = materials.users[user]?.p12Password,
                !password.isEmpty
            else { throw ClientRenderError("user '\(user)': no PKCS#12 bundle for the Windows script") }
            top["p12_base64"] = .string(Data(p12).base64EncodedString())
            top["p12_password"] = .string(password)
        }
        return .object(top)
    }

    /// The connection's name in Windows' network list: `<deployment> <node> <service>`.
    package static func connectionName(deployment: String, connection c: ClientConnection) -> String {
        "\(deployment) \(c.node) \(c.service.rawValue)"
    }

    /// The DER bytes of a PEM certificate, base64 (one line, no header).
    static func derBase64(_ pem: String) throws -> String {
        // The lines between the armour, split at ASCII line breaks (all a PEM text holds) byte by byte.
        var body: [UInt8] = []
        body.reserveCapacity(pem.utf8.count)
        for line in pem.utf8.split(whereSeparator: { $0 >= 0x0A && $0 <= 0x0D })
        where !line.starts(with: "-----".utf8) {
            body += line
        }
        guard let der = Data(base64Encoded: Data(body)), !der.isEmpty else {
            throw ClientRenderError("the CA certificate is not PEM")
        }
        return der.base64EncodedString()
    }
}

// MARK: - ClientKindRenderer

extension WindowsClientRenderer: ClientKindRenderer {
    package static func files(_ input: ClientRenderInput) throws -> [OutputFile] {
        try render(
            user: input.user, connections: input.connections, deployment: input.deployment,
            materials: input.materials, templates: input.templates)
    }

    /// The README's Windows part: running the script, and the password file of password logins.
    package static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String] {
        let user = input.user
        let windowsScript = fileName(user: user)
        guard names.contains(windowsScript) else { return [] }
        var lines: [String] = []
        lines += [
            windowsScript,
            "  Windows 10/11 (built-in VPN client): run it once from an elevated PowerShell",
            "  (Run as administrator): powershell.exe -ExecutionPolicy Bypass -File .\\\(windowsScript)",
            "  It trusts the certificate authority, imports the certificate where needed and adds one VPN",
            "  connection per server and service; running it again replaces them.",
        ]
        let passwordFile = WindowsClientRenderer.passwordFile(user: user)
        if names.contains(passwordFile) {
            lines += [
                "  Password logins ask for the user name '\(user)' and the password in",
                "  \(passwordFile) at the first connect; tick \"Remember my sign-in info\"",
                "  to be asked only once.",
            ]
        }
        lines.append("")
        return lines
    }
}
