import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Client/server consistency (docs/architecture.md): before anything is written, every client connection of the
// ClientPlan is checked against its node's server configuration by simulating how strongSwan's
// responder picks a connection, then comparing identities, auth rounds, proposals, certificates and
// secrets. Every finding points at the inventory field responsible.
//
// The server side comes in as a ServerView (the subset of the server plan the check needs), so the
// client plan and the server plan stay two independent derivations of the same inventory.

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

package enum Consistency {
    /// Parses a PEM certificate into the facts the check needs; nil when it cannot.
    package typealias CertificateInspector = @Sendable (String) -> CertificateFacts?

    /// Checks every client connection of `plan` against the server view of its node. Returns the
    /// plan's own diagnostics plus every mismatch (errors), without duplicates, in plan order.
    /// `inspect` reads certificates for the SAN checks; without it those checks rely on the identity
    /// the connection uses (the PKI issues node and user certificates for exactly those identities).
    package static func check(
        plan: ClientPlan, servers: [ServerView], inventory: Inventory, materials: Materials,
        inspect: CertificateInspector? = nil
    ) -> [Diagnostic] {
        check(
            plan: plan, against: Servers(servers, materials: materials, inspect: inspect), inventory: inventory,
            materials: materials)
    }

    /// The same check against server facts prepared once (`Servers`), for checking a fleet's plan
    /// slice by slice on several threads.
    package static func check(plan: ClientPlan, against servers: Servers, inventory: Inventory, materials: Materials)
        -> [Diagnostic]
    {
        var out: [Diagnostic] = plan.diagnostics
        var seen = Set(out)
        func add(_ d: Diagnostic) { if seen.insert(d).inserted { out.append(d) } }
        // Lookups by name are computed once per call: a slice has a connection per user, node and service.
        let nodes = Dictionary(inventory.nodes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let users = Dictionary(inventory.users.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        servers.withContext { context in
            for c in plan.connections {
                guard let node = nodes[c.node], let user = users[c.user] else { continue }
                guard let view = servers.views[c.node] else {
                    add(.error(.noServerConnection, "node '\(c.node)' has no server configuration", at: node.location))
                    continue
                }
                for d in check(
                    connection: c, view: view, node: node, user: user, materials: materials, context: context)
                {
                    add(d)
                }
            }
        }
        return out
    }

    /// What the per-connection check would otherwise recompute for every user: the server views by
    /// node, password users as sets, whether each node ships the clients' CA, the node certificates'
    /// contents. Immutable: one instance serves every thread.
    package final class Servers: Sendable {
        let views: [String: ServerView]
        let passwordUsers: [String: Set<String>]
        let shipsOtherCA: [String: Bool]
        let inspect: CertificateInspector?
        /// Facts of the node certificates, by node name (not by PEM, which a lookup would hash whole).
        let nodeFacts: [String: CertificateFacts?]
        /// Check contexts between checks: their proposal comparisons stay known from one slice of users to
        /// the next (a slice has only a few users).
        private let idle = Mutex<[CheckContext]>([])

        package init(_ servers: [ServerView], materials: Materials, inspect: CertificateInspector?) {
            var views: [String: ServerView] = [:]
            var passwordUsers: [String: Set<String>] = [:]
            var shipsOtherCA: [String: Bool] = [:]
            let clientCA = Consistency.normalized(materials.caCertificatePEM)
            // The sets on all cores: a fleet's nodes list 20,000 password users each.
            let sets = parallelMap(servers.count) { Set(servers[$0].passwordUsers) }
            for (view, users) in zip(servers, sets) where views[view.node] == nil {
                views[view.node] = view
                passwordUsers[view.node] = users
                shipsOtherCA[view.node] = view.caCertificatePEM.map { Consistency.normalized($0) != clientCA } ?? false
            }
            var nodeFacts: [String: CertificateFacts?] = [:]
            if let inspect {
                var byPEM: [String: CertificateFacts?] = [:]
                for (name, node) in materials.nodes {
                    if byPEM[node.certificatePEM] == nil {
                        byPEM[node.certificatePEM] = .some(inspect(node.certificatePEM))
                    }
                    nodeFacts[name] = byPEM[node.certificatePEM]!
                }
            }
            self.views = views
            self.passwordUsers = passwordUsers
            self.shipsOtherCA = shipsOtherCA
            self.inspect = inspect
            self.nodeFacts = nodeFacts
        }

        /// `body` with a check context of its own, taken from those between checks (or new) and put back.
        func withContext<T>(_ body: (CheckContext) -> T) -> T {
            let context = idle.withLock { $0.popLast() } ?? CheckContext(self)
            defer {
                context.forgetUsers()
                idle.withLock { $0.append(context) }
            }
            return body(context)
        }
    }

    /// One check's caches (certificates and proposal comparisons) over the shared server facts. Used by one
    /// thread at a time (`Servers.withContext` hands it out).
    // @unchecked Sendable: confined. A context is only used by the thread that took it from `Servers.withContext`;
    // the pool's Mutex orders its handing over.
    final class CheckContext: @unchecked Sendable {
        let servers: Servers
        private var facts: [String: CertificateFacts?] = [:]
        private var userFacts: [String: CertificateFacts?] = [:]
        private var intersections: [IntersectionKey: Bool] = [:]

        struct IntersectionKey: Hashable {
            var client: [String]
            var server: [String]
            var purpose: Proposal.Purpose
            var withGroups: Bool

            /// The lists' lengths and first proposals only: a fleet has a few dozen distinct lists and
            /// checks them 80,000 times, and hashing every proposal of both was 2 % of a run from
            /// scratch. Equal keys still hash equally; `==` compares the lists whole (a list shared
            /// by every user of a node compares as one buffer).
            func hash(into hasher: inout Hasher) {
                hasher.combine(client.count)
                hasher.combine(server.count)
                hasher.combine(client.first)
                hasher.combine(server.first)
                hasher.combine(purpose)
                hasher.combine(withGroups)
            }
        }

        init(_ servers: Servers) { self.servers = servers }

        /// Drops what it learnt about users (their certificates and names), keeping the proposal
        /// comparisons: the next check is of other users.
        func forgetUsers() {
            facts = [:]
            userFacts = [:]
            names = [:]
        }

        func knowsPassword(_ view: ServerView, _ user: String) -> Bool {
            servers.passwordUsers[view.node]?.contains(user) ?? view.passwordUsers.contains(user)
        }

        func shipsOtherCA(_ view: ServerView, materials: Materials) -> Bool {
            if let known = servers.shipsOtherCA[view.node] { return known }
            guard let serverCA = view.caCertificatePEM else { return false }
            return Consistency.normalized(serverCA) != Consistency.normalized(materials.caCertificatePEM)
        }

        func facts(_ pem: String) -> CertificateFacts? {
            guard let inspect = servers.inspect else { return nil }
            if let known = facts[pem] { return known }
            let value = inspect(pem)
            facts[pem] = value
            return value
        }

        /// The facts of node `name`'s certificate; nil without one (or without an inspector).
        func nodeFacts(_ name: String, materials: Materials) -> CertificateFacts? {
            if let known = servers.nodeFacts[name] { return known }
            return materials.nodes[name].flatMap { facts($0.certificatePEM) }
        }

        /// The facts of user `name`'s certificate; nil without one (or without an inspector).
        func userFacts(_ name: String, materials: Materials) -> CertificateFacts? {
            if let known = userFacts[name] { return known }
            let value = materials.users[name]?.certificatePEM.flatMap { facts($0) }
            userFacts[name] = .some(value)
            return value
        }

        private var names: [String: DistinguishedName?] = [:]

        /// `facts.contains(id)`, with each DN text parsed once per check (a user's identity is checked
        /// against its certificate once per node and service).
        func certificate(_ facts: CertificateFacts, contains id: IKEIdentity) -> Bool {
            facts.contains(id) { text in
                if let known = names[text] { return known }
                let value = DistinguishedName.parse(text)
                names[text] = value
                return value
            }
        }

        func intersects(_ client: [String], _ server: [String], purpose: Proposal.Purpose, withGroups: Bool) -> Bool {
            let key = IntersectionKey(client: client, server: server, purpose: purpose, withGroups: withGroups)
            if let known = intersections[key] { return known }
            let value = Proposal.intersects(client, server, purpose: purpose, withGroups: withGroups)
            intersections[key] = value
            return value
        }
    }

    // MARK: - one connection

    /// One client connection against the node's configuration: its secrets, the connection strongSwan
    /// selects for it, how each side authenticates, the proposals of each client kind, the certificates.
    static func check(
        connection client: ClientConnection, view: ServerView, node: Node, user: User, materials: Materials,
        context: CheckContext
    ) -> [Diagnostic] {
        var out = checkSecrets(client, view: view, node: node, user: user, materials: materials, context: context)
        let selection = select(client, in: view.connections)
        guard case .selected(let selected) = selection else {
            if case .none(let code, let field, let reason) = selection {
                let location =
                    switch field {
                    case .node(let key): node.location(of: key)
                    case .user(let key): user.location(of: key)
                    }
                out.append(
                    .error(
                        code,
                        "user '\(client.user)': no connection of node '\(client.node)' accepts its \(client.service.rawValue) client: \(reason)",
                        at: location))
            }
            return out
        }
        out += checkAuthentication(client, selected: selected, node: node, user: user)
        out += checkProposals(client, selected: selected, node: node, context: context)
        out += checkServerCertificate(client, view: view, node: node, materials: materials, context: context)
        if client.devices.contains(.windows), let windows = client.windows {
            out += checkWindows(
                client, windows, selected: selected, view: view, node: node, user: user, materials: materials,
                context: context)
        }
        out += checkClientCertificate(client, selected: selected, user: user, materials: materials, context: context)
        return out
    }

    /// "ikev2-eap client of node 'fra-1'".
    static func describe(_ client: ClientConnection) -> String {
        "\(client.service.rawValue) client of node '\(client.node)'"
    }

    /// The server proves itself the way the client expects, and the client's rounds are the selected
    /// connection's remote rounds, in order (with the EAP identity it accepts).
    static func checkAuthentication(_ client: ClientConnection, selected: ServerConnectionView, node: Node, user: User)
        -> [Diagnostic]
    {
        var out: [Diagnostic] = []
        if selected.localAuth != client.serverAuth {
            out.append(
                .error(
                    .authMismatch,
                    "\(describe(client)): strongSwan selects connection '\(selected.name)', which proves the server with \(selected.localAuth), but the client expects \(client.serverAuth)",
                    at: node.location(of: .services)))
        }
        let clientRounds = client.localAuth.map(\.method)
        let serverRounds = selected.remote.map(\.auth)
        if clientRounds != serverRounds {
            out.append(
                .error(
                    .authMismatch,
                    "\(describe(client)): the client authenticates with \(clientRounds.map(\.rawValue).joined(separator: " + ")), connection '\(selected.name)' expects \(serverRounds.map(\.rawValue).joined(separator: " + "))",
                    at: node.location(of: .services)))
        }
        for (round, server) in zip(client.localAuth, selected.remote) {
            if case .exactly(let id)? = server.eapID, let eapID = round.eapID, id.value != eapID {
                out.append(
                    .error(
                        .localIDMismatch,
                        "user '\(client.user)': connection '\(selected.name)' of node '\(client.node)' accepts only EAP identity '\(id.value)'",
                        at: user.location))
            }
        }
        return out
    }

    /// The IKE and ESP proposals each client kind sends, against the selected connection's (and for
    /// IKEv2 with the client's PFS groups, which CHILD_SA rekeying needs).
    static func checkProposals(
        _ client: ClientConnection, selected: ServerConnectionView, node: Node, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        // Only a finding spells out the client.
        var what: String { describe(client) }
        for device in client.devices {
            guard let offer = client.offers[device] else { continue }
            if !context.intersects(offer.ike, selected.ikeProposals, purpose: .ike, withGroups: true) {
                out.append(
                    .error(
                        .ikeProposalMismatch,
                        "\(device.rawValue) \(what): none of the IKE proposals it sends (\(offer.ike.joined(separator: ", "))) is accepted by connection '\(selected.name)' (\(selected.ikeProposals.joined(separator: ", ")))",
                        at: node.location(of: .proposals)))
            }
            if !context.intersects(offer.esp, selected.espProposals, purpose: .esp, withGroups: false) {
                out.append(
                    .error(
                        .espProposalMismatch,
                        "\(device.rawValue) \(what): none of the ESP proposals it sends (\(offer.esp.joined(separator: ", "))) is accepted by connection '\(selected.name)' (\(selected.espProposals.joined(separator: ", ")))",
                        at: node.location(of: .proposals)))
            } else if client.ikeVersion == 2
                && !context.intersects(offer.esp, selected.espProposals, purpose: .esp, withGroups: true)
            {
                out.append(
                    .error(
                        .pfsMismatch,
                        "\(device.rawValue) \(what): the ESP proposals match without a DH group but not with the client's PFS groups, so CHILD_SA rekeying fails (add the group, or `modpnone`, to the node's ESP proposals)",
                        at: node.location(of: .proposals)))
            }
        }
        return out
    }

    /// The node's certificate names the identity its clients expect and comes from the CA they trust, and
    /// the node ships that CA. An ACME node serves no certificate of vpnprov's: the one its rollout obtains
    /// names exactly the node's DNS-name identity (the validator requires one), which is the identity its
    /// clients expect.
    static func checkServerCertificate(
        _ client: ClientConnection, view: ServerView, node: Node, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        guard client.serverAuth == .pubkey && node.certificate == .ca else { return [] }
        var out: [Diagnostic] = []
        if let facts = context.nodeFacts(client.node, materials: materials) {
            if !context.certificate(facts, contains: client.remoteID) {
                out.append(
                    .error(
                        .serverCertificateSAN,
                        "node '\(client.node)': its certificate's subjectAltName does not contain the identity clients expect ('\(client.remoteID.value)')",
                        at: node.location(of: .id)))
            }
            if let issuer = facts.issuerCommonName, issuer != materials.caCommonName {
                out.append(
                    .error(
                        .caMismatch,
                        "node '\(client.node)': its certificate is issued by '\(issuer)', but clients trust '\(materials.caCommonName)'",
                        at: node.location))
            }
        }
        if context.shipsOtherCA(view, materials: materials) {
            out.append(
                .error(
                    .caMismatch,
                    "node '\(client.node)': its configuration ships another CA certificate than the client profiles",
                    at: node.location))
        }
        return out
    }

    /// A client certificate names the client's identity and carries the policy of every node that
    /// requires one (NodeAccessPolicy).
    static func checkClientCertificate(
        _ client: ClientConnection, selected: ServerConnectionView, user: User, materials: Materials,
        context: CheckContext
    ) -> [Diagnostic] {
        guard client.credentials.contains(.clientCertificate), let localID = client.localID,
            let facts = context.userFacts(client.user, materials: materials)
        else { return [] }
        var out: [Diagnostic] = []
        if !context.certificate(facts, contains: localID) {
            out.append(
                .error(
                    .clientCertificateSAN,
                    "user '\(client.user)': the client certificate's subjectAltName does not contain its identity '\(localID.value)'",
                    at: user.location(of: .id)))
        }
        let required = selected.remote.flatMap(\.certPolicies)
        if let have = facts.policies, let missing = required.first(where: { !have.contains($0) }) {
            out.append(
                .error(
                    .clientCertificatePolicy,
                    "user '\(client.user)': the client certificate lacks node '\(client.node)''s policy \(missing), which the node requires",
                    at: user.location(of: .nodes)))
        }
        return out
    }

    static func normalized(_ pem: String) -> String { pem.filter { !$0.isWhitespace } }

    // MARK: - Windows

    static let serverAuthOID = "1.3.6.1.5.5.7.3.1"
    static let clientAuthOID = "1.3.6.1.5.5.7.3.2"

    /// What Windows does differently from the other clients: it sends its IP address (EAP) or its
    /// certificate's subject DN (machine certificate) as identity, and it refuses a server certificate
    /// without the serverAuth EKU or without the address it dialled as a dNSName subjectAltName (also
    /// for an IP address: error 13801), and a client certificate without clientAuth (error 13806).
    /// Sources: https://docs.strongswan.org/docs/latest/interop/windowsCertRequirements.html and the
    /// strongSwan Windows EAP / machine-certificate status pages.
    static func checkWindows(
        _ c: ClientConnection, _ windows: WindowsConnection, selected: ServerConnectionView, view: ServerView,
        node: Node,
        user: User, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        switch select(c, in: view.connections, localID: windows.localID) {
        case .selected(let w) where w.name != selected.name:
            out.append(
                .error(
                    .authMismatch,
                    "windows \(c.service.rawValue) client of node '\(c.node)': strongSwan selects connection '\(w.name)' for the identity Windows sends, not '\(selected.name)'",
                    at: node.location(of: .services)))
        case .none(let code, _, let reason):
            out.append(
                .error(
                    code,
                    "user '\(c.user)': no connection of node '\(c.node)' accepts its windows \(c.service.rawValue) client: \(reason)",
                    at: node.location(of: .services)))
        default: break
        }
        if node.certificate == .acme {
            if !CertificateFacts.sameIgnoringCase(node.id.value, c.remoteAddress) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its ACME certificate names only '\(node.id.value)', not '\(c.remoteAddress)', the address Windows dials (Windows refuses it with error 13801); set the node's address to \(node.id.value)",
                        at: node.location(of: .address)))
            }
        } else if let facts = context.nodeFacts(c.node, materials: materials) {
            if !facts.dnsNames.contains(where: { CertificateFacts.sameIgnoringCase($0, c.remoteAddress) }) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its certificate has no dNSName subjectAltName '\(c.remoteAddress)', the address Windows dials (Windows refuses it with error 13801)",
                        at: node.location(of: .address)))
            }
            if let ekus = facts.extendedKeyUsages, !ekus.contains(serverAuthOID) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its certificate lacks the serverAuth extended key usage Windows requires (error 13801)",
                        at: node.location))
            }
        }
        if windows.authenticationMethod == .machineCertificate,
            let facts = context.userFacts(c.user, materials: materials)
        {
            if let ekus = facts.extendedKeyUsages, !ekus.contains(clientAuthOID) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "user '\(c.user)': the client certificate lacks the clientAuth extended key usage Windows requires (error 13806)",
                        at: user.location(of: .cert)))
            }
            if let id = windows.localID, facts.subject != nil, !context.certificate(facts, contains: id) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "user '\(c.user)': Windows sends the certificate subject '\(id.value)' as identity, but the certificate's subject differs",
                        at: user.location(of: .id)))
            }
        }
        return out
    }

    // MARK: - secrets

    static func checkSecrets(
        _ c: ClientConnection, view: ServerView, node: Node, user: User, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        let um = materials.users[c.user]
        if c.credentials.contains(.password) {
            if (um?.password ?? "").isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "user '\(c.user)': \(c.service.rawValue) on node '\(c.node)' needs a password, and the user has none",
                        at: user.location(of: .password)))
            } else if !context.knowsPassword(view, c.user) {
                out.append(
                    .error(
                        .missingSecret, "user '\(c.user)': node '\(c.node)' does not know the user's password",
                        at: user.location(of: .password)))
            }
        }
        if c.credentials.contains(.psk) {
            if (materials.nodes[c.node]?.psk ?? "").isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "node '\(c.node)': \(c.service.rawValue) needs a pre-shared key, and the node has none",
                        at: node.location(of: .psk)))
            } else if view.pskIdentities.isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "node '\(c.node)': its secrets hold no pre-shared key for \(c.service.rawValue)",
                        at: node.location(of: .psk)))
            }
        }
        if c.credentials.contains(.clientCertificate) {
            // The forms the connection's kinds read the certificate in (ClientKind.certificate).
            let forms = c.devices.map { $0.kind.certificate }
            let needsP12 = forms.contains { $0.p12 }
            let needsPEM = forms.contains { $0.pem }
            let missingP12 =
                needsP12 && (um?.p12 == nil || (um?.p12Password ?? "").isEmpty)
                || forms.contains { $0.openP12 } && um?.openP12 == nil
            let missingPEM = needsPEM && (um?.certificatePEM == nil || um?.privateKeyPEM == nil)
            if missingP12 || missingPEM {
                out.append(
                    .error(
                        .missingSecret,
                        "user '\(c.user)': \(c.service.rawValue) needs a client certificate, and none was issued",
                        at: user.location(of: .cert)))
            }
        }
        if c.credentials.contains(.caCertificate) && materials.caCertificatePEM.isEmpty {
            out.append(.error(.missingSecret, "no CA certificate for the client profiles", at: node.location))
        }
        return out
    }

    // MARK: - strongSwan's responder selection

    enum Selection {
        case selected(ServerConnectionView)
        /// code, the inventory field to blame, reason
        case none(RuleCode, Field, String)
    }

    /// The field a mismatch is reported at: the node's or the user's.
    enum Field {
        case node(InventoryDecoder.NodeKey)
        case user(InventoryDecoder.UserKey)
    }

    /// strongSwan's identity match ranks (identification.c): exact 20, `%any` 1, none 0.
    static func rank(_ pattern: IdentityPattern, _ id: IKEIdentity?) -> Int {
        switch pattern {
        case .any: return 1
        case .exactly(let want):
            guard let id else { return 0 }
            return want == id ? 20 : 0
        }
    }

    /// Simulates the responder. IKEv2: candidates are the version-2 connections whose local id is the
    /// IDr the client sends and whose first remote round accepts its IDi, ranked by match quality,
    /// file order among equals. A client without AUTH payload (EAP) gets the first candidate with an
    /// EAP round; after a PSK AUTH strongSwan moves on to the first candidate whose round takes PSK;
    /// a certificate client sends its certificate only on a CERTREQ, which the first IKEv2 connection
    /// decides (IKE_SA_INIT happens before identities are known). IKEv1: the mode (Main/Aggressive)
    /// and the auth method (PSK vs XAuth-PSK) must equal the connection's; identities as above.
    static func select(_ c: ClientConnection, in connections: [ServerConnectionView]) -> Selection {
        select(c, in: connections, localID: c.localID)
    }

    /// `select` for a client that sends `localID` as its identity (Windows sends its own).
    /// Works on the connections' positions, copying only the one selected: it runs for every client
    /// connection of a fleet (docs/benchmarks.md, "Why the code is shaped this way").
    static func select(_ c: ClientConnection, in connections: [ServerConnectionView], localID: IKEIdentity?)
        -> Selection
    {
        var versioned = connections.indices.filter {
            (connections[$0].version == c.ikeVersion || connections[$0].version == 0)
                && (c.ikeVersion == 2 || (connections[$0].aggressive ?? false) == c.aggressive)
        }
        if versioned.isEmpty {
            let mode = c.ikeVersion == 1 ? (c.aggressive ? " Aggressive Mode" : " Main Mode") : ""
            return .none(
                .noServerConnection, .node(.services), "the node has no IKEv\(c.ikeVersion)\(mode) connection")
        }
        if c.ikeVersion == 1 {
            // An IKEv1 initiator names its auth method (XAuthInitPSK, HybridInitRSA) in its first
            // message; phase1.c select_config only looks at connections that give that method.
            let rounds = c.localAuth.map(\.method)
            versioned = versioned.filter { connections[$0].remote.map(\.auth) == rounds }
            if versioned.isEmpty {
                return .none(
                    .authMismatch, .node(.services),
                    "no connection authenticates with \(rounds.map(\.rawValue).joined(separator: " + "))")
            }
        }
        let serverIDs = versioned.filter { connections[$0].localID == c.remoteID }
        if serverIDs.isEmpty {
            let ids = Set(versioned.map { connections[$0].localID.value }).sorted().joined(separator: ", ")
            return .none(
                .remoteIDMismatch, .node(.id),
                "the client expects server identity '\(c.remoteID.value)', the server uses '\(ids)'")
        }
        // Ranked by match quality, file order among equals (positions ascend).
        let ranked = serverIDs.map { (index: $0, rank: rank(connections[$0].remote.first?.id ?? .any, localID)) }
            .filter { $0.rank > 0 }
            .sorted { $0.rank != $1.rank ? $0.rank > $1.rank : $0.index < $1.index }
            .map(\.index)
        if ranked.isEmpty {
            return .none(
                .localIDMismatch, c.service == .ipsecXauthPSK ? .node(.group) : .user(.id),
                "no connection accepts the client identity '\(localID?.value ?? "(its IP address)")'")
        }
        let first = c.localAuth.first?.method
        if c.ikeVersion == 1 {
            let rounds = c.localAuth.map(\.method)
            guard let match = ranked.first(where: { connections[$0].remote.map(\.auth) == rounds }) else {
                return .none(
                    .authMismatch, .node(.services),
                    "no connection authenticates with \(rounds.map(\.rawValue).joined(separator: " + "))")
            }
            return .selected(connections[match])
        }
        switch first {
        case .eapMSCHAPv2?:
            guard let match = ranked.first(where: { connections[$0].remote.first?.auth == .eapMSCHAPv2 }) else {
                return .none(.authMismatch, .node(.services), "no matching connection takes EAP clients")
            }
            return .selected(connections[match])
        case .pubkey?:
            if let initial = versioned.first.map({ connections[$0] }), !initial.sendCertreq {
                return .none(
                    .authMismatch, .node(.services),
                    "the client sends its certificate only when asked, and the first IKEv2 connection ('\(initial.name)') sends no certificate request"
                )
            }
            guard let match = ranked.first(where: { connections[$0].remote.first?.auth == .pubkey }) else {
                return .none(.authMismatch, .node(.services), "no matching connection takes certificate clients")
            }
            return .selected(connections[match])
        default:
            guard let match = ranked.first(where: { connections[$0].remote.first?.auth == first }) else {
                return .none(
                    .authMismatch, .node(.services),
                    "no matching connection takes \(first?.rawValue ?? "unauthenticated") clients")
            }
            return .selected(connections[match])
        }
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

extension Consistency {
    /// The whole check as `validate`/`generate` run it: the client plan and the server plan of every
    /// node, both derived from the inventory, compared. Errors mean: write nothing.
    package static func check(inventory: Inventory, materials: Materials, inspect: CertificateInspector? = nil)
        -> [Diagnostic]
    {
        let servers = inventory.nodes.map {
            ServerView(
                ServerPlan.make(for: $0, in: inventory, nodeScoping: materials.nodeScoping),
                caCertificatePEM: materials.caCertificatePEM)
        }
        return check(
            plan: ClientPlan.build(inventory: inventory, materials: materials), servers: servers, inventory: inventory,
            materials: materials, inspect: inspect)
    }
}
