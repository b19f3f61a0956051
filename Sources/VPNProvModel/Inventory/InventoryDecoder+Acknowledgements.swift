import VPNProvYAML

extension InventoryDecoder {
    /// `acknowledge: [{rule: CODE, node: NAME, user: NAME, service: SERVICE, reason: TEXT}]`: the
    /// entries are checked against the rules and the findings by `Acknowledgements`.
    func decodeAcknowledgements(_ node: YAMLNode, _ cx: DecodingContext) -> [Acknowledgement] {
        guard case .sequence(let items) = node.kind else {
            cx.error(
                .typeMismatch,
                "'acknowledge' must be a list of entries with rule, node, user or service, and reason, found \(cx.describe(node))",
                at: node)
            return []
        }
        return items.enumerated().compactMap { i, item in
            decodeAcknowledgement(item, "'acknowledge' entry \(i + 1)", cx)
        }
    }

    /// One `acknowledge:` entry; nil (reported) when a key is missing or a value unusable.
    func decodeAcknowledgement(_ item: YAMLNode, _ what: String, _ cx: DecodingContext) -> Acknowledgement? {
        guard let entries = cx.mapping(item, what, keys: AcknowledgementKey.self) else { return nil }
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
        guard ok, let (code, ruleNode) = rule, let reason else { return nil }
        return Acknowledgement(
            rule: code, node: nodeName, user: userName, service: service, reason: reason,
            location: cx.location(item), ruleLocation: cx.location(ruleNode))
    }
}
