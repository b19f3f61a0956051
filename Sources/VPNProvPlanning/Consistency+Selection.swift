import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Consistency: strongSwan's responder selection, as the check simulates it.

extension Consistency {
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
