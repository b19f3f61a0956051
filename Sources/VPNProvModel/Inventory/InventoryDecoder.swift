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
}
