import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The plan of the whole deployment, made once per run from the inventory, the certificate plan and the PKI's
// materials: per node its server plan, RADIUS plan, host_vars and server files; the catalogue, the rollout's
// inventory, the RADIUS servers, monitoring, the hand-off site and the tree's README; and, per slice of users,
// the client plan. Consistency checks it, and each renderer takes its own part of it (VPNProvRendering's
// `TreeRenderer`), never the inventory: what a file says is decided here.

/// What every renderer may name of the deployment as a whole.
package struct DeploymentFacts: Sendable, Hashable {
    /// The deployment's name (`name:`): profile names, the UUID namespace, file names of some clients.
    package var name: String
    /// The CA's common name as the inventory writes it (`pki.ca.name`): the issuer apps check.
    package var caName: String
    /// Where the CRL is published (`pki.crl_url`), nil when it is not.
    package var crlURL: String?
    /// Apple profiles are signed (`pki.profile_signing`).
    package var signsProfiles: Bool
    /// Where a Linux swanctl client finds the ACME CA's roots (`acme.roots`, or Let's Encrypt's).
    package var acmeRoots: [String]

    package init(_ inventory: Inventory) {
        name = inventory.name
        caName = inventory.pki.ca.name
        crlURL = inventory.pki.crlURL
        signsProfiles = inventory.pki.profileSigning != nil
        acmeRoots = inventory.acme?.roots ?? ACMESettings.defaultRoots
    }
}

/// What `servers/<node>/` holds besides the node's strongSwan connections (its `NodePlan`): the node's
/// certificate's source, and what its README says.
package struct ServerFilesPlan: Sendable, Hashable {
    package var node: String
    package var address: String
    package var services: [Service]
    /// Issued by vpnprov (its certificate and key ship in `swanctl/`) or obtained on the node (ACME).
    package var certificate: CertificateSource
    /// With ACME: the directory and the DNS name the node's certificate is obtained for.
    package var acmeDirectory: String
    package var acmeDomain: String
    /// The node serves an IKEv1 service.
    package var ikev1: Bool

    init(_ node: Node, in inventory: Inventory) {
        self.node = node.name
        address = node.address
        services = node.services
        certificate = node.certificate
        acmeDirectory = inventory.acme?.directory ?? ""
        acmeDomain = node.id.value
        ikev1 = node.services.contains { $0.ikeVersion == 1 }
    }
}

/// One node's parts of the deployment plan.
package struct NodeParts: Sendable, Hashable {
    /// Its strongSwan connections, pools, secrets' identities and network files (what Consistency checks).
    package var server: NodePlan
    package var files: ServerFilesPlan
    /// Its view of the RADIUS servers; nil for a node without `accounts: radius`.
    package var radius: RadiusPlan?
    /// What the Ansible role checks on it (`deploy/host_vars/<node>.yml`).
    package var hostVars: HostVarsPlan
}

/// The tree's top README: which parts there are.
package struct TreeReadmePlan: Sendable, Hashable {
    package var deployment: String
    package var crlURL: String?
    package var radius: Bool
    package var monitoring: Bool
    /// The hand-off site's address, "" without one.
    package var handOff: String
}

package struct DeploymentPlan: Sendable {
    package var deployment: DeploymentFacts
    /// In inventory order.
    package var nodes: [NodeParts]
    package var catalogue: CataloguePlan
    package var rollout: RolloutPlan
    /// `radius/<server>/`; nil when no node uses the RADIUS servers.
    package var radiusServers: RadiusServersPlan?
    package var monitoring: MonitoringPlan?
    package var handOff: HandOffPlan?
    package var readme: TreeReadmePlan
    /// The nodes' Apple and Windows parameters and each client kind's offers, shared by every slice of users.
    package var clientFacts: ClientPlan.NodeFacts

    /// What the client plans are made from: planning's own, never handed to a renderer.
    let inventory: Inventory
    let certificates: CertificatePlan
    let materials: Materials

    /// The plan of `inventory`: `certificates` are the profiles the PKI issued from, `materials` what it
    /// handed back. Nodes are planned on all cores (each lists its password users: 20,000 for a fleet).
    package static func make(_ inventory: Inventory, certificates: CertificatePlan, materials: Materials)
        -> DeploymentPlan
    {
        let monitoring = MonitoringPlan.make(inventory)
        let identities = HostVarsPlan.certificateIdentities(inventory, certificates: certificates)
        let nodes = inventory.nodes
        let parts = parallelMap(nodes.count) { i -> NodeParts in
            let node = nodes[i]
            let server = ServerPlan.make(for: node, in: inventory, nodeScoping: materials.nodeScoping)
            let radius = RadiusPlan.make(for: node, in: inventory)
            return NodeParts(
                server: server, files: ServerFilesPlan(node, in: inventory), radius: radius,
                hostVars: HostVarsPlan.make(
                    node: node, in: inventory, server: server, radius: radius, monitoring: monitoring,
                    certificateIdentities: identities))
        }
        let facts = ClientPlan.NodeFacts(inventory: inventory)
        let handOff = HandOffPlan.make(inventory, acmeCABundlePEM: materials.acmeCABundlePEM)
        let radiusServers = RadiusServersPlan.make(inventory)
        return DeploymentPlan(
            deployment: DeploymentFacts(inventory), nodes: parts,
            catalogue: CataloguePlan.make(inventory, nodeFacts: facts),
            rollout: RolloutPlan.make(inventory, handOff: handOff), radiusServers: radiusServers,
            monitoring: monitoring, handOff: handOff,
            readme: TreeReadmePlan(
                deployment: inventory.name, crlURL: inventory.pki.crlURL, radius: radiusServers != nil,
                monitoring: monitoring != nil, handOff: handOff?.address ?? ""),
            clientFacts: facts, inventory: inventory, certificates: certificates, materials: materials)
    }

    /// The client plan of some of the inventory's users (a slice of a fleet: the plan of all users is never
    /// held at once).
    package func clientPlan(for users: ArraySlice<User>) -> ClientPlan {
        ClientPlan.build(
            inventory: Self.slice(inventory, users), materials: materials, nodeFacts: clientFacts,
            certificates: certificates)
    }

    /// The consistency check of some users' client plan against the nodes' plans (`servers`: made once from
    /// `nodes`, `Consistency.Servers(plan:inspect:)`).
    package func check(_ plan: ClientPlan, of users: ArraySlice<User>, against servers: Consistency.Servers)
        -> [Diagnostic]
    {
        Consistency.check(plan: plan, against: servers, inventory: Self.slice(inventory, users), materials: materials)
    }

    /// The inventory with only `users`.
    static func slice(_ inventory: Inventory, _ users: ArraySlice<User>) -> Inventory {
        var sub = inventory
        sub.users = Array(users)
        return sub
    }
}

extension Consistency.Servers {
    /// The server side of the check, from the nodes' plans (each node planned once per run).
    package convenience init(plan: DeploymentPlan, inspect: Consistency.CertificateInspector?) {
        let views = parallelMap(plan.nodes.count) {
            ServerView(plan.nodes[$0].server, caCertificatePEM: plan.materials.caCertificatePEM)
        }
        self.init(views, materials: plan.materials, inspect: inspect)
    }
}
