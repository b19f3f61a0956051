import Foundation
import VPNProvTestHarness

/// What a device profile amounts to, as a strongSwan client: a swanctl.conf plus credential files.
/// Produced by `AppleProfileTranslator` / `SswanTranslator`; written with `write(label:)` and loaded into the
/// client `Charon` of a `TunnelScenario`.
struct ClientSetup: Sendable {
    /// Connection and child name in `swanctlConf` (initiate with `child: childName, ike: connectionName`).
    var connectionName: String
    var childName: String
    var swanctlConf: String
    /// Paths relative to the swanctl dir (`x509ca/…`, `pkcs12/…`) and their bytes.
    var files: [String: Data]
    /// What the device does to its own routing while the tunnel is up (applied in the client namespace).
    var device = DevicePolicy()
    /// Connect-on-demand rules (Apple), nil when on-demand is off.
    var onDemand: OnDemand?
    /// The device checks the server certificate's revocation (Apple EnableCertificateRevocationCheck).
    var revocationCheck = false

    func write(label: String) throws -> SwanctlDirectory {
        try SwanctlDirectory.make(label: label, conf: swanctlConf, files: files)
    }
}

/// Routing a device applies on its own while connected, beyond the routes strongSwan installs for the
/// negotiated traffic selectors. The harness applies it in the client namespace while the tunnel is up.
struct DevicePolicy: Sendable, Equatable {
    enum IPv6Block: Sendable, Equatable {
        /// IPv6 outside the tunnel is left alone (it leaks when the tunnel carries none).
        case none
        /// Every IPv6 packet outside the tunnel is dropped (Android without allowFamily(AF_INET6)).
        case all
        /// Dropped except towards the directly attached networks (Apple IncludeAllNetworks with
        /// ExcludeLocalNetworks).
        case exceptLocalNetworks
    }
    var blockIPv6: IPv6Block = .none
}

/// Apple's connect-on-demand rules: evaluated in order on a network change, the first match decides.
struct OnDemand: Sendable, Equatable {
    struct Rule: Sendable, Equatable {
        var action: String
        var interface: String?
        var ssids: [String]?

        func matches(interface current: String, ssid: String?) -> Bool {
            if let interface, interface != current { return false }
            if let ssids { return ssid.map(ssids.contains) ?? false }
            return true
        }
    }
    var rules: [Rule]

    /// The action for a network (`interface`: WiFi, Cellular, Ethernet); nil when no rule matches
    /// (the device then leaves the VPN alone).
    func action(interface: String, ssid: String? = nil) -> String? {
        rules.first { $0.matches(interface: interface, ssid: ssid) }?.action
    }
}

/// What the person holding the device types or what the test environment changes.
struct DeviceInputs: Sendable {
    /// Replaces the profile's server address (the namespaces use 192.0.2.1, profiles name the real host).
    var remoteAddress: String?
    /// EAP / XAuth password when the profile leaves it out (the device would prompt).
    var password: String?
    /// PKCS#12 password when the profile leaves it out (.sswan never carries it).
    var p12Password: String?
    /// CRLs the device would fetch while checking the server certificate's revocation (PEM or DER); used
    /// only by a profile that asks for the check.
    var fetchableCRLs: [Data] = []
    /// The device's own trust store (PEM or DER): roots it trusts without any profile, as a phone or desktop
    /// trusts the public CAs; the lab's public CA is Pebble's root. Empty by default.
    var systemRoots: [Data] = []

    init(
        remoteAddress: String? = nil, password: String? = nil, p12Password: String? = nil, fetchableCRLs: [Data] = [],
        systemRoots: [Data] = []
    ) {
        self.remoteAddress = remoteAddress
        self.password = password
        self.p12Password = p12Password
        self.fetchableCRLs = fetchableCRLs
        self.systemRoots = systemRoots
    }

    /// `systemRoots` as files of a client's `x509ca/`.
    var systemRootFiles: [String: Data] {
        var files: [String: Data] = [:]
        for (index, root) in systemRoots.enumerated() { files["x509ca/system-\(index + 1).pem"] = root }
        return files
    }
}

/// A profile the translation cannot turn into an equivalent strongSwan client. Fails the test.
struct TranslationError: Error, CustomStringConvertible, Equatable {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Builds swanctl.conf text: one `key = value` per line, every value quoted and escaped (docs/formats.md, "swanctl";
/// strongSwan's settings_lexer.l).
struct SwanctlWriter {
    private(set) var text = ""
    private var depth = 0

    static func quote(_ value: String) throws -> String {
        var out = "\""
        for ch in value.unicodeScalars {
            switch ch {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if ch.value < 0x20 || ch.value == 0x7f {
                    throw TranslationError("control character in a swanctl value")
                }
                out.unicodeScalars.append(ch)
            }
        }
        return out + "\""
    }

    /// `0s<base64>`: a secret as bytes, immune to quoting and to the `0x`/`0s` prefix trap.
    static func secret(_ bytes: Data) -> String { "0s" + bytes.base64EncodedString() }
    static func secret(_ text: String) -> String { secret(Data(text.utf8)) }

    mutating func open(_ name: String) {
        line("\(name) {")
        depth += 1
    }

    mutating func close() {
        depth -= 1
        line("}")
    }

    mutating func section(_ name: String, _ body: (inout SwanctlWriter) throws -> Void) rethrows {
        open(name)
        try body(&self)
        close()
    }

    /// `key = "value"` (quoted).
    mutating func set(_ key: String, _ value: String) throws { line("\(key) = \(try Self.quote(value))") }
    /// `key = value` verbatim (keywords, numbers, lists of keywords, secrets already encoded).
    mutating func raw(_ key: String, _ value: String) { line("\(key) = \(value)") }

    private mutating func line(_ s: String) { text += String(repeating: "  ", count: depth) + s + "\n" }
}

/// Reads a dictionary key by key; at the end every key must have been consumed or explicitly accepted,
/// otherwise the translation throws (a key it does not understand must not be silently ignored).
struct StrictDictionary {
    let context: String
    private let dict: [String: Any]
    private var used: Set<String> = []

    init(_ value: Any?, context: String) throws {
        guard let dict = value as? [String: Any] else { throw TranslationError("\(context): not a dictionary") }
        self.dict = dict
        self.context = context
    }

    var keys: Set<String> { Set(dict.keys) }

    mutating func has(_ key: String) -> Bool { dict[key] != nil }

    mutating func any(_ key: String) -> Any? {
        used.insert(key)
        return dict[key]
    }

    mutating func string(_ key: String) throws -> String? {
        guard let v = any(key) else { return nil }
        guard let s = v as? String else { throw TranslationError("\(context).\(key): expected a string") }
        return s
    }

    mutating func requiredString(_ key: String) throws -> String {
        guard let s = try string(key) else { throw TranslationError("\(context).\(key) missing") }
        return s
    }

    /// Plist `<integer>` / JSON number (a `<true/>` is a type error: the schema wants integers for these flags).
    mutating func integer(_ key: String) throws -> Int? {
        guard let v = any(key) else { return nil }
        if Self.isBoolean(v) { throw TranslationError("\(context).\(key): expected an integer, found a boolean") }
        guard let i = v as? Int else { throw TranslationError("\(context).\(key): expected an integer") }
        return i
    }

    /// Plist `<true/>`/`<false/>` or JSON boolean.
    mutating func boolean(_ key: String) throws -> Bool? {
        guard let v = any(key) else { return nil }
        guard Self.isBoolean(v), let b = v as? Bool else {
            throw TranslationError("\(context).\(key): expected a boolean")
        }
        return b
    }

    mutating func data(_ key: String) throws -> Data? {
        guard let v = any(key) else { return nil }
        guard let d = v as? Data else { throw TranslationError("\(context).\(key): expected data") }
        return d
    }

    mutating func dictionary(_ key: String) throws -> StrictDictionary? {
        guard let v = any(key) else { return nil }
        return try StrictDictionary(v, context: "\(context).\(key)")
    }

    /// Marks keys as understood without effect on the handshake (device-side behaviour).
    mutating func accept(_ keys: [String]) { for k in keys { used.insert(k) } }

    /// Throws naming every key not consumed or accepted.
    func finish() throws {
        let unknown = Set(dict.keys).subtracting(used).sorted()
        if !unknown.isEmpty {
            throw TranslationError(
                "\(context): keys the translation does not understand: \(unknown.joined(separator: ", "))")
        }
    }

    /// Foundation decodes plist `<true/>` as Swift `Bool` and JSON `true` as `__NSCFBoolean`, but plist
    /// `<integer>` and JSON numbers as `NSNumber`, which `is Bool` also accepts; so look at the dynamic type.
    static func isBoolean(_ v: Any) -> Bool {
        let t = String(describing: type(of: v))
        return t == "Bool" || t == "__NSCFBoolean"
    }
}
