import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// The typed inventory (schema version 1, docs/inventory.md). Immutable value types, decoded from YAML by
// InventoryDecoder and checked by the Validator. Every entity remembers where its fields were
// written so diagnostics can point at the exact line and column.

/// Key algorithms for the CA, servers and clients.
package enum KeyType: String, Sendable, Hashable, Codable, CaseIterable {
    case ecdsaP256 = "ecdsa-p256"
    case ecdsaP384 = "ecdsa-p384"
    case rsa2048 = "rsa-2048"
    case rsa3072 = "rsa-3072"
    case rsa4096 = "rsa-4096"
}

/// Connection kinds a node offers (docs/formats.md, "Services on each side").
package enum Service: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case ikev2Cert = "ikev2-cert"
    case ikev2EAP = "ikev2-eap"
    case ikev2PSK = "ikev2-psk"
    case ikev2PSKEAP = "ikev2-psk-eap"
    case ipsecXauthPSK = "ipsec-xauth-psk"
    /// IKEv1 Hybrid Mode: server certificate, client XAuth user/password only (no PSK, no client certificate).
    case ipsecXauthHybrid = "ipsec-xauth-hybrid"

    /// IKE major version the service runs on.
    package var ikeVersion: Int { self == .ipsecXauthPSK || self == .ipsecXauthHybrid ? 1 : 2 }
    /// The node needs a pre-shared key for this service.
    package var needsPSK: Bool { self == .ikev2PSK || self == .ikev2PSKEAP || self == .ipsecXauthPSK }
    /// Users need a password (EAP-MSCHAPv2 or XAuth) for this service.
    package var needsPassword: Bool {
        self == .ikev2EAP || self == .ikev2PSKEAP || self == .ipsecXauthPSK || self == .ipsecXauthHybrid
    }
    /// Users need a client certificate for this service.
    package var needsClientCert: Bool { self == .ikev2Cert }
    /// The server proves itself with its certificate.
    package var serverUsesCert: Bool { self == .ikev2Cert || self == .ikev2EAP || self == .ipsecXauthHybrid }
    // Which client kinds can use it: `Service.devices`, derived from the kinds' descriptions
    // (Capabilities/ClientKinds/).

    /// Stable order used everywhere output is generated (the order servers load connections in).
    package var order: Int { Service.allCases.firstIndex(of: self)! }
    package static func < (lhs: Service, rhs: Service) -> Bool { lhs.order < rhs.order }
}

/// Client profile kinds a user receives. Each is described once, in its own file of
/// Capabilities/ClientKinds/ (`Device.kind`).
package enum Device: String, Sendable, Hashable, Codable, CaseIterable {
    case apple
    case android
    case linux
    /// Windows' built-in IKEv2 client, set up by a PowerShell script (`<user>-windows.ps1`).
    case windows
    /// Linux desktops: NetworkManager with its strongSwan plugin (`networkmanager/*.nmconnection`).
    case networkmanager

    /// A user's devices when the inventory names none: the kinds whose description says so
    /// (`ClientKind.isDefault`), every one but `networkmanager`, which is asked for by name.
    package static let defaults: [Device] = allCases.filter { $0.kind.isDefault }
}

package enum Tier: String, Sendable, Hashable, Codable, CaseIterable {
    case free
    case pro
}

/// A node's `state:`: in service, or draining (its clients are moved to its siblings and the rest ended
/// after a grace period; docs/operations.md "Draining a node").
package enum NodeState: String, Sendable, Hashable, Codable, CaseIterable {
    case active
    case draining
}

/// Where a secret comes from. `literal` holds a secret value: never print it.
package enum SecretSource: Sendable, Hashable {
    /// Generated once, stored in the state directory, reused on every later run.
    case generate
    /// Read from an environment variable at run time.
    case env(String)
    /// Read from a file at run time (path as written; relative to the inventory's directory).
    case file(String)
    /// Written in the inventory itself (warned).
    case literal(String)

    /// A printable reference that never reveals the value.
    package var reference: String {
        switch self {
        case .generate: return "gen"
        case .env(let name): return "env:\(name)"
        case .file(let path): return "file:\(path)"
        case .literal: return "literal value"
        }
    }
}

/// IKE identity types. The string forms are exactly what strongSwan parses.
package enum IKEIdentity: Sendable, Hashable {
    case fqdn(String)  // vpn.example.com
    case userFQDN(String)  // alice@example.com
    case ipv4(String)  // 192.0.2.1
    case ipv6(String)  // 2001:db8::1 (canonical text form)
    case dn(String)  // "C=DE, O=acme, CN=fra-1"
    case keyID(String)  // keyid:group (IKEv1 group names)

    /// The value as written in swanctl.conf `id = ...` (before quoting).
    package var swanctlValue: String {
        switch self {
        case .fqdn(let v), .userFQDN(let v), .ipv4(let v), .ipv6(let v), .dn(let v): return v
        case .keyID(let v): return "keyid:\(v)"
        }
    }

    /// The bare value (for Apple LocalIdentifier/RemoteIdentifier, .sswan, catalogue).
    package var value: String {
        switch self {
        case .fqdn(let v), .userFQDN(let v), .ipv4(let v), .ipv6(let v), .dn(let v), .keyID(let v): return v
        }
    }
}

/// An IPv4 or IPv6 network in CIDR notation (already validated).
package struct CIDR: Sendable, Hashable, CustomStringConvertible {
    package var address: [UInt8]  // 4 or 16 bytes, host bits zero
    package var prefix: Int
    package var isIPv6: Bool { address.count == 16 }
    package init(address: [UInt8], prefix: Int) {
        self.address = address
        self.prefix = prefix
    }
    package var description: String { "\(IPAddressText.format(address))/\(prefix)" }
}

/// IKE and ESP proposals in strongSwan keyword syntax, most preferred first.
package struct Proposals: Sendable, Hashable {
    package var ike: [String]
    package var esp: [String]
    /// `allow_weak: true` in the inventory: weak algorithms (3DES, SHA-1, MODP1024...) are warnings, not errors.
    package var allowWeak: Bool
    package init(ike: [String], esp: [String], allowWeak: Bool = false) {
        self.ike = ike
        self.esp = esp
        self.allowWeak = allowWeak
    }
    package static let defaults = Proposals(
        ike: ["aes256gcm16-prfsha256-ecp256", "aes256-sha256-modp2048"],
        esp: ["aes256gcm16", "aes256-sha256"])
}

package struct CASettings: Sendable, Hashable {
    package var name: String
    package var key: KeyType
    package var days: Int
    package init(name: String, key: KeyType, days: Int) {
        self.name = name
        self.key = key
        self.days = days
    }
}

/// Where the identity that signs the Apple profiles comes from (`pki.profile_signing`): PEM files
/// or environment variables (`file:PATH`, `env:VAR`), like other secrets.
package struct ProfileSigningSettings: Sendable, Hashable {
    /// The signing certificate (PEM).
    package var certificate: SecretSource
    /// Its private key (PEM, unencrypted).
    package var key: SecretSource
    /// Intermediate certificates sent along (PEM, one or more), if any.
    package var chain: SecretSource?
    package init(certificate: SecretSource, key: SecretSource, chain: SecretSource? = nil) {
        self.certificate = certificate
        self.key = key
        self.chain = chain
    }
}

/// Top-level `secrets:`: where `env:` and `file:` secrets may come from (docs/inventory.md, "Where
/// secrets may come from"; docs/security.md section 3).
package struct SecretSettings: Sendable, Hashable {
    /// Without `secrets.env_prefix`: variables named `VPN_...`.
    static let defaultEnvPrefixes = ["VPN_"]
    /// vpnprov's own variables (`VPNPROV_CA_PASSPHRASE`, ...): never a secret of the inventory.
    static let reservedPrefix = "VPNPROV_"

    /// An `env:` variable's name must start with one of these.
    package var envPrefixes: [String]
    /// The directory `file:` secrets must lie in (after resolving `..` and symbolic links), as
    /// written: relative to the inventory's directory, or absolute. nil: the inventory's directory.
    package var fileDirectory: String?

    package init(envPrefixes: [String] = SecretSettings.defaultEnvPrefixes, fileDirectory: String? = nil) {
        self.envPrefixes = envPrefixes
        self.fileDirectory = fileDirectory
    }
}

package struct PKISettings: Sendable, Hashable {
    /// Sign every `.mobileconfig` (CMS SignedData); nil: profiles stay unsigned.
    package var profileSigning: ProfileSigningSettings?
    /// `pki.crl_url`: the http(s) URL where the operator publishes the CA's CRL (`crl/crl.der`); server
    /// certificates name it as their CRL distribution point. nil: certificates name none.
    package var crlURL: String?
    package var ca: CASettings
    package var serverDays: Int
    package var clientDays: Int
    /// Key type for server and client certificates (defaults to the CA's).
    package var serverKey: KeyType
    package var clientKey: KeyType
    package init(
        ca: CASettings, serverDays: Int = 825, clientDays: Int = 365, serverKey: KeyType? = nil,
        clientKey: KeyType? = nil
    ) {
        self.ca = ca
        self.serverDays = serverDays
        self.clientDays = clientDays
        self.serverKey = serverKey ?? ca.key
        self.clientKey = clientKey ?? ca.key
    }
}

/// How Ansible reaches a node to roll its configuration out (`deploy:`; every key optional).
package struct DeployTarget: Sendable, Hashable {
    /// SSH host name or address; nil means the node's `address`.
    package var host: String?
    /// SSH port (1...65535).
    package var port: Int
    /// Remote login user.
    package var user: String
    /// Whether Ansible escalates privileges (`become`) after logging in.
    package var become: Bool
    package init(host: String? = nil, port: Int = 22, user: String = "root", become: Bool = false) {
        self.host = host
        self.port = port
        self.user = user
        self.become = become
    }
}

/// How a node forwards its clients' traffic (`network:` of a node or of `defaults:`): what the
/// rendered sysctl and nftables files of `servers/<node>/` say. Every field has a default that works
/// on a one-NIC cloud VM.
package struct NodeNetwork: Sendable, Hashable {
    /// Which kernel path carries the node's IPsec traffic, so the firewall knows what "came through
    /// the tunnel" looks like: the kernel's XFRM (the normal case; decrypted packets carry a security
    /// path, `meta ipsec exists`) or charon's `kernel-libipsec` (decrypted packets come out of its TUN
    /// device, `ipsec*`).
    package enum IPsecPath: String, Sendable, Hashable, CaseIterable {
        case xfrm
        case libipsec
    }

    /// How the IPv6 pool reaches the world: translated to the node's address, or routed (the
    /// operator routes the pool's prefix to the node).
    package enum IPv6Mode: String, Sendable, Hashable, CaseIterable {
        case nat
        case routed
    }

    /// TCP MSS written into forwarded SYNs of pool traffic.
    package enum MSS: Sendable, Hashable {
        /// Clamp to this value (only SYNs announcing more are changed).
        case fixed(Int)
        /// Clamp to the route's MTU (`rt mtu`).
        case routeMTU
    }

    /// strongSwan's recommended value for IPsec over a 1500-byte path: the ESP-in-UDP overhead
    /// leaves 1400 bytes for the inner packet, 40 of them TCP/IP headers.
    static let defaultMSS = 1360

    /// The interface pool traffic leaves by; nil: any (masquerade applies whatever the route).
    package var uplink: String?
    package var mss: MSS
    /// Clients of the node cannot reach each other's pool addresses.
    package var isolateClients: Bool
    package var ipsec: IPsecPath
    /// nil: by the pool6 prefix (unique local -> nat, global -> routed).
    package var ipv6: IPv6Mode?
    /// Private and internal networks (`ClientReach.internal4`/`internal6`) the node's clients may reach,
    /// as written (`network.allow_private`); every other one is refused, and `ClientReach.never4`/`never6`
    /// whatever this says.
    package var allowPrivate: [CIDR]

    package init(
        uplink: String? = nil, mss: MSS = .fixed(NodeNetwork.defaultMSS), isolateClients: Bool = true,
        ipsec: IPsecPath = .xfrm, ipv6: IPv6Mode? = nil, allowPrivate: [CIDR] = []
    ) {
        self.uplink = uplink
        self.mss = mss
        self.isolateClients = isolateClients
        self.ipsec = ipsec
        self.ipv6 = ipv6
        self.allowPrivate = allowPrivate
    }
}

/// A VPN server. Defaults from the inventory's `defaults:` are already merged in.
package struct Node: Sendable, Hashable {
    package var name: String
    /// What clients dial: IPv4, IPv6 or DNS name (as written).
    package var address: String
    /// Server IKE identity (client's remote ID); defaults to the address.
    package var id: IKEIdentity
    package var region: String?
    package var country: String?
    package var tier: Tier
    package var pool: CIDR?
    package var pool6: CIDR?
    package var services: [Service]  // sorted by Service order, unique
    package var psk: SecretSource?
    package var group: String?
    package var proposals: Proposals
    package var dns: [String]
    /// Apple profile options (`defaults:` merged in, field by field).
    package var apple = AppleOptions()
    /// How Ansible reaches the node (`deploy:`).
    package var deploy: DeployTarget
    /// Forwarding, NAT and firewall settings (`network:`).
    package var network = NodeNetwork()
    /// Where the accounts of the node's password services live (`accounts:`).
    package var accounts = AccountSource.inventory
    /// The node's own address on its path to the RADIUS servers (`radius_address`, canonical text), when that is
    /// not `address` (a private network): its RADIUS goes out from there and its Disconnect-Requests come in there.
    package var radiusAddress: String?
    /// Where the node's server certificate comes from (`certificate:`).
    package var certificate = CertificateSource.ca
    /// Quantum-safe tunnels (`quantum_safe:`): nil for classical ones.
    package var quantumSafe: QuantumSafe?
    /// In service, or being taken out of it (`state: draining`, docs/operations.md "Draining a node").
    package var state = NodeState.active
    /// Where the node's mapping starts.
    package var location: SourceLocation
    /// Where each field's value was written (`.key(.pool)`, `.network(.mss)`); absent for defaults.
    package var fieldLocations: [NodeField: SourceLocation]

    package init(
        name: String, address: String, id: IKEIdentity, region: String? = nil, country: String? = nil,
        tier: Tier = .free, pool: CIDR? = nil, pool6: CIDR? = nil, services: [Service],
        psk: SecretSource? = nil, group: String? = nil, proposals: Proposals = .defaults, dns: [String] = [],
        deploy: DeployTarget = DeployTarget(), location: SourceLocation,
        fieldLocations: [NodeField: SourceLocation] = [:]
    ) {
        self.name = name
        self.address = address
        self.id = id
        self.region = region
        self.country = country
        self.tier = tier
        self.pool = pool
        self.pool6 = pool6
        self.services = services
        self.psk = psk
        self.group = group
        self.proposals = proposals
        self.dns = dns
        self.deploy = deploy
        self.location = location
        self.fieldLocations = fieldLocations
    }

    /// Best location for a field: its own, else the node's (a field left to its default was written nowhere).
    package func location(of field: NodeField) -> SourceLocation { fieldLocations[field] ?? location }

    /// Best location for one of the node's keys: its own, else the node's.
    package func location(of key: InventoryDecoder.NodeKey) -> SourceLocation { location(of: .key(key)) }

    /// Location of a nested field (`proposals.ike`) falling back to its parents, then to the node.
    package func location(nested field: NodeField) -> SourceLocation {
        var field = field
        while true {
            if let l = fieldLocations[field] { return l }
            guard let parent = field.parent else { return location }
            field = parent
        }
    }

    /// The SSH host Ansible connects to: `deploy.host`, else the address clients dial.
    package var deployHost: String { deploy.host ?? address }

    /// How the IPv6 pool leaves the node: as written, else NAT for a unique local prefix (fc00::/7)
    /// and routing for a global one. nil without an IPv6 pool.
    package var ipv6Mode: NodeNetwork.IPv6Mode? {
        guard let pool6 else { return nil }
        return network.ipv6 ?? ((pool6.address[0] & 0xFE) == 0xFC ? .nat : .routed)
    }
}

package struct User: Sendable, Hashable {
    package var name: String
    package var password: SecretSource?
    package var cert: Bool
    /// Client IKE identity for certificate auth; default derived (`<name>@<deployment>` style, see decoder).
    package var id: IKEIdentity
    /// Nodes the user may use, in inventory order of nodes (default: every node).
    package var nodes: [String]
    package var devices: [Device]
    package var revoked: Bool
    /// The user's own Apple options (on-demand, trusted SSIDs, kill switch, idle disconnect).
    package var apple = AppleOptions()
    package var location: SourceLocation
    /// Where each field's value was written (`.key(.password)`, `.apple(.onDemand)`).
    package var fieldLocations: [UserField: SourceLocation]

    package init(
        name: String, password: SecretSource? = nil, cert: Bool = false, id: IKEIdentity, nodes: [String],
        devices: [Device] = Device.defaults, revoked: Bool = false, location: SourceLocation,
        fieldLocations: [UserField: SourceLocation] = [:]
    ) {
        self.name = name
        self.password = password
        self.cert = cert
        self.id = id
        self.nodes = nodes
        self.devices = devices
        self.revoked = revoked
        self.location = location
        self.fieldLocations = fieldLocations
    }

    /// Best location for a field: its own, else the user's.
    package func location(of field: UserField) -> SourceLocation { fieldLocations[field] ?? location }

    /// Best location for one of the user's keys: its own, else the user's.
    package func location(of key: InventoryDecoder.UserKey) -> SourceLocation { location(of: .key(key)) }
}

package struct Inventory: Sendable, Hashable {
    /// Path of the inventory file as given on the command line (used in diagnostics).
    package var file: String
    package var schemaVersion: Int
    /// Deployment name: profile names, UUID namespace.
    package var name: String
    package var pki: PKISettings
    /// Nodes in the order written in the inventory.
    package var nodes: [Node]
    /// Users in the order written in the inventory.
    package var users: [User]
    /// Where top-level fields were written (`name:`, `pki:` and `secrets:` and every key inside them:
    /// `.name`, `.pki(.serverDays)`, `.ca(.days)`, `.secrets(.envPrefix)`); absent for defaults.
    package var fieldLocations: [InventoryField: SourceLocation]
    /// Where `env:`/`file:` secrets may come from (`secrets:`).
    package var secrets = SecretSettings()
    /// Warnings the operator keeps on purpose (`acknowledge:`), in the order written.
    var acknowledgements: [Acknowledgement] = []
    /// Central accounts (`accounts:`): RADIUS servers and their database; nil when not written.
    package var accounts: AccountsSettings?
    /// The ACME settings (`acme:`) of the nodes with `certificate: acme`; nil when not written.
    package var acme: ACMESettings?
    /// The fleet's monitoring (`monitoring:`, docs/monitoring.md): nil when not written, and then no node
    /// runs an exporter and no file of `monitoring/` is written.
    package var monitoring: MonitoringSettings?
    /// The hand-off site (`handoff:`, docs/handoff.md): nil when not written, and then `vpnprov handoff` has
    /// nowhere to publish and `deploy/` rolls out no site.
    package var handOff: HandOffSettings?

    package init(
        file: String, schemaVersion: Int = 1, name: String, pki: PKISettings, nodes: [Node], users: [User],
        fieldLocations: [InventoryField: SourceLocation] = [:]
    ) {
        self.file = file
        self.schemaVersion = schemaVersion
        self.name = name
        self.pki = pki
        self.nodes = nodes
        self.users = users
        self.fieldLocations = fieldLocations
    }

    /// Best location for a top-level field: its own, else the nearest written parent (`pki.ca.days` ->
    /// `pki.ca` -> `pki`), else the start of the file.
    package func location(of field: InventoryField) -> SourceLocation {
        var field = field
        while true {
            if let location = fieldLocations[field] { return location }
            guard let parent = field.parent else { break }
            field = parent
        }
        return SourceLocation(file: file, line: 1, column: 1)
    }

    package func node(named name: String) -> Node? { nodes.first { $0.name == name } }
    package func user(named name: String) -> User? { users.first { $0.name == name } }
}

extension IKEIdentity {
    /// Classifies an identity string the way strongSwan does (identification.c), without judging
    /// validity (the Validator does that): `keyid:` prefix -> key ID, `=` -> DN, `@` -> user FQDN,
    /// an IP address -> IPv4/IPv6 (IPv6 canonicalised), otherwise FQDN.
    package static func classify(_ text: String) -> IKEIdentity {
        if text.lowercased().hasPrefix("keyid:") { return .keyID(String(text.dropFirst(6))) }
        if text.contains("=") { return .dn(text) }
        if let bytes = IPAddressText.parse(text) {
            return bytes.count == 4 ? .ipv4(text) : .ipv6(IPAddressText.format(bytes))
        }
        if text.contains("@") { return .userFQDN(text) }
        return .fqdn(text)
    }
}

/// Apple dead peer detection rate (`DeadPeerDetectionRate`: keepalive every 30, 10 or 1 minutes).
package enum AppleDPDRate: String, Sendable, Hashable, CaseIterable {
    case none, low, medium, high

    /// The profile value.
    package var profileValue: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}

/// Apple profile options as written under `apple:` of a node, of `defaults:` or of a user (nil: not
/// written). A user's value wins over the node's, the node's over `defaults:`, and that over the
/// built-in default (see `AppleOptions.effective`).
package struct AppleOptions: Sendable, Hashable {
    /// Connect on demand (OnDemandEnabled with OnDemandRules).
    package var onDemand: Bool?
    /// Wi-Fi networks (SSIDs) where an on-demand VPN disconnects and stays down.
    package var trustedSSIDs: [String]?
    /// Kill switch: all traffic through the tunnel (IncludeAllNetworks).
    package var includeAllNetworks: Bool?
    /// With the kill switch: local networks stay reachable outside the tunnel (ExcludeLocalNetworks).
    package var excludeLocalNetworks: Bool?
    /// Child SA rekeys with a fresh Diffie-Hellman exchange (EnablePFS); node only.
    package var pfs: Bool?
    /// The device checks the server certificate's revocation (EnableCertificateRevocationCheck); node only.
    package var crlCheck: Bool?
    /// DeadPeerDetectionRate; node only.
    package var dpd: AppleDPDRate?
    /// Seconds of idle time before the device disconnects (DisconnectOnIdle, DisconnectOnIdleTimer); 0 = never.
    package var disconnectOnIdle: Int?

    package init(
        onDemand: Bool? = nil, trustedSSIDs: [String]? = nil, includeAllNetworks: Bool? = nil,
        excludeLocalNetworks: Bool? = nil, pfs: Bool? = nil, crlCheck: Bool? = nil, dpd: AppleDPDRate? = nil,
        disconnectOnIdle: Int? = nil
    ) {
        self.onDemand = onDemand
        self.trustedSSIDs = trustedSSIDs
        self.includeAllNetworks = includeAllNetworks
        self.excludeLocalNetworks = excludeLocalNetworks
        self.pfs = pfs
        self.crlCheck = crlCheck
        self.dpd = dpd
        self.disconnectOnIdle = disconnectOnIdle
    }

    /// Field by field: `self` where written, else `fallback`.
    package func over(_ fallback: AppleOptions) -> AppleOptions {
        AppleOptions(
            onDemand: onDemand ?? fallback.onDemand, trustedSSIDs: trustedSSIDs ?? fallback.trustedSSIDs,
            includeAllNetworks: includeAllNetworks ?? fallback.includeAllNetworks,
            excludeLocalNetworks: excludeLocalNetworks ?? fallback.excludeLocalNetworks, pfs: pfs ?? fallback.pfs,
            crlCheck: crlCheck ?? fallback.crlCheck, dpd: dpd ?? fallback.dpd,
            disconnectOnIdle: disconnectOnIdle ?? fallback.disconnectOnIdle)
    }
}

/// One entry of `acknowledge:`: a warning rule kept on purpose for a node, a user or the nodes
/// offering a service (all that are given must match), or with none of them for the deployment's
/// own warnings (`pki:`), with the reason (docs/inventory.md).
struct Acknowledgement: Sendable, Hashable {
    /// The rule as written, which `Acknowledgements.check` reports when vpnprov has no such rule.
    package var rule: String
    package var node: String?
    package var user: String?
    package var service: Service?
    package var reason: String
    /// The entry (its `- ` item), and its `rule:` value.
    package var location: SourceLocation
    var ruleLocation: SourceLocation

    package init(
        rule: String, node: String? = nil, user: String? = nil, service: Service? = nil, reason: String,
        location: SourceLocation,
        ruleLocation: SourceLocation? = nil
    ) {
        self.rule = rule
        self.node = node
        self.user = user
        self.service = service
        self.reason = reason
        self.location = location
        self.ruleLocation = ruleLocation ?? location
    }

    /// Whether this entry covers the warning `d`.
    package func covers(_ d: Diagnostic) -> Bool {
        guard d.severity == .warning, d.code.rawValue == rule, let subject = d.subject else { return false }
        // Without node, user and service: the deployment's own warnings (pki).
        if node == nil && user == nil && service == nil { return subject.node == nil && subject.user == nil }
        if let node, subject.node != node { return false }
        if let user, subject.user != user { return false }
        if let service, !subject.services.contains(service) { return false }
        return true
    }
}
