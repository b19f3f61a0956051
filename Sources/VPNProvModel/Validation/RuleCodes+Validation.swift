import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Stable rule codes of the inventory validator (printed in brackets after each diagnostic).
// Severity is per rule unless noted; docs/diagnostics.md lists them with their meaning.

extension RuleCode {
    // Identities (every identity parses as its IKE type and is safe in every output).
    /// An IKE identity does not parse as its type or is unsafe in an output syntax.
    package static let invalidIdentity = RuleCode("invalid-identity")
    /// An identity strongSwan would read as a pattern: a wildcard (`*`, `%any`, the unspecified
    /// address, empty), an IP subnet or range, a type prefix (`fqdn:`, `{N}:`, regular expressions) or
    /// a leading `@` type marker.
    package static let identityPattern = RuleCode("identity-pattern")
    /// A node identity that a client certificate of the same CA also carries: its holder could pose as
    /// the server.
    package static let serverIdentityOverlap = RuleCode("server-identity-overlap")
    /// An FQDN identity with a single label (`vpn`): legal, but rarely what a certificate names.
    package static let identitySingleLabel = RuleCode("identity-single-label")
    /// Two users share an identity (compared case-insensitively, as strongSwan does).
    package static let duplicateIdentity = RuleCode("duplicate-identity")
    /// A password user's name (the password's identity in secrets.conf) equals a node's identity:
    /// strongSwan would offer that password for any EAP or XAuth name.
    package static let passwordIdentityOverlap = RuleCode("password-identity-overlap")
    /// Two nodes with the same identity.
    package static let duplicateNodeIdentity = RuleCode("duplicate-node-identity")
    /// Two nodes whose server certificates would carry a common identity (subject or subjectAltName).
    package static let nodeCertificateOverlap = RuleCode("node-certificate-overlap")
    /// Two nodes whose client connection names coincide once made section names (`a.b`, `a_b`).
    package static let connectionNameCollision = RuleCode("connection-name-collision")

    // Names (deployment, nodes, users): file names and config section name parts.
    package static let invalidName = RuleCode("invalid-name")
    /// A Windows device name (CON, NUL, COM1...): the output tree cannot be copied to Windows.
    package static let reservedName = RuleCode("reserved-name")
    package static let duplicateName = RuleCode("duplicate-name")
    /// Names differing only in case: their output directories collide on case-insensitive file systems.
    package static let nameCaseCollision = RuleCode("name-case-collision")

    // Secrets.
    /// A secret written into the inventory itself.
    package static let literalSecret = RuleCode("literal-secret")
    package static let weakPSK = RuleCode("weak-psk")
    package static let weakPassword = RuleCode("weak-password")
    /// A literal secret with characters some output cannot carry (control characters, NUL).
    package static let unrepresentableSecret = RuleCode("unrepresentable-secret")
    /// `env:` with an invalid variable name or `file:` with an empty path.
    package static let invalidSecretReference = RuleCode("invalid-secret-reference")
    /// An `env:` variable or `file:` path secrets may not come from (vpnprov's own `VPNPROV_*`, a
    /// variable without an allowed prefix, a file outside the secrets directory).
    package static let secretSource = RuleCode("secret-source")
    /// The same PSK (literal, env: variable or file: path) on several nodes.
    package static let pskReused = RuleCode("psk-reused")

    // Proposals.
    package static let invalidProposal = RuleCode("invalid-proposal")
    /// Weak algorithm: error, or warning with `proposals.allow_weak`.
    package static let weakProposal = RuleCode("weak-proposal")
    /// No IKE or no ESP proposal at all.
    package static let missingProposal = RuleCode("missing-proposal")
    /// IKEv2 node whose proposals contain no combination an Apple profile can express.
    package static let noAppleProposal = RuleCode("no-apple-proposal")
    /// A node Windows users reach whose proposals contain no combination Windows' IKEv2 client can be set to.
    package static let noWindowsProposal = RuleCode("no-windows-proposal")
    /// A `networkmanager` user holds credentials on a node only for services NetworkManager's strongSwan
    /// plugin cannot set up (ikev2-psk-eap, IKEv1).
    package static let networkManagerService = RuleCode("networkmanager-service")
    /// IKEv1 node whose IKE proposals are all AEAD (IKEv1 cannot negotiate AEAD IKE SAs).
    package static let noIKEv1Proposal = RuleCode("no-ikev1-proposal")

    // Pools.
    package static let missingPool = RuleCode("missing-pool")
    /// `pool` is not IPv4 or `pool6` is not IPv6.
    package static let poolFamily = RuleCode("pool-family")
    package static let poolTooSmall = RuleCode("pool-too-small")
    /// IPv4 pool larger than a /16.
    package static let poolLarge = RuleCode("pool-large")
    package static let poolOverlap = RuleCode("pool-overlap")
    /// Pool in a reserved range (0/8, loopback, link-local, multicast, class E, IPv6 specials).
    package static let poolReserved = RuleCode("pool-reserved")
    /// Pool contains a node's own address.
    package static let poolContainsAddress = RuleCode("pool-contains-address")
    /// Pool contains one of the node's DNS servers (a client could be leased its address).
    package static let poolContainsDNS = RuleCode("pool-contains-dns")
    /// A `network:` setting that cannot take effect: `ipv6` without a `pool6`, or a unique local
    /// `pool6` routed (no internet router forwards fc00::/7).
    package static let networkSetting = RuleCode("network-setting")
    /// A DNS server or a `network.allow_private` entry inside what the node never lets its clients reach
    /// (cloud metadata, link-local, loopback: `ClientReach.never4`/`never6`).
    static let neverForwarded = RuleCode("never-forwarded")

    // Addresses and DNS servers.
    package static let invalidAddress = RuleCode("invalid-address")
    /// Loopback/link-local address or single-label host name: clients elsewhere cannot reach it.
    package static let unreachableAddress = RuleCode("unreachable-address")
    package static let duplicateAddress = RuleCode("duplicate-address")
    package static let invalidDNS = RuleCode("invalid-dns")
    // duplicate-entry (the same entry twice in a list) is declared with the loader's codes.

    // References: unknown-node is declared with the loader's codes (the decoder resolves user.nodes).

    // Services and what they need.
    package static let noServices = RuleCode("no-services")
    package static let missingPSK = RuleCode("missing-psk")
    package static let unusedPSK = RuleCode("unused-psk")
    package static let invalidGroup = RuleCode("invalid-group")
    package static let unusedGroup = RuleCode("unused-group")
    package static let missingPassword = RuleCode("missing-password")
    package static let unusedPassword = RuleCode("unused-password")
    /// `cert: true` but none of the user's nodes offers ikev2-cert.
    package static let certUnused = RuleCode("cert-unused")
    /// A user (not revoked) who can use no service on any of their nodes with any of their devices.
    package static let userWithoutService = RuleCode("user-without-service")
    /// One of a user's devices can use no service on the user's nodes.
    package static let deviceWithoutService = RuleCode("device-without-service")
    /// ikev2-psk / ikev2-psk-eap: any PSK holder can impersonate the server.
    package static let weakPSKService = RuleCode("weak-psk-service")
    /// ipsec-xauth-psk with a group: IKEv1 aggressive mode exposes a crackable PSK hash.
    package static let ikev1Aggressive = RuleCode("ikev1-aggressive")
    /// ipsec-xauth-psk without a group (main mode): IKEv1 with a PSK shared by every user.
    package static let ikev1Service = RuleCode("ikev1-service")
    /// ipsec-xauth-hybrid: IKEv1, where the user's password is the only client credential.
    package static let ikev1Hybrid = RuleCode("ikev1-hybrid")
    /// ipsec-xauth-hybrid with a non-RSA server key: IKEv1 hybrid authentication is RSA-only.
    package static let hybridServerKey = RuleCode("hybrid-server-key")
    /// ipsec-xauth-hybrid on a node whose identity is not an IP address: Apple devices check the
    /// hybrid server against the address they dial, so they get no profile for it.
    package static let hybridAppleIdentity = RuleCode("hybrid-apple-identity")
    /// ipsec-xauth-psk / ipsec-xauth-hybrid: the node's charon must be built with IKEv1 (default builds from strongSwan
    /// 6.1 on
    /// reportedly leave it out; docs/strongswan-versions.md).
    package static let ikev1Build = RuleCode("ikev1-build")

    // Catalogue.
    package static let invalidCountry = RuleCode("invalid-country")

    // PKI settings.
    package static let invalidDays = RuleCode("invalid-days")
    /// server_days above 825: Apple clients reject longer-lived server certificates.
    package static let serverDaysApple = RuleCode("server-days-apple")
    /// The CA expires before the certificates it issues.
    package static let caDaysShort = RuleCode("ca-days-short")
    package static let invalidCAName = RuleCode("invalid-ca-name")
    /// An Apple option that has no effect as written (trusted SSIDs without on-demand...).
    package static let appleOptionUnused = RuleCode("apple-option-unused")

    // Acknowledgements (`acknowledge:`).
    /// An acknowledgement names no rule vpnprov has.
    static let unknownRule = RuleCode("unknown-rule")
    /// An acknowledgement names a rule that only reports errors: errors are fixed, not acknowledged.
    static let errorAcknowledged = RuleCode("error-acknowledged")
    /// Warning: an acknowledgement that matches no warning (fixed since, or a misspelt name).
    static let staleAcknowledgement = RuleCode("stale-acknowledgement")
}
