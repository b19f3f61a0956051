import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

/// What a certificate is for; recorded with every certificate the state holds.
package enum CertificateKind: String, Sendable, Hashable, Codable {
    case ca, server, client
    /// A CA's key and name certified by the previous CA (CA rotation).
    case cross
}

/// What a node or user certificate certifies. Two profiles that compare equal produce equivalent
/// certificates; a change in any field re-issues.
package struct CertificateProfile: Sendable, Hashable {
    package var kind: CertificateKind
    package var subject: DistinguishedName
    package var subjectAltNames: [GeneralName]
    package var keyType: KeyType
    package var days: Int
    /// Where clients fetch the CA's CRL (server certificates only: a server reads the CRL from its own
    /// `x509crl/`, while a device checking the server's certificate needs a URL in it).
    package var crlDistributionPoints: [String] = []
    /// Certificate policy OIDs (client certificates: the nodes the holder may use, NodeAccessPolicy).
    package var policies: [String] = []

    package var extendedKeyUsages: [ExtendedKeyUsage] {
        kind == .server ? [.serverAuth, .ikeIntermediate] : [.clientAuth]
    }

    package var keyUsage: KeyUsage {
        keyType.algorithm.isRSA ? [.digitalSignature, .keyEncipherment] : [.digitalSignature]
    }

    /// A node's server certificate: its names (`CertificateNames.server`), the deployment's server key and
    /// lifetime, and the CRL's URL.
    package static func server(_ node: Node, inventory: Inventory) throws(CertificateIdentityError)
        -> CertificateProfile
    {
        let names = try CertificateNames.server(node, in: inventory)
        return CertificateProfile(
            kind: .server, subject: names.subject, subjectAltNames: names.subjectAltNames,
            keyType: inventory.pki.serverKey, days: inventory.pki.serverDays,
            crlDistributionPoints: inventory.pki.crlURL.map { [$0] } ?? [])
    }

    /// A user's client certificate: its names (`CertificateNames.client`), the deployment's client key and
    /// lifetime, and the policies of the user's nodes (`nodePolicies`: each node's OID by name, made once
    /// per run; a node missing there gets its OID made here).
    package static func client(_ user: User, inventory: Inventory, nodePolicies: [String: String] = [:])
        throws(CertificateIdentityError) -> CertificateProfile
    {
        let names = try CertificateNames.client(user, in: inventory)
        return CertificateProfile(
            kind: .client, subject: names.subject, subjectAltNames: names.subjectAltNames,
            keyType: inventory.pki.clientKey, days: inventory.pki.clientDays,
            policies: user.nodes.map { nodePolicies[$0] ?? NodeAccessPolicy.oid(forNode: $0) })
    }
}

extension KeyType {
    package var algorithm: KeyAlgorithm {
        switch self {
        case .ecdsaP256: return .ecdsaP256
        case .ecdsaP384: return .ecdsaP384
        case .rsa2048: return .rsa(bits: 2048)
        case .rsa3072: return .rsa(bits: 3072)
        case .rsa4096: return .rsa(bits: 4096)
        }
    }
}

extension KeyAlgorithm {
    package var isRSA: Bool {
        if case .rsa = self { return true }
        return false
    }
}
