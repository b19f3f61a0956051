import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// Everything under `clients/`: per user the Apple profile, Android profiles, the Linux swanctl
/// client configuration, the p12 and a README. Renders from the ClientPlan, deterministically.
package enum ClientRenderer {
    /// The file beside `<user>.p12` that hands its password to the user (0600).
    package static func p12PasswordFile(user: String) -> String { "\(user)-p12-password.txt" }

    /// A file of the user's folder that hands one secret to the user, sealed like the profiles (0600):
    /// what it is and when a device asks for it, then the secret alone on its line, to copy.
    static func secretFile(user: String, name: String, heading: [String], secret: String) -> OutputFile {
        let text = (heading + ["", secret, ""]).joined(separator: "\n")
        return OutputFile(path: "clients/\(user)/\(name)", contents: Array(text.utf8), isPrivate: true)
    }

    package static func render(
        inventory: Inventory, materials: Materials, templates: TemplateSet
    ) throws -> [OutputFile] {
        let plan = ClientPlan.build(inventory: inventory, materials: materials)
        return try render(plan: plan, inventory: inventory, materials: materials, templates: templates)
    }

    package static func render(
        plan: ClientPlan, inventory: Inventory, materials: Materials, templates: TemplateSet
    ) throws -> [OutputFile] {
        var files: [OutputFile] = []
        let byUser = plan.connectionsByUser()
        for user in inventory.users where !user.revoked {
            files += try render(
                user: user, connections: byUser[user.name] ?? [], inventory: inventory, materials: materials,
                templates: templates)
        }
        return files
    }

    /// One user's files (`clients/<user>/...`, sorted by path); `connections` are the user's own
    /// (`ClientPlan.connectionsByUser()`). Empty for a user without connections.
    package static func render(
        user: User, connections: [ClientConnection], inventory: Inventory, materials: Materials, templates: TemplateSet
    ) throws -> [OutputFile] {
        if connections.isEmpty { return [] }
        var userFiles: [OutputFile] = []
        if let apple = try AppleProfileRenderer.render(
            user: user, connections: connections, inventory: inventory, materials: materials)
        {
            userFiles.append(apple)
        }
        userFiles += try AndroidProfileRenderer.render(
            user: user.name, connections: connections, inventory: inventory, materials: materials)
        userFiles += try LinuxClientRenderer.render(
            user: user, connections: connections, inventory: inventory, materials: materials, templates: templates)
        userFiles += try WindowsClientRenderer.render(
            user: user, connections: connections, inventory: inventory, materials: materials, templates: templates)
        userFiles += try NetworkManagerClientRenderer.render(
            user: user, connections: connections, inventory: inventory, materials: materials)
        // The p12 for importing by hand, where a kind of a certificate connection wants it in the folder.
        let needsP12 = connections.contains {
            $0.credentials.contains(.clientCertificate) && $0.devices.contains { $0.kind.certificate.p12InFolder }
        }
        if needsP12 {
            guard let p12 = materials.users[user.name]?.p12 else {
                throw ClientRenderError("user '\(user.name)': no PKCS#12 bundle")
            }
            userFiles.append(OutputFile(path: "clients/\(user.name)/\(user.name).p12", contents: p12, isPrivate: true))
            // The user imports the p12 by hand (macOS Keychain, other apps) without the operator: its
            // password travels with it, in a file named for what it is.
            guard let password = materials.users[user.name]?.p12Password, !password.isEmpty else {
                throw ClientRenderError("user '\(user.name)': no PKCS#12 password")
            }
            userFiles.append(
                secretFile(
                    user: user.name, name: p12PasswordFile(user: user.name),
                    heading: [
                        "PASSWORD of \(user.name).p12 (the certificate file in this folder).",
                        "Type or paste the line below when a device asks for it while importing \(user.name).p12:",
                    ],
                    secret: password))
        }
        userFiles.append(readme(user: user, connections: connections, files: userFiles, inventory: inventory))
        return userFiles.sorted { $0.path < $1.path }
    }

    /// A short plain-text guide to the user's files: per device, what to open and what to type.
    static func readme(user: User, connections: [ClientConnection], files: [OutputFile], inventory: Inventory)
        -> OutputFile
    {
        let dir = "clients/\(user.name)/"
        let names = Set(files.map { String($0.path.dropFirst(dir.count)) })
        let passwordFile = p12PasswordFile(user: user.name)
        var lines = [
            "VPN client files for \(user.name) (\(inventory.name))",
            "",
            "Generated by vpnprov. Every file here except this one holds secrets: keep them private",
            "and hand them to \(user.name) over a safe channel. Nothing below needs the operator:",
            "every password a device asks for is in this folder.",
            "",
        ]
        if names.contains("\(user.name).mobileconfig") {
            lines += [
                "iPhone, iPad: \(user.name).mobileconfig",
                "  1. Open the file (AirDrop, Mail attachment or the Files app); the phone says",
                "     \"Profile Downloaded\".",
                "  2. Settings > General > VPN & Device Management > the profile > Install.",
                "  3. Type the device's own passcode when asked. Nothing else: the VPN passwords and the",
                "     certificate's password are inside the profile.",
                "Mac: \(user.name).mobileconfig",
                "  Double-click the file, then System Settings > General > Device Management (Profiles",
                "  on older macOS) > the profile > Install, and type the Mac's login password.",
                "  The profile holds one VPN per server and service, the certificate authority and, for",
                "  certificate logins, the user's certificate.",
            ]
            if inventory.pki.profileSigning != nil {
                lines += [
                    "  The profile is signed: the install screen names the signer, and says \"Verified\" when",
                    "  the device trusts the signer's root certificate.",
                ]
            } else {
                lines += [
                    "  The install screen says \"Not Verified\": the profile carries no signature, so the device",
                    "  cannot tell who made it. That is expected for these files; install it only if it reached",
                    "  you from your VPN operator over a channel you trust.",
                ]
            }
            lines.append("")
        }
        let sswan = names.filter { $0.hasSuffix(".sswan") }.sorted()
        if !sswan.isEmpty {
            lines += [
                "Android: the strongSwan VPN Client app (Google Play or F-Droid), then for each file:"
            ]
            for name in sswan { lines.append("  \(name)") }
            lines += [
                "  1. Open the file with the app (or in the app: menu > Import VPN profile) and tap Import."
            ]
            if sswan.contains(where: { $0.hasSuffix("-ikev2-cert.sswan") }) {
                lines += [
                    "  2. Certificate profiles (…-ikev2-cert.sswan) show \"Install certificate\": tap it and",
                    "     confirm the name Android suggests. No password is asked: the certificate inside",
                    "     these files has none (Android may ask you to set a screen lock first).",
                ]
            }
            lines += [
                "  Nothing else to type: the VPN password is inside the profile.",
                "",
            ]
        }
        if names.contains(where: { $0.hasPrefix("linux/") }) {
            lines += [
                "Linux with strongSwan (swanctl): linux/swanctl/",
                "  Copy the directory's contents to /etc/swanctl, keep conf.d/secrets.conf and private/",
                "  readable by root only, run `swanctl --load-all`, then",
                "  `swanctl --initiate --child <name>` with a child name from swanctl.conf:",
            ]
            for c in connections where c.devices.contains(.linux) { lines.append("    \(c.name)") }
            if connections.contains(where: { $0.devices.contains(.linux) && $0.aggressive }) {
                lines += [
                    "  IKEv1 with a group name uses Aggressive Mode, which strongSwan refuses unless",
                    "  strongswan.conf sets charon { i_dont_care_about_security_and_use_aggressive_mode_psk = yes }.",
                ]
            }
            lines.append("")
        }
        let windowsScript = WindowsClientRenderer.fileName(user: user.name)
        if names.contains(windowsScript) {
            lines += [
                windowsScript,
                "  Windows 10/11 (built-in VPN client): run it once from an elevated PowerShell",
                "  (Run as administrator): powershell.exe -ExecutionPolicy Bypass -File .\\\(windowsScript)",
                "  It trusts the certificate authority, imports the certificate where needed and adds one VPN",
                "  connection per server and service; running it again replaces them.",
            ]
            let passwordFile = WindowsClientRenderer.passwordFile(user: user.name)
            if names.contains(passwordFile) {
                lines += [
                    "  Password logins ask for the user name '\(user.name)' and the password in",
                    "  \(passwordFile) at the first connect; tick \"Remember my sign-in info\"",
                    "  to be asked only once.",
                ]
            }
            lines.append("")
        }
        lines += networkManagerReadme(user: user, connections: connections, names: names, inventory: inventory)
        if names.contains("\(user.name).p12") {
            lines += [
                "\(user.name).p12 and \(passwordFile)",
                "  The client certificate and key (PKCS#12) for importing by hand (macOS Keychain Access,",
                "  other VPN apps). When the import asks for a password, type the one in",
                "  \(passwordFile). The profiles above do not need these two files.",
                "",
            ]
        }
        return OutputFile(path: "\(dir)README", text: lines.joined(separator: "\n"))
    }

    /// The README's NetworkManager part: the commands that install the folder as root (credentials
    /// where the keyfiles name them, keyfiles 0600 into system-connections, which is what NetworkManager
    /// requires of a keyfile) and load each connection.
    static func networkManagerReadme(
        user: User, connections: [ClientConnection], names: Set<String>, inventory: Inventory
    ) -> [String] {
        let nm = NetworkManagerClientRenderer.self
        let folder = nm.folder
        let keyfiles = names.filter { $0.hasPrefix(folder + "/") && $0.hasSuffix(".nmconnection") }.sorted()
        if keyfiles.isEmpty { return [] }
        let target = nm.credentialDirectory(deployment: inventory.name, user: user.name)
        let system = "/etc/NetworkManager/system-connections"
        var lines = [
            "Linux desktop with NetworkManager: \(folder)/",
            "  Needs NetworkManager's strongSwan plugin (Debian/Ubuntu: apt install network-manager-strongswan).",
            "  As root, in this folder:",
            "    install -d -m 0755 -o root -g root \(target)",
        ]
        let public_ = ["ca.pem", "\(user.name).pem"].map { "\(folder)/\($0)" }.filter(names.contains)
        if !public_.isEmpty {
            lines.append("    install -m 0644 -o root -g root \(public_.joined(separator: " ")) \(target)/")
        }
        if names.contains("\(folder)/\(user.name).key") {
            lines.append("    install -m 0600 -o root -g root \(folder)/\(user.name).key \(target)/")
        }
        lines.append("    install -m 0600 -o root -g root \(folder)/*.nmconnection \(system)/")
        for file in keyfiles { lines.append("    nmcli connection load \(system)/\(file.dropFirst(folder.count + 1))") }
        lines += [
            "  Then connect from the network menu, or with `nmcli connection up id \"<name>\"`, one per server and service:"
        ]
        for c in connections where c.devices.contains(.networkmanager) {
            lines.append("    \(nm.connectionID(deployment: inventory.name, connection: c))")
        }
        lines += [
            "  Nothing to type: the password or key is in the connection file, which only root can read.",
            "",
        ]
        return lines
    }
}
