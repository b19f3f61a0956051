import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// YAML document -> typed `Inventory` (schema version 1, docs/inventory.md), decoding every value by the type
/// the schema expects (so `country: NO` stays "NO") and reporting every problem with its position.
/// Defaults from `defaults:` are merged into each node (the node's own value wins).
/// The inventory is returned only when decoding found no error; rule checks are the Validator's job.
package struct InventoryDecoder: Sendable {
    /// Schema versions this build reads.
    static let supportedSchemaVersion = 1

    // The keys of each section are the enums of InventoryKeys.swift.
    /// Keys of a node (and of `defaults:`), as written.
    package static let nodeKeys = NodeKey.allCases.map(\.rawValue)
    /// The MSS range accepted for `network.mss` (RFC 879's 536 up to Ethernet's 1460).
    static let mssRange = 536...1460
    /// Longest idle time accepted for `disconnect_on_idle` (seconds; one day).
    static let maxDisconnectOnIdle = 86_400
    /// Keys of a user, as written.
    static let userKeys = UserKey.allCases.map(\.rawValue)

    /// Default services of a node when neither the node nor `defaults:` names any.
    static let defaultServices: [Service] = [.ikev2EAP]

    /// Path used in diagnostics and `Inventory.file`.
    package var file: String

    package init(file: String) {
        self.file = file
    }

    package struct Result: Sendable {
        package var inventory: Inventory?
        package var diagnostics: [Diagnostic]
        /// Lines of the source holding literal secrets; diagnostic printers must not show them.
        package var secretLines: Set<Int>
        /// Literal secret values, and scalar values of unknown keys: hidden from every message.
        package var secretValues: Set<String> = []
        /// Lines shown only up to a column: an unknown key's value that may be a secret starts there.
        package var cutLines: [Int: Int] = [:]
        /// With decoding errors, the parts that decoded cleanly (nil when there is nothing to check:
        /// a YAML error, another schema version, no deployment name): the rule checks run over it,
        /// so one run reports the schema errors and everything the rest of the inventory gets.
        package var partial: Inventory?
        /// What `partial` leaves out or holds incomplete, so the rule checks skip what depends on it.
        package var broken = BrokenParts()
    }

    /// The parts of an inventory whose decoding failed (docs/diagnostics.md, "one pass").
    package struct BrokenParts: Sendable, Hashable {
        /// Nodes with an error of their own or in a `defaults:` field they inherit: left out.
        package var nodes: Set<String> = []
        /// Users with an error: left out.
        package var users: Set<String> = []
        /// Users (decoded cleanly) on a broken node: what they get from their nodes is not judged.
        var usersOnBrokenNodes: Set<String> = []
        /// `pki:` / `secrets:` had an error: the rules that read them are skipped.
        package var pki = false
        package var secrets = false
        /// `accounts:` had an error: the rules that read it are skipped.
        package var accounts = false
        package init() {}
    }

    package func decode(_ root: YAMLNode?) -> Result {
        let cx = DecodingContext(file: file)
        var broken = BrokenParts()
        let inventory = decode(root, &broken, cx)
        var result = Result(
            inventory: cx.hasErrors ? nil : inventory, diagnostics: cx.diagnostics, secretLines: cx.secretLines,
            secretValues: cx.secretValues, cutLines: cx.cutLines)
        if cx.hasErrors, var partial = inventory {
            partial.nodes.removeAll { broken.nodes.contains($0.name) }
            partial.users.removeAll { broken.users.contains($0.name) }
            for i in partial.users.indices where broken.usersOnBrokenNodes.contains(partial.users[i].name) {
                partial.users[i].nodes.removeAll { broken.nodes.contains($0) }
            }
            result.partial = partial
            result.broken = broken
        }
        return result
    }

    // MARK: - Top level

    private func decode(_ root: YAMLNode?, _ broken: inout BrokenParts, _ cx: DecodingContext) -> Inventory? {
        guard let root = checkedRoot(root, cx),
            let entries = cx.mapping(root, "the inventory", keys: TopLevelKey.self)
        else { return nil }
        let value = { (key: TopLevelKey) in entries.first { $0.key == key }?.value }
        if value(.vpnprov) == nil {
            cx.error(
                .missingKey,
                "missing required key 'vpnprov' (the schema version, 'vpnprov: \(Self.supportedSchemaVersion)')",
                at: root)
        }

        // Where top-level and pki values are written, so their diagnostics point there (not at 1:1).
        var locations: [InventoryField: SourceLocation] = [:]
        let name = decodeName(value(.name), root: root, locations: &locations, cx)
        let deployment = name ?? "vpnprov"

        var errors = cx.errorCount
        let pki =
            value(.pki).flatMap { decodePKI($0, deployment: deployment, locations: &locations, cx) }
            ?? Self.defaultPKI(deployment: deployment)
        broken.pki = cx.errorCount > errors

        let (nodes, declaredNodes) = decodeNodes(value(.nodes), defaults: value(.defaults), &broken, cx)
        let users = decodeUsers(
            value(.users), deployment: deployment, nodes: nodes, declaredNodes: declaredNodes, &broken, cx)

        errors = cx.errorCount
        let secrets = value(.secrets).map { decodeSecrets($0, locations: &locations, cx) } ?? SecretSettings()
        broken.secrets = cx.errorCount > errors

        errors = cx.errorCount
        let accounts = value(.accounts).flatMap { $0.isNull ? nil : decodeAccounts($0, cx) }
        broken.accounts = cx.errorCount > errors

        let acme = value(.acme).flatMap { $0.isNull ? nil : decodeACME($0, cx) }
        let monitoring = value(.monitoring).flatMap { $0.isNull ? nil : decodeMonitoring($0, cx) }
        let handOff = value(.handoff).flatMap { $0.isNull ? nil : decodeHandOff($0, cx) }

        let acknowledgements = value(.acknowledge).map { $0.isNull ? [] : decodeAcknowledgements($0, cx) } ?? []

        guard let name else { return nil }
        var inventory = Inventory(
            file: file, schemaVersion: Self.supportedSchemaVersion, name: name, pki: pki, nodes: nodes, users: users,
            fieldLocations: locations)
        inventory.secrets = secrets
        inventory.acknowledgements = acknowledgements
        inventory.accounts = accounts
        inventory.acme = acme
        inventory.monitoring = monitoring
        inventory.handOff = handOff
        return inventory
    }

    /// The document's root, or nil (reported) when it is empty or names another schema version: a
    /// different version makes every other message noise, so it is checked first.
    private func checkedRoot(_ root: YAMLNode?, _ cx: DecodingContext) -> YAMLNode? {
        guard let root, !root.isNull else {
            cx.append(
                .error(
                    .emptyInventory, "the inventory is empty; it needs at least 'vpnprov: 1' and 'name:'",
                    at: SourceLocation(file: file, line: 1, column: 1)))
            return nil
        }
        if case .mapping(let pairs) = root.kind, let v = pairs.first(where: { $0.key.scalar == "vpnprov" })?.value {
            guard case .scalar(let s, true) = v.kind, s == String(Self.supportedSchemaVersion) else {
                let shown = v.scalar.map { "'\(DecodingContext.printable($0))'" } ?? cx.describe(v)
                cx.error(
                    .schemaVersion,
                    "unsupported schema version \(shown); this vpnprov reads 'vpnprov: \(Self.supportedSchemaVersion)'",
                    at: v)
                return nil
            }
        }
        return root
    }

    /// `name:` (the deployment name), required; nil (reported) when missing or not a string.
    private func decodeName(
        _ value: YAMLNode?, root: YAMLNode, locations: inout [InventoryField: SourceLocation], _ cx: DecodingContext
    ) -> String? {
        guard let value else {
            cx.error(.missingKey, "missing required key 'name' (the deployment name)", at: root)
            return nil
        }
        let name = cx.string(value, "'name'")
        locations[.name] = cx.location(value)
        if value.isNull { cx.error(.typeMismatch, "'name' must be a string, found null", at: value) }
        return name
    }

    /// `nodes:`, each node merged with `defaults:` (`defaultsNode`). Returns the nodes that decoded and
    /// every name under `nodes:` (a user naming a node that failed to decode gets no second error: the
    /// node's own error says what is wrong); the nodes with an error (their own, or in a `defaults:`
    /// value they inherit) go into `broken`.
    private func decodeNodes(
        _ nodesNode: YAMLNode?, defaults defaultsNode: YAMLNode?, _ broken: inout BrokenParts, _ cx: DecodingContext
    ) -> (nodes: [Node], declared: Set<String>) {
        var defaults = NodeFields()
        if let defaultsNode, !defaultsNode.isNull {
            defaults = decodeNodeFields(defaultsNode, "defaults", cx)
        }
        // The keys each node writes itself: a node writing a key whose `defaults:` value is broken
        // does not depend on it.
        var ownFields: [String: Set<String>] = [:]
        if let nodesNode, case .mapping(let pairs) = nodesNode.kind {
            for pair in pairs {
                guard let name = pair.key.scalar, case .mapping(let fields) = pair.value.kind else { continue }
                ownFields[name] = Set(fields.compactMap(\.key.scalar))
            }
        }
        var nodes: [Node] = []
        var declaredNodes = Set<String>()
        if let nodesNode, !nodesNode.isNull, let list = cx.mapping(nodesNode, "'nodes'") {
            declaredNodes = Set(list.map(\.key))
            for entry in list {
                let errors = cx.errorCount
                let node = decodeNode(
                    name: entry.key, keyNode: entry.keyNode, value: entry.value, defaults: defaults, cx)
                if let node { nodes.append(node) }
                if node == nil || cx.errorCount > errors
                    || node.map({ defaults.breaks($0.name, own: ownFields[$0.name]) }) == true
                {
                    broken.nodes.insert(entry.key)
                }
            }
        }
        return (nodes, declaredNodes)
    }

    /// `users:`, each checked against the decoded `nodes` (and the `declaredNodes` names). Users with an
    /// error, and users on a broken node, go into `broken`.
    private func decodeUsers(
        _ usersNode: YAMLNode?, deployment: String, nodes: [Node], declaredNodes: Set<String>,
        _ broken: inout BrokenParts, _ cx: DecodingContext
    ) -> [User] {
        guard let usersNode, !usersNode.isNull, let list = cx.mapping(usersNode, "'users'") else { return [] }
        var users: [User] = []
        let nodeNames = nodes.map(\.name)
        // Each node name's first position: user node lists are checked and ordered with it, not
        // by scanning every node per user.
        var nodePositions: [String: Int] = [:]
        nodePositions.reserveCapacity(nodeNames.count)
        for (i, name) in nodeNames.enumerated() where nodePositions[name] == nil { nodePositions[name] = i }
        for entry in list {
            let errors = cx.errorCount
            var named: [String]?
            let user = decodeUser(
                name: entry.key, keyNode: entry.keyNode, value: entry.value, deployment: deployment,
                nodeNames: nodeNames,
                declaredNodes: declaredNodes, nodePositions: nodePositions, named: &named, cx)
            if let user { users.append(user) }
            if user == nil || cx.errorCount > errors {
                broken.users.insert(entry.key)
            } else if named.map({ $0.contains(where: broken.nodes.contains) }) ?? !broken.nodes.isEmpty {
                // On a broken node by its `nodes:`, or by default on every node.
                broken.usersOnBrokenNodes.insert(entry.key)
            }
        }
        return users
    }

    /// `acknowledge: [{rule: CODE, node: NAME, user: NAME, service: SERVICE, reason: TEXT}]`: the
    /// entries are checked against the rules and the findings by `Acknowledgements`.
    private func decodeAcknowledgements(_ node: YAMLNode, _ cx: DecodingContext) -> [Acknowledgement] {
        guard case .sequence(let items) = node.kind else {
            cx.error(
                .typeMismatch,
                "'acknowledge' must be a list of entries with rule, node, user or service, and reason, found \(cx.describe(node))",
                at: node)
            return []
        }
        var result: [Acknowledgement] = []
        for (i, item) in items.enumerated() {
            let what = "'acknowledge' entry \(i + 1)"
            guard let entries = cx.mapping(item, what, keys: AcknowledgementKey.self) else { continue }
            var rule: (String, YAMLNode)?
            var reason: String?
            var nodeName: String?
            var userName: String?
            var service: Service?
            var ok = true
            /// The value of a key that takes text; nil (reported) when it is not a string.
            func readText(_ value: YAMLNode, _ field: String) -> String? {
                guard let text = cx.string(value, field) else {
                    if value.isNull { cx.error(.typeMismatch, "\(field) must be a string, found null", at: value) }
                    ok = false
                    return nil
                }
                return text
            }
            for (key, _, value) in entries {
                let field = "\(what): '\(key.rawValue)'"
                switch key {
                case .service:
                    service = cx.choice(value, field, Service.self)
                    if service == nil { ok = false }
                case .rule:
                    if let text = readText(value, field) { rule = (text, value) }
                case .reason:
                    guard let text = readText(value, field) else { continue }
                    if text.allSatisfy(\.isWhitespace) {
                        cx.error(
                            .invalidValue,
                            "\(field) must say why the warning is kept; it is shown with the warning in JSON and SARIF",
                            at: value)
                        ok = false
                    }
                    reason = text
                case .node:
                    nodeName = readText(value, field)
                case .user:
                    userName = readText(value, field)
                }
            }
            if rule == nil && !entries.contains(where: { $0.key == .rule }) {
                cx.error(
                    .missingKey,
                    "\(what): missing required key 'rule' (the code of the warning, as printed in brackets)", at: item)
            }
            if reason == nil && !entries.contains(where: { $0.key == .reason }) {
                cx.error(.missingKey, "\(what): missing required key 'reason' (why the warning is kept)", at: item)
            }
            guard ok, let (code, ruleNode) = rule, let reason else { continue }
            result.append(
                Acknowledgement(
                    rule: RuleCode(code), node: nodeName, user: userName, service: service, reason: reason,
                    location: cx.location(item), ruleLocation: cx.location(ruleNode)))
        }
        return result
    }

    /// `secrets: {env_prefix: VPN_ | [A_, B_], file_dir: DIR}`.
    private func decodeSecrets(
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

    private func decodePKI(
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
    private func decodeProfileSigning(_ node: YAMLNode, _ cx: DecodingContext) -> ProfileSigningSettings? {
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

    // MARK: - Nodes

    /// A node's fields as written (in `defaults:` or the node itself), before merging.
    struct NodeFields {
        var address: String?
        var id: IKEIdentity?
        var region: String?
        var country: String?
        var tier: Tier?
        var pool: CIDR?
        var pool6: CIDR?
        var services: [Service]?
        var psk: SecretSource?
        var group: String?
        var ike: [String]?
        var esp: [String]?
        var dns: [String]?
        var apple = AppleOptions()
        var deployHost: String?
        var deployPort: Int?
        var deployUser: String?
        var deployBecome: Bool?
        var uplink: String?
        var mss: NodeNetwork.MSS?
        var isolateClients: Bool?
        var ipsec: NodeNetwork.IPsecPath?
        var ipv6: NodeNetwork.IPv6Mode?
        var allowPrivate: [CIDR]?
        var accounts: AccountSource?
        var radiusAddress: String?
        var certificate: CertificateSource?
        var quantumSafe: QuantumSafe?
        var state: NodeState?
        var locations: [NodeField: SourceLocation] = [:]
        /// Keys whose value had an error.
        var failed: Set<NodeKey> = []
        /// The mapping itself had an error (an unknown key, not a mapping).
        var mappingFailed = false
        /// Errors found in the values of `failed`.
        var failedCount = 0

        /// A node depends on a broken `defaults:` field when it does not write that key itself (`own`: the
        /// keys it writes, as written).
        func breaks(_ node: String, own: Set<String>?) -> Bool {
            if mappingFailed { return true }
            return failed.contains { !(own ?? []).contains($0.rawValue) }
        }
    }

    /// A node's `apple:` mapping; field locations go to `locations` as `.apple(key)`.
    private func decodeApple(
        _ node: YAMLNode, _ what: String, locations: inout [NodeField: SourceLocation], _ cx: DecodingContext
    ) -> AppleOptions {
        let entries = cx.mapping(node, "\(what): 'apple'", keys: AppleKey.self)
        return decodeApple(entries, what, cx) { locations[.apple($0)] = $1 }
    }

    /// A user's `apple:` mapping (the keys of `UserAppleKey`); field locations go to `locations` as `.apple(key)`.
    private func decodeUserApple(
        _ node: YAMLNode, _ what: String, locations: inout [UserField: SourceLocation], _ cx: DecodingContext
    ) -> AppleOptions {
        let entries = cx.mapping(node, "\(what): 'apple'", keys: UserAppleKey.self)?.map {
            (key: $0.key.appleKey, keyNode: $0.keyNode, value: $0.value)
        }
        return decodeApple(entries, what, cx) { locations[.apple($0)] = $1 }
    }

    /// The entries of an `apple:` mapping; `record` keeps where each value was written.
    private func decodeApple(
        _ entries: [(key: AppleKey, keyNode: YAMLNode, value: YAMLNode)]?, _ what: String, _ cx: DecodingContext,
        record: (AppleKey, SourceLocation) -> Void
    ) -> AppleOptions {
        var o = AppleOptions()
        guard let entries else { return o }
        for (key, _, value) in entries {
            if value.isNull { continue }
            let field = "\(what): 'apple.\(key.rawValue)'"
            switch key {
            case .onDemand: o.onDemand = cx.bool(value, field)
            case .includeAllNetworks: o.includeAllNetworks = cx.bool(value, field)
            case .excludeLocalNetworks: o.excludeLocalNetworks = cx.bool(value, field)
            case .pfs: o.pfs = cx.bool(value, field)
            case .crlCheck: o.crlCheck = cx.bool(value, field)
            case .dpd: o.dpd = cx.choice(value, field, AppleDPDRate.self)
            case .disconnectOnIdle:
                o.disconnectOnIdle = cx.integer(value, field, minimum: 0, maximum: Self.maxDisconnectOnIdle)
            case .trustedSSIDs:
                guard let list = cx.stringList(value, field) else { continue }
                var ssids: [String] = []
                var repeats = DecodingContext.Repeats()
                defer { repeats.report(field, shown: DecodingContext.printable, into: cx) }
                for (ssid, item) in list {
                    // 802.11 SSIDs are 1 to 32 octets.
                    if ssid.isEmpty || ssid.utf8.count > 32 {
                        cx.error(
                            .invalidValue,
                            "\(field): '\(DecodingContext.printable(ssid))' is not a Wi-Fi network name (1 to 32 bytes)",
                            at: item)
                    } else if let bad = ssid.unicodeScalars.first(where: {
                        !TextCheck.xmlCanCarry($0) || TextCheck.isControl($0)
                    }) {
                        // The name goes into the Apple profile's XML (SSIDMatch), which cannot carry
                        // U+0000...U+001F but tab and line breaks, U+FFFE or U+FFFF, and a device would
                        // not match a name with any other control character either.
                        cx.error(
                            .unrepresentableText,
                            "\(field): '\(DecodingContext.printable(ssid))' contains \(String(format: "U+%04X", bad.value)), which an Apple profile cannot carry",
                            at: item)
                    } else if ssids.contains(ssid) {
                        repeats.add(ssid, at: item)
                    } else {
                        ssids.append(ssid)
                    }
                }
                o.trustedSSIDs = ssids
            }
            record(key, cx.location(value))
        }
        return o
    }

    private func decodeNodeFields(_ node: YAMLNode, _ what: String, _ cx: DecodingContext) -> NodeFields {
        let start = cx.errorCount
        var f = decodeNodeFieldValues(node, what, cx)
        if cx.errorCount - start > f.failedCount { f.mappingFailed = true }
        return f
    }

    /// The fields of `decodeNodeFields`, with the keys whose value had an error in `failed`.
    private func decodeNodeFieldValues(_ node: YAMLNode, _ what: String, _ cx: DecodingContext) -> NodeFields {
        var f = NodeFields()
        guard let entries = cx.mapping(node, what, keys: NodeKey.self) else { return f }
        for (key, _, value) in entries {
            if value.isNull { continue }
            let before = cx.errorCount
            defer {
                if cx.errorCount > before {
                    f.failed.insert(key)
                    f.failedCount += cx.errorCount - before
                }
            }
            let field = "\(what): '\(key.rawValue)'"
            var ok = true
            switch key {
            case .address:
                f.address = cx.string(value, field)
                ok = f.address != nil
            case .id:
                f.id = cx.string(value, field).map(IKEIdentity.classify)
                ok = f.id != nil
            case .region:
                f.region = cx.string(value, field)
            case .country:
                f.country = cx.string(value, field)
            case .tier:
                f.tier = cx.choice(value, field, Tier.self)
            case .pool:
                f.pool = cx.cidr(value, field, ipv6: false)
            case .pool6:
                f.pool6 = cx.cidr(value, field, ipv6: true)
            case .services:
                // Stored in `Service.allCases` order, unique.
                f.services = cx.choiceList(value, field, Service.self)?.sorted()
            case .psk:
                f.psk = cx.secret(value, field)
            case .group:
                f.group = cx.string(value, field)
            case .proposals:
                guard let p = cx.mapping(value, field, keys: ProposalKey.self) else { continue }
                for (pk, _, pv) in p {
                    let list = cx.stringList(pv, "\(what): 'proposals.\(pk.rawValue)'")?.map(\.0)
                    switch pk {
                    case .ike: f.ike = list
                    case .esp: f.esp = list
                    }
                    if list != nil { f.locations[.proposals(pk)] = cx.location(pv) }
                }
            case .apple:
                f.apple = decodeApple(value, what, locations: &f.locations, cx)
            case .deploy:
                guard let d = cx.mapping(value, field, keys: DeployKey.self) else { continue }
                for (dk, _, dv) in d {
                    if dv.isNull { continue }
                    let sub = "\(what): 'deploy.\(dk.rawValue)'"
                    switch dk {
                    case .host: f.deployHost = cx.string(dv, sub)
                    case .port: f.deployPort = cx.integer(dv, sub, minimum: 1, maximum: 65535)
                    case .user: f.deployUser = cx.string(dv, sub)
                    case .become: f.deployBecome = cx.bool(dv, sub)
                    }
                    f.locations[.deploy(dk)] = cx.location(dv)
                }
            case .network:
                decodeNetwork(value, what, into: &f, cx)
            case .accounts:
                f.accounts = cx.choice(value, field, AccountSource.self)
            case .radiusAddress:
                // The node's own address on the path to its RADIUS servers: its RADIUS client's address there and
                // the source of its RADIUS, an address literal in canonical form (docs/accounts.md).
                guard let text = cx.string(value, field) else { continue }
                guard let bytes = IPAddressText.parse(text) else {
                    cx.error(
                        .invalidValue,
                        "\(field): '\(DecodingContext.printable(text))' is not an IPv4 or IPv6 address (the node's own address towards its RADIUS servers)",
                        at: value)
                    continue
                }
                f.radiusAddress = IPAddressText.format(bytes)
            case .certificate:
                f.certificate = cx.choice(value, field, CertificateSource.self)
            case .quantumSafe:
                f.quantumSafe = decodeQuantumSafe(value, what, into: &f, cx)
            case .state:
                f.state = cx.choice(value, field, NodeState.self)
            case .dns:
                if let list = cx.stringList(value, field) {
                    var servers: [String] = []
                    for (s, item) in list {
                        if IPAddressText.parse(s) == nil {
                            cx.error(
                                .invalidValue,
                                "\(field): '\(DecodingContext.printable(s))' is not an IPv4 or IPv6 address", at: item)
                            continue
                        }
                        servers.append(s)
                    }
                    f.dns = servers
                }
            }
            if ok { f.locations[.key(key)] = cx.location(value) }
        }
        return f
    }

    /// A `network:` mapping. Interface names follow the kernel's rules (1 to 15 bytes, no `/`, no
    /// space), narrowed to the characters every output that names them can carry unquoted.
    private func decodeNetwork(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext) {
        guard let entries = cx.mapping(value, "\(what): 'network'", keys: NetworkKey.self) else { return }
        for (key, _, v) in entries {
            if v.isNull { continue }
            let field = "\(what): 'network.\(key.rawValue)'"
            switch key {
            case .uplink:
                guard let name = cx.string(v, field) else { continue }
                guard Self.isInterfaceName(name) else {
                    cx.error(
                        .invalidValue,
                        "\(field): '\(DecodingContext.printable(name))' is not a network interface name (1 to 15 of A-Z a-z 0-9 . _ -, not '.' or '..')",
                        at: v)
                    continue
                }
                f.uplink = name
            case .mss:
                if case .scalar(let text, _) = v.kind, text == "auto" {
                    f.mss = .routeMTU
                } else if let n = cx.integer(
                    v, field, minimum: Self.mssRange.lowerBound, maximum: Self.mssRange.upperBound)
                {
                    f.mss = .fixed(n)
                } else {
                    continue
                }
            case .isolateClients:
                guard let b = cx.bool(v, field) else { continue }
                f.isolateClients = b
            case .ipsec:
                guard let c = cx.choice(v, field, NodeNetwork.IPsecPath.self) else { continue }
                f.ipsec = c
            case .allowPrivate:
                // Addresses or CIDR networks of either family, like accounts.disconnect_from; each entry's
                // line is kept for the validator (`network.allow_private.<index>`).
                guard let list = cx.stringList(v, field) else { continue }
                var networks: [CIDR] = []
                for (text, item) in list {
                    let single = IPAddressText.parse(text).map { CIDR(address: $0, prefix: $0.count * 8) }
                    guard let network = single ?? cx.cidr(item, "\(field) entry", ipv6: text.contains(":")) else {
                        continue
                    }
                    f.locations[.allowPrivate(networks.count)] = cx.location(item)
                    networks.append(network)
                }
                f.allowPrivate = networks
            case .ipv6:
                guard let c = cx.choice(v, field, NodeNetwork.IPv6Mode.self) else { continue }
                f.ipv6 = c
            }
            f.locations[.network(key)] = cx.location(v)
        }
    }

    /// `quantum_safe: {ml_kem: [mlkem768], classical_fallback: false, ppk: required|optional}`: at least one of
    /// `ml_kem` and `ppk`; each bad value at its line. nil (reported) when nothing usable was written.
    private func decodeQuantumSafe(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext)
        -> QuantumSafe?
    {
        guard let entries = cx.mapping(value, "\(what): 'quantum_safe'", keys: QuantumSafeKey.self) else { return nil }
        var settings = QuantumSafe(mlKEM: [], classicalFallback: false, ppk: nil)
        var ok = true
        for (key, _, v) in entries {
            if v.isNull { continue }
            let field = "\(what): 'quantum_safe.\(key.rawValue)'"
            switch key {
            case .mlKEM:
                guard let list = cx.choiceList(v, field, QuantumSafe.MLKEM.self) else {
                    ok = false
                    continue
                }
                if list.isEmpty {
                    cx.error(
                        .invalidValue, "\(field) names no ML-KEM parameter set (mlkem512, mlkem768, mlkem1024)", at: v)
                    ok = false
                    continue
                }
                settings.mlKEM = list
            case .classicalFallback:
                guard let b = cx.bool(v, field) else {
                    ok = false
                    continue
                }
                settings.classicalFallback = b
            case .ppk:
                guard let mode = cx.choice(v, field, QuantumSafe.PPKMode.self) else {
                    ok = false
                    continue
                }
                settings.ppk = mode
            }
            f.locations[.quantumSafe(key)] = cx.location(v)
        }
        guard ok else { return nil }
        if settings.mlKEM.isEmpty && settings.ppk == nil {
            cx.error(
                .missingKey,
                "\(what): 'quantum_safe' needs 'ml_kem' (a hybrid key exchange, e.g. [mlkem768]) or 'ppk' (required or optional), or both",
                at: value)
            return nil
        }
        return settings
    }

    /// A Linux interface name vpnprov writes into nftables and sysctl files.
    static func isInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...15).contains(bytes.count), name != ".", name != ".." else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
                || b == 0x2D
        }
    }

    private func decodeNode(
        name: String, keyNode: YAMLNode, value: YAMLNode, defaults: NodeFields, _ cx: DecodingContext
    ) -> Node? {
        let what = "node '\(DecodingContext.printable(name))'"
        if Self.misplacedField(name, keyNode, value, keys: Self.nodeKeys, under: "nodes", kind: "node", cx) {
            return nil
        }
        let own = value.isNull ? NodeFields() : decodeNodeFields(value, what, cx)
        if case .mapping = value.kind {} else if !value.isNull { return nil }

        var locations = defaults.locations
        locations.merge(own.locations) { _, node in node }

        guard let address = own.address ?? defaults.address else {
            cx.error(
                .missingKey, "\(what): missing required key 'address' (what clients dial: IPv4, IPv6 or DNS name)",
                at: keyNode)
            return nil
        }
        let id = own.id ?? defaults.id ?? IKEIdentity.classify(address)
        if locations[.key(.id)] == nil { locations[.key(.id)] = locations[.key(.address)] }
        let proposals = Proposals(
            ike: own.ike ?? defaults.ike ?? Proposals.defaults.ike,
            esp: own.esp ?? defaults.esp ?? Proposals.defaults.esp)
        if locations[.key(.proposals)] == nil {
            locations[.key(.proposals)] = locations[.proposals(.ike)] ?? locations[.proposals(.esp)]
        }
        var node = Node(
            name: name, address: address, id: id,
            region: own.region ?? defaults.region, country: own.country ?? defaults.country,
            tier: own.tier ?? defaults.tier ?? .free,
            pool: own.pool ?? defaults.pool, pool6: own.pool6 ?? defaults.pool6,
            services: own.services ?? defaults.services ?? Self.defaultServices,
            psk: own.psk ?? defaults.psk, group: own.group ?? defaults.group,
            proposals: proposals, dns: own.dns ?? defaults.dns ?? [],
            deploy: DeployTarget(
                host: own.deployHost ?? defaults.deployHost, port: own.deployPort ?? defaults.deployPort ?? 22,
                user: own.deployUser ?? defaults.deployUser ?? "root",
                become: own.deployBecome ?? defaults.deployBecome ?? false),
            location: cx.location(keyNode), fieldLocations: locations)
        node.apple = own.apple.over(defaults.apple)
        node.network = NodeNetwork(
            uplink: own.uplink ?? defaults.uplink, mss: own.mss ?? defaults.mss ?? .fixed(NodeNetwork.defaultMSS),
            isolateClients: own.isolateClients ?? defaults.isolateClients ?? true,
            ipsec: own.ipsec ?? defaults.ipsec ?? .xfrm,
            ipv6: own.ipv6 ?? defaults.ipv6, allowPrivate: own.allowPrivate ?? defaults.allowPrivate ?? [])
        node.accounts = own.accounts ?? defaults.accounts ?? .inventory
        node.radiusAddress = own.radiusAddress ?? defaults.radiusAddress
        // A node's quantum_safe: replaces the whole of defaults' (its keys are read together).
        node.quantumSafe = own.quantumSafe ?? (own.locations[.key(.quantumSafe)] == nil ? defaults.quantumSafe : nil)
        node.certificate = own.certificate ?? defaults.certificate ?? .ca
        node.state = own.state ?? defaults.state ?? .active
        return node
    }

    // MARK: - Users

    /// A field written one level too far left (`pool:` under `nodes:` instead of under its node)
    /// reads as an entry named after the field with a scalar value: say so, instead of "node 'pool'
    /// must be a mapping". True when reported.
    static func misplacedField(
        _ name: String, _ keyNode: YAMLNode, _ value: YAMLNode, keys: [String], under list: String, kind: String,
        _ cx: DecodingContext
    ) -> Bool {
        guard keys.contains(name) else { return false }
        if case .mapping = value.kind { return false }
        cx.error(
            .typeMismatch,
            "'\(name)' is a \(kind) field, but it is indented as a \(kind) name directly under '\(list):'; "
                + "indent it to line up with the other fields of the \(kind) it belongs to",
            at: keyNode)
        return true
    }

    private func decodeUser(
        name: String, keyNode: YAMLNode, value: YAMLNode, deployment: String, nodeNames: [String],
        declaredNodes: Set<String>,
        nodePositions: [String: Int], named: inout [String]?, _ cx: DecodingContext
    ) -> User? {
        let what = "user '\(DecodingContext.printable(name))'"
        if Self.misplacedField(name, keyNode, value, keys: Self.userKeys, under: "users", kind: "user", cx) {
            return nil
        }
        var password: SecretSource?
        var cert = false
        var id: IKEIdentity?
        var nodes = nodeNames
        var devices = Device.defaults
        var revoked = false
        var apple = AppleOptions()
        var locations: [UserField: SourceLocation] = [:]

        if !value.isNull {
            guard let entries = cx.mapping(value, what, keys: UserKey.self) else { return nil }
            for (key, _, v) in entries {
                if v.isNull { continue }
                let field = "\(what): '\(key.rawValue)'"
                var ok = true
                switch key {
                case .password:
                    password = cx.secret(v, field)
                    ok = password != nil
                case .cert:
                    if let b = cx.bool(v, field) { cert = b } else { ok = false }
                case .id:
                    if let s = cx.string(v, field) { id = IKEIdentity.classify(s) } else { ok = false }
                case .nodes:
                    guard let list = cx.stringList(v, field) else {
                        ok = false
                        break
                    }
                    // The nodes the user depends on (nil without `nodes:`: every node).
                    named = list.map(\.0)
                    var chosen = Set<String>()
                    var repeats = DecodingContext.Repeats()
                    defer { repeats.report(field, into: cx) }
                    for (n, item) in list {
                        if nodePositions[n] == nil {
                            if declaredNodes.contains(n) { continue }
                            cx.error(
                                .unknownNode,
                                "\(field): no node named '\(DecodingContext.printable(n))'"
                                    + DecodingContext.hint(for: n, among: nodeNames), at: item)
                        } else if !chosen.insert(n).inserted {
                            repeats.add(n, at: item)
                        }
                    }
                    nodes = chosen.sorted { nodePositions[$0]! < nodePositions[$1]! }
                case .devices:
                    if let d = cx.choiceList(v, field, Device.self) {
                        devices = Device.allCases.filter(d.contains)
                    } else {
                        ok = false
                    }
                case .apple:
                    apple = decodeUserApple(v, what, locations: &locations, cx)
                case .revoked:
                    if let b = cx.bool(v, field) { revoked = b } else { ok = false }
                }
                if ok { locations[.key(key)] = cx.location(v) }
            }
        }
        if id == nil { id = .userFQDN("\(name)@\(deployment)") }
        var user = User(
            name: name, password: password, cert: cert, id: id!, nodes: nodes, devices: devices, revoked: revoked,
            location: cx.location(keyNode), fieldLocations: locations)
        user.apple = apple
        return user
    }
}

/// Reads an inventory file: bytes -> YAML -> typed model, with diagnostics.
package enum InventoryLoader {
    /// The file could not be read at all (a usage/environment problem, not an inventory error).
    package struct FileError: Error, Sendable, Hashable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
        package var description: String { "cannot read inventory '\(path)': \(reason)" }
    }

    /// Largest inventory accepted (bytes).
    package static let maxFileSize = BoundedFile.inventoryLimit

    /// Reads and decodes the inventory at `path` (shown as `displayPath ?? path` in diagnostics).
    /// Throws only when the file cannot be read.
    package static func load(path: String, displayPath: String? = nil) throws(FileError) -> (Inventory?, [Diagnostic]) {
        let bytes = try readFile(path)
        let result = decode(bytes: bytes, file: displayPath ?? path)
        return (result.inventory, result.diagnostics)
    }

    /// Decodes inventory text already in memory.
    package static func decode(bytes: [UInt8], file: String) -> InventoryDecoder.Result {
        let root: YAMLNode?
        do {
            root = try YAMLLoader.load(bytes: bytes)
        } catch {
            return InventoryDecoder.Result(
                inventory: nil, diagnostics: [diagnostic(for: error, file: file, source: bytes)], secretLines: [])
        }
        return InventoryDecoder(file: file).decode(root)
    }

    static func diagnostic(for error: YAMLError, file: String, source: [UInt8]) -> Diagnostic {
        let code: RuleCode
        switch error.kind {
        case .syntax: code = .yamlSyntax
        case .multipleDocuments: code = .multipleDocuments
        case .duplicateKey: code = .duplicateKey
        case .aliasLimit: code = .aliasLimit
        case .depthLimit: code = .depthLimit
        case .invalidUTF8: code = .invalidUTF8
        case .invalidCharacter: code = .invalidCharacter
        case .scalarTooLong: code = .scalarTooLong
        case .tag: code = .yamlTag
        }
        let at = error.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
        var notes: [Diagnostic.Note] = []
        if let other = error.otherMark {
            let note = error.kind == .duplicateKey ? "first defined here" : "while parsing this"
            notes.append(
                .init(location: SourceLocation(file: file, line: other.line, column: other.column), message: note))
        }
        // libyaml names where it gave up; for an indentation mistake that can be the line after the
        // wrong one. The finding then points at the wrong line and says what to change there.
        if error.kind == .syntax, let mark = error.mark,
            let hint = IndentationHint.hint(
                for: (error.message, mark.line, mark.column, error.otherMark?.line, error.otherMark?.column),
                source: source)
        {
            var notes = notes
            if hint.line != mark.line {
                notes.insert(.init(location: at, message: "the YAML parser stopped here"), at: 0)
            }
            return .error(
                code, "\(error.message); \(hint.text)",
                at: SourceLocation(file: file, line: hint.line, column: hint.column), notes: notes)
        }
        return .error(code, error.message, at: at ?? SourceLocation(file: file, line: 1, column: 1), notes: notes)
    }

    /// Reads a whole file, refusing anything but a regular file and oversized files (BoundedFile).
    package static func readFile(_ path: String) throws(FileError) -> [UInt8] {
        do {
            return try BoundedFile.read(path, limit: maxFileSize)
        } catch {
            throw FileError(path: path, reason: error.reason)
        }
    }
}
