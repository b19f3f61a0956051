import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Rule codes of the client/server consistency check (the consistency guarantee: "a client's remote ID, local ID, auth
// method and proposals are ones its server accepts"). Each points at the inventory field responsible.
extension RuleCode {
    /// No server connection of the node would be selected for a client connection.
    package static let noServerConnection = RuleCode("no-server-connection")
    /// The server's identity is not the one the client expects.
    package static let remoteIDMismatch = RuleCode("remote-id-mismatch")
    /// The server does not accept the identity the client sends.
    package static let localIDMismatch = RuleCode("local-id-mismatch")
    /// Auth methods or rounds differ between client and the server connection strongSwan selects.
    package static let authMismatch = RuleCode("auth-mismatch")
    /// No IKE proposal the client sends is accepted by the server.
    package static let ikeProposalMismatch = RuleCode("ike-proposal-mismatch")
    /// No ESP proposal the client sends is accepted by the server.
    package static let espProposalMismatch = RuleCode("esp-proposal-mismatch")
    /// The ESP proposals match initially but not on rekey (PFS group).
    package static let pfsMismatch = RuleCode("pfs-mismatch")
    /// The node's proposals cannot be expressed in an Apple profile.
    package static let appleProposalUnsupported = RuleCode("apple-proposal-unsupported")
    /// The node's proposals cannot be set in Windows' IKEv2 client (Set-VpnConnectionIPsecConfiguration).
    package static let windowsProposalUnsupported = RuleCode("windows-proposal-unsupported")
    /// A certificate lacks what Windows checks (EKU, dNSName of the dialled address).
    package static let windowsCertificate = RuleCode("windows-certificate")
    /// The server certificate's subjectAltName lacks the identity clients expect.
    package static let serverCertificateSAN = RuleCode("server-cert-san")
    /// The client certificate's subjectAltName lacks the client's identity.
    package static let clientCertificateSAN = RuleCode("client-cert-san")
    /// The client certificate lacks the policy of a node the client profile connects to.
    package static let clientCertificatePolicy = RuleCode("client-cert-policy")
    /// The client trusts another CA than the one that issued the server's configuration.
    package static let caMismatch = RuleCode("ca-mismatch")
    /// A client kind lets IPv6 bypass the tunnel of a node without an IPv6 pool (it cannot block it).
    package static let ipv6Leak = RuleCode("ipv6-leak")
    /// A secret or certificate a client profile or its server needs is missing.
    package static let missingSecret = RuleCode("missing-secret")
}
