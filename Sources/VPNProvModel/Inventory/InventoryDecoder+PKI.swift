import Foundation
import VPNProvYAML

// `pki:` and `secrets:`: the CA, certificate lifetimes and key types, profile signing, the CRL URL, where
// secrets may come from.

extension InventoryDecoder {
    /// `secrets: {env_prefix: VPN_ | [A_, B_], file_dir: DIR}`.
    func decodeSecrets(
        _ node: YAMLNode, locations: inout [InventoryField: SourceLocation], _ cx: DecodingContext
    ) -> SecretSettings {
        var settings = SecretSettings()
        locations[.secretsSection] = cx.location(node)
        if node.isNull { return settings }
        guard let entries = cx.mapping(node, "'secrets'", keys: SecretsKey.self) else { return settings }
        for (key, _, value) in entries {
            locations[.secrets(key)] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .envPrefix:
                let prefixes: [(String, YAMLNode)]?
                if case .sequence = value.kind {
                    prefixes = cx.stringList(value, "'secrets.env_prefix'")
                } else {
                    prefixes = cx.string(value, "'secrets.env_prefix'").map { [($0, value)] }
                }
                guard let prefixes else { continue }
                var valid: [String] = []
                for (prefix, at) in prefixes {
                    if prefix.isEmpty || !SecretRules.isValidEnvironmentName(prefix) {
                        cx.error(
                            .invalidValue,
                            "'secrets.env_prefix' entry '\(DecodingContext.printable(prefix))' is not the start of an environment variable name "
                                + "(letters, digits, '_', not starting with a digit)", at: at)
                    } else {
                        valid.append(prefix)
                    }
                }
                settings.envPrefixes = valid
            case .fileDirectory:
                guard let dir = cx.string(value, "'secrets.file_dir'") else { continue }
                if dir.isEmpty || TextCheck.hasControlCharacters(dir) {
                    cx.error(
                        .invalidValue, "'secrets.file_dir' must be a directory path without control characters",
                        at: value)
                } else {
                    settings.fileDirectory = dir
                }
            }
        }
        return settings
    }

    static func defaultPKI(deployment: String) -> PKISettings {
        PKISettings(ca: CASettings(name: "\(deployment) VPN Root CA", key: .ecdsaP256, days: 3650))
    }

    func decodePKI(
        _ node: YAMLNode, deployment: String, locations: inout [InventoryField: SourceLocation], _ cx: DecodingContext
    ) -> PKISettings? {
        var settings = Self.defaultPKI(deployment: deployment)
        locations[.pkiSection] = cx.location(node)
        if node.isNull { return settings }
        guard let entries = cx.mapping(node, "'pki'", keys: PKIKey.self) else { return nil }
        var serverKey: KeyType?
        var clientKey: KeyType?
        var signing: ProfileSigningSettings?
        var crlURL: String?
        for (key, _, value) in entries {
            locations[.pki(key)] = cx.location(value)
            switch key {
            case .profileSigning:
                signing = decodeProfileSigning(value, cx)
            case .crlURL:
                if value.isNull { continue }
                guard let url = cx.string(value, "'pki.crl_url'") else { continue }
                if let problem = Self.crlURLProblem(url) {
                    cx.error(.invalidValue, "'pki.crl_url' \(problem)", at: value)
                } else {
                    crlURL = url
                }
            case .ca:
                if value.isNull { continue }
                guard let ca = cx.mapping(value, "'pki.ca'", keys: CAKey.self) else { continue }
                for (caKey, _, caValue) in ca {
                    locations[.ca(caKey)] = cx.location(caValue)
                    switch caKey {
                    case .name:
                        if let s = cx.string(caValue, "'pki.ca.name'") { settings.ca.name = s }
                    case .key:
                        if let k = cx.choice(caValue, "'pki.ca.key'", KeyType.self) { settings.ca.key = k }
                    case .days:
                        if let d = cx.integer(caValue, "'pki.ca.days'", maximum: 36_500) { settings.ca.days = d }
                    }
                }
            case .serverDays:
                if let d = cx.integer(value, "'pki.server_days'", maximum: 36_500) { settings.serverDays = d }
            case .clientDays:
                if let d = cx.integer(value, "'pki.client_days'", maximum: 36_500) { settings.clientDays = d }
            case .serverKey:
                serverKey = cx.choice(value, "'pki.server_key'", KeyType.self)
            case .clientKey:
                clientKey = cx.choice(value, "'pki.client_key'", KeyType.self)
            }
        }
        var pki = PKISettings(
            ca: settings.ca, serverDays: settings.serverDays, clientDays: settings.clientDays,
            serverKey: serverKey, clientKey: clientKey)
        pki.profileSigning = signing
        pki.crlURL = crlURL
        return pki
    }

    /// Why `url` cannot be a CRL distribution point, or nil. Devices fetch CRLs over HTTP (RFC 5280
    /// 4.2.1.13: a DER CRL at an http URI; https is accepted too), the URI goes into every server
    /// certificate as written, and OpenSSL's extension syntax would split it at a comma.
    static func crlURLProblem(_ url: String) -> String? {
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: lower.hasPrefix) else {
            return "must be an http:// or https:// URL (where clients download the CRL), got '\(url)'"
        }
        guard url.utf8.count <= 1024 else { return "is longer than 1024 characters" }
        let forbidden = Set(" ,\"<>\\^`{|}")
        if let bad = url.unicodeScalars.first(where: {
            !$0.isASCII || $0.value < 0x21 || $0.value == 0x7F || forbidden.contains(Character($0))
        }) {
            let shown = bad.value < 0x21 || bad.value == 0x7F ? String(format: "U+%04X", bad.value) : "'\(bad)'"
            return "contains \(shown), which a URL in a certificate cannot carry (percent-encode it)"
        }
        let rest = url.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if authority.contains("@") { return "must not carry a user name or password" }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return "has an unclosed '[' in its host" }
            host = authority[authority.index(after: authority.startIndex)..<close]
        } else {
            host = authority.prefix { $0 != ":" }
        }
        if host.isEmpty { return "has no host" }
        let afterHost = authority.dropFirst(host.count + (authority.hasPrefix("[") ? 2 : 0))
        if let colon = afterHost.first {
            guard colon == ":", let port = Int(afterHost.dropFirst()), (1...65535).contains(port) else {
                return "has a bad port (1 to 65535)"
            }
        }
        return nil
    }

    /// `pki.profile_signing: { cert: file:…, key: file:…, chain: file:… }`: each env:VAR or file:PATH
    /// (a PEM does not fit a YAML scalar written inline, and `gen` cannot make a trusted identity).
    func decodeProfileSigning(_ node: YAMLNode, _ cx: DecodingContext) -> ProfileSigningSettings? {
        if node.isNull { return nil }
        guard let entries = cx.mapping(node, "'pki.profile_signing'", keys: ProfileSigningKey.self) else {
            return nil
        }
        var found: [ProfileSigningKey: SecretSource] = [:]
        for (key, _, value) in entries {
            let field = "'pki.profile_signing.\(key.rawValue)'"
            guard let source = cx.secret(value, field) else {
                if value.isNull { cx.error(.invalidValue, "\(field) needs env:VAR or file:PATH", at: value) }
                continue
            }
            switch source {
            case .env, .file: found[key] = source
            case .generate, .literal:
                cx.error(
                    .invalidValue, "\(field) must be env:VAR or file:PATH (a PEM file or a variable holding one)",
                    at: value)
            }
        }
        for required in [ProfileSigningKey.cert, .key]
        where found[required] == nil && !entries.contains(where: { $0.key == required }) {
            cx.error(.missingKey, "'pki.profile_signing': missing required key '\(required.rawValue)'", at: node)
        }
        guard let cert = found[.cert], let key = found[.key] else { return nil }
        return ProfileSigningSettings(certificate: cert, key: key, chain: found[.chain])
    }
}
