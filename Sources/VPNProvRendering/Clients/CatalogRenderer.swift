import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `catalog/servers.json`: per node and service what an app needs to build an
/// NEVPNProtocolIKEv2 / NEVPNProtocolIPSec configuration (docs/formats.md, "Catalogue fields"). No secret, no per-user
/// data.
package enum CatalogRenderer: TreeRenderer {
    /// Where the catalogue goes in the output tree (the app's backend publishes it from there).
    package static let path = "catalog/servers.json"

    package struct Catalog: Codable, Sendable, Hashable {
        package var version: Int
        package var deployment: String
        package var servers: [Server]
    }

    package struct SecurityAssociation: Codable, Sendable, Hashable {
        /// Apple names: `AES-256-GCM`, `AES-256`, ... (NEVPNIKEv2EncryptionAlgorithm).
        package var encryptionAlgorithm: String
        /// `SHA2-256`, ... (NEVPNIKEv2IntegrityAlgorithm; the PRF for AEAD IKE SAs).
        package var integrityAlgorithm: String
        /// DH group number (NEVPNIKEv2DiffieHellmanGroup raw value).
        package var diffieHellmanGroup: Int
        package var lifetimeMinutes: Int
        /// The equivalent strongSwan proposal.
        package var proposal: String
    }

    /// A quantum-safe node's requirements (`quantum_safe:`, docs/quantum-safe.md), for an app to set the same.
    package struct QuantumSafeEntry: Codable, Sendable, Hashable {
        /// The ML-KEM methods the node accepts in the first additional key exchange (RFC 9370 ADDKE1), by their
        /// IKEv2 numbers (ML-KEM-512 35, ML-KEM-768 36, ML-KEM-1024 37), most preferred first; empty without
        /// ML-KEM. Apple: `postQuantumKeyExchangeMethods = [the first the device supports]` (iOS/macOS 26 take
        /// 36 and 37); strongSwan: `-ke1_mlkem768` appended to the proposal.
        package var additionalKeyExchangeMethods: [Int]
        /// A device that does not do ML-KEM is admitted (classically).
        package var classicalFallback: Bool
        /// `required` or `optional`: the node takes the user's post-quantum preshared key (RFC 8784), which is
        /// per user and never in the catalogue; absent without PPKs.
        package var ppk: String?
    }

    /// One NEOnDemandRule, in evaluation order (first match wins): `disconnect` with
    /// interfaceTypeMatch `wiFi` and ssidMatch for trusted networks, then `connect`.
    package struct OnDemandRule: Codable, Sendable, Hashable {
        /// `connect` or `disconnect`.
        package var action: String
        /// NEOnDemandRuleInterfaceType: `wiFi`, `cellular`, `ethernet`; absent: any.
        package var interfaceTypeMatch: String?
        package var ssidMatch: [String]?
    }

    package struct Server: Codable, Sendable, Hashable {
        /// Stable: `<node>-<service>`.
        package var id: String
        package var name: String
        package var node: String
        package var service: String
        package var region: String?
        package var countryCode: String?
        package var flag: String?
        package var tier: String
        /// NEVPNProtocol.serverAddress.
        package var host: String
        /// `IKEv2` or `IPSec`.
        package var `protocol`: String
        /// remoteIdentifier (the server's IKE identity).
        package var remoteID: String
        /// localIdentifier: the group name for IPSec with a group, the fixed `psk-eap.<deployment>` for
        /// psk-eap; empty when it is per user (the user's IKE identity) or absent (IPSec Main Mode).
        package var localID: String
        /// The IPSec localIdentifier is a key ID (group name).
        package var localIDType: String?
        package var pskEnabled: Bool
        /// `certificate`, `eap`, `psk`, `psk-eap`, `xauth-psk`, `xauth-hybrid`.
        package var authMethod: String
        /// NEVPNIKEAuthenticationMethod: `certificate` or `sharedSecret`.
        package var authenticationMethod: String
        /// useExtendedAuthentication (EAP for IKEv2, XAuth for IPSec).
        package var useExtendedAuthentication: Bool
        /// `account` on a node with `accounts: radius`: the user name and password are the app
        /// account's own (checked by the RADIUS servers), not a profile's; absent otherwise.
        package var credentials: String? = nil
        /// The client needs its own certificate (identityData).
        package var clientCertificate: Bool
        /// serverCertificateIssuerCommonName when the server proves itself with a certificate of the
        /// deployment CA (absent for an ACME node, whose issuing intermediate the ACME CA changes at will).
        package var serverCertificateIssuerCommonName: String?
        /// What the device must already hold, beyond what an app configures: `ca-certificate` (the
        /// deployment's CA, from a profile; a node whose certificate is not publicly trusted) and
        /// `client-certificate`. Empty: nothing, so an app alone can set the entry up.
        package var needsOnDevice: [String] = []
        /// IKEv2 only: the one IKE / Child SA parameter set to pin, and enablePFS.
        package var ikeSecurityAssociation: SecurityAssociation?
        package var childSecurityAssociation: SecurityAssociation?
        package var enablePFS: Bool?
        /// An app that knows only protocol, localID, remoteID and pskEnabled (always turning extended
        /// authentication on, no SA parameters) gets exactly this connection from those four fields.
        package var fourFieldModel: Bool
        /// Windows' built-in IKEv2 client (ikev2-eap, ikev2-cert): the Set-VpnConnectionIPsecConfiguration values.
        package var windowsIPsec: WindowsIPsec? = nil
        /// The node carries IPv6 (it has an IPv6 pool). When false an app must keep IPv6 off the
        /// physical network while connected (`blockIPv6`), as the generated profiles do.
        package var carriesIPv6: Bool?
        /// Drop IPv6 outside the tunnel while connected (no IPv6 pool on the node).
        package var blockIPv6: Bool?
        /// NEVPNProtocol.includeAllNetworks (kill switch) and excludeLocalNetworks; IKEv2 only
        /// (IPSec profiles cannot set them).
        package var includeAllNetworks: Bool?
        package var excludeLocalNetworks: Bool?
        /// NEVPNManager.isOnDemandEnabled and onDemandRules (the node's settings; users may differ).
        package var onDemandEnabled: Bool?
        package var onDemandRules: [OnDemandRule]?
        /// NEVPNProtocolIKEv2.enableRevocationCheck and deadPeerDetectionRate (`none`, `low`, `medium`, `high`).
        package var enableRevocationCheck: Bool?
        package var deadPeerDetectionRate: String?
        /// Seconds of idle time after which the profiles disconnect (0 = never).
        package var disconnectOnIdleSeconds: Int?
        /// IKEv2 entries of a quantum-safe node; absent otherwise.
        package var quantumSafe: QuantumSafeEntry? = nil
        /// `draining` while the node is taken out of service (the inventory's `state: draining`, or in the live
        /// catalogue the accounts database's drain): offer it for no new connection; a client connected there is
        /// moved to a sibling (IKEv2 redirect) or disconnected at `graceUntil`. Absent: in service.
        package var state: String? = nil
        /// The live catalogue only, a node drained through `vpnprov accounts drain`: since when (ISO 8601, UTC), and
        /// when its remaining sessions are ended.
        package var drainingSince: String? = nil
        package var graceUntil: String? = nil
        /// The live catalogue only (`vpnprov accounts catalogue`), entries of RADIUS nodes: the node's live
        /// sessions, the addresses of its IPv4 pool (its capacity; absent without a pool), `load` (sessions
        /// against capacity, in percent, rounded down) and whether its accounting says it is up.
        package var sessions: Int? = nil
        package var capacity: Int? = nil
        package var load: Int? = nil
        package var alive: Bool? = nil
    }

    static func authMethod(_ service: Service) -> String {
        switch service {
        case .ikev2Cert: return "certificate"
        case .ikev2EAP: return "eap"
        case .ikev2PSK: return "psk"
        case .ikev2PSKEAP: return "psk-eap"
        case .ipsecXauthPSK: return "xauth-psk"
        case .ipsecXauthHybrid: return "xauth-hybrid"
        }
    }

    /// Regional-indicator flag for an ISO 3166-1 alpha-2 code (nil unless two ASCII letters).
    package static func flag(_ countryCode: String) -> String? {
        let letters = Array(countryCode.uppercased().unicodeScalars)
        guard letters.count == 2, letters.allSatisfy({ $0.value >= 65 && $0.value <= 90 }) else { return nil }
        var flag = String.UnicodeScalarView()
        for letter in letters { flag.append(Unicode.Scalar(0x1F1E6 + letter.value - 65)!) }
        return String(flag)
    }

    /// The catalogue of the plan: each node's entries, in the catalogue's words.
    package static func catalog(_ plan: CataloguePlan) -> Catalog {
        Catalog(
            version: 1, deployment: plan.deployment,
            servers: plan.nodes.flatMap { node in node.entries.map { server(node, $0) } })
    }

    /// What an app sets for one entry. IKEv2 entries carry Apple's SA parameters and settings; IPSec profiles
    /// cannot set those.
    static func server(_ node: CataloguePlan.NodeEntries, _ entry: CataloguePlan.Entry) -> Server {
        let service = entry.service
        let v2 = service.ikeVersion == 2
        let apple = node.apple
        let sa = v2 ? node.appleSA : nil
        let (localID, localIDType) = localIdentifier(entry.localIdentity)
        let country = node.country?.uppercased()
        return Server(
            id: "\(node.name)-\(service.rawValue)", name: "\(node.name) (\(service.rawValue))",
            node: node.name, service: service.rawValue,
            region: node.region, countryCode: country, flag: country.flatMap(flag),
            tier: node.tier.rawValue, host: node.address,
            protocol: v2 ? "IKEv2" : "IPSec",
            remoteID: node.identity.value, localID: localID, localIDType: localIDType,
            pskEnabled: service.needsPSK, authMethod: authMethod(service),
            // IPSec hybrid is Apple's SharedSecret method without a secret, switched by the group name.
            authenticationMethod: service.serverUsesCert && v2 ? "certificate" : "sharedSecret",
            useExtendedAuthentication: service.needsPassword,
            credentials: entry.accountCredentials ? "account" : nil,
            clientCertificate: service.needsClientCert,
            serverCertificateIssuerCommonName: entry.serverCertificateIssuer,
            needsOnDevice: entry.needsOnDevice,
            ikeSecurityAssociation: sa.map { association($0.ike, purpose: .ike, lifetime: $0.ikeLifetimeMinutes, $0) },
            childSecurityAssociation: sa.map {
                association($0.child, purpose: .esp, lifetime: $0.childLifetimeMinutes, $0)
            },
            enablePFS: sa?.enablePFS,
            fourFieldModel: entry.fourFieldModel,
            windowsIPsec: entry.windows,
            carriesIPv6: node.carriesIPv6, blockIPv6: !node.carriesIPv6,
            includeAllNetworks: v2 ? apple.includeAllNetworks : nil,
            excludeLocalNetworks: v2 && apple.includeAllNetworks ? apple.excludeLocalNetworks : nil,
            onDemandEnabled: apple.onDemand, onDemandRules: onDemandRules(apple),
            enableRevocationCheck: v2 ? entry.revocationCheck : nil,
            deadPeerDetectionRate: v2 ? apple.dpd.rawValue : nil,
            disconnectOnIdleSeconds: apple.disconnectOnIdle,
            quantumSafe: v2
                ? node.quantumSafe.map {
                    QuantumSafeEntry(
                        additionalKeyExchangeMethods: $0.methods, classicalFallback: $0.classicalFallback,
                        ppk: $0.ppk?.rawValue)
                } : nil,
            state: node.draining ? NodeState.draining.rawValue : nil)
    }

    /// The catalogue's `localID` and `localIDType` of the client's identity: a group name is a key ID, the fixed
    /// psk-eap identity its text; empty when it is per user (the user's IKE identity) or absent.
    static func localIdentifier(_ identity: ClientLocalIdentity) -> (String, String?) {
        switch identity {
        case .user, .none: ("", nil)
        case .keyID(let group): (group, "KeyID")
        case .fixed(let id): (id.value, nil)
        }
    }

    /// One of an IKEv2 entry's SA parameter sets.
    static func association(_ p: AppleSAParameters, purpose: Proposal.Purpose, lifetime: Int, _ sa: AppleSA)
        -> SecurityAssociation
    {
        SecurityAssociation(
            encryptionAlgorithm: p.encryptionAlgorithm, integrityAlgorithm: p.integrityAlgorithm,
            diffieHellmanGroup: p.diffieHellmanGroup, lifetimeMinutes: lifetime,
            proposal: p.strongSwanProposal(purpose: purpose, pfs: sa.enablePFS))
    }

    /// With on-demand: disconnect on the trusted Wi-Fi networks, else connect.
    static func onDemandRules(_ apple: AppleDeviceSettings) -> [OnDemandRule]? {
        guard apple.onDemand else { return nil }
        let trusted =
            apple.trustedSSIDs.isEmpty
            ? [] : [OnDemandRule(action: "disconnect", interfaceTypeMatch: "wiFi", ssidMatch: apple.trustedSSIDs)]
        return trusted + [OnDemandRule(action: "connect")]
    }

    /// The catalogue with each RADIUS node's entries carrying its load and state from the accounts
    /// database.
    package static func liveCatalog(
        _ plan: CataloguePlan, activity: [String: NodeActivity], drains: [String: NodeDrain] = [:]
    ) -> Catalog {
        var catalog = catalog(plan)
        let nodes = Dictionary(plan.nodes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for index in catalog.servers.indices {
            guard let node = nodes[catalog.servers[index].node], node.usesRadius else { continue }
            let now = activity[node.name] ?? NodeActivity(liveSessions: 0, staleSessions: 0)
            catalog.servers[index].sessions = now.liveSessions
            catalog.servers[index].capacity = node.capacity
            catalog.servers[index].load = node.capacity.map { $0 > 0 ? now.liveSessions * 100 / $0 : 0 }
            catalog.servers[index].alive = now.alive
            if let drain = drains[node.name] {
                catalog.servers[index].state = NodeState.draining.rawValue
                catalog.servers[index].drainingSince = drain.since
                catalog.servers[index].graceUntil = drain.graceUntil
            }
        }
        return catalog
    }

    package static func part(of plan: DeploymentPlan) -> CataloguePlan { plan.catalogue }

    package static func render(_ plan: CataloguePlan, _ shared: RenderShared, each: ([OutputFile]) throws -> Void)
        throws
    {
        try each([OutputFile(path: path, contents: encoded(catalog(plan)))])
    }

    /// The catalogue's JSON, newline-terminated.
    package static func encoded(_ catalog: Catalog) -> [UInt8] {
        // Encoding plain strings, integers and booleans cannot fail.
        var data = JSONWriter.json(try! DocumentEncoder.encode(catalog))
        data.append(0x0A)
        return data
    }
}
