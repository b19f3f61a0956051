import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// The names a certificate vpnprov issues carries, as the inventory determines them: what validation
// compares (a client certificate must not carry a node's identity, nodes' certificates must not overlap)
// and what the plan's certificate profiles are made of (VPNProvPlanning/Decisions/CertificateProfile.swift).

/// An identity that cannot be put into a certificate. The PKI reports it as its `certificate-identity`
/// error; the validator only asks whether the names can be made.
package struct CertificateIdentityError: Error, Sendable, Hashable {
    package var message: String
    package var location: SourceLocation?
    init(_ message: String, at location: SourceLocation?) {
        self.message = message
        self.location = location
    }
}

/// A certificate's subject and subjectAltNames.
package struct CertificateNames: Sendable, Hashable {
    package var subject: DistinguishedName
    package var subjectAltNames: [GeneralName]

    /// Server certificate: the node's IKE identity and its address in the SAN (an IP both as
    /// iPAddress and dNSName), a DN identity as the subject (else O=<deployment>, CN=<node>).
    /// `drainedIdentities: false` leaves out the identities of the draining nodes it takes over (the names it
    /// carries on purpose, which the overlap check of validation does not count).
    package static func server(_ node: Node, in inventory: Inventory, drainedIdentities: Bool = true)
        throws(CertificateIdentityError) -> CertificateNames
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
        return CertificateNames(subject: subject, subjectAltNames: names)
    }

    /// The subjectAltNames that carry an IKE identity: an FQDN as dNSName, an e-mail as rfc822Name, an IP address
    /// as both iPAddress and dNSName; none for a DN (the subject carries it) or a key ID.
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
    package static func client(_ user: User, in inventory: Inventory) throws(CertificateIdentityError)
        -> CertificateNames
    {
        var subject = DistinguishedName([NameAttribute("O", inventory.name), NameAttribute("CN", user.id.value)])
        if case .dn(let v) = user.id {
            guard let dn = DistinguishedName.parse(v) else {
                throw CertificateIdentityError(
                    "user '\(user.name)': identity '\(v)' is not a distinguished name vpnprov can encode",
                    at: user.location(of: .id))
            }
            subject = dn
        }
        return CertificateNames(subject: subject, subjectAltNames: identityNames(user.id))
    }
}
