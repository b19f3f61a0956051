// Stable rule codes of the inventory validator (printed in brackets after each diagnostic).
// Severity is per rule unless noted; docs/diagnostics.md lists them with their meaning.

extension RuleCode {
    // Identities (every identity parses as its IKE type and is safe in every output).
    /// An IKE identity does not parse as its type or is unsafe in an output syntax.
    public static let invalidIdentity = RuleCode("invalid-identity")
    /// An identity strongSwan would read as a pattern: a wildcard (`*`, `%any`, the unspecified
    /// address, empty), an IP subnet or range, a type prefix (`fqdn:`, `{N}:`, regular expressions) or
    /// a leading `@` type marker.
    public static let identityPattern = RuleCode("identity-pattern")
    /// A node identity that a client certificate of the same CA also carries: its holder could pose as
    /// the server.
    public static let serverIdentityOverlap = RuleCode("server-identity-overlap")
    /// An FQDN identity with a single label (`vpn`): legal, but rarely what a certificate names.
    public static let identitySingleLabel = RuleCode("identity-single-label")
    /// Two users share an identity (compared case-insensitively, as strongSwan does).
    public static let duplicateIdentity = RuleCode("duplicate-identity")
    /// A password user's name (the password's identity in secrets.conf) equals a node's identity:
    /// strongSwan would offer that password for any EAP or XAuth name.
    public static let passwordIdentityOverlap = RuleCode("password-identity-overlap")
    /// Two nodes with the same identity.
    public static let duplicateNodeIdentity = RuleCode("duplicate-node-identity")
    /// Two nodes whose server certificates would carry a common identity (subject or subjectAltName).
    public static let nodeCertificateOverlap = RuleCode("node-certificate-overlap")
    /// Two nodes whose client connection names coincide once made section names (`a.b`, `a_b`).
    public static let connectionNameCollision = RuleCode("connection-name-collision")

    // Names (deployment, nodes, users): file names and config section name parts.
    public static let invalidName = RuleCode("invalid-name")
    /// A Windows device name (CON, NUL, COM1...): the output tree cannot be copied to Windows.
    public static let reservedName = RuleCode("reserved-name")
    public static let duplicateName = RuleCode("duplicate-name")
    /// Names differing only in case: their output directories collide on case-insensitive file systems.
    public static let nameCaseCollision = RuleCode("name-case-collision")

    // Secrets.
    /// A secret written into the inventory itself.
    public static let literalSecret = RuleCode("literal-secret")
    public static let weakPSK = RuleCode("weak-psk")
    public static let weakPassword = RuleCode("weak-password")
    /// A literal secret with characters some output cannot carry (control characters, NUL).
    public static let unrepresentableSecret = RuleCode("unrepresentable-secret")
    /// `env:` with an invalid variable name or `file:` with an empty path.
    public static let invalidSecretReference = RuleCode("invalid-secret-reference")
    /// An `env:` variable or `file:` path secrets may not come from (vpnprov's own `VPNPROV_*`, a
    /// variable without an allowed prefix, a file outside the secrets directory).
    public static let secretSource = RuleCode("secret-source")
    /// The same PSK (literal, env: variable or file: path) on several nodes.
    public static let pskReused = RuleCode("psk-reused")

    // Proposals.
    public static let invalidProposal = RuleCode("invalid-proposal")
    /// Weak algorithm: error, or warning with `proposals.allow_weak`.
    public static let weakProposal = RuleCode("weak-proposal")
    /// No IKE or no ESP proposal at all.
    public static let missingProposal = RuleCode("missing-proposal")
    /// IKEv2 node whose proposals contain no combination an Apple profile can express.
    public static let noAppleProposal = RuleCode("no-apple-proposal")
    /// A node Windows users reach whose proposals contain no combination Windows' IKEv2 client can be set to.
    public static let noWindowsProposal = RuleCode("no-windows-proposal")
    /// A `networkmanager` user holds credentials on a node only for services NetworkManager's strongSwan
    /// plugin cannot set up (ikev2-psk-eap, IKEv1).
    public static let networkManagerService = RuleCode("networkmanager-service")
    /// IKEv1 node whose IKE proposals are all AEAD (IKEv1 cannot negotiate AEAD IKE SAs).
    public static let noIKEv1Proposal = RuleCode("no-ikev1-proposal")

    // Pools.
    public static let missingPool = RuleCode("missing-pool")
    /// `pool` is not IPv4 or `pool6` is not IPv6.
    public static let poolFamily = RuleCode("pool-family")
    public static let poolTooSmall = RuleCode("pool-too-small")
    /// IPv4 pool larger than a /16.
    public static let poolLarge = RuleCode("pool-large")
    public static let poolOverlap = RuleCode("pool-overlap")
    /// Pool in a reserved range (0/8, loopback, link-local, multicast, class E, IPv6 specials).
    public static let poolReserved = RuleCode("pool-reserved")
    /// Pool contains a node's own address.
    public static let poolContainsAddress = RuleCode("pool-contains-address")
    /// Pool contains one of the node's DNS servers (a client could be leased its address).
    public static let poolContainsDNS = RuleCode("pool-contains-dns")
    /// A `network:` setting that cannot take effect: `ipv6` without a `pool6`, or a unique local
    /// `pool6` routed (no internet router forwards fc00::/7).
    public static let networkSetting = RuleCode("network-setting")

    // Addresses and DNS servers.
    public static let invalidAddress = RuleCode("invalid-address")
    /// Loopback/link-local address or single-label host name: clients elsewhere cannot reach it.
    public static let unreachableAddress = RuleCode("unreachable-address")
    public static let duplicateAddress = RuleCode("duplicate-address")
    public static let invalidDNS = RuleCode("invalid-dns")
    // duplicate-entry (the same entry twice in a list) is declared with the loader's codes.

    // References: unknown-node is declared with the loader's codes (the decoder resolves user.nodes).

    // Services and what they need.
    public static let noServices = RuleCode("no-services")
    public static let missingPSK = RuleCode("missing-psk")
    public static let unusedPSK = RuleCode("unused-psk")
    public static let invalidGroup = RuleCode("invalid-group")
    public static let unusedGroup = RuleCode("unused-group")
    public static let missingPassword = RuleCode("missing-password")
    public static let unusedPassword = RuleCode("unused-password")
    /// `cert: true` but none of the user's nodes offers ikev2-cert.
    public static let certUnused = RuleCode("cert-unused")
    /// A user (not revoked) who can use no service on any of their nodes with any of their devices.
    public static let userWithoutService = RuleCode("user-without-service")
    /// One of a user's devices can use no service on the user's nodes.
    public static let deviceWithoutService = RuleCode("device-without-service")
    /// ikev2-psk / ikev2-psk-eap: any PSK holder can impersonate the server.
    public static let weakPSKService = RuleCode("weak-psk-service")
    /// ipsec-xauth-psk with a group: IKEv1 aggressive mode exposes a crackable PSK hash.
    public static let ikev1Aggressive = RuleCode("ikev1-aggressive")
    /// ipsec-xauth-psk without a group (main mode): IKEv1 with a PSK shared by every user.
    public static let ikev1Service = RuleCode("ikev1-service")
    /// ipsec-xauth-hybrid: IKEv1, where the user's password is the only client credential.
    public static let ikev1Hybrid = RuleCode("ikev1-hybrid")
    /// ipsec-xauth-hybrid with a non-RSA server key: IKEv1 hybrid authentication is RSA-only.
    public static let hybridServerKey = RuleCode("hybrid-server-key")
    /// ipsec-xauth-hybrid on a node whose identity is not an IP address: Apple devices check the
    /// hybrid server against the address they dial, so they get no profile for it.
    public static let hybridAppleIdentity = RuleCode("hybrid-apple-identity")
    /// ipsec-xauth-psk / ipsec-xauth-hybrid: the node's charon must be built with IKEv1 (default builds from strongSwan 6.1 on
    /// reportedly leave it out; docs/strongswan-versions.md).
    public static let ikev1Build = RuleCode("ikev1-build")

    // Catalogue.
    public static let invalidCountry = RuleCode("invalid-country")

    // PKI settings.
    public static let invalidDays = RuleCode("invalid-days")
    /// server_days above 825: Apple clients reject longer-lived server certificates.
    public static let serverDaysApple = RuleCode("server-days-apple")
    /// The CA expires before the certificates it issues.
    public static let caDaysShort = RuleCode("ca-days-short")
    public static let invalidCAName = RuleCode("invalid-ca-name")
    /// An Apple option that has no effect as written (trusted SSIDs without on-demand...).
    public static let appleOptionUnused = RuleCode("apple-option-unused")

    // Acknowledgements (`acknowledge:`).
    /// An acknowledgement names no rule vpnprov has.
    public static let unknownRule = RuleCode("unknown-rule")
    /// An acknowledgement names a rule that only reports errors: errors are fixed, not acknowledged.
    public static let errorAcknowledged = RuleCode("error-acknowledged")
    /// Warning: an acknowledgement that matches no warning (fixed since, or a misspelt name).
    public static let staleAcknowledgement = RuleCode("stale-acknowledgement")
}
