import VPNProvYAML

/// The hand-off site (`handoff:`, docs/handoff.md): a host the generated Ansible tree rolls out with nginx and
/// a certificate from the `acme:` CA, where `vpnprov handoff` publishes each user's files behind a link of
/// their own that expires, can be used up and can be revoked.
package struct HandOffSettings: Sendable, Hashable {
    /// How long a link lives unless `expires` or the command says otherwise: three days, so a link sent on a
    /// Friday evening still opens on Monday morning (docs/handoff.md says why not Pritunl's 24 hours).
    package static let defaultLifetime = 72 * 3600
    /// From an hour (time to read a message and open it) to 30 days.
    package static let lifetimeRange = 3600...(30 * 24 * 3600)
    /// How often each file of a link may be downloaded: once, by default.
    package static let defaultDownloads = 1
    /// 0 is no limit (until the link expires).
    package static let downloadsRange = 0...100

    /// The site's DNS name: the host part of every link, and the name its certificate is for.
    package var address: String
    /// How Ansible reaches the host (`deploy:`, as a node's); the host is the address unless `deploy.host`.
    package var deploy = DeployTarget()
    /// A link's lifetime in seconds.
    package var lifetime = defaultLifetime
    /// Downloads allowed per file of a link; 0 for no limit.
    package var downloads = defaultDownloads
    package var location: SourceLocation
    /// Where each key's value was written.
    package var fieldLocations: [InventoryDecoder.HandOffKey: SourceLocation] = [:]
    /// Where each key of `deploy:` was written.
    package var deployLocations: [InventoryDecoder.DeployKey: SourceLocation] = [:]

    package init(address: String, location: SourceLocation) {
        self.address = address
        self.location = location
    }

    /// Best location for a key: its own, else the section's.
    package func location(of key: InventoryDecoder.HandOffKey) -> SourceLocation { fieldLocations[key] ?? location }

    /// The SSH host Ansible connects to.
    package var deployHost: String { deploy.host ?? address }

    /// A lifetime as written: a whole number of minutes, hours or days (`90m`, `72h`, `3d`), in seconds;
    /// nil when the text is none of these.
    package static func seconds(_ text: String) -> Int? {
        guard let unit = text.last, let count = Int(text.dropLast()), count > 0, count <= 100_000 else { return nil }
        switch unit {
        case "m": return count * 60
        case "h": return count * 3600
        case "d": return count * 24 * 3600
        default: return nil
        }
    }

    /// A lifetime in seconds as `seconds(_:)` reads it, in the largest unit that divides it.
    package static func text(seconds: Int) -> String {
        if seconds % (24 * 3600) == 0 { return "\(seconds / (24 * 3600))d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        return "\(seconds / 60)m"
    }
}
