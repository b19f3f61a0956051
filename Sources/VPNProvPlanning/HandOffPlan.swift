import VPNProvModel
import VPNProvSupport

// The hand-off (docs/handoff.md): the site the Ansible tree rolls out (`handoff:`), what a link's landing page
// offers of a user's folder, in which section, with which steps and content type. The site's host_vars and
// inventory entry, and the packages `vpnprov handoff` seals, are made from this one plan.

package struct HandOffPlan: Sendable, Hashable {
    /// The ACME settings the site's certificate is obtained with (the nodes' `acme:`).
    package struct ACME: Sendable, Hashable {
        package var directory: String
        package var email: String
        package var keyType: String
        package var renewDays: Int
        /// PEM of the CAs the site trusts for the ACME directory's own HTTPS (a private ACME server), or nil.
        package var caBundlePEM: String?
    }

    /// The Ansible group of the site (empty without `handoff:`).
    package static let group = "vpnprov_handoff"
    /// The role that sets the site up (`deploy/roles/vpnprov_handoff/`).
    package static let role = "vpnprov_handoff"
    /// Where a link's page lives below the site: `https://<address>/h/<token>/`.
    package static let linkPrefix = "/h/"

    /// The site's DNS name: the host of every link, its certificate's name and its Ansible host name.
    package var address: String
    /// How Ansible reaches it: `deploy.host` (else the address), port, user, become.
    package var sshHost: String
    package var deploy: DeployTarget
    /// A link's lifetime in seconds and its downloads per file (0: no limit), unless the command says otherwise.
    package var lifetime: Int
    package var downloads: Int
    package var acme: ACME

    /// The site of `inventory`, or nil without `handoff:` (or without `acme:`, which validation refuses).
    package static func make(_ inventory: Inventory, acmeCABundlePEM: String?) -> HandOffPlan? {
        guard let site = inventory.handOff, let acme = inventory.acme else { return nil }
        return HandOffPlan(
            address: site.address, sshHost: site.deployHost, deploy: site.deploy, lifetime: site.lifetime,
            downloads: site.downloads,
            acme: ACME(
                directory: acme.directory, email: acme.email ?? "", keyType: acme.key.rawValue,
                renewDays: acme.renewDays, caBundlePEM: acme.caBundle == nil ? nil : acmeCABundlePEM))
    }

    /// The link of a token.
    package func link(token: String) -> String { "https://\(address)\(Self.linkPrefix)\(token)/" }
}

// MARK: - What a link offers

/// A section of a link's landing page: one kind of device, the steps from docs/clients.md's hand-off table,
/// and the files it takes. The page puts the section of the device that opened it first.
package enum HandOffSection: String, Sendable, Hashable, CaseIterable {
    case apple, android, windows, networkmanager, linux, other

    /// The section's heading; `names` are the files it offers (the last section holds the README alone for a
    /// user without a PKCS#12 file).
    package func title(names: [String]) -> String {
        switch self {
        case .apple: "iPhone, iPad and Mac"
        case .android: "Android (strongSwan VPN Client)"
        case .windows: "Windows 10 and 11"
        case .networkmanager: "Linux desktop (NetworkManager)"
        case .linux: "Linux with strongSwan (swanctl)"
        case .other: names.contains { $0.hasSuffix(".p12") } ? "Other apps, and the instructions" : "The instructions"
        }
    }

    /// What the user does, in a few lines: the "what the user does" and "what it asks" columns of
    /// docs/clients.md's hand-off table, copied by hand; `names` are the files the section offers.
    package func steps(user: String, names: [String]) -> [String] {
        switch self {
        case .apple:
            [
                "Download the profile below.",
                "iPhone and iPad: open Settings, tap \"Profile Downloaded\", then Install. Mac: open the file, then "
                    + "install it in System Settings > General > Device Management.",
                "It asks for the device's own passcode or login password, nothing else.",
            ]
        case .android:
            [
                "Install the strongSwan VPN Client app (Google Play or F-Droid).",
                "Download each file below, open it with the app and tap Import; a certificate profile also asks you "
                    + "to \"Install certificate\".",
                "Nothing to type (Android may ask you to set a screen lock).",
            ]
        case .windows:
            [
                "Download both files below.",
                "Run the script once from PowerShell as administrator: "
                    + "powershell.exe -ExecutionPolicy Bypass -File .\\\(user)-windows.ps1",
                "At the first connect of a password connection Windows asks for the user name '\(user)' and the "
                    + "password in the text file.",
            ]
        case .networkmanager:
            [
                "Download the archive below and unpack it: tar -xf \(user)-networkmanager.tar",
                "As root: run the install lines of its README, nmcli connection load, then connect from the network "
                    + "menu.",
                "Nothing to type.",
            ]
        case .linux:
            [
                "Download the archive below and unpack it: tar -xf \(user)-linux.tar",
                "As root: copy linux/swanctl/ to /etc/swanctl and run swanctl --load-all.",
                "Nothing to type.",
            ]
        case .other:
            names.contains { $0.hasSuffix(".p12") }
                ? [
                    "The certificate for importing by hand (Keychain Access, other VPN apps) and its password, and "
                        + "the README that says which file each device opens.",
                    "The profiles above do not need these files.",
                ]
                : [
                    "The README that says which file each device opens.",
                    "The profiles above do not need it.",
                ]
        }
    }
}

/// One file a link offers: its name on the page and on the device, its section, its content type, and the
/// files of the user's folder it is made of (one, or a directory's files in an archive).
package struct HandOffItem: Sendable, Hashable {
    package var name: String
    package var section: HandOffSection
    package var contentType: String
    /// Paths relative to the user's folder, in order; more than one only for an archive.
    package var sources: [String]
    /// Whether the item is a tar archive of its sources (kept under their folder-relative paths).
    package var isArchive: Bool

    /// What each file of a user's folder becomes on the page: every file has its place, so a kind that adds
    /// a file without one here is refused by `items` (`HandOffSiteTests` gives it every file of every kind).
    package static func items(user: String, paths: [String]) throws(HandOffPackageError) -> [HandOffItem] {
        var items: [HandOffItem] = []
        var linux: [String] = []
        var networkManager: [String] = []
        for path in paths.sorted() {
            if path.hasPrefix("linux/") {
                linux.append(path)
                continue
            }
            if path.hasPrefix("networkmanager/") {
                networkManager.append(path)
                continue
            }
            guard !path.contains("/") else { throw HandOffPackageError(user: user, path: path) }
            let item: (HandOffSection, String, String)
            switch path {
            case "\(user).mobileconfig": item = (.apple, path, "application/x-apple-aspen-config")
            case "\(user)-windows.ps1": item = (.windows, path, "text/plain; charset=utf-8")
            case "\(user)-windows-password.txt": item = (.windows, path, "text/plain; charset=utf-8")
            case "\(user).p12": item = (.other, path, "application/x-pkcs12")
            case "\(user)-p12-password.txt": item = (.other, path, "text/plain; charset=utf-8")
            case "README": item = (.other, "README.txt", "text/plain; charset=utf-8")
            default:
                guard path.hasSuffix(".sswan") else { throw HandOffPackageError(user: user, path: path) }
                item = (.android, path, "application/vnd.strongswan.profile")
            }
            items.append(
                HandOffItem(name: item.1, section: item.0, contentType: item.2, sources: [path], isArchive: false))
        }
        // The README's directions name these folders from the user's folder: each archive holds its folder and
        // the README, as the folder itself does.
        let readme = paths.contains("README") ? ["README"] : []
        if !networkManager.isEmpty {
            items.append(
                HandOffItem(
                    name: "\(user)-networkmanager.tar", section: .networkmanager, contentType: "application/x-tar",
                    sources: readme + networkManager, isArchive: true))
        }
        if !linux.isEmpty {
            items.append(
                HandOffItem(
                    name: "\(user)-linux.tar", section: .linux, contentType: "application/x-tar",
                    sources: readme + linux, isArchive: true))
        }
        // In the page's order: by section, a file before the password it needs, then as the folder sorts them.
        let order = Dictionary(uniqueKeysWithValues: HandOffSection.allCases.enumerated().map { ($1, $0) })
        func key(_ item: (offset: Int, element: HandOffItem)) -> (Int, Int, Int) {
            (order[item.element.section]!, item.element.name.hasSuffix("-password.txt") ? 1 : 0, item.offset)
        }
        return items.enumerated().sorted { key($0) < key($1) }.map(\.element)
    }
}

/// A file of a user's folder that the hand-off has no place for.
package struct HandOffPackageError: Error, Sendable, CustomStringConvertible {
    package var user: String
    package var path: String
    package var description: String {
        "clients/\(user)/\(path): the hand-off does not know which device this file is for"
    }
}
