import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// What the consistency check sees of the server side: the subset of the server plan it compares with, and
// what it reads of certificates.

/// A remote-identity constraint on the server: `%any` or one exact identity.
package enum IdentityPattern: Sendable, Hashable {
    case any
    case exactly(IKEIdentity)
}

/// One remote auth round of a server connection (`remote`, `remote-psk`, `remote-xauth`).
package struct ServerRoundView: Sendable, Hashable {
    package var auth: AuthMethod
    package var id: IdentityPattern
    package var eapID: IdentityPattern?
    /// Certificate policies the client certificate must carry (`cert_policy`).
    package var certPolicies: [String]
    package init(auth: AuthMethod, id: IdentityPattern, eapID: IdentityPattern? = nil, certPolicies: [String] = []) {
        self.certPolicies = certPolicies
        self.auth = auth
        self.id = id
        self.eapID = eapID
    }
}

/// What the check needs of one server connection, in swanctl.conf order.
package struct ServerConnectionView: Sendable, Hashable {
    package var name: String
    package var version: Int
    /// IKEv1: Aggressive (true) / Main (false) Mode; nil for IKEv2.
    package var aggressive: Bool?
    package var localAuth: AuthMethod
    package var localID: IKEIdentity
    package var remote: [ServerRoundView]
    package var ikeProposals: [String]
    package var espProposals: [String]
    package var sendCertreq: Bool
    package init(
        name: String, version: Int, aggressive: Bool?, localAuth: AuthMethod, localID: IKEIdentity,
        remote: [ServerRoundView], ikeProposals: [String], espProposals: [String], sendCertreq: Bool
    ) {
        self.name = name
        self.version = version
        self.aggressive = aggressive
        self.localAuth = localAuth
        self.localID = localID
        self.remote = remote
        self.ikeProposals = ikeProposals
        self.espProposals = espProposals
        self.sendCertreq = sendCertreq
    }
}

/// The server configuration of one node as the consistency check sees it.
package struct ServerView: Sendable, Hashable {
    package var node: String
    package var connections: [ServerConnectionView]
    /// Identities the node's PSK is filed under (empty: no PSK in the node's secrets).
    package var pskIdentities: [IKEIdentity]
    /// Users whose password is in the node's secrets.
    package var passwordUsers: [String]
    /// The CA the node's configuration ships (x509ca/); nil: not known to the caller.
    package var caCertificatePEM: String?
    package init(
        node: String, connections: [ServerConnectionView], pskIdentities: [IKEIdentity], passwordUsers: [String],
        caCertificatePEM: String? = nil
    ) {
        self.node = node
        self.connections = connections
        self.pskIdentities = pskIdentities
        self.passwordUsers = passwordUsers
        self.caCertificatePEM = caCertificatePEM
    }
}

/// What the check needs to know of a certificate (filled from the crypto layer's X.509 parser).
package struct CertificateFacts: Sendable, Hashable {
    package var dnsNames: [String]
    /// 4 or 16 bytes each.
    package var ipAddresses: [[UInt8]]
    package var emails: [String]
    package var issuerCommonName: String?
    /// The certificate's subject in strongSwan's text form ("C=DE, O=acme, CN=x"): a DN identity
    /// is matched against the subject, not the subjectAltName.
    package var subject: String?
    /// Extended key usage OIDs in dotted form; nil when the inspector does not read them.
    package var extendedKeyUsages: [String]? = nil
    /// Certificate policy OIDs in dotted form; nil when the inspector does not read them.
    package var policies: [String]? = nil
    package init(
        dnsNames: [String] = [], ipAddresses: [[UInt8]] = [], emails: [String] = [], issuerCommonName: String? = nil,
        subject: String? = nil, extendedKeyUsages: [String]? = nil
    ) {
        self.extendedKeyUsages = extendedKeyUsages
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
        self.emails = emails
        self.issuerCommonName = issuerCommonName
        self.subject = subject
    }

    /// The identity is in the subjectAltName with its own type (FQDN as dNSName, IP as iPAddress,
    /// user@FQDN as rfc822Name). A DN is the certificate's subject; key IDs are never in a certificate.
    package func contains(_ id: IKEIdentity) -> Bool { contains(id, parse: DistinguishedName.parse) }

    /// `contains(_:)` with DN texts parsed by `parse` (a check parses each one once and remembers it).
    func contains(_ id: IKEIdentity, parse: (String) -> DistinguishedName?) -> Bool {
        switch id {
        case .fqdn(let name): return dnsNames.contains { Self.sameIgnoringCase($0, name) }
        case .ipv4(let text), .ipv6(let text):
            guard let bytes = IPAddressText.parse(text) else { return false }
            return ipAddresses.contains(bytes)
        case .userFQDN(let mail): return emails.contains { Self.sameIgnoringCase($0, mail) }
        case .dn(let text):
            // The identity in the inventory's grammar, the subject as the certificate reader writes it.
            guard let subject, let wanted = parse(text), let have = DistinguishedName.parseDescription(subject) else {
                return false
            }
            return wanted == have
        case .keyID: return false
        }
    }
}

extension CertificateFacts {
    /// `a.lowercased() == b.lowercased()`, without making either when both are ASCII (as names almost
    /// always are): the check compares names for every connection of a fleet.
    static func sameIgnoringCase(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return a.lowercased() == b.lowercased() }
        for (p, q) in zip(x, y) where p != q {
            guard p < 0x80, q < 0x80 else { return a.lowercased() == b.lowercased() }
            func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }
            if lower(p) != lower(q) { return false }
        }
        return true
    }
}

// MARK: - the server plan as the check sees it

extension IdentityPattern {
    init(_ match: IdentityMatch) {
        switch match {
        case .any: self = .any
        case .exactly(let id): self = .exactly(id)
        }
    }
}

extension AuthMethod {
    /// What a client does for a server round: through RADIUS, EAP is still EAP-MSCHAPv2 (the only
    /// method the RADIUS servers offer) and XAuth still XAuth.
    init(serverRound method: ServerAuthMethod) {
        switch method {
        case .pubkey: self = .pubkey
        case .psk: self = .psk
        case .eapMSCHAPv2, .eapRADIUS: self = .eapMSCHAPv2
        case .xauth, .xauthRADIUS: self = .xauth
        }
    }
}

extension ServerView {
    /// The view of a node's server plan. `caCertificatePEM`: the CA the node's configuration ships.
    package init(_ plan: NodePlan, caCertificatePEM: String?) {
        self.init(
            node: plan.node,
            connections: plan.connections.map { c in
                ServerConnectionView(
                    name: c.name, version: c.version, aggressive: c.aggressive,
                    localAuth: AuthMethod(serverRound: c.local.auth), localID: c.local.id,
                    remote: c.remote.map { r in
                        ServerRoundView(
                            auth: AuthMethod(serverRound: r.auth), id: IdentityPattern(r.id),
                            eapID: r.eapID.map(IdentityPattern.init),
                            certPolicies: r.certPolicies)
                    },
                    ikeProposals: c.ikeProposals, espProposals: c.child.espProposals, sendCertreq: c.sendCertreq)
            },
            pskIdentities: plan.pskIdentities, passwordUsers: plan.passwordUsers, caCertificatePEM: caCertificatePEM)
    }
}
