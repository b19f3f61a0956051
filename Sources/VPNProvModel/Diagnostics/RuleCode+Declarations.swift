// Every rule code's declaration: its table, severities and help (RuleDeclaration). docs/diagnostics.md's tables
// are made from these (`VPNPROV_RECORD=1 swift test --filter RuleDocumentationTests` writes them); the help is
// the documentation's, so write it as a phrase for that table, in Markdown.

extension RuleCode {
    /// This code's table, severities and help text.
    package var declaration: RuleDeclaration {
        switch self {
        // MARK: Reading the inventory (YAML and schema)
        case .yamlSyntax: .reading("the YAML is malformed (libyaml's message), or an alias names no anchor")
        case .multipleDocuments: .reading("more than one YAML document (`---`) in the file; keep one")
        case .duplicateKey: .reading("a mapping has the same key twice (the note points at the first)")
        case .aliasLimit: .reading("alias expansion exceeds 1,000,000 nodes or 10,000 aliases (an alias bomb)")
        case .depthLimit: .reading("collections nested deeper than 256 levels")
        case .invalidUTF8: .reading("the file is not valid UTF-8")
        case .invalidCharacter:
            .reading("NUL, another control character, or a byte-order mark that is not at the start of the file")
        case .scalarTooLong: .reading("one value longer than 1 MiB")
        case .yamlTag:
            .reading(
                "an explicit YAML tag (`!!str`, `!!int`, `!custom`...): values are read by the type the schema "
                    + "expects, never by tags")
        case .emptyInventory:
            .reading("the file holds no YAML document; an inventory needs at least `vpnprov: 1` and `name:`")
        case .schemaVersion: .reading("`vpnprov:` is not `1` (nothing else is checked then)")
        case .unknownKey: .reading(#"a key the schema does not know, with a "did you mean" hint"#)
        case .missingKey: .reading("a required key (`vpnprov`, `name`, node `address`) is absent")
        case .typeMismatch:
            .reading(
                "wrong YAML type: a list where a string belongs, `yes` for a boolean, a quoted or octal-looking "
                    + "integer, a field indented as an entry")
        case .invalidValue:
            .reading(
                "right type, not an allowed value: tier, key type, service, device, DNS address, out-of-range days, "
                    + "empty `env:`/`file:`")
        case .invalidCIDR:
            .reading(
                "`pool`/`pool6` is not a CIDR network of the right family, or has host bits set; an "
                    + "`accounts.disconnect_from` or `network.allow_private` entry that is neither an IP address nor "
                    + "a CIDR network, or has host bits set")
        case .unknownNode: .reading("a user's `nodes:` names a node the inventory does not define")
        case .unrepresentableText:
            .reading(
                "a value that goes into an Apple profile (`apple.trusted_ssids`) holds a character XML 1.0 cannot "
                    + "carry (U+0000 to U+001F, U+FFFE, U+FFFF) or another control character (DEL, U+0080 to U+009F, "
                    + "U+2028, U+2029); every other string an Apple profile holds is refused by its own rule (names, "
                    + "identities, secrets, CA name, group, address)")
        case .duplicateEntry:
            .reading(
                .warning,
                "the same entry more than once in `services`, `devices`, `apple.trusted_ssids` or a user's `nodes` "
                    + "(ignored); each repeated value once per list, at its first repeat, with how often it is listed")

        // MARK: Rule checks (validator)
        case .invalidIdentity:
            .rule(
                .error,
                #"an IKE identity does not parse as its type (FQDN labels, user@domain, IP, DN attributes outside the one DN grammar validation and issuing share: [inventory.md](inventory.md#dn-identities), key ID) or is unsafe in an output syntax: control characters, `"`/`\\`, edge spaces, trailing dot, leading `#` on a key ID"#
            )
        case .identityPattern:
            .rule(
                .error,
                "an identity strongSwan would match as a pattern or another type: any `*`, empty, `%any`, "
                    + "`0.0.0.0`/`::`, an IP subnet or range, a type prefix (`fqdn:`, `email:`, `asn1dn:`, `{N}:`...), "
                    + "a leading `@` (see docs/security.md)")
        case .serverIdentityOverlap:
            .rule(
                .error,
                "a node identity that a client certificate also carries (a cert user's identity or default subject, "
                    + "revoked users too; at `generate`, any unexpired client certificate the state issued, a former "
                    + "user's too): its holder could pose as the server")
        case .identitySingleLabel: .acknowledgeable("a single-label FQDN identity")
        case .duplicateIdentity: .rule(.error, "two active users share an identity (case-insensitive)")
        case .passwordIdentityOverlap:
            .rule(
                .error,
                "a password user's name, which is the password's identity in the nodes' `secrets.conf`, equals a "
                    + "node's identity (compared as strongSwan compares them): strongSwan would accept the password "
                    + "for any EAP name and, with XAuth, for every user (see docs/security.md); a name strongSwan reads "
                    + "as a pattern (`0.0.0.0`, `10.0.0.1-10.0.0.9`) is `identity-pattern`")
        case .duplicateNodeIdentity:
            .rule(.error, "two nodes with the same identity (same comparison), at the second node's `id`")
        case .nodeCertificateOverlap:
            .rule(
                .error,
                "two nodes whose certificates would carry a common identity (one's `id` or address on the other's "
                    + "certificate), at the second node")
        case .connectionNameCollision:
            .rule(
                .error,
                "two node names that become one client connection name (`a.b` and `a_b` are both `a_b-<service>` in "
                    + "the Linux `swanctl.conf`), at the second node")
        case .invalidName:
            .rule(
                .error,
                #"a deployment, node or user name that is empty, longer than 64 characters, outside `[A-Za-z0-9._-]`, containing `/`, `\\` or `..`, or starting with `.` or `-`"#
            )
        case .reservedName: .acknowledgeable("a Windows device name (CON, NUL, COM1, ...)")
        case .duplicateName: .rule(.error, "the same node or user name twice")
        case .nameCaseCollision:
            .rule(.error, "names differing only in case (their output directories collide on macOS)")
        case .literalSecret:
            .acknowledgeable(
                "a PSK or password written literally in the inventory; prefer `gen`, `env:` or `file:`")
        case .weakPSK:
            .rule(
                .error,
                "a PSK fails the strength policy: at least 20 characters and about 80 bits after discounting runs, "
                    + "keyboard rows, repeats, common words and the user, node and deployment names (also checked at "
                    + "`generate` for `env:`/`file:` values)")
        case .weakPassword:
            .rule(
                .error,
                "a password fails the strength policy: at least 12 characters and about 60 bits after discounting "
                    + "runs, keyboard rows, repeats, common words and the user, node and deployment names (also checked "
                    + "at `generate` for `env:`/`file:` values)")
        case .unrepresentableSecret: .rule(.error, "control characters, NUL or edge whitespace in a secret")
        case .invalidSecretReference: .rule(.error, "a bad `env:` variable name or an empty `file:` path")
        case .secretSource:
            .rule(
                .error,
                "a secret from where secrets may not come: vpnprov's own `VPNPROV_*` variables, a variable without an "
                    + "allowed prefix (`secrets.env_prefix`, default `VPN_`), a `file:` outside the secrets directory "
                    + "(`secrets.file_dir`, default the inventory's directory; an absolute path, `..`, or, at "
                    + "`generate` and `validate --secrets`, a file that resolves outside it through symbolic links) "
                    + "([inventory.md](inventory.md#where-secrets-may-come-from))")
        case .pskReused:
            .acknowledgeable(
                "the same literal/`env:`/`file:` PSK on several nodes: whoever holds it can pose as each of them")
        case .invalidProposal:
            .rule(
                .error,
                "strongSwan would reject the proposal (unknown keyword, AEAD without PRF, IKE without DH group, ...), "
                    + "or a proven server could not compute it (ML-KEM and other `keN_` key exchanges; "
                    + "`aesxcbc`/`aescmac`: [strongswan-versions.md](strongswan-versions.md#proposal-keywords))")
        case .weakProposal:
            .acknowledgeable(
                alsoError: true,
                "names a weak algorithm (3DES, DES, MD5, SHA-1, MODP ≤ 1536, ...); a warning with "
                    + "`allow_weak: true`, and only the warning can be acknowledged")
        case .missingProposal: .rule(.error, "an empty `ike` or `esp` list")
        case .ipv6Leak:
            .acknowledgeable(
                "a node without `pool6` has clients that cannot block IPv6 outside the tunnel (Linux, Windows, "
                    + "Apple IPSec, Apple IKEv2 with `apple.include_all_networks: false`); they are named")
        case .appleOptionUnused:
            .acknowledgeable(
                "an Apple option without effect as written (`trusted_ssids` without `on_demand`, "
                    + "`exclude_local_networks` without the kill switch)")
        case .noAppleProposal:
            .rule(.error, "an IKEv2 node with no IKE+ESP combination an Apple profile can express")
        case .noWindowsProposal:
            .rule(.error, "a node Windows users reach with no IKE+ESP combination Windows' IKEv2 client can be set to")
        case .networkManagerService:
            .rule(
                .error,
                "a user with the `networkmanager` device holds credentials on a node only for services "
                    + "NetworkManager's strongSwan plugin cannot set up (`ikev2-psk-eap`, the IKEv1 services); at the "
                    + "user's `devices` ([clients.md](clients.md#networkmanager-linux-desktops))")
        case .noIKEv1Proposal:
            .acknowledgeable(
                "an `ipsec-xauth-psk` node whose IKE proposals are all AEAD (IKEv1 falls back to the built-in "
                    + "iPhone set)")
        case .missingPool: .rule(.error, "a node with neither `pool` nor `pool6`")
        case .poolFamily: .rule(.error, "`pool` is not IPv4 or `pool6` is not IPv6")
        case .poolTooSmall: .rule(.error, "a pool with fewer than 2 addresses")
        case .poolLarge: .acknowledgeable("a pool larger than a /16")
        case .poolOverlap: .rule(.error, "pools of two nodes overlap (note at the other node)")
        case .poolReserved:
            .rule(.error, "a pool touching 0/8, 127/8, 169.254/16, 224/4, 240/4, ::/8, fe80::/10, ff00::/8")
        case .poolContainsAddress: .rule(.error, "a pool contains a node's address")
        case .poolContainsDNS: .acknowledgeable("a pool contains one of the node's DNS servers")
        case .networkSetting:
            .acknowledgeable(
                "a `network:` setting cannot take effect: `ipv6` on a node without `pool6`, `ipv6: routed` for "
                    + "a unique local `pool6` (fc00::/7 is never routed on the internet), or a "
                    + "`network.allow_private` entry that holds no private or internal address (clients reach it "
                    + "anyway) or is of a family the node has no pool of; at the entry's line")
        case .neverForwarded:
            .rule(
                .error,
                "a `dns` server or a `network.allow_private` entry inside what the node never lets its clients reach: "
                    + "cloud metadata and platform addresses, link-local, loopback "
                    + "([inventory.md](inventory.md#where-clients-may-go)); at the entry's line")
        case .invalidAddress: .rule(.error, "a node's address is neither an IP address nor a host name")
        case .unreachableAddress:
            .acknowledgeable(
                "a node's address is loopback, link-local or a single label: clients cannot dial it")
        case .invalidDeployHost: .rule(.error, "`deploy.host` is neither an IP address nor a host name")
        case .invalidDeployUser:
            .rule(
                .error,
                "`deploy.user` is not a portable login name (letters, digits, `.`, `_`, `-`; at most 32; not "
                    + "starting with `-`)")
        case .accountsMissing:
            .rule(
                .error,
                "a node says `accounts: radius` but there is no `accounts:` section ([accounts.md](accounts.md))")
        case .accountsUnused: .rule(.warning, "`accounts:` is written but no node says `accounts: radius`")
        case .radiusDatabaseMissing: .rule(.error, "RADIUS nodes exist but `accounts.radius_database` is not set")
        case .invalidRadiusServer:
            .rule(
                .error,
                "a RADIUS server whose name is no safe directory name, whose address is no IP address or host name, "
                    + "or whose two ports are equal")
        case .disconnectFromEmpty:
            .rule(
                .error,
                "no address may send Disconnect-Requests to the nodes (every server is written as a host name and "
                    + "`disconnect_from` is not set)")
        case .radiusCleartext:
            .acknowledgeable(
                "`accounts.protection: none`: RADIUS between the nodes and the RADIUS servers travels in clear "
                    + "(account names, the clients' real addresses, the MSCHAPv2 exchange a password's NT hash is "
                    + "recovered from); acknowledge it only for a path protected otherwise "
                    + "([accounts.md](accounts.md#the-path-between-nodes-and-radius-servers))")
        case .accountsCluster:
            .rule(
                .error,
                "`accounts.cluster` cannot work as written: no host with `role: monitor` or a second one, fewer than "
                    + "two data nodes, a host's name unusable or shared with another host, node or RADIUS server, two "
                    + "hosts at one address (the monitor on a data node's host above all), or `radius_database` written "
                    + "beside it ([accounts.md](accounts.md#a-replicated-accounts-database))")
        case .accountsClusterRegion:
            .rule(
                .warning,
                "the cluster's monitor is in the region of a data node: losing that region loses both, and nothing is "
                    + "promoted")
        case .quotaDisconnectBlocked:
            .rule(
                .warning,
                "`accounts.quotas` is set but a RADIUS server written as an IP address is outside "
                    + "`accounts.disconnect_from`: the nodes' firewalls drop the Disconnect-Requests it sends when an "
                    + "account uses up its data quota, so such a session runs on "
                    + "([accounts.md](accounts.md#data-quotas)) (at `quotas`)")
        case .radiusWithoutPasswordService:
            .rule(.warning, "`accounts: radius` on a node that offers no EAP or XAuth service")
        case .radiusAddress:
            .rule(
                .error, .warning,
                #"a node's `radius_address` is no unicast address of the node's own: unspecified (`0.0.0.0`, `::`, which the servers' `remote_addrs` would read as any peer), "this network" (`0.0.0.0/8`), loopback, link-local, multicast, broadcast and reserved (`240.0.0.0/4`), IPv4-mapped, a RADIUS server's address, another node's address or RADIUS address; or it lies in a pool (a client would speak as the node), or is of another family than a RADIUS server written as an address (errors); on a node without `accounts: radius` it is unused (warning) ([accounts.md](accounts.md#a-node-that-reaches-its-radius-servers-from-another-address))"#
            )
        case .quantumSafeIKEv1:
            .rule(
                .error,
                "a node with `quantum_safe` also offers an IKEv1 service, which has neither an additional key "
                    + "exchange nor a PPK ([quantum-safe.md](quantum-safe.md#the-inventory))")
        case .quantumSafeRadius:
            .rule(
                .error,
                "`quantum_safe.ppk: required` on an `accounts: radius` node: app accounts have no PPK, so every one "
                    + "would be refused; use `optional`")
        case .quantumSafeDevice:
            .rule(
                .error,
                "users reach a quantum-safe node with devices whose generated configuration cannot carry what it "
                    + "requires (ML-KEM without `classical_fallback`, a required PPK); the devices and users are named "
                    + "([quantum-safe.md](quantum-safe.md#what-each-client-gets))")
        case .radiusPSKService:
            .rule(
                .error,
                "`accounts: radius` on a node that offers `ikev2-psk`: the node PSK, which every account of its "
                    + "`ipsec-xauth-psk` / `ikev2-psk-eap` services holds, would open a tunnel without an account "
                    + "([decisions.md](decisions.md#a-radius-node-offers-no-psk-only-service))")
        case .radiusPSKReused:
            .rule(
                .error,
                "a node that offers `ikev2-psk` has the PSK a RADIUS node hands every app account (its "
                    + "`ipsec-xauth-psk` / `ikev2-psk-eap`): the same `file:`, `env:` or literal (a YAML anchor too) in "
                    + "the inventory, or, at `generate`, `check` and `validate --secrets`, the same value behind two "
                    + "references; every account holder, disabled or deleted too, would get a tunnel there without an "
                    + "account check. At the `ikev2-psk` node's `psk`, with a note at the RADIUS node's; it replaces "
                    + "the `psk-reused` warning for that pair")
        case .disconnectFromWide:
            .rule(
                .error,
                "an `accounts.disconnect_from` entry that is every address (`0.0.0.0/0`, `::/0`) or holds an address "
                    + "a tunnel client can appear as: a node's `pool`/`pool6`, a node's `address` or `radius_address` "
                    + "(a node masquerades its clients to the address they leave it with) (at the entry, with a note "
                    + "at the address; without `disconnect_from`, a RADIUS server at such an address, at the server; "
                    + "the node checks no time stamp, so the source address is what keeps a captured "
                    + "Disconnect-Request from being replayed)")
        case .monitoringFromWide:
            .rule(
                .error,
                "a `monitoring.from` entry that is every address (`0.0.0.0/0`, `::/0`) or holds an address a tunnel "
                    + "client can appear as: a node's `pool`/`pool6`, a node's `address` or `radius_address`, which the "
                    + "node masquerades its clients to (at the entry, with a note at the address; the exporters tell "
                    + "who is connected where, so only the Prometheus servers may reach them, never a tunnel client: "
                    + "run Prometheus on a host that is not a node)")
        case .acmeSettingsMissing:
            .rule(
                .error,
                "a node says `certificate: acme`, or `handoff:` is written, but there is no `acme:` section, or it "
                    + "has no `email` ([acme.md](acme.md))")
        case .acmeIdentity:
            .rule(
                .error,
                "a node with `certificate: acme` whose `id` is not a DNS name (an IP address, e-mail, DN or key ID): "
                    + "an ACME CA certifies DNS names, and clients compare the node's identity with the certificate")
        case .acmeUnused: .rule(.warning, "`acme:` that no node uses and no `handoff:` needs")
        case .handOffAddress:
            .rule(
                .error,
                "`handoff.address` is an IP address, not a fully qualified DNS name, or a node's or RADIUS server's "
                    + "name or address: the site is a host of its own with a certificate from the ACME CA "
                    + "([handoff.md](handoff.md))")
        case .duplicateAddress: .rule(.error, "two nodes with the same address")
        case .invalidDNS: .rule(.error, "a DNS entry that is not a usable IP address")
        case .noServices: .rule(.error, "a node that offers nothing")
        case .missingPSK: .rule(.error, "a PSK service on a node without `psk`")
        case .unusedPSK: .acknowledgeable("a `psk` that no service of the node uses")
        case .invalidGroup:
            .rule(
                .error,
                "an unusable IKEv1 group name (space, quotes, `#`/`%` prefix, ends in `hybrid`, longer than 64)")
        case .unusedGroup: .acknowledgeable("a `group` on a node without `ipsec-xauth-psk`")
        case .missingPassword: .rule(.error, "a user who can use nothing without a password has none")
        case .unusedPassword: .acknowledgeable("a password that none of the user's services uses")
        case .certUnused:
            .acknowledgeable("`cert: true` but none of the user's nodes offers `ikev2-cert`")
        case .userWithoutService: .acknowledgeable("a user who can use nothing on their nodes")
        case .deviceWithoutService:
            .acknowledgeable("one of a user's devices can use nothing on their nodes")
        case .weakPSKService:
            .acknowledgeable(
                "`ikev2-psk` / `ikev2-psk-eap`: anyone holding the node PSK can impersonate the server")
        case .ikev1Aggressive:
            .acknowledgeable(
                "`ipsec-xauth-psk` with a group: IKEv1 Aggressive Mode exposes a hash of the PSK")
        case .ikev1Service:
            .acknowledgeable("`ipsec-xauth-psk` without a group (IKEv1 Main Mode)")
        case .ikev1Hybrid:
            .acknowledgeable(
                "`ipsec-xauth-hybrid`: IKEv1, the user's password is the only client credential")
        case .ikev1Build:
            .acknowledgeable(
                "once per node with `ipsec-xauth-psk` or `ipsec-xauth-hybrid`: its charon must be built with "
                    + "IKEv1 (the node README says how to check; "
                    + "[strongswan-versions.md](strongswan-versions.md#ikev1-ipsec-xauth-psk))")
        case .hybridServerKey:
            .rule(
                .error,
                "`ipsec-xauth-hybrid` with a non-RSA `pki.server_key` (IKEv1 hybrid signs with RSA only)")
        case .hybridAppleIdentity:
            .acknowledgeable(
                "`ipsec-xauth-hybrid` on a node whose `id` is not an IP address: Apple devices match the server "
                    + "against the address they dial, so Apple profiles leave that connection out")
        case .invalidCountry: .rule(.error, "not an assigned ISO 3166-1 alpha-2 country code")
        case .invalidDays: .rule(.error, "a certificate lifetime out of range (1 to 36500 days)")
        case .serverDaysApple:
            .acknowledgeable("`server_days` above 825: Apple devices reject such server certificates")
        case .caDaysShort: .acknowledgeable("the CA lives shorter than the certificates it issues")
        case .invalidCAName: .rule(.error, "a CA name that is empty, has control characters or is longer than 64")
        case .unknownRule: .rule(.error, #"an `acknowledge:` entry names no rule vpnprov has ("did you mean")"#)
        case .errorAcknowledged:
            .rule(
                .error,
                "an `acknowledge:` entry names a rule whose warnings cannot be acknowledged (one that reports errors, "
                    + "or warnings about the inventory's own sections): fix what it reports")
        case .staleAcknowledgement:
            .rule(
                .warning,
                "an `acknowledge:` entry covers no warning (the warning is gone, or a name is misspelt); not judged "
                    + "while the inventory has decoding errors")

        // MARK: Consistency checks
        case .noServerConnection:
            .consistency("no server connection of the right IKE version/mode would be selected")
        case .remoteIDMismatch: .consistency("the server's identity is not what the client expects")
        case .localIDMismatch: .consistency("the server does not accept the client's identity")
        case .authMismatch: .consistency("auth methods or rounds differ from the connection strongSwan selects")
        case .ikeProposalMismatch: .consistency("no IKE proposal the client offers is accepted")
        case .espProposalMismatch: .consistency("no ESP proposal the client offers is accepted")
        case .pfsMismatch:
            .consistency("the ESP proposals match until the first rekey, but not with the PFS group of a rekey")
        case .appleProposalUnsupported: .consistency("the node's proposals cannot be expressed in an Apple profile")
        case .windowsProposalUnsupported: .consistency("the node's proposals cannot be set in Windows' IKEv2 client")
        case .windowsCertificate:
            .consistency(
                "a certificate lacks what Windows checks: serverAuth, the dialled address as dNSName, clientAuth")
        case .serverCertificateSAN:
            .consistency(
                "the server certificate's subjectAltName lacks the identity clients expect (read from the issued "
                    + "certificate)")
        case .clientCertificateSAN:
            .consistency(
                "a client certificate's subjectAltName lacks the client's identity (read from the issued "
                    + "certificate)")
        case .clientCertificatePolicy:
            .consistency(
                "a client certificate lacks the policy of a node its profile connects to, which the node requires "
                    + "(`cert_policy`; read from the issued certificate)")
        case .caMismatch: .consistency("the client trusts another CA than the server's")
        case .missingSecret: .consistency("a password, PSK or certificate a profile or its server needs is missing")

        // MARK: State, secrets and the run
        case .secretUnavailable:
            .run(
                .failure,
                "an `env:` variable or `file:` is missing, empty, only a line ending, not a regular file, over 1024 "
                    + "bytes or not UTF-8 (the reference is named, never a value)")
        case .badIdentity: .run(.failure, "an identity that cannot be put into a certificate")
        case .nothingToRevoke: .run(.failure, "`revoke` of a user without anything to revoke")
        case .nothingToUnrevoke:
            .run(
                .failure,
                "`unrevoke` of a user who was not revoked with `vpnprov revoke` (a user revoked in the inventory is "
                    + "unrevoked there)")
        case .secretNotGenerated:
            .run(
                .failure,
                "`rotate-psk` / `rotate-password` of a secret vpnprov did not generate (`env:`, `file:` or literal): "
                    + "change it where it comes from")
        case .caRotation:
            .run(.failure, "`rotate-ca` while a rotation is in progress, or `--finish` without one")
        case .lockHeld: .run(.environment, "another vpnprov run holds the state lock")
        case .stateUnreadable: .run(.environment, "the state directory or a file in it cannot be read")
        case .stateInconsistent:
            .run(
                .environment,
                "a state file is missing or not what vpnprov wrote (its digest, the manifest's seal, a key a state "
                    + "file must not hold), or a CA key does not sign for its certificate "
                    + "([state.md](state.md#what-survives-what))")
        case .statePermissions:
            .run(
                .environment, alsoWarning: true,
                "the state directory or an entry in it belongs to another user or others can write it; as a warning: "
                    + "a mode readable by others that the run narrowed to 0700/0600 "
                    + "([state.md](state.md#who-may-own-and-write-the-state))")
        case .caPassphrase:
            .run(.environment, "the CA key is encrypted and `VPNPROV_CA_PASSPHRASE` is missing or wrong")
        case .io: .run(.environment, "a state write failed (disk full, permissions)")
        case .crypto: .run(.environment, "OpenSSL failed")
        case .stateNotice:
            .runWarning(
                "the state differs from the inventory and is kept (a CA with other settings, a user held revoked by "
                    + "`vpnprov revoke`, with how to record or undo it); or a run created a new CA while `state` beside "
                    + "the inventory or in the current directory already holds one (a relative `--state` given from "
                    + "the wrong directory makes a second CA)")
        case .revokedUser:
            .runWarning("about a revocation: what it cannot withdraw (a node PSK the user knew)")
        case .noSuchUser: .run(.failure, "the command names a user the inventory does not list")
        case .noSuchNode:
            .run(.failure, "the command (`rotate-psk`, `rolled-out`) names a node the inventory does not list")
        case .rolloutPending:
            .runWarning(
                "of `check`: nodes whose files changed are not yet recorded as rolled out (`vpnprov rolled-out`); "
                    + "fails `check --strict`")
        case .handOffSiteMissing:
            .run(
                .failure,
                "`handoff`, `handoff-revoke`, `handoff-list` on an inventory without `handoff:` "
                    + "([handoff.md](handoff.md))")
        case .handOffStale:
            .run(
                .failure,
                "`handoff` while the state would change or a user's folder is not what `generate` would write now: "
                    + "run `generate` first")
        case .handOffPublish:
            .run(
                .environment, alsoWarning: true,
                "publishing to the hand-off site (`ansible-playbook OUT/deploy/handoff.yml`) failed: `handoff` shows "
                    + "no link and withdraws the ones it prepared; a warning of `handoff-list`, which then lists the "
                    + "journal of the last publish")
        case .handOffRecord:
            .runWarning(
                "the links of users whose profiles a run changed could not be ended in the record or `OUT/handoff/` "
                    + "(run `handoff-revoke`), or lines of the fetched audit journal are unreadable")
        case .drift:
            .run(
                .failure,
                "`check --format sarif`: a file of the output tree (or the state) differs from what `generate` would "
                    + "make")
        case .outputLocation:
            .run(
                .usage, alsoWarning: true,
                "the deployment's output tree is recorded elsewhere and still exists (warning: a tree left at the "
                    + "former default `./out`)")
        case .outputIO: .run(.environment, "the output tree cannot be read or written")
        case .renderFailure: .run(.environment, "a file could not be rendered")
        case .usage:
            .run(
                .usage,
                "in `--format json`/`sarif` documents: the command line stopped the run (the message says why)")
        case .environment:
            .run(
                .environment,
                "in `--format json`/`sarif` documents: the environment stopped the run (the message says why)")
        }
    }
}
