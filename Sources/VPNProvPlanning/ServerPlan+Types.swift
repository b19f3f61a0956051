import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// The types of a node's server plan (ServerPlan.swift says how they are decided): its connections, their auth
// rounds and children, its pools, its network settings and its RADIUS peers.

/// How one side authenticates in a swanctl auth round (the `auth` key).
package enum ServerAuthMethod: String, Sendable, Hashable {
    case pubkey
    case psk
    case eapMSCHAPv2 = "eap-mschapv2"
    case xauth
    /// EAP passed through to the RADIUS servers (strongSwan's eap-radius plugin).
    case eapRADIUS = "eap-radius"
    /// XAuth checked by the RADIUS servers (the eap-radius plugin's XAuth backend).
    case xauthRADIUS = "xauth-radius"

    /// An XAuth round, which authenticates no IKE identity.
    package var isXAuth: Bool { self == .xauth || self == .xauthRADIUS }
}

/// A remote identity constraint: `%any` or one exact identity.
package enum IdentityMatch: Sendable, Hashable {
    case any
    case exactly(IKEIdentity)

    /// The value written after `id =` / `eap_id =` (before quoting).
    package var swanctlValue: String {
        switch self {
        case .any: return "%any"
        case .exactly(let id): return id.swanctlValue
        }
    }
}

/// `send_cert` values.
package enum SendCertPolicy: String, Sendable, Hashable {
    case always
    case never
    case ifasked
}

/// The server's own auth round (`local`).
package struct LocalAuthRound: Sendable, Hashable {
    package var auth: ServerAuthMethod
    /// The node's IKE identity (what clients configure as remote ID).
    package var id: IKEIdentity
    /// Certificate files relative to swanctl's `x509/` (only with `pubkey`).
    package var certificates: [String]
    package init(auth: ServerAuthMethod, id: IKEIdentity, certificates: [String] = []) {
        self.auth = auth
        self.id = id
        self.certificates = certificates
    }
}

/// One round the client must pass (`remote`, `remote-psk`, `remote-xauth`).
package struct RemoteAuthRound: Sendable, Hashable {
    /// The section name: starts with `remote`; rounds run in the order listed.
    package var section: String
    package var auth: ServerAuthMethod
    /// The client's IKE identity (IDi) the round accepts.
    package var id: IdentityMatch
    /// EAP identity (asked with EAP-Identity when `.any`); only for EAP rounds.
    package var eapID: IdentityMatch?
    /// CA certificates relative to `x509ca/` the client certificate must chain to (pubkey rounds).
    package var caCertificates: [String]
    /// `revocation` policy for client certificates (pubkey rounds): "relaxed" refuses certificates
    /// listed in a loaded CRL (x509crl/), and keeps working if the CRL is stale.
    package var revocation: String?
    /// Certificate policy OIDs the client certificate must carry (`cert_policy`; pubkey rounds): the
    /// node's access policy, so a certificate opens only the nodes its user may use.
    package var certPolicies: [String]
    /// Groups the client must be a member of (`groups`): on a RADIUS node of a paid tier, the tier the
    /// RADIUS server asserts in its Class attribute.
    package var groups: [String] = []
    package init(
        section: String, auth: ServerAuthMethod, id: IdentityMatch, eapID: IdentityMatch? = nil,
        caCertificates: [String] = [], revocation: String? = nil, certPolicies: [String] = []
    ) {
        self.certPolicies = certPolicies
        self.section = section
        self.auth = auth
        self.id = id
        self.eapID = eapID
        self.caCertificates = caCertificates
        self.revocation = revocation
    }
}

/// The CHILD_SA a connection offers (one per connection, named `net`).
package struct ServerChild: Sendable, Hashable {
    package var name: String
    /// What the client may reach: everything of each address family it gets a virtual IP for.
    package var localTS: [String]
    package var espProposals: [String]
    /// Seconds; 0 = the server never starts a CHILD_SA rekey (clients do).
    package var rekeyTime: Int
    package var dpdAction: String
    package init(name: String, localTS: [String], espProposals: [String], rekeyTime: Int, dpdAction: String) {
        self.name = name
        self.localTS = localTS
        self.espProposals = espProposals
        self.rekeyTime = rekeyTime
        self.dpdAction = dpdAction
    }
}

/// One swanctl connection of a node.
package struct ServerConnection: Sendable, Hashable {
    /// Section name under `connections` (unique per node).
    package var name: String
    package var service: Service
    /// One line for people (written as a comment).
    package var summary: String
    /// IKE major version: 1 or 2.
    package var version: Int
    /// IKEv1 only: Aggressive (true) or Main Mode (false); nil for IKEv2.
    package var aggressive: Bool?
    /// IKE proposals in strongSwan syntax, most preferred first.
    package var ikeProposals: [String]
    package var local: LocalAuthRound
    /// Remote rounds in order (IKEv1 XAuth: `remote-psk` then `remote-xauth`).
    package var remote: [RemoteAuthRound]
    /// Pool names (sections of NodePlan.pools).
    package var pools: [String]
    package var sendCert: SendCertPolicy
    package var sendCertreq: Bool
    /// `unique = no`: one certificate or account may be used on several devices at once (a new IKE_SA
    /// with INITIAL_CONTACT replaces the peer's others); `never` for RADIUS accounts (even then not).
    package var unique: String
    /// `fragmentation = yes` (IKEv2 RFC 7383 / IKEv1 vendor fragmentation; big certificate payloads).
    package var fragmentation: String
    /// Seconds between liveness checks when idle.
    package var dpdDelay: Int
    /// IKEv1 only: seconds without answer before the peer is declared dead.
    package var dpdTimeout: Int?
    /// Seconds; 0 = the server never starts IKE rekeying (IKEv1: reauthentication); clients do.
    package var rekeyTime: Int
    package var child: ServerChild
    /// `ppk_required = yes` (`quantum_safe.ppk: required`): an IKE_SA without the client's PPK is refused.
    package var ppkRequired = false

    package init(
        name: String, service: Service, summary: String, version: Int, aggressive: Bool?, ikeProposals: [String],
        local: LocalAuthRound, remote: [RemoteAuthRound], pools: [String], sendCert: SendCertPolicy,
        sendCertreq: Bool, unique: String, fragmentation: String, dpdDelay: Int, dpdTimeout: Int?, rekeyTime: Int,
        child: ServerChild
    ) {
        self.name = name
        self.service = service
        self.summary = summary
        self.version = version
        self.aggressive = aggressive
        self.ikeProposals = ikeProposals
        self.local = local
        self.remote = remote
        self.pools = pools
        self.sendCert = sendCert
        self.sendCertreq = sendCertreq
        self.unique = unique
        self.fragmentation = fragmentation
        self.dpdDelay = dpdDelay
        self.dpdTimeout = dpdTimeout
        self.rekeyTime = rekeyTime
        self.child = child
    }
}

/// A virtual-address pool (`pools.<name>`).
package struct ServerPool: Sendable, Hashable {
    package var name: String
    package var addrs: CIDR
    /// DNS servers of the pool's address family, in inventory order.
    package var dns: [String]
    package init(name: String, addrs: CIDR, dns: [String]) {
        self.name = name
        self.addrs = addrs
        self.dns = dns
    }
}

/// How the node forwards its pools' traffic: the sysctl and nftables files of `servers/<node>/`.
package struct NodeNetworkPlan: Sendable, Hashable {
    package var pool4: CIDR?
    package var pool6: CIDR?
    /// How the IPv6 pool leaves the node (nil without one).
    package var ipv6Mode: NodeNetwork.IPv6Mode?
    package var uplink: String?
    package var mss: NodeNetwork.MSS
    package var isolateClients: Bool
    package var ipsec: NodeNetwork.IPsecPath
    /// On a RADIUS node: who may reach its Disconnect-Request listener (`accounts.disconnect_from`).
    package var disconnectFrom: [CIDR] = []
    package var daePort: Int?
    /// On a RADIUS node with `accounts.protection: ipsec`: the RADIUS servers written as IP addresses,
    /// whose RADIUS answers and Disconnect-Requests the node accepts only through IPsec.
    package var radiusPeers: [RadiusPeer] = []
    /// On a RADIUS node: its RADIUS servers written as IP addresses, per family. No tunnel client may send UDP
    /// there: masqueraded to the node's address it would enter the node's IPsec to them (which carries all UDP
    /// between the two hosts) and reach every UDP service of a RADIUS host as the node.
    package var radiusServers4: [String] = []
    package var radiusServers6: [String] = []
    /// The DNS servers the node pushes, per family, canonical and without repeats: clients may send DNS
    /// to them wherever they are (on the node itself, or in a private network).
    package var dns4: [String] = []
    package var dns6: [String] = []
    /// `network.allow_private`, per family, without repeats or networks inside another one.
    package var allowPrivate4: [CIDR] = []
    package var allowPrivate6: [CIDR] = []
    /// With `monitoring:`: the exporter's TCP port and who may reach it (`monitoring.from`); nil and
    /// empty without.
    package var exporterPort: Int?
    package var exporterFrom: [CIDR] = []
    package init(
        pool4: CIDR?, pool6: CIDR?, ipv6Mode: NodeNetwork.IPv6Mode?, uplink: String?, mss: NodeNetwork.MSS,
        isolateClients: Bool, ipsec: NodeNetwork.IPsecPath
    ) {
        self.pool4 = pool4
        self.pool6 = pool6
        self.ipv6Mode = ipv6Mode
        self.uplink = uplink
        self.mss = mss
        self.isolateClients = isolateClients
        self.ipsec = ipsec
    }
}

/// A RADIUS server as the node's firewall sees it: an address and the ports it answers from.
package struct RadiusPeer: Sendable, Hashable {
    package var address: CIDR
    package var authPort: Int
    package var acctPort: Int
    package init(address: CIDR, authPort: Int, acctPort: Int) {
        self.address = address
        self.authPort = authPort
        self.acctPort = acctPort
    }
}

/// Everything one node's strongSwan needs, before rendering.
package struct NodePlan: Sendable, Hashable {
    package var node: String
    package var identity: IKEIdentity
    /// In the order they must appear in swanctl.conf.
    package var connections: [ServerConnection]
    package var pools: [ServerPool]
    /// Identities the node's PSK is filed under (`secrets.ike.id-N`); empty without PSK services.
    package var pskIdentities: [IKEIdentity]
    /// Users whose EAP/XAuth password goes into this node's secrets, ordered by name (UTF-8 bytes).
    package var passwordUsers: [String]
    /// Users whose post-quantum preshared key goes into this node's secrets (`quantum_safe.ppk`), ordered by
    /// name (UTF-8 bytes); empty on a node without PPKs.
    package var ppkUsers: [String] = []
    /// An Aggressive Mode PSK connection exists: charon needs
    /// `i_dont_care_about_security_and_use_aggressive_mode_psk = yes`.
    package var needsAggressiveModePSK: Bool
    /// Forwarding, NAT and firewall of the pools.
    package var network: NodeNetworkPlan

    package init(
        node: String, identity: IKEIdentity, connections: [ServerConnection], pools: [ServerPool],
        pskIdentities: [IKEIdentity], passwordUsers: [String], needsAggressiveModePSK: Bool, network: NodeNetworkPlan
    ) {
        self.network = network
        self.node = node
        self.identity = identity
        self.connections = connections
        self.pools = pools
        self.pskIdentities = pskIdentities
        self.passwordUsers = passwordUsers
        self.needsAggressiveModePSK = needsAggressiveModePSK
    }

    /// The connections serving `service` (two for ipsec-xauth-psk with a group).
    package func connections(for service: Service) -> [ServerConnection] {
        connections.filter { $0.service == service }
    }
}
