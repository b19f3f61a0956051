import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// Everything under `clients/`: per user the Apple profile, Android profiles, the Linux swanctl
/// client configuration, the p12 and a README. Renders from the ClientPlan, deterministically.
package enum ClientRenderer {
    /// The folder that holds every file of `user` and nothing else (a user's files are written,
    /// and staged, as one folder).
    package static func folder(user: String) -> String { "clients/\(user)" }

    /// The file beside `<user>.p12` that hands its password to the user (0600).
    static func p12PasswordFile(user: String) -> String { "\(user)-p12-password.txt" }

    /// A file of the user's folder that hands one secret to the user, sealed like the profiles (0600):
    /// what it is and when a device asks for it, then the secret alone on its line, to copy.
    static func secretFile(user: String, name: String, heading: [String], secret: String) -> OutputFile {
        let text = (heading + ["", secret, ""]).joined(separator: "\n")
        return OutputFile(path: folder(user: user) + "/" + name, contents: Array(text.utf8), isPrivate: true)
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
        let input = ClientRenderInput(
            user: user, connections: connections, inventory: inventory, materials: materials, templates: templates)
        var userFiles: [OutputFile] = []
        // Each kind's renderer, in `Device` order (`Device.renderer`).
        for device in Device.allCases { userFiles += try device.renderer.files(input) }
        // The p12 for importing by hand, where a kind of a certificate connection wants it in the folder.
        let needsP12 = connections.contains {
            $0.credentials.contains(.clientCertificate) && $0.devices.contains { $0.kind.certificate.p12InFolder }
        }
        if needsP12 {
            guard let p12 = materials.users[user.name]?.p12 else {
                throw ClientRenderError("user '\(user.name)': no PKCS#12 bundle")
            }
            userFiles.append(
                OutputFile(path: folder(user: user.name) + "/\(user.name).p12", contents: p12, isPrivate: true))
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
        userFiles.append(readme(input, files: userFiles))
        return userFiles.sorted { $0.path < $1.path }
    }

    /// A short plain-text guide to the user's files: per device, what to open and what to type (each
    /// kind's part, in `Device` order), then the p12 for importing by hand.
    static func readme(_ input: ClientRenderInput, files: [OutputFile]) -> OutputFile {
        let (user, inventory) = (input.user, input.inventory)
        let dir = folder(user: user.name) + "/"
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
        for device in Device.allCases { lines += device.renderer.readme(input, names: names) }
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
}
