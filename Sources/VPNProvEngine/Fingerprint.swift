import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates
import VPNProvYAML

/// A stable digest of values: every stored property (by reflection, so a new model field is covered
/// without anyone remembering to add it), dictionaries and sets in sorted order, source locations
/// left out (moving a line in the inventory changes no output).
enum Fingerprint {
    /// A source location, or where the fields of a section were written (`fieldLocations`, `fromLocations`,
    /// `deployLocations`...): never part of a fingerprint.
    static func isLocation(_ label: String) -> Bool { label == "location" || label.hasSuffix("Locations") }

    /// Which render-cache units a part of the inventory reaches.
    enum Reach: Equatable {
        /// Every unit: each user's files and the servers' (`@servers`).
        case everyUnit
        /// Only `servers/`, `catalog/`, `radius/`, `deploy/`, `monitoring/` and the README (`@servers`).
        case serversUnit
        /// Each user's own unit (`users`, through `userInputs`; the servers' unit takes every user's digest).
        case eachUser
        /// No file: the reason says why.
        case nothing(String)
    }

    /// Every stored property of `Inventory`, by its label, and what it reaches. `Pipeline.fingerprints`
    /// reflects the inventory and feeds each property to the units of its reach; a property this table does
    /// not list reaches every unit (a new section is in until someone narrows it), and `FingerprintScopeTests`
    /// fails until it is listed.
    static let inventoryReach: [String: Reach] = [
        "file": .nothing("the path the inventory was read from, named only in diagnostics"),
        "schemaVersion": .nothing("how the file is read: the decoded inventory is the same whatever says it"),
        "fieldLocations": .nothing("where the top-level fields were written"),
        "secrets": .nothing("where env:/file: secrets may come from; their values are in the materials"),
        "acknowledgements": .nothing("warnings kept on purpose: they change diagnostics, never a file"),
        "name": .everyUnit,
        "pki": .everyUnit,
        "nodes": .everyUnit,
        "acme": .everyUnit,
        "users": .eachUser,
        // Read only by the plans of the nodes, the RADIUS servers, the rollout and monitoring/: no client
        // plan and no client renderer sees them (the client side reads a node's own `accounts: radius`).
        "accounts": .serversUnit,
        "monitoring": .serversUnit,
        "handOff": .serversUnit,
    ]

    /// The inventory's stored properties that reach `reach`, label and value, in declaration order.
    static func inventoryInputs(_ inventory: Inventory, reaching reach: Reach) -> [Any] {
        var out: [Any] = []
        for child in Mirror(reflecting: inventory).children {
            guard let label = child.label, (inventoryReach[label] ?? .everyUnit) == reach else { continue }
            out += [label, child.value]
        }
        return out
    }

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
        case let v as String:
            tag("s")
            tag(v)
            return
        case let v as [UInt8]:
            tag("b\(v.count)")
            out += v
            return
        case let v as Data:
            tag("b\(v.count)")
            out += v
            return
        case let v as Int:
            tag("i\(v)")
            return
        case let v as Bool:
            tag(v ? "t" : "f")
            return
        default: break
        }
        let mirror = Mirror(reflecting: value)
        tag(_typeName(type(of: value), qualified: true))  // not String(reflecting:), which prints through a Mirror
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
                    if isLocation(label) { continue }
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
    /// locations, and every field of the user's materials. Written out instead of reflected, since
    /// reflecting over thousands of users is costly (docs/benchmarks.md, "Why the code is shaped this way").
    /// `FingerprintTests` fails when `User` or `UserMaterials` gains a field that is not listed here.
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
        // Enums case by case, not through String(reflecting:), which walks them by reflection (a few
        // percent of a fleet's no-op run; docs/benchmarks.md, "Why the code is shaped this way").
        func tagged(_ tag: String, _ value: String) {
            text(tag)
            text(value)
        }
        text(user.name)
        switch user.password {
        case nil: text("-")
        case .generate?: text("generate")
        case .env(let name)?: tagged("env", name)
        case .file(let path)?: tagged("file", path)
        case .literal(let value)?: tagged("literal", value)
        }
        text(user.cert ? "cert" : "no-cert")
        switch user.id {
        case .fqdn(let v): tagged("fqdn", v)
        case .userFQDN(let v): tagged("userFQDN", v)
        case .ipv4(let v): tagged("ipv4", v)
        case .ipv6(let v): tagged("ipv6", v)
        case .dn(let v): tagged("dn", v)
        case .keyID(let v): tagged("keyID", v)
        }
        text("\(user.nodes.count)")
        for node in user.nodes { text(node) }
        text(user.devices.map(\.rawValue).joined(separator: ","))
        text(user.revoked ? "revoked" : "active")
        appleOptions(user.apple, text)
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
        text(materials.keyType?.rawValue ?? "-")
        bytes(materials.openP12)
        bytes(materials.ppk.map { Array($0.utf8) })
        return out
    }

    /// `AppleOptions` field by field ("-" for an unset one), not reflected: it is part of every user's
    /// fingerprint (docs/benchmarks.md, "Why the code is shaped this way").
    static func appleOptions(_ o: AppleOptions, _ text: (String) -> Void) {
        func flag(_ v: Bool?) { text(v.map { $0 ? "1" : "0" } ?? "-") }
        flag(o.onDemand)
        if let ssids = o.trustedSSIDs {
            text("\(ssids.count)")
            for ssid in ssids { text(ssid) }
        } else {
            text("-")
        }
        flag(o.includeAllNetworks)
        flag(o.excludeLocalNetworks)
        flag(o.pfs)
        flag(o.crlCheck)
        text(o.dpd?.rawValue ?? "-")
        text(o.disconnectOnIdle.map { "\($0)" } ?? "-")
    }

    static let coveredAppleFields = [
        "onDemand", "trustedSSIDs", "includeAllNetworks", "excludeLocalNetworks", "pfs", "crlCheck", "dpd",
        "disconnectOnIdle",
    ]

    /// The stored properties `userInputs` covers (and, for `User`, the ones it leaves out on purpose).
    static let coveredUserFields = ["name", "password", "cert", "id", "nodes", "devices", "revoked", "apple"]
    static let skippedUserFields = ["location", "fieldLocations"]
    static let coveredMaterialFields = [
        "password", "certificatePEM", "privateKeyPEM", "p12", "p12Password", "keyType", "openP12", "ppk",
    ]
}
