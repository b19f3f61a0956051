import VPNProvSupport
import VPNProvYAML

// ACME nodes (docs/acme.md). A node with `certificate: acme` gets its server certificate from the ACME CA
// the `acme:` section names, for its identity: that identity must be a DNS name, which the CA checks by
// fetching a token from the node's port 80 (HTTP-01) and which every client compares with the
// certificate's subjectAltName. `acme.email` is required: it is the ACME account's contact, to which the
// CA writes about certificates that were not renewed.

enum ACMERules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let acmeNodes = inventory.nodes.filter { $0.certificate == .acme }
        // The hand-off site (`handoff:`) takes its certificate from the same CA.
        if let acme = inventory.acme, acmeNodes.isEmpty, inventory.handOff == nil {
            d.append(
                .warning(
                    .acmeUnused, "'acme:' is written but no node has 'certificate: acme'; the settings are unused",
                    at: acme.location))
        }
        for node in acmeNodes {
            if case .fqdn = node.id { continue }
            d.append(
                .error(
                    .acmeIdentity,
                    "node '\(node.name)': 'certificate: acme' needs a DNS-name identity, found "
                        + "'\(node.id.value)': an ACME CA certifies DNS names, and every client compares the "
                        + "node's identity with the certificate. Give the node 'id: vpn1.example.com' (a name whose "
                        + "DNS record points at the node) or keep 'certificate: ca'",
                    at: node.location(of: .id)))
        }
        guard let first = acmeNodes.first else { return }
        guard let acme = inventory.acme else {
            for node in acmeNodes {
                d.append(
                    .error(
                        .acmeSettingsMissing,
                        "node '\(node.name)': 'certificate: acme', but the inventory has no 'acme:' section (at least "
                            + "'acme: {email: ...}', the ACME account's contact)",
                        at: node.location(of: .certificate)))
            }
            return
        }
        // An email written but refused is reported by the decoder already.
        if acme.email == nil, acme.fieldLocations[.email] == nil {
            d.append(
                .error(
                    .acmeSettingsMissing,
                    "'acme:' has no 'email': the ACME account needs a contact (the CA writes to it about "
                        + "certificates about to expire); needed by node '\(first.name)'",
                    at: acme.location))
        }
    }
}
