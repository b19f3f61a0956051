import Foundation
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// An identity that cannot be put into a certificate. The PKI reports it as its `certificate-identity`
/// error; the validator only asks whether a profile can be made.
package struct CertificateIdentityError: Error, Sendable, Hashable {
    package var message: String
    package var location: SourceLocation?
    init(_ message: String, at location: SourceLocation?) {
        self.message = message
        self.location = location
    }
}

/// What a certificate is for; recorded with every certificate the state holds.
package enum CertificateKind: String, Codable, Equatable {
    case ca, server, client
    /// A CA's key and name certified by the previous CA (CA rotation).
    case cross
}

/// What a node or user certificate certifies. Two profiles that compare equal produce equivalent
/// certificates; a change in any field re-issues.
package struct CertificateProfile: Equatable {
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

    /// Server certificate: the node's IKE identity and its address in the SAN (an IP both as
    /// iPAddress and dNSName), a DN identity as the subject (else O=<deployment>, CN=<node>).
    /// `drainedIdentities: false` leaves out the identities of the draining nodes it takes over (the names it carries
    /// on purpose, which the overlap check of validation does not count).
    package static func server(_ node: Node, inventory: Inventory, drainedIdentities: Bool = true) throws
        -> CertificateProfile
    {
        var names: [GeneralName] = []
        func add(_ name: GeneralName) { if !names.contains(name) { names.append(name) } }
        var subject = DistinguishedName([NameAttribute("O", inventory.name), NameAttribute("CN", node.name)])
        if case .dn(let v) = node.id {
            guard let dn = DistinguishedName.parse(v) else {
                throw CertificateIdentityError(
                    "node '\(node.name)': identity '\(v)' is not a distinguished name vpnprov can encode",
                    at: node.location(of: .id))
            }
            subject = dn
        }
        identityNames(node.id).forEach(add)
        if let bytes = IPAddressText.parse(node.address) {
            add(.ipAddress(bytes))
            add(.dnsName(IPAddressText.format(bytes)))
        } else {
            add(.dnsName(node.address))
        }
        // A sibling of a draining node also proves that node's identity: redirected clients still ask for it
        // (DrainGroups).
        for drained in drainedIdentities ? DrainGroups.drainedNodes(redirectingTo: node, in: inventory) : [] {
            identityNames(drained.id).forEach(add)
        }
        return CertificateProfile(
            kind: .server, subject: subject, subjectAltNames: names, keyType: inventory.pki.serverKey,
            days: inventory.pki.serverDays,
            crlDistributionPoints: inventory.pki.crlURL.map { [$0] } ?? [])
    }

    /// The subjectAltNames that carry an IKE identity: an FQDN as dNSName, an e-mail as rfc822Name, an IP address as
    /// both iPAddress and dNSName; none for a DN (the subject carries it) or a key ID.
    static func identityNames(_ id: IKEIdentity) -> [GeneralName] {
        switch id {
        case .fqdn(let v): return [.dnsName(v)]
        case .userFQDN(let v): return [.rfc822Name(v)]
        case .ipv4(let v), .ipv6(let v):
            guard let bytes = IPAddressText.parse(v) else { return [] }
            return [.ipAddress(bytes), .dnsName(IPAddressText.format(bytes))]
        case .dn, .keyID: return []
        }
    }

    /// Client certificate: the user's IKE identity in the SAN and as subject CN.
    package static func client(_ user: User, inventory: Inventory) throws -> CertificateProfile {
        let names: [GeneralName]
        var subject = DistinguishedName([NameAttribute("O", inventory.name), NameAttribute("CN", user.id.value)])
        if case .dn(let v) = user.id {
            guard let dn = DistinguishedName.parse(v) else {
                throw CertificateIdentityError(
                    "user '\(user.name)': identity '\(v)' is not a distinguished name vpnprov can encode",
                    at: user.location(of: .id))
            }
            subject = dn
        }
        names = identityNames(user.id)
        return CertificateProfile(
            kind: .client, subject: subject, subjectAltNames: names, keyType: inventory.pki.clientKey,
            days: inventory.pki.clientDays,
            policies: NodeAccessPolicy.oids(for: user))
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
