/// Who takes over a draining node's clients (docs/operations.md, "Draining a node"). A node with `state: draining`
/// asks its IKEv2 clients to move to a sibling (IKEv2 redirect, RFC 5685): strongSwan's client keeps its
/// configured remote identity and trust anchor when it follows (`redirect_established` in
/// `src/libcharon/sa/ike_sa.c` re-creates the IKE_SA with the same peer configuration), so a sibling must
/// prove the drained node's identity with a certificate of the CA the client trusts, and must have a
/// connection whose local identity is the drained node's. Both come from the plan only while a node drains:
/// nothing of this exists in an inventory without a draining node.
///
/// A sibling of a draining node is a node that
/// - is not draining itself, has the same tier and the same region (none for both counts as the same), and
///   takes its password accounts from the same place (the inventory, or the RADIUS servers);
/// - like the drained node, proves itself with a certificate of the deployment CA (`certificate: ca`): an ACME
///   certificate is proven name by name from the address of that name (HTTP-01), so it cannot carry another
///   node's name, and a client of an ACME node would not trust a sibling's deployment-CA certificate;
/// - offers at least one redirected service of the drained node, with the same quantum-safe settings.
/// The drained node's identity must be one a certificate's subjectAltName can carry (FQDN, address, e-mail).
package enum DrainGroups {
    /// The services whose clients are redirected: the server proves itself with its certificate, and the client's
    /// credential is the same at the sibling (an EAP account, or a certificate of the deployment CA). PSK services
    /// are not: the sibling would need the drained node's PSK.
    package static let redirectedServices: [Service] = [.ikev2Cert, .ikev2EAP]

    /// Whether `node`'s identity fits into a sibling certificate's subjectAltName.
    static func identityTransferable(_ node: Node) -> Bool {
        switch node.id {
        case .fqdn, .userFQDN, .ipv4, .ipv6: return true
        case .dn, .keyID: return false
        }
    }

    /// The services of `drained` that `sibling` takes over.
    package static func services(of drained: Node, at sibling: Node) -> [Service] {
        redirectedServices.filter { drained.services.contains($0) && sibling.services.contains($0) }
    }

    /// Whether `candidate` takes over clients of the draining node `drained`.
    package static func isSibling(_ candidate: Node, of drained: Node) -> Bool {
        candidate.name != drained.name && drained.state == .draining && candidate.state == .active
            && candidate.tier == drained.tier && candidate.region == drained.region
            && candidate.usesRadius == drained.usesRadius
            && candidate.certificate == .ca && drained.certificate == .ca && identityTransferable(drained)
            && candidate.quantumSafe == drained.quantumSafe && !services(of: drained, at: candidate).isEmpty
    }

    /// The siblings of a draining node, in inventory order (the order the drain spreads its clients over them);
    /// empty for a node that is not draining.
    package static func siblings(of drained: Node, in inventory: Inventory) -> [Node] {
        guard drained.state == .draining else { return [] }
        return inventory.nodes.filter { isSibling($0, of: drained) }
    }

    /// The draining nodes whose clients `node` takes over, in inventory order.
    package static func drainedNodes(redirectingTo node: Node, in inventory: Inventory) -> [Node] {
        guard node.state == .active else { return [] }
        return inventory.nodes.filter { isSibling(node, of: $0) }
    }
}
