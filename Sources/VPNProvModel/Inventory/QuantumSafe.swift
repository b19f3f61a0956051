// Quantum-safe tunnels (docs/quantum-safe.md): a node's `quantum_safe:` asks for a hybrid key exchange, ML-KEM
// in IKEv2's first additional key exchange (RFC 9370, FIPS 203) beside the classical (EC)DH of its proposals,
// for a post-quantum preshared key per user mixed into the keys (RFC 8784), or for both. Authentication stays
// classical. strongSwan computes both from 6.1 on (docs/strongswan-versions.md).

/// A node's `quantum_safe:` settings.
package struct QuantumSafe: Sendable, Hashable {
    /// An ML-KEM parameter set (FIPS 203), as strongSwan names it.
    package enum MLKEM: String, Sendable, Hashable, CaseIterable {
        case mlkem512
        case mlkem768
        case mlkem1024

        /// Its IKEv2 key exchange method number (IANA "Transform Type 4", RFC 9370 additional key exchanges;
        /// draft-ietf-ipsecme-ikev2-mlkem): 35, 36, 37. Apple's profiles and the app catalogue use these.
        package var transformID: Int {
            switch self {
            case .mlkem512: 35
            case .mlkem768: 36
            case .mlkem1024: 37
            }
        }
    }

    /// Whether a client must bring its post-quantum preshared key.
    package enum PPKMode: String, Sendable, Hashable, CaseIterable {
        /// The node refuses an IKE_SA without the user's PPK.
        case required
        /// A client with the PPK uses it; one without connects classically (RFC 8784's NO_PPK_AUTH).
        case optional
    }

    /// The first strongSwan version that computes ML-KEM in an additional key exchange on Debian (6.1.0 in Debian
    /// testing; docs/strongswan-versions.md).
    package static let mlKEMStrongSwan = "6.1"

    /// ML-KEM parameter sets offered in the first additional key exchange, most preferred first; empty: none.
    package var mlKEM: [MLKEM]
    /// Whether a client that cannot compute ML-KEM is still admitted (without it).
    package var classicalFallback: Bool
    /// nil: no PPK.
    package var ppk: PPKMode?

    package init(mlKEM: [MLKEM], classicalFallback: Bool, ppk: PPKMode?) {
        self.mlKEM = mlKEM
        self.classicalFallback = classicalFallback
        self.ppk = ppk
    }

    /// strongSwan's transforms for the first additional key exchange, as appended to a node's IKEv2 proposals:
    /// `-ke1_mlkem768`, plus `-ke1_none` when a classical client is admitted; "" without ML-KEM.
    package var serverSuffix: String {
        guard !mlKEM.isEmpty else { return "" }
        return mlKEM.map { "-ke1_\($0.rawValue)" }.joined() + (classicalFallback ? "-ke1_none" : "")
    }

    /// The node's ML-KEM methods a client kind with `capabilities` computes, in the node's order.
    package func methods(for capabilities: QuantumSafeSupport) -> [MLKEM] {
        guard capabilities.contains(.mlKEM) else { return [] }
        return mlKEM.filter { $0 != .mlkem512 || capabilities.contains(.mlKEM512) }
    }

    /// The PPK_ID (RFC 8784) under which `user`'s PPK is filed on the nodes and which the user's clients send.
    package static func ppkID(user: String) -> String { "ppk-\(user)" }

    /// What a client kind with `capabilities` appends to its IKEv2 proposals: the methods it computes, never
    /// `none`, so that such a client is never talked down to a classical exchange; "" when it computes none.
    package func clientSuffix(for capabilities: QuantumSafeSupport) -> String {
        methods(for: capabilities).map { "-ke1_\($0.rawValue)" }.joined()
    }

    /// Whether the node admits a client kind with `capabilities` at all (classically where it lacks a piece the
    /// node leaves optional).
    package func admits(_ capabilities: QuantumSafeSupport) -> Bool {
        (mlKEM.isEmpty || classicalFallback || !methods(for: capabilities).isEmpty)
            && (ppk != .required || capabilities.contains(.ppk))
    }
}

/// What a client kind can do of quantum-safe tunnels (its description's `quantumSafe`).
package struct QuantumSafeSupport: OptionSet, Sendable, Hashable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// It computes ML-KEM in an additional key exchange when its configuration says so.
    package static let mlKEM = QuantumSafeSupport(rawValue: 1)
    /// It sends a post-quantum preshared key when its configuration holds one.
    package static let ppk = QuantumSafeSupport(rawValue: 2)
    /// With `mlKEM`: ML-KEM-512 too (Apple's devices take only 768 and 1024).
    package static let mlKEM512 = QuantumSafeSupport(rawValue: 4)
}
