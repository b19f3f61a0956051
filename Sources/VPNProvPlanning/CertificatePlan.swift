import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Which certificates the deployment has and what each certifies, decided from the inventory alone
// before the PKI runs: the PKI issues (or keeps) a certificate per profile, and the deployment plan reads
// the subjects from here (the identity Windows sends with its machine certificate, the identities the
// Ansible role checks), so each profile is made once per run.

/// Every node's and user's certificate profile, in inventory order.
package struct CertificatePlan: Sendable, Hashable {
    /// One per node, in inventory order.
    package var nodes: [CertificateProfile]
    /// One per user (revoked and certificate-less users too: their identity must still be one a
    /// certificate can carry), in inventory order.
    package var users: [CertificateProfile]
    private var userPositions: [String: Int]

    /// Every profile; the first identity no certificate can carry throws.
    package static func make(_ inventory: Inventory) throws(CertificateIdentityError) -> CertificatePlan {
        // Each node's policy OID once: every certificate user carries those of their nodes.
        var policies: [String: String] = [:]
        for node in inventory.nodes where policies[node.name] == nil {
            policies[node.name] = NodeAccessPolicy.oid(forNode: node.name)
        }
        var nodes: [CertificateProfile] = []
        nodes.reserveCapacity(inventory.nodes.count)
        for node in inventory.nodes { nodes.append(try CertificateProfile.server(node, inventory: inventory)) }
        var users: [CertificateProfile] = []
        users.reserveCapacity(inventory.users.count)
        var positions: [String: Int] = [:]
        for user in inventory.users {
            if positions[user.name] == nil { positions[user.name] = users.count }
            users.append(try CertificateProfile.client(user, inventory: inventory, nodePolicies: policies))
        }
        return CertificatePlan(nodes: nodes, users: users, userPositions: positions)
    }

    /// The profile of user `name`'s certificate (the first user of that name).
    package func client(_ name: String) -> CertificateProfile? {
        userPositions[name].map { users[$0] }
    }
}
