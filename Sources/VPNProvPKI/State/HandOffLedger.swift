import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// One link `vpnprov handoff` made (docs/handoff.md). The token is not kept: the link's id is what the
/// hand-off site and its audit journal name it by, and neither it nor anything else here opens a link.
package struct HandOffLink: Codable, Sendable, Hashable {
    /// Why vpnprov ended a link before it expired.
    package enum EndReason: String, Codable, Sendable, Hashable, CaseIterable {
        /// `handoff-revoke`, or the user was revoked or left the inventory.
        case revoked
        /// The user's profiles changed (a re-issued certificate, a new password), or a newer link was made.
        case replaced
    }

    package struct Ended: Codable, Sendable, Hashable {
        package var reason: EndReason
        /// Seconds since 1970.
        package var at: Int
        package init(reason: EndReason, at: Int) {
            self.reason = reason
            self.at = at
        }
    }

    /// 32 hexadecimal digits: HKDF-SHA256 of the token ("vpnprov hand-off link id").
    package var id: String
    package var user: String
    /// Seconds since 1970.
    package var created: Int
    package var expires: Int
    /// Downloads per file; 0 for no limit.
    package var downloads: Int
    /// The digest of the user's folder as it was handed off (`HandOffLedger.folderDigest`): when the folder
    /// differs, the link hands out profiles that are no longer the user's.
    package var folder: String
    /// The names the link offers, in the page's order.
    package var files: [String]
    /// The command printed the link (after it was published, or with --no-publish): it is out. A link never
    /// shown (its publish failed, or the run died before) is ended by the next hand-off.
    package var shown: Bool
    package var ended: Ended?

    package init(
        id: String, user: String, created: Int, expires: Int, downloads: Int, folder: String, files: [String],
        shown: Bool = false, ended: Ended? = nil
    ) {
        self.id = id
        self.user = user
        self.created = created
        self.expires = expires
        self.downloads = downloads
        self.folder = folder
        self.files = files
        self.shown = shown
        self.ended = ended
    }

    /// Neither ended by vpnprov nor expired at `now` (the site may still have ended it: used up).
    package func isLive(at now: Int) -> Bool { ended == nil && now < expires }
}

/// The links vpnprov made (`state/handoff.json`): what is out, for whom, until when, and which ended. A file
/// of its own, written after the state's index (with the lock held), so a run that dies between the two
/// leaves links that the next `vpnprov handoff` ends by comparing each user's folder with its link's
/// (docs/state.md). Absent until the first hand-off.
package enum HandOffLedger {
    static let fileName = "handoff.json"
    static let version = 1
    /// A link is a few hundred bytes: this holds far more than a fleet's.
    static let maxBytes = 64 << 20
    /// How long an ended or expired link stays listed (each user's newest link stays always: it says what
    /// was handed off last).
    package static let keptSeconds = 90 * 24 * 3600

    private struct Document: Codable {
        var version: Int
        var links: [HandOffLink]
    }

    static func path(_ directory: StateDirectory) -> String { directory.root + "/" + fileName }

    /// The links, oldest first; empty when the file (or the state directory) does not exist.
    package static func read(stateDirectory: String) throws -> [HandOffLink] {
        guard let directory = try StateDirectory.open(stateDirectory, create: false) else { return [] }
        return try read(directory)
    }

    /// The links of the open state directory, oldest first; empty when the file does not exist.
    package static func read(_ directory: StateDirectory) throws -> [HandOffLink] {
        let path = path(directory)
        guard let bytes = try directory.readRecords([.handOff]).bytes[.handOff] else { return [] }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch {
            throw StateError(.stateUnreadable, "\(path) is not a hand-off record vpnprov wrote: \(error)")
        }
        guard document.version == version else {
            throw StateError(.stateUnreadable, "\(path) has version \(document.version); this vpnprov reads \(version)")
        }
        for link in document.links where !isLinkID(link.id) {
            throw StateError(.stateInconsistent, "\(path): '\(link.id.prefix(40))' is not a link id")
        }
        return document.links
    }

    /// Replaces the record with `links`, dropping those that ended or expired more than `keptSeconds` before
    /// `now` unless they are their user's newest. Call with the state lock held.
    package static func write(_ links: [HandOffLink], now: Int, in directory: StateDirectory) throws {
        var newest: [String: Int] = [:]
        for link in links { newest[link.user] = max(newest[link.user] ?? 0, link.created) }
        let kept = links.filter { link in
            let over = link.ended.map(\.at) ?? link.expires
            return link.created == newest[link.user] || now - over < keptSeconds
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Document(version: version, links: kept))
        try directory.commitRecord(.handOff, Array(data) + [UInt8(ascii: "\n")])
    }

    static func isLinkID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The digest of a user's folder: SHA-256 over each file's path and SHA-256, in path order, so any
    /// changed, added or removed file changes it.
    package static func folderDigest(_ files: [(path: String, sha256: String)]) -> String {
        let text = files.sorted { $0.path < $1.path }.map { "\($0.path)\t\($0.sha256)\n" }.joined()
        return hexString(Digest.sha256(Array(text.utf8))).lowercased()
    }
}
