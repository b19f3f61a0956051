import Foundation
import VPNProvCrypto
import VPNProvPlanning
import VPNProvSupport

// What `vpnprov handoff` publishes for one link (docs/handoff.md): the user's files, packed as the page offers
// them and sealed under a key only the link's token gives, and the page's content sealed the same way. The
// hand-off site's gate (templates/deploy/roles/vpnprov_handoff/files/vpnprov-handoff-gate) opens them with
// the token of a request and forgets the key afterwards.

/// A link's secret: 32 random bytes, written into the link in base64url (43 characters). What the site and
/// vpnprov keep of it are derived with HKDF-SHA256: the link's id, and the key its files are sealed under.
struct HandOffToken {
    static let idInfo = Array("vpnprov hand-off link id".utf8)
    static let keyInfo = Array("vpnprov hand-off key".utf8)
    static let length = 32

    /// The link's part after `/h/`.
    let text: String
    /// 32 hexadecimal digits, what the site and the state name the link by.
    let id: String
    let key: [UInt8]

    /// A new token from the random generator: 256 bits, so a link cannot be guessed.
    static func make() throws -> HandOffToken { try HandOffToken(raw: RandomBytes.generate(count: length)) }

    init(raw: [UInt8]) throws {
        precondition(raw.count == Self.length)
        text = Data(raw).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        id = hexString(try HKDF.sha256(secret: raw, info: Self.idInfo, count: 16)).lowercased()
        key = try HKDF.sha256(secret: raw, info: Self.keyInfo, count: 32)
    }
}

/// One link as the site's gate takes it in (`handoff/links/<id>.json`): who and until when in clear, the page
/// and every file sealed. The associated data of each sealed item names the link and the item's place, so
/// no sealed item opens in another link or as another file.
struct PublishedLink: Codable, Equatable {
    struct File: Codable, Equatable {
        var name: String
        var type: String
        var size: Int
        /// Base64 of nonce | ciphertext | tag (AES-256-GCM).
        var sealed: String
    }

    static let version = 1
    var version = PublishedLink.version
    var id: String
    var user: String
    var deployment: String
    /// Seconds since 1970.
    var created: Int
    var expires: Int
    /// Downloads per file; 0 for no limit.
    var downloads: Int
    var page: String
    var files: [File]
}

/// The page's content, sealed in the published link: the sections in their order, each with its steps and
/// the files it offers (indexes into the link's files).
struct HandOffPage: Codable, Equatable {
    struct Section: Codable, Equatable {
        var device: String
        var title: String
        var steps: [String]
        var files: [Int]
    }

    var user: String
    var deployment: String
    var site: String
    var sections: [Section]
}

/// What the site's gate is told of every link (`handoff/index.json`): the links to serve, and those vpnprov
/// ended with why. A link in neither stays ended on the site if the site knows it.
struct PublishedIndex: Codable, Equatable {
    static let version = 1
    var version = PublishedIndex.version
    var links: [String]
    var ended: [String: String]
}

enum HandOffPackage {
    /// A file read from the user's folder: its path there and its bytes.
    typealias Source = (path: String, contents: [UInt8], isPrivate: Bool)

    /// The user's folder packed and sealed under `token` as one link.
    static func link(
        user: String, deployment: String, site: String, sources: [Source], token: HandOffToken, created: Int,
        expires: Int, downloads: Int
    ) throws -> (link: PublishedLink, names: [String]) {
        let items = try HandOffItem.items(user: user, paths: sources.map(\.path))
        let byPath = Dictionary(uniqueKeysWithValues: sources.map { ($0.path, $0) })
        var files: [PublishedLink.File] = []
        for (index, item) in items.enumerated() {
            let parts = item.sources.compactMap { byPath[$0] }
            let contents = item.isArchive ? Tar.archive(parts, mtime: created) : parts.first?.contents ?? []
            let sealed = try Seal.seal(
                contents, key: token.key, associatedData: Array("\(token.id)/file/\(index)".utf8))
            files.append(
                PublishedLink.File(
                    name: item.name, type: item.contentType, size: contents.count,
                    sealed: Data(sealed).base64EncodedString()))
        }
        let sections = HandOffSection.allCases.compactMap { section -> HandOffPage.Section? in
            let indexes = items.indices.filter { items[$0].section == section }
            guard !indexes.isEmpty else { return nil }
            let names = indexes.map { items[$0].name }
            return HandOffPage.Section(
                device: section.rawValue, title: section.title(names: names),
                steps: section.steps(user: user, names: names), files: indexes)
        }
        let page = HandOffPage(user: user, deployment: deployment, site: site, sections: sections)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let pageBytes = Array(try encoder.encode(page))
        let sealedPage = try Seal.seal(pageBytes, key: token.key, associatedData: Array("\(token.id)/page".utf8))
        let link = PublishedLink(
            id: token.id, user: user, deployment: deployment, created: created, expires: expires, downloads: downloads,
            page: Data(sealedPage).base64EncodedString(), files: files)
        return (link, items.map(\.name))
    }
}

/// A POSIX tar archive (ustar, IEEE Std 1003.1 `pax` format's ustar headers) of a few files, for the Linux
/// and NetworkManager folders: each file under its path in the user's folder with its mode (0600 for a key or
/// a secret, 0644 otherwise), its directories first, owned by uid and gid 0 without names. GNU tar and
/// bsdtar read it (`HandOffCommandTests`).
enum Tar {
    static let block = 512

    static func archive(_ files: [HandOffPackage.Source], mtime: Int) -> [UInt8] {
        var out: [UInt8] = []
        var directories = Set<String>()
        for file in files {
            var parent = ""
            for component in file.path.split(separator: "/").dropLast() {
                parent += component + "/"
                if directories.insert(parent).inserted {
                    out += header(name: parent, mode: 0o755, size: 0, type: "5", mtime: mtime)
                }
            }
            out += header(
                name: file.path, mode: file.isPrivate ? 0o600 : 0o644, size: file.contents.count, type: "0",
                mtime: mtime)
            out += file.contents
            out += [UInt8](repeating: 0, count: (block - file.contents.count % block) % block)
        }
        // Two zero blocks end the archive.
        return out + [UInt8](repeating: 0, count: 2 * block)
    }

    /// A ustar header. Names here are at most 100 bytes (a folder's paths are short: node and user names are
    /// at most 63 bytes and the deepest path is `linux/swanctl/private/<user>.key`); longer ones use `prefix`.
    static func header(name: String, mode: Int, size: Int, type: Character, mtime: Int) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: block)
        func put(_ text: String, at offset: Int, width: Int) {
            for (i, byte) in text.utf8.prefix(width).enumerated() { h[offset + i] = byte }
        }
        func octal(_ value: Int, at offset: Int, width: Int) {
            put(
                String(repeating: "0", count: max(0, width - 1 - String(value, radix: 8).count))
                    + String(value, radix: 8), at: offset, width: width - 1)
        }
        let bytes = Array(name.utf8)
        if bytes.count <= 100 {
            put(name, at: 0, width: 100)
        } else if let cut = bytes.prefix(156).lastIndex(of: UInt8(ascii: "/")), bytes.count - cut - 1 <= 100 {
            put(String(decoding: bytes[(cut + 1)...], as: UTF8.self), at: 0, width: 100)
            put(String(decoding: bytes[..<cut], as: UTF8.self), at: 345, width: 155)
        } else {
            preconditionFailure("tar path too long: \(name)")
        }
        octal(mode, at: 100, width: 8)
        octal(0, at: 108, width: 8)
        octal(0, at: 116, width: 8)
        octal(size, at: 124, width: 12)
        octal(mtime, at: 136, width: 12)
        put(String(type), at: 156, width: 1)
        put("ustar", at: 257, width: 6)
        put("00", at: 263, width: 2)
        // The checksum is the sum of the header's bytes with its own field taken as eight spaces.
        for i in 148..<156 { h[i] = UInt8(ascii: " ") }
        let sum = h.reduce(0) { $0 + Int($1) }
        put(
            String(repeating: "0", count: max(0, 6 - String(sum, radix: 8).count)) + String(sum, radix: 8), at: 148,
            width: 6)
        h[154] = 0
        h[155] = UInt8(ascii: " ")
        return h
    }
}
