import Foundation
import VPNProvCrypto

/// Lets `generate` and `check` recognise a user whose files are already right without rendering
/// them again: rendering thousands of profiles is most of a run's cost, and most runs change few
/// users.
///
/// `out/.vpnprov-cache` records, per user, a fingerprint of everything their files are rendered from
/// and the SHA-256 and mode of each file. A user is *fresh* when the fingerprint is unchanged and
/// every recorded file on disk still has that digest and mode (so an edited, deleted or re-moded
/// file is noticed exactly as by a full comparison). The file is derived from contents only, so the
/// same inventory and state give the same bytes. A missing or unreadable cache only means rendering
/// everything, never a wrong result.
struct RenderCache: Sendable {
    static let fileName = ".vpnprov-cache"
    static let header = "vpnprov-cache 1"

    struct File: Sendable, Hashable {
        var path: String
        var sha256: String
        var isPrivate: Bool
    }

    struct Entry: Sendable, Hashable {
        var fingerprint: String
        var files: [File]
    }

    var entries: [String: Entry] = [:]

    /// Parses the cache file; anything unexpected gives an empty cache.
    init(bytes: [UInt8]?) {
        guard let bytes else { return }
        // Parsed on bytes: a fleet's cache has a line per file.
        let lines = bytes.split(separator: UInt8(ascii: "\n"))
        guard let first = lines.first, first.elementsEqual(Self.header.utf8) else { return }
        var current: (String, Entry)?
        var parsed: [String: Entry] = [:]
        for line in lines.dropFirst() {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 3).map { String(decoding: $0, as: UTF8.self) }
            switch fields.first {
            case "user" where fields.count == 3:
                if let (name, entry) = current { parsed[name] = entry }
                current = (fields[1], Entry(fingerprint: fields[2], files: []))
            case "file" where fields.count == 4 && current != nil:
                current!.1.files.append(File(path: fields[3], sha256: fields[1], isPrivate: fields[2] == "0600"))
            default:
                return
            }
        }
        if let (name, entry) = current { parsed[name] = entry }
        entries = parsed
    }

    init(entries: [String: Entry]) { self.entries = entries }

    /// Deterministic text: users and files sorted.
    var bytes: [UInt8] {
        var text = Self.header + "\n"
        for name in entries.keys.sorted() {
            let entry = entries[name]!
            text += "user \(name) \(entry.fingerprint)\n"
            for file in entry.files.sorted(by: { $0.path < $1.path }) {
                text += "file \(file.sha256) \(file.isPrivate ? "0600" : "0644") \(file.path)\n"
            }
        }
        return Array(text.utf8)
    }

    static func entry(fingerprint: String, files: [OutputFile]) -> Entry {
        Entry(fingerprint: fingerprint, files: files.map { File(path: $0.path, sha256: hexString(Digest.sha256($0.contents)), isPrivate: $0.isPrivate) })
    }
}

/// A stable digest of values: every stored property (by reflection, so a new model field is covered
/// without anyone remembering to add it), dictionaries and sets in sorted order, source locations
/// left out (moving a line in the inventory changes no output).
enum Fingerprint {
    static let skippedLabels: Set<String> = ["location", "fieldLocations"]

    static func digest(_ values: [Any]) -> String {
        var bytes: [UInt8] = []
        for value in values { feed(value, into: &bytes) }
        return hexString(Digest.sha256(bytes))
    }

    static func feed(_ value: Any, into out: inout [UInt8]) {
        func tag(_ text: String) {
            out += text.utf8
            out.append(0)
        }
        switch value {
        case let v as String: tag("s"); tag(v); return
        case let v as [UInt8]: tag("b\(v.count)"); out += v; return
        case let v as Data: tag("b\(v.count)"); out += v; return
        case let v as Int: tag("i\(v)"); return
        case let v as Bool: tag(v ? "t" : "f"); return
        default: break
        }
        let mirror = Mirror(reflecting: value)
        tag(String(reflecting: type(of: value)))
        if mirror.children.isEmpty {
            tag(String(describing: value))  // enum cases without payload, other leaves
            return
        }
        switch mirror.displayStyle {
        case .dictionary?:
            var pairs: [([UInt8], [UInt8])] = []
            for child in mirror.children {
                let pair = Array(Mirror(reflecting: child.value).children.map(\.value))
                var key: [UInt8] = []
                var item: [UInt8] = []
                feed(pair[0], into: &key)
                feed(pair[1], into: &item)
                pairs.append((key, item))
            }
            pairs.sort { $0.0.lexicographicallyPrecedes($1.0) }
            for (key, item) in pairs { out += key + item }
        case .set?:
            var items: [[UInt8]] = mirror.children.map { child in
                var item: [UInt8] = []
                feed(child.value, into: &item)
                return item
            }
            items.sort { $0.lexicographicallyPrecedes($1) }
            for item in items { out += item }
        default:
            for child in mirror.children {
                if let label = child.label {
                    if skippedLabels.contains(label) { continue }
                    tag(label)
                }
                feed(child.value, into: &out)
            }
        }
        tag(")")
    }
}

extension Fingerprint {
    /// A user's own inputs, field by field: every field of the inventory entry except its source
    /// locations, and every field of the user's materials. Written out instead of reflected:
    /// reflection over thousands of users cost more than rendering a small fleet. `FingerprintTests`
    /// fails when `User` or `UserMaterials` gains a field that is not listed here.
    static func userInputs(_ user: User, _ materials: UserMaterials?) -> [UInt8] {
        var out: [UInt8] = []
        func text(_ value: String) {
            out += "s\(value.utf8.count):".utf8
            out += value.utf8
        }
        func bytes(_ value: [UInt8]?) {
            guard let value else { return text("-") }
            out += "b\(value.count):".utf8
            out += value
        }
        text(user.name)
        text(String(reflecting: user.password))  // small enums: reflection is cheap here
        text(user.cert ? "cert" : "no-cert")
        text(String(reflecting: user.id))
        text("\(user.nodes.count)")
        for node in user.nodes { text(node) }
        text(user.devices.map(\.rawValue).joined(separator: ","))
        text(user.revoked ? "revoked" : "active")
        guard let materials else {
            text("no-materials")
            return out
        }
        text("materials")
        bytes(materials.password.map { Array($0.utf8) })
        bytes(materials.certificatePEM.map { Array($0.utf8) })
        bytes(materials.privateKeyPEM.map { Array($0.utf8) })
        bytes(materials.p12)
        bytes(materials.p12Password.map { Array($0.utf8) })
        text(String(reflecting: materials.keyType))
        return out
    }

    /// The stored properties `userInputs` covers (and, for `User`, the ones it leaves out on purpose).
    static let coveredUserFields = ["name", "password", "cert", "id", "nodes", "devices", "revoked"]
    static let skippedUserFields = ["location", "fieldLocations"]
    static let coveredMaterialFields = ["password", "certificatePEM", "privateKeyPEM", "p12", "p12Password", "keyType"]
}
