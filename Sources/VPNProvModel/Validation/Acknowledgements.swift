import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Acknowledged warnings (`acknowledge:` in the inventory, docs/inventory.md): a warning kept on
// purpose (a PSK service an old client needs) is marked with the operator's reason instead of being
// repeated on every run. It stays in the JSON and SARIF documents (SARIF as a suppression), is not
// printed as text, and does not fail --strict.
//
// Decisions: only warning rules can be acknowledged; an entry naming an error rule or an unknown
// rule is an error (the inventory asks for something vpnprov will not do, or has a typo that would
// otherwise silence nothing). An entry that matches no warning is a warning (`stale-acknowledgement`),
// so acknowledgements do not outlive what they were written for; it is not judged while the inventory
// has decoding errors (the parts it names may be the broken ones).

package enum Acknowledgements {
    /// The rules whose warnings `acknowledge:` may name: those their declaration says are about a node, a user or
    /// the deployment (`RuleDeclaration.acknowledgeable`). `weak-proposal` is an error unless `allow_weak` makes it
    /// a warning; only the warning can be acknowledged.
    static let warningRules = Set(RuleCode.allCases.filter(\.declaration.acknowledgeable))

    /// Every rule code vpnprov reports, by name.
    static let knownRules = RuleCode.allCases.map(\.rawValue).sorted()

    /// Problems of the entries themselves: an unknown rule, a rule whose warnings cannot be acknowledged. The
    /// entries that can never match are returned too, so they are not reported as stale as well.
    static func check(_ acknowledgements: [Acknowledgement]) -> (diagnostics: [Diagnostic], unusable: Set<Int>) {
        var diagnostics: [Diagnostic] = []
        var unusable = Set<Int>()
        for (i, ack) in acknowledgements.enumerated() {
            let code = RuleCode(rawValue: ack.rule)
            if let code, warningRules.contains(code) { continue }
            unusable.insert(i)
            let shown = DecodingContext.printable(ack.rule)
            if let code {
                let why =
                    code.declaration.severities.contains(.error)
                    ? "reports errors, which cannot be acknowledged, only fixed"
                    : "warns about the inventory's own sections, which cannot be acknowledged"
                diagnostics.append(
                    .error(
                        .errorAcknowledged,
                        "'acknowledge': '\(shown)' \(why); acknowledgements are for the warnings docs/diagnostics.md "
                            + "marks as acknowledgeable", at: ack.ruleLocation))
            } else {
                diagnostics.append(
                    .error(
                        .unknownRule,
                        "'acknowledge': no rule '\(shown)'" + DecodingContext.hint(for: ack.rule, among: knownRules),
                        at: ack.ruleLocation))
            }
        }
        return (diagnostics, unusable)
    }

    /// Marks each warning of `diagnostics` that an entry covers (the first entry in the inventory's
    /// order) and appends the entries' own problems; with `reportStale`, a warning for each usable
    /// entry that covered nothing.
    package static func apply(_ inventory: Inventory, to diagnostics: inout [Diagnostic], reportStale: Bool) {
        let acknowledgements = inventory.acknowledgements
        guard !acknowledgements.isEmpty else { return }
        let (problems, unusable) = check(acknowledgements)
        var used = Set<Int>()
        for i in diagnostics.indices where diagnostics[i].isOpenWarning && diagnostics[i].subject != nil {
            guard
                let k = acknowledgements.indices.first(where: {
                    !unusable.contains($0) && acknowledgements[$0].covers(diagnostics[i])
                })
            else { continue }
            used.insert(k)
            let ack = acknowledgements[k]
            diagnostics[i].acknowledged = .init(reason: ack.reason, location: ack.location)
        }
        diagnostics += problems
        guard reportStale else { return }
        for (k, ack) in acknowledgements.enumerated() where !unusable.contains(k) && !used.contains(k) {
            var missing: [String] = []
            if let node = ack.node, inventory.node(named: node) == nil {
                missing.append("no node '\(DecodingContext.printable(node))'")
            }
            if let user = ack.user, inventory.user(named: user) == nil {
                missing.append("no user '\(DecodingContext.printable(user))'")
            }
            let why = missing.isEmpty ? "" : " (the inventory has \(missing.joined(separator: " and ")))"
            diagnostics.append(
                .warning(
                    .staleAcknowledgement,
                    "'acknowledge': \(ack.rule) \(describe(ack)) matches no warning\(why); remove the entry if the warning is gone",
                    at: ack.location))
        }
    }

    /// "for node 'fra-1' and service ikev2-psk", "for the deployment".
    static func describe(_ ack: Acknowledgement) -> String {
        var parts: [String] = []
        if let node = ack.node { parts.append("node '\(DecodingContext.printable(node))'") }
        if let user = ack.user { parts.append("user '\(DecodingContext.printable(user))'") }
        if let service = ack.service { parts.append("service \(service.rawValue)") }
        return parts.isEmpty ? "for the deployment" : "for " + parts.joined(separator: " and ")
    }
}
