import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The server side of every node, as typed data: which swanctl connections it has, in which order,
// with which identities, auth rounds, proposals and pools. The swanctl renderer writes exactly this;
// client-side planners and the consistency checker compare their client plans against it, so every
// choice a client must match (identities, auth methods, proposals) is decided here and only here.
//
// Connection order (IKEv2). strongSwan's responder ranks the connections whose identities match the
// client (an exact remote id beats `%any`) and, among equals, tries them in load order = file order.
// A candidate is dropped when the client cannot fit it: a client that wants EAP (no AUTH payload in
// IKE_AUTH) skips connections without an EAP remote round, and after a PSK or certificate AUTH the
// daemon moves on to the first candidate whose remote round accepts that kind of authentication.
// Measured on 5.9.8 (docs/decisions.md, "Connection order"): with the EAP connection first a certificate client was
// stuck on it ("no trusted ECDSA public key found"); with the certificate connection first,
// certificate, EAP and PSK clients all reached their connection. Hence:
//     ikev2-cert, ikev2-eap, ikev2-psk-eap, ikev2-psk, ipsec-xauth-psk-main, ipsec-xauth-psk-aggressive,
//     ipsec-xauth-hybrid-aggressive
// ikev2-eap and ikev2-psk-eap both take EAP clients and differ only in how the *server* proves
// itself, which the client's request does not reveal; so ikev2-psk-eap requires a fixed client
// identity (pskEAPClientIdentity) that ranks it first for exactly those clients.
// IKEv1 Main and Aggressive Mode never compete (strongSwan only selects a connection whose
// `aggressive` flag equals the request's mode), and IKEv1/IKEv2 are separated by `version`.
//
// IKEv1 Hybrid (ipsec-xauth-hybrid) comes last. An IKEv1 initiator names its authentication method
// in the very first SA payload (XAuthInitPSK vs. HybridInitRSA), and strongSwan's phase1.c
// select_config only considers connections whose auth rounds give that method and whose
// `aggressive` flag equals the request's mode; so the PSK-XAuth and Hybrid connections never take
// each other's clients, whichever comes first. Measured on 5.9.8 with both orders (the
// end-to-end test "IKEv1 connection order" loads the hybrid connection first and last): every
// PSK-XAuth client (Main and Aggressive Mode) and every Hybrid client reached its own connection.
// Last is chosen so that adding the service leaves the existing connections where they were.
// Hybrid is Aggressive Mode only: Apple's documented switch to hybrid is a group name ending in
// "hybrid" (com.apple.vpn.managed IPSec LocalIdentifier), and Apple's IKEv1 client uses
// Aggressive Mode whenever a group name is set; the PSK-hash weakness of Aggressive Mode does not
// exist here (the server signs), and the identity sent is a public constant.

/// Derives NodePlans from the inventory. Pure: same inventory, same plan.
package enum ServerPlan {
    static let ipv4PoolName = "pool-v4"
    static let ipv6PoolName = "pool-v6"
    /// swanctl file names (relative to x509ca/, x509crl/).
    /// The node's certificate in swanctl's `x509/`: vpnprov's `<node>.pem`, or for an ACME node the one the
    /// rollout obtains on the node (docs/acme.md).
    static func certificateFileName(_ node: Node) -> String {
        node.certificate == .acme ? acmeCertificateFileName : "\(node.name).pem"
    }
    /// The ACME certificate's file name in `x509/` (its key's in `private/`, its chain's `vpnprov-acme-N.pem` in
    /// `x509ca/`), written by the role's ACME tasks.
    static let acmeCertificateFileName = "vpnprov-acme.pem"
    package static let caFileName = "ca.pem"
    package static let crlFileName = "crl.pem"
    /// During a CA rotation: the new CA cross-certified by the previous one, and the new CA's CRL.
    package static let nextCAFileName = "ca-next.pem"
    package static let nextCRLFileName = "crl-next.pem"
    package static let childName = "net"
    static let dpdDelay = 30
    static let ikev1DPDTimeout = 150

    /// The client identity (IDi) an ikev2-psk-eap client must send: it is what tells strongSwan to
    /// use the PSK-authenticated connection rather than the certificate-authenticated ikev2-eap one
    /// (both take EAP clients). An FQDN-type identity because Apple sends LocalIdentifier strings as
    /// FQDN. Same for every node of a deployment.
    package static func pskEAPClientIdentity(in inventory: Inventory) -> IKEIdentity {
        .fqdn("psk-eap.\(inventory.name)")
    }

    /// Users whose PPK this node must know (`quantum_safe.ppk`): allowed on the node and not revoked, ordered by name
    /// (UTF-8 byte order). A PPK is the user's, whatever device or service they connect with.
    package static func ppkUsers(for node: Node, in inventory: Inventory) -> [User] {
        guard node.quantumSafe?.ppk != nil else { return [] }
        let users = inventory.users
        return users.indices
            .filter { !users[$0].revoked && users[$0].nodes.contains(node.name) }
            .sorted { users[$0].name.precedesByUTF8(users[$1].name) }
            .map { users[$0] }
    }

    /// Users whose password this node must know: allowed on the node, not revoked, with a password,
    /// and only if the node offers a password service. Ordered by name (UTF-8 byte order).
    package static func passwordUsers(for node: Node, in inventory: Inventory) -> [User] {
        guard node.inventoryUserServices.contains(where: \.needsPassword) else { return [] }
        // Positions are sorted, not the users: a fleet's user values are large to move around.
        let users = inventory.users
        return users.indices
            .filter { users[$0].password != nil && !users[$0].revoked && users[$0].nodes.contains(node.name) }
            .sorted { users[$0].name.precedesByUTF8(users[$1].name) }
            .map { users[$0] }
    }

    /// `nodeScoping: false` (a trust root from before node scoping, Materials.nodeScoping) leaves out
    /// the node policy that certificate clients must carry.
    package static func make(for node: Node, in inventory: Inventory, nodeScoping: Bool = true) -> NodePlan {
        let pools = pools(of: node)
        let shapes = ConnectionShapes(node: node, pools: pools)
        var connections = connections(of: node, in: inventory, shapes: shapes, nodeScoping: nodeScoping)
        connections += takeOverConnections(of: node, own: connections, in: inventory, nodeScoping: nodeScoping)
        var plan = NodePlan(
            node: node.name, identity: node.id, connections: connections, pools: pools,
            pskIdentities: pskIdentities(of: node), passwordUsers: passwordUserNames(for: node, in: inventory),
            needsAggressiveModePSK: connections.contains { $0.aggressive == true && $0.local.auth == .psk },
            network: network(of: node, in: inventory))
        plan.ppkUsers = ppkUsers(for: node, in: inventory).map(\.name)
        return plan
    }

    /// The users whose password the node must know: its own (`passwordUsers`) and, on a sibling of a draining node
    /// whose EAP clients it takes over, that node's, whose redirected clients log in here (DrainGroups).
    static func passwordUserNames(for node: Node, in inventory: Inventory) -> [String] {
        var names = passwordUsers(for: node, in: inventory).map(\.name)
        let takenOver = DrainGroups.drainedNodes(redirectingTo: node, in: inventory).filter {
            !node.usesRadius && DrainGroups.services(of: $0, at: node).contains(.ikev2EAP)
        }
        guard !takenOver.isEmpty else { return names }
        var seen = Set(names)
        for drained in takenOver {
            for user in passwordUsers(for: drained, in: inventory) where seen.insert(user.name).inserted {
                names.append(user.name)
            }
        }
        return names.sorted { $0.precedesByUTF8($1) }
    }

    /// On a sibling of a draining node, after its own connections (so that its own clients still select those
    /// first: among equal matches strongSwan tries connections in load order): one connection per service it takes
    /// over, `<service>-from-<drained node>`. It is the node's own connection of that service with the drained
    /// node's identity as local identity (the IDr a redirected client still sends; this node's certificate carries
    /// it, CertificateProfile.server), the drained node's proposals (what the client offers), and for certificate
    /// clients the drained node's access policy (the certificates that opened the drained node). Empty elsewhere.
    static func takeOverConnections(
        of node: Node, own: [ServerConnection], in inventory: Inventory, nodeScoping: Bool
    ) -> [ServerConnection] {
        var out: [ServerConnection] = []
        for drained in DrainGroups.drainedNodes(redirectingTo: node, in: inventory) {
            for service in DrainGroups.services(of: drained, at: node) {
                guard var connection = own.first(where: { $0.service == service }) else { continue }
                connection.name = "\(service.rawValue)-from-\(drained.name)"
                connection.summary =
                    "Clients of the draining node \(drained.name) redirected here (IKEv2 redirect, RFC 5685): "
                    + "its identity, this node's certificate"
                connection.local.id = drained.id
                connection.ikeProposals = drained.proposals.ike.map { $0 + (drained.quantumSafe?.serverSuffix ?? "") }
                connection.child.espProposals = AppleSA.serverESPProposals(
                    from: drained.proposals, pfs: AppleOptions.effective(user: nil, node: drained).pfs)
                if service == .ikev2Cert, nodeScoping {
                    for index in connection.remote.indices where connection.remote[index].auth == .pubkey {
                        connection.remote[index].certPolicies = [NodeAccessPolicy.oid(forNode: drained.name)]
                    }
                }
                out.append(connection)
            }
        }
        return out
    }

    /// The node's address pools, each with the DNS servers of its family.
    static func pools(of node: Node) -> [ServerPool] {
        var pools: [ServerPool] = []
        let v4DNS = node.dns.filter { IPAddressText.parse($0)?.count == 4 }
        let v6DNS = node.dns.filter { IPAddressText.parse($0)?.count == 16 }
        if let pool = node.pool { pools.append(ServerPool(name: ipv4PoolName, addrs: pool, dns: v4DNS)) }
        if let pool6 = node.pool6 { pools.append(ServerPool(name: ipv6PoolName, addrs: pool6, dns: v6DNS)) }
        return pools
    }

    /// What a node's IKEv2 and IKEv1 connections share: pools and traffic selectors, proposals, the
    /// server's authentication rounds and the clients' EAP and XAuth rounds.
    struct ConnectionShapes {
        let node: Node
        /// IKEv2: every pool, all traffic of each family with a pool (IPv4 when there is no pool at all).
        let v2Pools: [String]
        let v2TS: [String]
        /// IKEv1: one traffic selector only (more need the unity plugin), so one family: IPv4 if any.
        let v1Pools: [String]
        let v1TS: [String]
        /// With Apple PFS on, the ESP proposal Apple devices use also accepts their rekey's DH group.
        let v2ESP: [String]
        let serverCert: LocalAuthRound
        let serverPSK: LocalAuthRound
        let eapRound: RemoteAuthRound
        let xauthRound: RemoteAuthRound
        /// Appended to the summary of the connections whose accounts are on the RADIUS servers.
        let accountsText: String

        init(node: Node, pools: [ServerPool]) {
            self.node = node
            v2Pools = pools.map(\.name)
            var v2TS: [String] = []
            if node.pool != nil || node.pool6 == nil { v2TS.append("0.0.0.0/0") }
            if node.pool6 != nil { v2TS.append("::/0") }
            self.v2TS = v2TS
            v1Pools = node.pool != nil ? [ipv4PoolName] : (node.pool6 != nil ? [ipv6PoolName] : [])
            v1TS = node.pool == nil && node.pool6 != nil ? ["::/0"] : ["0.0.0.0/0"]
            v2ESP = AppleSA.serverESPProposals(
                from: node.proposals, pfs: AppleOptions.effective(user: nil, node: node).pfs)
            serverCert = LocalAuthRound(auth: .pubkey, id: node.id, certificates: [certificateFileName(node)])
            serverPSK = LocalAuthRound(auth: .psk, id: node.id)
            // A RADIUS node hands EAP and XAuth to the RADIUS servers, and checks the tier they assert
            // itself: a free account is refused by a pro node even if a RADIUS server were to accept it.
            let radius = node.usesRadius
            let tierGroups = radius ? RadiusPlan.requiredGroups(for: node.tier) : []
            var eapRound = RemoteAuthRound(
                section: "remote", auth: radius ? .eapRADIUS : .eapMSCHAPv2, id: .any, eapID: .any)
            eapRound.groups = tierGroups
            self.eapRound = eapRound
            var xauthRound = RemoteAuthRound(section: "remote-xauth", auth: radius ? .xauthRADIUS : .xauth, id: .any)
            xauthRound.groups = tierGroups
            self.xauthRound = xauthRound
            accountsText = radius ? " (accounts on the RADIUS servers)" : ""
        }

        /// A RADIUS account may be up on several devices at once, up to its device limit, which the RADIUS
        /// servers enforce: `unique = never`, since with `no` a second device's INITIAL_CONTACT ended the first
        /// one's tunnel (check_uniqueness in ike_sa_manager.c compares the EAP/XAuth identity). Inventory users
        /// keep `no`: a reinstalled device replaces its stale tunnel.
        func uniqueness(_ remote: [RemoteAuthRound]) -> String {
            remote.contains { $0.auth == .eapRADIUS || $0.auth == .xauthRADIUS } ? "never" : "no"
        }

        /// An IKEv2 connection authenticating the server with `local` and the client with `remote`.
        func v2(
            _ name: String, _ service: Service, _ summary: String, local: LocalAuthRound, remote: [RemoteAuthRound]
        ) -> ServerConnection {
            var connection = ServerConnection(
                name: name, service: service, summary: summary, version: 2, aggressive: nil,
                // Quantum-safe: ML-KEM in the first additional key exchange of every proposal (RFC 9370).
                ikeProposals: node.proposals.ike.map { $0 + (node.quantumSafe?.serverSuffix ?? "") }, local: local,
                remote: remote, pools: v2Pools,
                sendCert: local.auth == .pubkey ? .always : .never, sendCertreq: service == .ikev2Cert,
                unique: uniqueness(remote), fragmentation: "yes", dpdDelay: dpdDelay, dpdTimeout: nil, rekeyTime: 0,
                child: ServerChild(
                    name: childName, localTS: v2TS, espProposals: v2ESP, rekeyTime: 0, dpdAction: "clear"))
            connection.ppkRequired = node.quantumSafe?.ppk == .required
            return connection
        }

        /// An IKEv1 connection: PSK + XAuth in two rounds, or Hybrid (XAuth as the first and only round,
        /// the server by certificate).
        func v1(
            _ name: String, aggressive: Bool, summary: String, remoteID: IdentityMatch,
            service: Service = .ipsecXauthPSK
        ) -> ServerConnection {
            let hybrid = service == .ipsecXauthHybrid
            var hybridRound = xauthRound
            hybridRound.id = remoteID
            let remote =
                hybrid
                ? [hybridRound]
                : [RemoteAuthRound(section: "remote-psk", auth: .psk, id: remoteID), xauthRound]
            return ServerConnection(
                name: name, service: service, summary: summary, version: 1, aggressive: aggressive,
                ikeProposals: IKEv1Proposals.ike(from: node.proposals.ike), local: hybrid ? serverCert : serverPSK,
                remote: remote,
                pools: v1Pools, sendCert: hybrid ? .always : .never, sendCertreq: false, unique: uniqueness(remote),
                fragmentation: "yes",
                dpdDelay: dpdDelay, dpdTimeout: ikev1DPDTimeout, rekeyTime: 0,
                child: ServerChild(
                    name: childName, localTS: v1TS, espProposals: IKEv1Proposals.esp(from: node.proposals.esp),
                    rekeyTime: 0, dpdAction: "clear"))
        }
    }

    /// The node's connections, one (or two) per service it offers, in the order charon must load them.
    static func connections(of node: Node, in inventory: Inventory, shapes: ConnectionShapes, nodeScoping: Bool)
        -> [ServerConnection]
    {
        let accountsText = shapes.accountsText
        var connections: [ServerConnection] = []
        let offers = Set(node.services)
        if offers.contains(.ikev2Cert) {
            connections.append(
                shapes.v2(
                    "ikev2-cert", .ikev2Cert, "IKEv2: server certificate, client certificate from our CA",
                    local: shapes.serverCert,
                    remote: [
                        RemoteAuthRound(
                            section: "remote", auth: .pubkey, id: .any, caCertificates: [caFileName],
                            revocation: "relaxed",
                            certPolicies: nodeScoping ? [NodeAccessPolicy.oid(forNode: node.name)] : [])
                    ]))
        }
        if offers.contains(.ikev2EAP) {
            connections.append(
                shapes.v2(
                    "ikev2-eap", .ikev2EAP,
                    "IKEv2: server certificate, client EAP-MSCHAPv2 user/password" + accountsText,
                    local: shapes.serverCert, remote: [shapes.eapRound]))
        }
        if offers.contains(.ikev2PSKEAP) {
            var round = shapes.eapRound
            round.id = .exactly(pskEAPClientIdentity(in: inventory))
            connections.append(
                shapes.v2(
                    "ikev2-psk-eap", .ikev2PSKEAP,
                    "IKEv2: server PSK, client EAP-MSCHAPv2 user/password" + accountsText,
                    local: shapes.serverPSK, remote: [round]))
        }
        if offers.contains(.ikev2PSK) {
            connections.append(
                shapes.v2(
                    "ikev2-psk", .ikev2PSK, "IKEv2: node PSK on both sides", local: shapes.serverPSK,
                    remote: [RemoteAuthRound(section: "remote", auth: .psk, id: .any)]))
        }
        if offers.contains(.ipsecXauthPSK) {
            connections.append(
                shapes.v1(
                    "ipsec-xauth-psk-main", aggressive: false,
                    summary: "IKEv1 Main Mode: node PSK + XAuth user/password (clients without a group name)"
                        + accountsText,
                    remoteID: .any))
            if let group = node.group {
                connections.append(
                    shapes.v1(
                        "ipsec-xauth-psk-aggressive", aggressive: true,
                        summary: "IKEv1 Aggressive Mode: group name + node PSK + XAuth user/password" + accountsText,
                        remoteID: .exactly(.keyID(group))))
            }
        }

        if offers.contains(.ipsecXauthHybrid) {
            connections.append(
                shapes.v1(
                    "ipsec-xauth-hybrid-aggressive", aggressive: true,
                    summary: "IKEv1 Hybrid (Aggressive Mode): server certificate, client XAuth user/password"
                        + accountsText,
                    remoteID: .any, service: .ipsecXauthHybrid))
        }
        return connections
    }

    /// The identities the node's PSK is written for: its own, and its group name's for Aggressive Mode.
    static func pskIdentities(of node: Node) -> [IKEIdentity] {
        var pskIDs: [IKEIdentity] = []
        if node.services.contains(where: \.needsPSK) {
            pskIDs.append(node.id)
            if node.services.contains(.ipsecXauthPSK), let group = node.group { pskIDs.append(.keyID(group)) }
        }
        return pskIDs
    }

    /// What the node's sysctl and nftables files need: pools, pushed DNS servers, private networks its
    /// clients may reach, and for a RADIUS node who may send Disconnect-Requests and its RADIUS peers.
    static func network(of node: Node, in inventory: Inventory) -> NodeNetworkPlan {
        var network = NodeNetworkPlan(
            pool4: node.pool, pool6: node.pool6, ipv6Mode: node.ipv6Mode, uplink: node.network.uplink,
            mss: node.network.mss,
            isolateClients: node.network.isolateClients, ipsec: node.network.ipsec)
        let dns = node.dns.compactMap(IPAddressText.parse)
        for bytes in dns {
            let text = IPAddressText.format(bytes)
            if bytes.count == 4 {
                if !network.dns4.contains(text) { network.dns4.append(text) }
            } else if !network.dns6.contains(text) {
                network.dns6.append(text)
            }
        }
        network.allowPrivate4 = ClientReach.normalized(node.network.allowPrivate.filter { !$0.isIPv6 })
        network.allowPrivate6 = ClientReach.normalized(node.network.allowPrivate.filter(\.isIPv6))
        if let monitoring = inventory.monitoring {
            network.exporterPort = monitoring.port
            network.exporterFrom = monitoring.from
        }
        if node.usesRadius, let accounts = inventory.accounts {
            network.disconnectFrom = accounts.effectiveDisconnectFrom
            network.daePort = AccountsSettings.daePort
            for server in accounts.servers {
                guard let bytes = IPAddressText.parse(server.address) else { continue }
                let text = IPAddressText.format(bytes)
                if bytes.count == 4 {
                    if !network.radiusServers4.contains(text) { network.radiusServers4.append(text) }
                } else if !network.radiusServers6.contains(text) {
                    network.radiusServers6.append(text)
                }
            }
            if accounts.protection == .ipsec {
                network.radiusPeers = accounts.servers.compactMap { server in
                    IPAddressText.parse(server.address).map {
                        RadiusPeer(
                            address: CIDR(address: $0, prefix: $0.count * 8), authPort: server.authPort,
                            acctPort: server.acctPort)
                    }
                }
            }
        }
        return network
    }
}
