import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// One line of help per rule code: what the rule means and what to do about it. SARIF output
/// carries it as the rule's description and help, so a pull request annotation explains itself.
/// A code without an entry gets a generic text (a test keeps every code of the sources covered).
package enum RuleHelp {
    package static func text(for code: RuleCode) -> String {
        table[code.rawValue] ?? "vpnprov rule '\(code.rawValue)'; see the README's diagnostic code tables."
    }

    static let table: [String: String] = [
        // Reading the inventory
        "yaml-syntax": "The YAML is malformed (libyaml's message), or an alias names no anchor.",
        "multiple-documents": "The inventory holds more than one YAML document ('---'); keep one.",
        "duplicate-key": "A mapping has the same key twice; the note points at the first one.",
        "alias-limit": "Alias expansion exceeds 1,000,000 nodes or 10,000 aliases (an alias bomb).",
        "depth-limit": "Collections are nested deeper than 256 levels.",
        "invalid-utf8": "The file is not valid UTF-8.",
        "invalid-character":
            "NUL, another control character, or a byte-order mark that is not at the start of the file.",
        "scalar-too-long": "One value is longer than 1 MiB.",
        "yaml-tag":
            "An explicit YAML tag (!!str, !!int, !custom...): values are read by the type the schema expects, never by tags.",
        "empty-inventory": "The file holds no YAML document; an inventory needs at least 'vpnprov: 1' and 'name:'.",
        "schema-version": "'vpnprov:' is not a schema version this vpnprov reads (1).",
        "unknown-key": "A key the schema does not know; the message suggests the closest known key.",
        "missing-key": "A required key ('vpnprov', 'name', a node's 'address') is absent.",
        "type-mismatch":
            "A value has the wrong YAML type: a list where a string belongs, yes/no for a boolean, a quoted or octal-looking integer, a field indented as an entry.",
        "invalid-value":
            "The value has the right type but is not allowed: tier, key type, service, device, DNS address, days out of range, empty env:/file:.",
        "invalid-cidr": "'pool'/'pool6' is not a CIDR network of the right address family, or has host bits set.",
        "unknown-node": "A user's 'nodes:' names a node the inventory does not define.",
        "unrepresentable-text":
            "A value that goes into an Apple profile (apple.trusted_ssids) holds a character an XML property list cannot carry (U+0000 to U+001F, U+FFFE, U+FFFF) or another control character (DEL, U+0080 to U+009F, U+2028, U+2029).",
        "duplicate-entry":
            "The same entry twice in 'services', 'devices' or a user's 'nodes'; the duplicate is ignored.",
        // Validator
        "invalid-identity":
            "An IKE identity does not parse as its type or is unsafe in an output syntax (control characters, quotes, backslashes, edge spaces, wildcards...).",
        "identity-pattern":
            "An identity strongSwan would match as a pattern or another type: '*', '%any', empty, 0.0.0.0/::, an IP subnet or range, a type prefix (fqdn:, email:, asn1dn:, {N}:), a leading '@' (docs/security.md).",
        "server-identity-overlap":
            "A node identity that a client certificate of the same CA also carries (a cert user's identity or subject, or an unexpired client certificate in the state): its holder could pose as the server.",
        "identity-single-label": "A single-label FQDN identity; clients may not resolve or match it.",
        "duplicate-identity": "Two active users share an IKE identity (compared case-insensitively).",
        "password-identity-overlap":
            "A password user's name, which is the password's identity in the nodes' secrets.conf, equals a node's identity (compared as strongSwan compares them): strongSwan would accept that password for any EAP name and, with XAuth, for every user. Rename the user.",
        "duplicate-node-identity":
            "Two nodes have the same identity (compared as strongSwan compares them): either could pose as the other. Give each node its own 'id'.",
        "node-certificate-overlap":
            "Two nodes' certificates would carry a common identity (a node's 'id' or address on the other's certificate): either could pose as the other. Make identities and addresses distinct.",
        "connection-name-collision":
            "Two node names that become the same client connection name ('a.b' and 'a_b' both give 'a_b-<service>' in the Linux swanctl.conf). Rename one node.",
        "invalid-name":
            "A deployment, node or user name that is empty, longer than 64 characters, or not a safe file name ([A-Za-z0-9._-], not starting with '.' or '-').",
        "reserved-name": "A Windows device name (CON, NUL, COM1...); its files cannot be created on Windows.",
        "duplicate-name": "The same node or user name twice.",
        "name-case-collision":
            "Names that differ only in case; their output directories collide on case-insensitive file systems.",
        "literal-secret": "A PSK or password written literally in the inventory; prefer gen, env:VAR or file:PATH.",
        "weak-psk":
            "The PSK fails the strength policy (at least 20 characters and about 80 bits after discounting patterns and names).",
        "weak-password":
            "The password fails the strength policy (at least 12 characters and about 60 bits after discounting patterns and names).",
        "unrepresentable-secret":
            "A secret with control characters, NUL or leading/trailing whitespace cannot be written into every output.",
        "invalid-secret-reference": "A bad env: variable name or an empty file: path.",
        "secret-source":
            "A secret from where secrets may not come: vpnprov's own VPNPROV_* variables, a variable without an allowed prefix (secrets.env_prefix, default VPN_), a file outside the secrets directory (secrets.file_dir, default the inventory's directory; symbolic links followed).",
        "psk-reused": "The same PSK on several nodes: whoever holds it can impersonate all of them.",
        "invalid-proposal":
            "strongSwan would reject the proposal (unknown keyword, AEAD without PRF, IKE without DH group...).",
        "weak-proposal":
            "The proposal names a weak algorithm (3DES, DES, MD5, SHA-1, MODP up to 1536...); 'allow_weak: true' makes this a warning.",
        "missing-proposal": "An empty 'ike' or 'esp' proposal list.",
        "no-apple-proposal": "An IKEv2 node offers no IKE and ESP combination an Apple profile can express.",
        "ipv6-leak":
            "A node without an IPv6 pool has clients that cannot keep IPv6 outside the tunnel; they are named.",
        "apple-option-unused": "An Apple option that has no effect as written (trusted SSIDs without on-demand, ...).",
        "no-ikev1-proposal":
            "An ipsec-xauth-psk node whose IKE proposals are all AEAD; IKEv1 falls back to the built-in iPhone set.",
        "no-windows-proposal":
            "A node Windows users reach offers no IKE and ESP combination Windows' IKEv2 client can be set to.",
        "networkmanager-service":
            "A networkmanager user can use, on one of their nodes, only services NetworkManager's strongSwan plugin cannot set up (ikev2-psk-eap, IKEv1).",
        "missing-pool": "A node has neither 'pool' nor 'pool6'.",
        "pool-family": "'pool' is not IPv4 or 'pool6' is not IPv6.",
        "pool-too-small": "A pool with fewer than 2 addresses.",
        "pool-large": "A pool larger than a /16.",
        "pool-overlap": "The pools of two nodes overlap; the note points at the other node.",
        "pool-reserved":
            "A pool touching reserved space (0/8, 127/8, 169.254/16, 224/4, 240/4, ::/8, fe80::/10, ff00::/8).",
        "pool-contains-address": "A pool contains a node's address.",
        "pool-contains-dns": "A pool contains one of the node's DNS servers.",
        "network-setting":
            "A network: setting cannot take effect (ipv6 without pool6, a unique local pool6 routed, an allow_private entry that is public or of a family the node has no pool of).",
        "never-forwarded":
            "A DNS server or a network.allow_private entry lies where the node never lets its clients go (cloud metadata, link-local, loopback); run a resolver the clients may reach, and leave the entry out.",
        "invalid-address": "The address is neither an IP address nor a host name.",
        "unreachable-address": "A loopback, link-local or single-label address clients cannot dial.",
        "duplicate-address": "Two nodes have the same address.",
        "accounts-missing": "A node says 'accounts: radius' but the inventory has no 'accounts:' section.",
        "accounts-unused": "'accounts:' is written but no node says 'accounts: radius'.",
        "radius-database-missing":
            "RADIUS nodes exist but accounts.radius_database (the RADIUS servers' connection string) is not set.",
        "accounts-cluster":
            "accounts.cluster cannot work: it needs one monitor and at least two data nodes on hosts and names of their own, and no radius_database beside it.",
        "accounts-cluster-region":
            "The database cluster's monitor shares a region with a data node: losing that region leaves nothing to decide a failover.",
        "invalid-radius-server":
            "A RADIUS server's name is no safe directory name, its address no IP or host name, or its two ports are equal.",
        "disconnect-from-empty":
            "No address may send Disconnect-Requests: set accounts.disconnect_from (servers are host names).",
        "radius-cleartext":
            "accounts.protection is none: account names, client addresses and MSCHAPv2 exchanges cross the node-RADIUS path in clear.",
        "radius-without-password-service":
            "A node says 'accounts: radius' but offers no password service (EAP or XAuth) that would use it.",
        "radius-psk-service":
            "A node says 'accounts: radius' and offers ikev2-psk, which admits every holder of the node PSK without an account.",
        "radius-psk-reused":
            "A node offering ikev2-psk has the PSK a RADIUS node hands every app account (ipsec-xauth-psk, ikev2-psk-eap): every account holder would get a tunnel there without an account check.",
        "acme-settings-missing":
            "A node says 'certificate: acme' (or 'handoff:' is written) but the inventory has no 'acme:' section, or 'acme:' has no 'email'.",
        "acme-identity":
            "A node with 'certificate: acme' has an identity that is not a DNS name: an ACME CA certifies DNS names.",
        "radius-address":
            "A node's radius_address is unused (no 'accounts: radius'), not a unicast address (0.0.0.0, loopback, link-local, multicast, broadcast...), a RADIUS server's or another node's address, in a pool, or of another family than a RADIUS server.",
        "quantum-safe-ikev1":
            "A node with 'quantum_safe' offers an IKEv1 service, which has no additional key exchange and no PPK.",
        "quantum-safe-radius":
            "'ppk: required' on an 'accounts: radius' node: app accounts have no PPK, so every one would be refused.",
        "quantum-safe-device":
            "Users reach a quantum-safe node with a device whose generated configuration cannot carry what the node requires.",
        "acme-unused": "'acme:' is written but no node says 'certificate: acme' and there is no 'handoff:'.",
        "handoff-address":
            "handoff.address is not a fully qualified DNS name the ACME CA can certify, or is a node's or RADIUS server's name or address.",
        "disconnect-from-wide":
            "accounts.disconnect_from admits every address (/0), a pool, or a node's address or radius_address (a node's tunnel clients leave with it): name only where 'vpnprov accounts' runs.",
        "monitoring-from-wide":
            "monitoring.from admits every address (/0), a pool, or a node's address or radius_address (a node's tunnel clients leave with it): name only the Prometheus servers.",
        "invalid-deploy-host": "deploy.host is neither an IP address nor a host name Ansible can connect to.",
        "invalid-deploy-user":
            "deploy.user is not a portable login name (letters, digits, '.', '_', '-'; at most 32; not starting with '-').",
        "invalid-dns": "A DNS entry that is not a usable IP address.",
        "no-services": "A node that offers no service.",
        "missing-psk": "A PSK service on a node without 'psk'.",
        "unused-psk": "A 'psk' that no service of the node uses.",
        "invalid-group":
            "An unusable IKEv1 group name (space, quotes, '#'/'%' prefix, ends in 'hybrid', longer than 64).",
        "unused-group": "A 'group' on a node without ipsec-xauth-psk.",
        "missing-password": "A user who can use nothing without a password has none.",
        "unused-password": "A password that none of the user's services uses.",
        "cert-unused": "'cert: true' but none of the user's nodes offers ikev2-cert.",
        "user-without-service": "A user who can use nothing on their nodes.",
        "device-without-service": "One of a user's devices can use nothing on their nodes.",
        "weak-psk-service": "ikev2-psk / ikev2-psk-eap: anyone holding the node PSK can impersonate the server.",
        "ikev1-aggressive": "ipsec-xauth-psk with a group: IKEv1 Aggressive Mode exposes a hash of the PSK.",
        "ikev1-service": "ipsec-xauth-psk without a group (IKEv1 Main Mode).",
        "ikev1-hybrid": "ipsec-xauth-hybrid: IKEv1, where the user's password is the only client credential.",
        "ikev1-build":
            "A node offers an IKEv1 service: its charon must be built with IKEv1 support (the node README says how to check).",
        "hybrid-server-key":
            "ipsec-xauth-hybrid needs an RSA server key (IKEv1 hybrid signs with RSA only); set pki.server_key to an RSA type.",
        "hybrid-apple-identity":
            "ipsec-xauth-hybrid on a node whose id is not an IP address: Apple devices match the server against the address they dial, so Apple profiles leave that connection out.",
        "invalid-country": "Not an assigned ISO 3166-1 alpha-2 country code.",
        "invalid-days": "A certificate lifetime out of range (1 to 36500 days).",
        "server-days-apple": "'server_days' above 825: Apple devices reject such server certificates.",
        "ca-days-short": "The CA lives shorter than the certificates it issues.",
        "invalid-ca-name": "A CA name that is empty, has control characters or is longer than 64 characters.",
        "unknown-rule": "An 'acknowledge:' entry names no rule vpnprov has; the message suggests the closest one.",
        "error-acknowledged":
            "An 'acknowledge:' entry names a rule that reports errors; errors cannot be acknowledged, only fixed.",
        "stale-acknowledgement":
            "An 'acknowledge:' entry covers no warning (the warning is gone, or a name is misspelt); remove or correct it.",
        // Consistency
        "no-server-connection": "No connection of the node would be selected for this client connection.",
        "remote-id-mismatch": "The server's identity is not the one the client expects.",
        "local-id-mismatch": "The server does not accept the identity the client sends.",
        "auth-mismatch": "Authentication methods or rounds differ from the connection strongSwan selects.",
        "ike-proposal-mismatch": "No IKE proposal the client sends is accepted by the server.",
        "esp-proposal-mismatch": "No ESP proposal the client sends is accepted by the server.",
        "pfs-mismatch": "The ESP proposals match initially but not on rekey (PFS group).",
        "apple-proposal-unsupported": "The node's proposals cannot be expressed in an Apple profile.",
        "server-cert-san": "The server certificate's subjectAltName lacks the identity clients expect.",
        "client-cert-san": "The client certificate's subjectAltName lacks the client's identity.",
        "client-cert-policy":
            "The client certificate lacks the policy of a node its profile connects to; the node would refuse it.",
        "windows-proposal-unsupported": "The node's proposals cannot be set in Windows' IKEv2 client.",
        "windows-certificate":
            "A certificate lacks what Windows checks: serverAuth, the dialled address as dNSName, clientAuth.",
        "ca-mismatch": "The client trusts another CA than the one of its server.",
        "missing-secret": "A password, PSK or certificate a profile or its server needs is missing.",
        // State, secrets and the run
        "secret-unavailable":
            "An env: variable is unset or empty, or a file: cannot be read (the reference is named, never the value).",
        "certificate-identity": "An identity that cannot be put into a certificate.",
        "nothing-to-revoke": "'revoke' of a user without anything to revoke.",
        "nothing-to-unrevoke":
            "'unrevoke' of a user who was not revoked with 'vpnprov revoke' (a user revoked in the inventory is unrevoked there).",
        "secret-not-generated":
            "'rotate-psk'/'rotate-password' of a secret vpnprov did not generate ('env:', 'file:' or literal): change it where it comes from.",
        "ca-rotation":
            "'rotate-ca' while a CA rotation is in progress (finish it first with --finish), or '--finish' without one.",
        "state-locked": "Another vpnprov run holds the state lock.",
        "state-unreadable": "The state directory cannot be read.",
        "state-inconsistent":
            "The state does not load cleanly: a file is missing or altered since vpnprov wrote it, a CA key does not sign for its certificate.",
        "state-permissions":
            "The state directory or a file in it belongs to another user or others can write it (refused); as a warning, a mode readable by others that the run narrowed.",
        "ca-passphrase": "The CA key is encrypted and VPNPROV_CA_PASSPHRASE is missing or wrong.",
        "state-io": "A state write failed (disk full, permissions).",
        "crypto-failure": "OpenSSL failed.",
        "state-notice":
            "Something the state holds differs from the inventory (a CA kept with other settings, a user held revoked).",
        "revoked-user": "About a revocation: how it is recorded, how to undo it, what it cannot withdraw.",
        "no-such-user": "The command names a user the inventory does not list.",
        "no-such-node": "The command names a node the inventory does not list.",
        "rollout-pending":
            "Nodes whose server files changed have not been recorded as rolled out ('vpnprov rolled-out').",
        "handoff-site-missing":
            "A hand-off command on an inventory without 'handoff:': add the site, generate and roll deploy/site.yml out.",
        "handoff-stale":
            "'handoff' while the state or a user's folder is not what 'vpnprov generate' would write now: run generate first.",
        "handoff-publish": "Publishing to the hand-off site (ansible-playbook deploy/handoff.yml) failed.",
        "handoff-record":
            "The hand-off record or OUT/handoff/ could not be brought up to date, or lines of the fetched audit journal are unreadable.",
        "output-io": "The output tree cannot be read or written.",
        "output-location": "The output tree of this deployment is somewhere else than this run would write it.",
        "render-failure": "A profile or configuration could not be rendered.",
        "environment": "The environment stops the run (an unwritable directory, a missing file).",
        "usage": "The command line is wrong (unknown option, bad value, missing inventory).",
        "drift":
            "The output tree differs from what 'vpnprov generate' would write now: run generate and commit the result.",
    ]
}
