import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The app catalogue (catalog/servers.json, docs/formats.md "Catalogue fields"): per node and service what an
// app needs to set the connection up. Every value a client must match comes from the same decisions the
// client plan makes (the local identity, the Apple and Windows SA parameters of the node), so the catalogue and
// the profiles never disagree; the renderer only spells them in the catalogue's words.

/// What a client sends as its own identity (IDi) for a service of a node, decided once for the client plan
/// and the catalogue (`ClientPlan.localIdentity`).
package enum ClientLocalIdentity: Sendable, Hashable {
    /// The user's own IKE identity (`id:`), per user.
    case user
    /// A group name sent as key ID (IKEv1 Aggressive Mode: `group:`, or the hybrid group name).
    case keyID(String)
    /// The same identity for every user (ikev2-psk-eap: it selects the PSK-authenticated connection).
    case fixed(IKEIdentity)
    /// None configured: the client sends its IP address (IKEv1 Main Mode).
    case none
}

package struct CataloguePlan: Sendable, Hashable {
    /// One entry: a service of a node.
    package struct Entry: Sendable, Hashable {
        package var service: Service
        package var localIdentity: ClientLocalIdentity
        /// What a device must hold beyond what an app configures (`FourFieldModel.needsOnDevice`).
        package var needsOnDevice: [String]
        /// An app with the seed's four-field model gets exactly this connection (`FourFieldModel.usable`).
        package var fourFieldModel: Bool
        /// Windows' parameters, for the services Windows' built-in client speaks.
        package var windows: WindowsIPsec?
        /// The user name and password are the app account's own (a password service on a RADIUS node).
        package var accountCredentials: Bool
        /// The device checks the server certificate's revocation (Apple's setting, where the server proves
        /// itself with a certificate of the deployment's CA).
        package var revocationCheck: Bool
        /// The issuer an app checks the server certificate against: the CA's name for a certificate of the
        /// deployment's CA, nil otherwise (a PSK server, or an ACME node, whose intermediate changes at will).
        package var serverCertificateIssuer: String?
    }

    /// A quantum-safe node's requirements, as an app sets the same.
    package struct QuantumSafeEntry: Sendable, Hashable {
        /// ML-KEM methods by their IKEv2 numbers, most preferred first.
        package var methods: [Int]
        /// A device without ML-KEM is admitted.
        package var classicalFallback: Bool
        package var ppk: QuantumSafe.PPKMode?
    }

    /// One node and its entries.
    package struct NodeEntries: Sendable, Hashable {
        package var name: String
        package var address: String
        package var identity: IKEIdentity
        package var region: String?
        package var country: String?
        package var tier: Tier
        package var usesRadius: Bool
        package var carriesIPv6: Bool
        /// The node's own Apple settings (`AppleOptions.effective` without a user: users may differ);
        /// `crlCheck` before it is narrowed per service (`Entry.revocationCheck`).
        package var apple: AppleDeviceSettings
        /// The Apple IKEv2 SA parameters of the node (`AppleSA.derive`), nil when Apple can express none.
        package var appleSA: AppleSA?
        package var quantumSafe: QuantumSafeEntry?
        /// Addresses strongSwan leases from the node's IPv4 pool: all but the first and the last of the block
        /// (`src/libcharon/attributes/mem_pool.c`); nil without an IPv4 pool.
        package var capacity: Int?
        /// `state: draining` in the inventory: the entries say so (`DrainGroups`).
        package var draining: Bool
        /// In service order.
        package var entries: [Entry]
    }

    package var deployment: String
    /// In inventory order.
    package var nodes: [NodeEntries]

    /// `nodeFacts`: the client plan's per-node facts of the same inventory (made once per run).
    package static func make(_ inventory: Inventory, nodeFacts: ClientPlan.NodeFacts? = nil) -> CataloguePlan {
        let facts = nodeFacts ?? ClientPlan.NodeFacts(inventory: inventory)
        return CataloguePlan(
            deployment: inventory.name,
            nodes: inventory.nodes.map { node(of: $0, in: inventory, facts: facts) })
    }

    static func node(of node: Node, in inventory: Inventory, facts: ClientPlan.NodeFacts) -> NodeEntries {
        let apple = AppleOptions.effective(user: nil, node: node)
        let settings = AppleDeviceSettings(
            onDemand: apple.onDemand, trustedSSIDs: apple.trustedSSIDs, includeAllNetworks: apple.includeAllNetworks,
            excludeLocalNetworks: apple.excludeLocalNetworks, crlCheck: apple.crlCheck, dpd: apple.dpd,
            disconnectOnIdle: apple.disconnectOnIdle)
        let windows = facts.windows(of: node.name)
        let entries = node.services.sorted().map { service in
            // The deployment's CRL says nothing about an ACME certificate.
            let deploymentCertificate = service.serverUsesCert && node.certificate == .ca
            return Entry(
                service: service,
                localIdentity: ClientPlan.localIdentity(service: service, node: node, in: inventory),
                needsOnDevice: FourFieldModel.needsOnDevice(service, on: node),
                fourFieldModel: FourFieldModel.usable(service, on: node),
                windows: Device.windows.speaks(service) ? windows : nil,
                accountCredentials: service.needsPassword && node.usesRadius,
                revocationCheck: apple.crlCheck && deploymentCertificate,
                serverCertificateIssuer: deploymentCertificate ? inventory.pki.ca.name : nil)
        }
        return NodeEntries(
            name: node.name, address: node.address, identity: node.id, region: node.region, country: node.country,
            tier: node.tier, usesRadius: node.usesRadius, carriesIPv6: node.pool6 != nil, apple: settings,
            appleSA: facts.apple(of: node.name)?.sa,
            quantumSafe: node.quantumSafe.map {
                QuantumSafeEntry(
                    methods: $0.mlKEM.map(\.transformID), classicalFallback: $0.mlKEM.isEmpty || $0.classicalFallback,
                    ppk: $0.ppk)
            },
            capacity: capacity(of: node), draining: node.state == .draining, entries: entries)
    }

    static func capacity(of node: Node) -> Int? {
        guard let pool = node.pool, !pool.isIPv6 else { return nil }
        let size = 1 << (32 - pool.prefix)
        return size > 2 ? size - 2 : size
    }
}
