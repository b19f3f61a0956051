import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The client side of every connection, derived straight from the inventory (and the key type of
// the user's certificate), independently of the server plan. Every client renderer renders from
// this plan, and Consistency checks it against the server plan before anything is written.

/// How one side of an IKE SA proves itself.
package enum AuthMethod: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Certificate signature (swanctl `auth = pubkey`).
    case pubkey
    /// Pre-shared key (`auth = psk`).
    case psk
    /// EAP-MSCHAPv2 user name and password (`auth = eap-mschapv2`, IKEv2).
    case eapMSCHAPv2 = "eap-mschapv2"
    /// XAuth user name and password (`auth = xauth`, IKEv1 second round).
    case xauth

    package var description: String { rawValue }
}

/// One authentication round the client performs (swanctl `local*` section).
package struct ClientAuthRound: Sendable, Hashable {
    package var method: AuthMethod
    /// EAP identity (user name) for `eap-mschapv2`.
    package var eapID: String?
    /// XAuth user name for `xauth`.
    package var xauthID: String?
    package init(method: AuthMethod, eapID: String? = nil, xauthID: String? = nil) {
        self.method = method
        self.eapID = eapID
        self.xauthID = xauthID
    }
}

/// What an Apple profile sets for one connection beyond the SA parameters, resolved from the user's,
/// the node's and the built-in defaults (`AppleOptions.effective`).
package struct AppleDeviceSettings: Sendable, Hashable {
    package var onDemand: Bool
    /// SSIDs where the on-demand VPN disconnects (a Disconnect rule before the Connect rule).
    package var trustedSSIDs: [String]
    package var includeAllNetworks: Bool
    package var excludeLocalNetworks: Bool
    /// EnableCertificateRevocationCheck (only where the server proves itself with a certificate).
    package var crlCheck: Bool
    package var dpd: AppleDPDRate
    /// Seconds; 0 = never.
    package var disconnectOnIdle: Int
}

/// Material a client profile needs.
package enum ClientCredential: String, Sendable, Hashable, Comparable, CaseIterable {
    case caCertificate = "CA certificate"
    case clientCertificate = "client certificate"
    case password = "password"
    case psk = "pre-shared key"

    package static func < (lhs: ClientCredential, rhs: ClientCredential) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One connection a user's clients make to one service of one node.
///
/// Its fields live in one reference-counted box, copied only when a shared one is changed: a fleet's
/// renderers and consistency check copy every user's connections many times, and a copy then retains
/// one box instead of each of its strings and arrays (docs/benchmarks.md, "Why the code is shaped this way").
package struct ClientConnection: Sendable, Hashable {
    struct Fields: Sendable, Hashable {
        var user: String
        var node: String
        var service: Service
        var devices: [Device]
        var name: String
        var remoteAddress: String
        var remoteID: IKEIdentity
        var localID: IKEIdentity?
        var ikeVersion: Int
        var aggressive: Bool
        var serverAuth: AuthMethod
        var localAuth: [ClientAuthRound]
        var offers: [Device: ProposalOffer]
        var apple: AppleSA?
        var appleCertificateType: String?
        var credentials: Set<ClientCredential>
        var wantsIPv6: Bool
        var windows: WindowsConnection? = nil
        var appleSettings: AppleDeviceSettings?
        var ppkID: String?
        var ppkRequired: Bool = false
        var appleKeyExchange: QuantumSafe.MLKEM?
    }

    // The fields in a shared, immutable box: a plan is copied into every client renderer's work and read far
    // more often than changed, so a copy is one reference; a change makes a new box.
    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    private var storage: Fields {
        get { box.fields }
        set { box = Box(newValue) }
    }

    /// Several changes at once, in one new box (planning sets a connection's Apple or Windows parts together).
    fileprivate mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }

    package init(
        user: String, node: String, service: Service, devices: [Device], name: String, remoteAddress: String,
        remoteID: IKEIdentity, localID: IKEIdentity?, ikeVersion: Int, aggressive: Bool, serverAuth: AuthMethod,
        localAuth: [ClientAuthRound], offers: [Device: ProposalOffer], apple: AppleSA?, appleCertificateType: String?,
        credentials: Set<ClientCredential>, wantsIPv6: Bool, windows: WindowsConnection? = nil,
        appleSettings: AppleDeviceSettings?, ppkID: String? = nil, ppkRequired: Bool = false,
        appleKeyExchange: QuantumSafe.MLKEM? = nil
    ) {
        box = Box(
            Fields(
                user: user, node: node, service: service, devices: devices, name: name, remoteAddress: remoteAddress,
                remoteID: remoteID, localID: localID, ikeVersion: ikeVersion, aggressive: aggressive,
                serverAuth: serverAuth, localAuth: localAuth, offers: offers, apple: apple,
                appleCertificateType: appleCertificateType, credentials: credentials, wantsIPv6: wantsIPv6,
                windows: windows, appleSettings: appleSettings, ppkID: ppkID, ppkRequired: ppkRequired,
                appleKeyExchange: appleKeyExchange))
    }

    package var user: String {
        get { box.fields.user }
        set { storage.user = newValue }
    }
    package var node: String {
        get { box.fields.node }
        set { storage.node = newValue }
    }
    package var service: Service {
        get { box.fields.service }
        set { storage.service = newValue }
    }
    /// Client kinds that get this connection (the user's devices that support the service).
    package var devices: [Device] {
        get { box.fields.devices }
        set { storage.devices = newValue }
    }
    /// `<node>-<service>`: swanctl connection name, .sswan file name stem.
    package var name: String {
        get { box.fields.name }
        set { storage.name = newValue }
    }
    /// What the client dials.
    package var remoteAddress: String {
        get { box.fields.remoteAddress }
        set { storage.remoteAddress = newValue }
    }
    /// The server identity the client expects (and sends as IDr).
    package var remoteID: IKEIdentity {
        get { box.fields.remoteID }
        set { storage.remoteID = newValue }
    }
    /// The identity the client sends as IDi (nil: none configured, the client uses its IP address).
    package var localID: IKEIdentity? {
        get { box.fields.localID }
        set { storage.localID = newValue }
    }
    package var ikeVersion: Int {
        get { box.fields.ikeVersion }
        set { storage.ikeVersion = newValue }
    }
    /// IKEv1 Aggressive Mode (group name sent as key ID).
    package var aggressive: Bool {
        get { box.fields.aggressive }
        set { storage.aggressive = newValue }
    }
    /// How the client expects the server to prove itself.
    package var serverAuth: AuthMethod {
        get { box.fields.serverAuth }
        set { storage.serverAuth = newValue }
    }
    /// The client's own authentication rounds, in order.
    package var localAuth: [ClientAuthRound] {
        get { box.fields.localAuth }
        set { storage.localAuth = newValue }
    }
    /// Proposals each client kind sends.
    package var offers: [Device: ProposalOffer] {
        get { box.fields.offers }
        set { storage.offers = newValue }
    }
    /// Apple IKEv2 SA parameters (nil for IKEv1 and when the user has no Apple device).
    package var apple: AppleSA? {
        get { box.fields.apple }
        set { storage.apple = newValue }
    }
    /// Apple `CertificateType` of the client certificate (ikev2-cert) or of the server's key (ikev2-eap).
    package var appleCertificateType: String? {
        get { box.fields.appleCertificateType }
        set { storage.appleCertificateType = newValue }
    }
    package var credentials: Set<ClientCredential> {
        get { box.fields.credentials }
        set { storage.credentials = newValue }
    }
    /// The node has an IPv6 pool: request an IPv6 virtual IP and route ::/0 too.
    package var wantsIPv6: Bool {
        get { box.fields.wantsIPv6 }
        set { storage.wantsIPv6 = newValue }
    }
    /// How Windows makes this connection (nil when the user has no Windows device for it).
    package var windows: WindowsConnection? {
        get { box.fields.windows }
        set { storage.windows = newValue }
    }
    /// Apple profile settings (nil when the user has no Apple device for this connection).
    package var appleSettings: AppleDeviceSettings? {
        get { box.fields.appleSettings }
        set { storage.appleSettings = newValue }
    }
    /// The node asks for PPKs (`quantum_safe.ppk`, IKEv2): the PPK_ID the user's PPK is filed under, and whether
    /// the node requires it. Only kinds whose description carries PPKs (`ClientKind.quantumSafe`) send it.
    package var ppkID: String? {
        get { box.fields.ppkID }
        set { storage.ppkID = newValue }
    }
    package var ppkRequired: Bool {
        get { box.fields.ppkRequired }
        set { storage.ppkRequired = newValue }
    }
    /// Apple IKEv2 on a node with ML-KEM: the method its IKE SA parameters name for the first additional exchange.
    package var appleKeyExchange: QuantumSafe.MLKEM? {
        get { box.fields.appleKeyExchange }
        set { storage.appleKeyExchange = newValue }
    }

    package static func == (a: ClientConnection, b: ClientConnection) -> Bool {
        a.box === b.box || a.box.fields == b.box.fields
    }
    package func hash(into hasher: inout Hasher) { hasher.combine(box.fields) }

    /// Client kinds of this connection that let IPv6 bypass the tunnel: none when the node has an IPv6
    /// pool; else those whose description names a leak (`ClientKind.ipv6Leak`: Linux, Windows, Apple IKEv1
    /// and Apple IKEv2 without the kill switch), as the validator's `ipv6-leak` warning does.
    package var ipv6LeakingDevices: [Device] {
        if wantsIPv6 { return [] }
        return devices.filter { device in
            device.kind.ipv6Leak(service: service) { appleSettings?.includeAllNetworks == true } != nil
        }
    }

    package func offer(for device: Device) -> ProposalOffer? { offers[device] }
}

/// Every client connection of every non-revoked user, in inventory order (users, then the user's
/// nodes in node order, then services in service order).
package struct ClientPlan: Sendable, Hashable {
    package var connections: [ClientConnection]
    /// Problems found while planning (a node whose proposals no Apple device can express...).
    package var diagnostics: [Diagnostic]

    package func connections(of user: String) -> [ClientConnection] { connections.filter { $0.user == user } }

    /// Every user's connections at once, in plan order (one pass, for rendering a whole fleet).
    package func connectionsByUser() -> [String: [ClientConnection]] { Dictionary(grouping: connections, by: \.user) }

    /// What planning derives from a node alone, the same for every user: each node's Apple and Windows
    /// parameters and what each client kind offers for each of its services. Derived once per run and
    /// shared by every slice of users (a fleet is planned sixteen users at a time; docs/benchmarks.md,
    /// "Why the code is shaped this way").
    package struct NodeFacts: Sendable {
        /// The parameters and the proposals they make the device send, nil when Apple cannot express any.
        fileprivate var appleSA: [String: (sa: AppleSA, offer: ProposalOffer)?] = [:]
        /// nil when Windows cannot be set to any of the node's proposals.
        fileprivate var windowsIPsec: [String: WindowsIPsec?] = [:]
        /// What each client kind sends, by node and service (a kind without an offer is absent).
        fileprivate var offers: [String: [Service: [Device: ProposalOffer]]] = [:]

        /// Node `name`'s Apple IKEv2 parameters and the proposals they make the device send; nil when Apple can
        /// express none of the node's proposals.
        package func apple(of name: String) -> (sa: AppleSA, offer: ProposalOffer)? { appleSA[name] ?? nil }

        /// Node `name`'s Windows parameters; nil when Windows can be set to none of its proposals.
        package func windows(of name: String) -> WindowsIPsec? { windowsIPsec[name] ?? nil }

        package init(inventory: Inventory) {
            for node in inventory.nodes where appleSA[node.name] == nil {
                appleSA[node.name] = .some(
                    AppleSA.derive(from: node.proposals, pfs: AppleOptions.effective(user: nil, node: node).pfs).map {
                        ($0, $0.offer)
                    })
                windowsIPsec[node.name] = .some(WindowsIPsec.derive(from: node.proposals))
                var byService: [Service: [Device: ProposalOffer]] = [:]
                for service in node.inventoryUserServices {
                    var byDevice: [Device: ProposalOffer] = [:]
                    for device in service.devices {
                        guard var offer = device.kind.offer(for: service, proposals: node.proposals) else { continue }
                        // A kind that computes ML-KEM asks for it on a quantum-safe node (never for `none`).
                        if service.ikeVersion == 2, let settings = node.quantumSafe {
                            offer.ike = offer.ike.map { $0 + settings.clientSuffix(for: device.kind.quantumSafe) }
                        }
                        byDevice[device] = offer
                    }
                    byService[service] = byDevice
                }
                offers[node.name] = byService
            }
        }
    }

    /// `nodeFacts`: derived from this inventory's nodes (`NodeFacts(inventory:)`), or nil to derive them here;
    /// `certificates`: the run's certificate profiles (the subject Windows sends with its machine
    /// certificate), or nil to make them here.
    package static func build(
        inventory: Inventory, materials: Materials? = nil, nodeFacts: NodeFacts? = nil,
        certificates: CertificatePlan? = nil
    ) -> ClientPlan {
        var connections: [ClientConnection] = []
        var diagnostics: [Diagnostic] = []
        var reportedApple: Set<String> = []
        // Per node, not per user and node: parsing proposals is the costly part of planning.
        let facts = nodeFacts ?? NodeFacts(inventory: inventory)
        let appleSA = facts.appleSA
        let windowsIPsec = facts.windowsIPsec
        var reportedWindows: Set<String> = []
        // Only a Windows ikev2-cert connection asks for them.
        lazy var certificates = certificates ?? (try? CertificatePlan.make(inventory))
        for user in inventory.users where !user.revoked {
            let nodes = inventory.nodes.filter { user.nodes.contains($0.name) }
            // The subject of the user's certificate, made once for all of the user's nodes.
            var windowsCertificateID: IKEIdentity?? = nil
            for node in nodes {
                for service in node.inventoryUserServices {
                    var devices = service.devices.filter { user.devices.contains($0) }
                    // Apple devices check an IPSec hybrid server against the IP address they dial
                    // (the validator warns `hybrid-apple-identity`).
                    if service == .ipsecXauthHybrid && !node.id.isIPAddress { devices.removeAll { $0 == .apple } }
                    if devices.isEmpty { continue }
                    // A user gets the services they hold credentials for (as the validator rules).
                    if service.needsClientCert && !user.cert { continue }
                    if service.needsPassword && user.password == nil { continue }
                    var connection = plan(
                        user: user, node: node, service: service, devices: devices, inventory: inventory,
                        materials: materials, offers: facts.offers[node.name]?[service] ?? [:])
                    if devices.contains(.apple) {
                        let resolved = AppleOptions.effective(user: user, node: node)
                        connection.appleSettings = AppleDeviceSettings(
                            onDemand: resolved.onDemand, trustedSSIDs: resolved.trustedSSIDs,
                            includeAllNetworks: resolved.includeAllNetworks,
                            excludeLocalNetworks: resolved.excludeLocalNetworks,
                            // The deployment's CRL says nothing about an ACME certificate.
                            crlCheck: resolved.crlCheck && service.serverUsesCert && node.certificate == .ca,
                            dpd: resolved.dpd,
                            disconnectOnIdle: resolved.disconnectOnIdle)
                    }
                    if devices.contains(.apple) && service.ikeVersion == 2 {
                        if let apple = appleSA[node.name] ?? nil {
                            // Apple names one method per additional exchange: the node's first it computes.
                            let method = node.quantumSafe?.methods(for: Device.apple.kind.quantumSafe).first
                            connection.update { fields in
                                fields.apple = apple.sa
                                fields.offers[.apple] = apple.offer
                                if let method {
                                    fields.appleKeyExchange = method
                                    fields.offers[.apple]?.ike = apple.offer.ike.map { $0 + "-ke1_\(method.rawValue)" }
                                }
                            }
                        } else {
                            connection.devices.removeAll { $0 == .apple }
                            if reportedApple.insert(node.name).inserted {
                                diagnostics.append(
                                    .error(
                                        .appleProposalUnsupported,
                                        "node '\(node.name)': no IKE/ESP proposal pair can be expressed in an Apple profile (AES-256(-GCM)/AES-128(-GCM)/ChaCha20-Poly1305 with SHA2 and DH group 14-21, 31 or 32); Apple clients of this node get no \(service.rawValue) profile",
                                        at: node.location(of: .proposals)))
                            }
                        }
                    }
                    if devices.contains(.windows) {
                        if let ipsec = windowsIPsec[node.name] ?? nil {
                            if service == .ikev2Cert && windowsCertificateID == nil {
                                // The subject vpnprov issues the user's certificate with (the PKI re-issues
                                // when it would differ).
                                windowsCertificateID = .some(
                                    certificates?.client(user.name).map { .dn($0.subject.description) })
                            }
                            let windows = windowsConnection(
                                service: service, ipsec: ipsec, certificateID: windowsCertificateID ?? nil)
                            connection.update { fields in
                                fields.windows = windows
                                fields.offers[.windows] = ipsec.offer
                            }
                        } else {
                            connection.devices.removeAll { $0 == .windows }
                            if reportedWindows.insert(node.name).inserted {
                                diagnostics.append(
                                    .error(
                                        .windowsProposalUnsupported,
                                        "node '\(node.name)': no IKE/ESP proposal pair Windows' IKEv2 client can be set to (\(WindowsIPsec.supportedSummary)); Windows clients of this node get no \(service.rawValue) connection",
                                        at: node.location(of: .proposals)))
                            }
                        }
                    }
                    if !connection.devices.isEmpty { connections.append(connection) }
                }
            }
        }
        return ClientPlan(connections: connections, diagnostics: diagnostics)
    }

    private static func plan(
        user: User, node: Node, service: Service, devices: [Device], inventory: Inventory, materials: Materials?,
        offers kindOffers: [Device: ProposalOffer]
    ) -> ClientConnection {
        // IKEv1 with a group name is Aggressive Mode (the group name is sent as key ID).
        var aggressive = false
        let localID: IKEIdentity?
        switch localIdentity(service: service, node: node, in: inventory) {
        case .user: localID = user.id
        case .fixed(let identity): localID = identity
        case .keyID(let group):
            localID = .keyID(group)
            aggressive = true
        case .none: localID = nil
        }
        let serverAuth: AuthMethod = service.serverUsesCert ? .pubkey : .psk
        // An ACME node's certificate chains to a public root the device already trusts: the client carries no
        // CA of the deployment's (docs/acme.md, "What each client checks").
        let ca: Set<ClientCredential> = node.certificate == .acme ? [] : [.caCertificate]

        var rounds: [ClientAuthRound]
        var credentials: Set<ClientCredential> = []
        var certificateType: String?
        switch service {
        case .ikev2Cert:
            rounds = [ClientAuthRound(method: .pubkey)]
            credentials = ca.union([.clientCertificate])
            certificateType = appleCertificateType(materials?.users[user.name]?.keyType ?? inventory.pki.clientKey)
        case .ikev2EAP:
            rounds = [ClientAuthRound(method: .eapMSCHAPv2, eapID: user.name)]
            credentials = ca.union([.password])
            // Apple's schema requires ServerCertificateIssuerCommonName with CertificateType and extended
            // authentication, and an ACME node's issuer is none a profile may name: neither key for it.
            certificateType = node.certificate == .acme ? nil : appleCertificateType(inventory.pki.serverKey)
        case .ikev2PSK:
            rounds = [ClientAuthRound(method: .psk)]
            credentials = [.psk]
        case .ikev2PSKEAP:
            rounds = [ClientAuthRound(method: .eapMSCHAPv2, eapID: user.name)]
            credentials = [.psk, .password]
        case .ipsecXauthPSK:
            rounds = [ClientAuthRound(method: .psk), ClientAuthRound(method: .xauth, xauthID: user.name)]
            credentials = [.psk, .password]
        case .ipsecXauthHybrid:
            // Hybrid: XAuth is the client's only round.
            rounds = [ClientAuthRound(method: .xauth, xauthID: user.name)]
            credentials = ca.union([.password])
        }
        // What each kind sends (its description); Apple IKEv2 and Windows are set from AppleSA and
        // WindowsIPsec by the caller.
        var offers: [Device: ProposalOffer] = [:]
        for device in devices {
            if let offer = kindOffers[device] { offers[device] = offer }
        }
        var connection = ClientConnection(
            user: user.name, node: node.name, service: service, devices: devices,
            name: "\(node.name)-\(service.rawValue)", remoteAddress: node.address, remoteID: node.id,
            localID: localID, ikeVersion: service.ikeVersion, aggressive: aggressive, serverAuth: serverAuth,
            localAuth: rounds, offers: offers, apple: nil, appleCertificateType: certificateType,
            credentials: credentials, wantsIPv6: node.pool6 != nil, appleSettings: nil)
        if service.ikeVersion == 2, let mode = node.quantumSafe?.ppk {
            connection.update { fields in
                fields.ppkID = QuantumSafe.ppkID(user: user.name)
                fields.ppkRequired = mode == .required
            }
        }
        return connection
    }

    /// Windows' side of a connection: EAP-MSCHAPv2 (Windows sends its IP address as identity) or a
    /// machine certificate (Windows sends the certificate's subject DN).
    /// `certificateID`: `windowsCertificateIdentity` of the user, for ikev2-cert.
    static func windowsConnection(service: Service, ipsec: WindowsIPsec, certificateID: IKEIdentity?)
        -> WindowsConnection
    {
        if service == .ikev2Cert {
            return WindowsConnection(authenticationMethod: .machineCertificate, localID: certificateID, ipsec: ipsec)
        }
        return WindowsConnection(authenticationMethod: .eap, localID: nil, ipsec: ipsec)
    }

    /// What a client of `service` on `node` sends as its identity: one decision for the client plan and the
    /// app catalogue.
    package static func localIdentity(service: Service, node: Node, in inventory: Inventory) -> ClientLocalIdentity {
        switch service {
        case .ikev2Cert, .ikev2EAP, .ikev2PSK: .user
        // ikev2-eap and ikev2-psk-eap both take EAP clients; only the client identity can tell the server which
        // one (and so how it must prove itself) the client expects.
        case .ikev2PSKEAP: .fixed(pskEAPLocalIdentity(in: inventory))
        // With a group name, Aggressive Mode and the group as key ID; without, Main Mode and no identity.
        case .ipsecXauthPSK: node.group.map { .keyID($0) } ?? .none
        // The group name ending in "hybrid" is what makes Apple devices use hybrid authentication, and with a
        // group name they use Aggressive Mode (so every client kind does, against one server connection).
        case .ipsecXauthHybrid: .keyID(inventory.hybridGroupName)
        }
    }

    /// The identity (IDi) ikev2-psk-eap clients send: it selects the PSK-authenticated connection on
    /// the server (the server plan's `pskEAPClientIdentity`; Consistency proves they agree).
    package static func pskEAPLocalIdentity(in inventory: Inventory) -> IKEIdentity {
        .fqdn("psk-eap.\(inventory.name)")
    }

    /// Apple `CertificateType` for a key type.
    package static func appleCertificateType(_ key: KeyType) -> String {
        switch key {
        case .ecdsaP256: return "ECDSA256"
        case .ecdsaP384: return "ECDSA384"
        case .rsa2048, .rsa3072, .rsa4096: return "RSA"
        }
    }
}

extension IKEIdentity {
    /// An IPv4 or IPv6 identity.
    var isIPAddress: Bool {
        switch self {
        case .ipv4, .ipv6: return true
        case .fqdn, .userFQDN, .dn, .keyID: return false
        }
    }
}
