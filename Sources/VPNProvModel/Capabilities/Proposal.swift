import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// strongSwan proposal keywords (5.9.8, proposal_keywords_static.txt) and what each client kind can
// use. One table serves the validator, the server plan and every client renderer, so a proposal is
// understood the same way everywhere (strongSwan's proposal_keywords_static.txt, Apple's schema, the Android app's
// importer; docs/formats.md).

/// One algorithm keyword's meaning.
package struct AlgorithmInfo: Sendable, Hashable {
    package enum Kind: Sendable, Hashable { case encryption, integrity, prf, keyExchange }
    package var keyword: String
    package var kind: Kind
    /// AEAD cipher (needs no integrity, needs an explicit PRF in IKE).
    package var isAEAD: Bool
    /// Considered weak: refused unless the inventory allows weak algorithms.
    var isWeak: Bool
    /// Apple profile value: EncryptionAlgorithm / IntegrityAlgorithm string, or DH group number as text.
    package var apple: String?
    /// DH group number for key exchange keywords.
    package var group: Int?
}

package enum AlgorithmTable {
    private static func enc(_ k: String, aead: Bool = false, weak: Bool = false, apple: String? = nil) -> AlgorithmInfo
    {
        AlgorithmInfo(keyword: k, kind: .encryption, isAEAD: aead, isWeak: weak, apple: apple, group: nil)
    }
    private static func integ(_ k: String, weak: Bool = false, apple: String? = nil) -> AlgorithmInfo {
        AlgorithmInfo(keyword: k, kind: .integrity, isAEAD: false, isWeak: weak, apple: apple, group: nil)
    }
    private static func prf(_ k: String, weak: Bool = false, apple: String? = nil) -> AlgorithmInfo {
        AlgorithmInfo(keyword: k, kind: .prf, isAEAD: false, isWeak: weak, apple: apple, group: nil)
    }
    private static func ke(_ k: String, _ group: Int, weak: Bool = false, apple: Bool = false) -> AlgorithmInfo {
        AlgorithmInfo(
            keyword: k, kind: .keyExchange, isAEAD: false, isWeak: weak, apple: apple ? String(group) : nil,
            group: group)
    }

    /// Every keyword vpnprov accepts. Aliases map to the same meaning.
    package static let all: [String: AlgorithmInfo] = {
        let infos: [AlgorithmInfo] = [
            enc("aes128", apple: "AES-128"), enc("aes192"), enc("aes256", apple: "AES-256"),
            enc("aes128ctr"), enc("aes192ctr"), enc("aes256ctr"),
            enc("aes128gcm16", aead: true, apple: "AES-128-GCM"), enc("aes192gcm16", aead: true),
            enc("aes256gcm16", aead: true, apple: "AES-256-GCM"),
            enc("aes128gcm12", aead: true), enc("aes256gcm12", aead: true),
            enc("aes128ccm16", aead: true), enc("aes256ccm16", aead: true),
            enc("chacha20poly1305", aead: true, apple: "ChaCha20Poly1305"),
            enc("camellia128"), enc("camellia256"),
            enc("3des", weak: true, apple: "3DES"), enc("des", weak: true, apple: "DES"),
            enc("blowfish128", weak: true), enc("cast128", weak: true), enc("null", weak: true),
            integ("sha1", weak: true, apple: "SHA1-96"), integ("sha256", apple: "SHA2-256"),
            integ("sha384", apple: "SHA2-384"), integ("sha512", apple: "SHA2-512"),
            integ("md5", weak: true),
            prf("prfsha1", weak: true, apple: "SHA1-96"), prf("prfsha256", apple: "SHA2-256"),
            prf("prfsha384", apple: "SHA2-384"), prf("prfsha512", apple: "SHA2-512"),
            prf("prfmd5", weak: true),
            ke("modp768", 1, weak: true), ke("modp1024", 2, weak: true), ke("modp1536", 5, weak: true),
            ke("modp2048", 14, apple: true), ke("modp3072", 15, apple: true), ke("modp4096", 16, apple: true),
            ke("modp6144", 17, apple: true), ke("modp8192", 18, apple: true),
            ke("ecp256", 19, apple: true), ke("ecp384", 20, apple: true), ke("ecp521", 21, apple: true),
            ke("modp2048s256", 24, weak: true), ke("ecp256bp", 28), ke("ecp384bp", 29), ke("ecp512bp", 30),
            ke("curve25519", 31, apple: true), ke("curve448", 32, apple: true),
        ]
        let aliases: [(String, String)] = [
            ("aes128gcm", "aes128gcm16"), ("aes256gcm", "aes256gcm16"), ("aes192gcm", "aes192gcm16"),
            ("aes128gcm128", "aes128gcm16"), ("aes256gcm128", "aes256gcm16"),
            ("sha", "sha1"), ("sha2_256", "sha256"), ("sha2_384", "sha384"), ("sha2_512", "sha512"),
            ("x25519", "curve25519"), ("x448", "curve448"),
        ]
        var table: [String: AlgorithmInfo] = [:]
        for info in infos { table[info.keyword] = info }
        for (alias, target) in aliases { table[alias] = table[target] }
        return table
    }()

    /// strongSwan keywords left out of `all` because a server installed as the node README says (charon-systemd,
    /// strongswan-swanctl, libcharon-extra-plugins) may lack the plugin that computes them: Debian 13 ships xcbc,
    /// and Debian 12 and 13 ship cmac, only in libstrongswan-extra-plugins, and without the plugin charon
    /// negotiates the keyword and then fails with "key derivation failed" (measured on 5.9.8 and 6.0.1). Each maps
    /// to the reason the validator gives.
    package static let notOffered: [String: String] = {
        let xcbc = "needs strongSwan's xcbc plugin, which Debian 13 ships only in libstrongswan-extra-plugins"
        let cmac = "needs strongSwan's cmac plugin, which Debian ships only in libstrongswan-extra-plugins"
        return ["aesxcbc": xcbc, "prfaesxcbc": xcbc, "aescmac": cmac, "prfaescmac": cmac]
    }()

    /// Additional key exchanges of strongSwan 6 (RFC 9370 `ke1_`…`ke7_` prefixes) and ML-KEM: deliberately not in
    /// `all`. No strongSwan vpnprov is proven against computes ML-KEM (5.9 has no such keyword; Debian 13's 6.0.1
    /// negotiates it and then fails with "negotiated key exchange method ML_KEM_768 not supported"), so offering
    /// it would break every client that accepts it (docs/strongswan-versions.md).
    package static func isAdditionalKeyExchange(_ token: String) -> Bool {
        let t = token.lowercased()
        if t.contains("mlkem") || t.contains("ml_kem") { return true }
        guard t.count > 4, t.hasPrefix("ke"), let digit = t.dropFirst(2).first, ("1"..."7").contains(digit) else {
            return false
        }
        return t.dropFirst(3).first == "_"
    }

    /// `none`/`modpnone`: makes a DH group optional in ESP proposals (PFS on rekey).
    static let noGroupKeywords: Set<String> = ["none", "modpnone"]
}

/// Why a proposal string is not valid.
package struct ProposalError: Error, Sendable, Hashable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
}

/// A parsed strongSwan proposal (`aes256gcm16-prfsha256-ecp256`), most preferred algorithm first.
package struct Proposal: Sendable, Hashable, CustomStringConvertible {
    package enum Purpose: Sendable, Hashable { case ike, esp }

    package var text: String
    package var purpose: Purpose
    package var encryption: [AlgorithmInfo]
    package var integrity: [AlgorithmInfo]
    package var prf: [AlgorithmInfo]
    /// Key exchange groups (for ESP: PFS groups used on rekey).
    package var groups: [AlgorithmInfo]
    /// ESP only: `modpnone`/`none` present, so the group is optional.
    package var groupOptional: Bool
    /// Additional key exchanges (RFC 9370, `ke1_mlkem768`), by slot 1...7: the methods of each slot, `none` among
    /// them where the slot is optional. Only in the proposals vpnprov derives from `quantum_safe:`
    /// (`parse(_:purpose:additionalKeyExchanges:)`); the inventory's `proposals:` take none.
    var additionalKeyExchanges: [Int: Set<String>] = [:]

    package var description: String { text }
    package var isAEAD: Bool { encryption.first?.isAEAD ?? false }
    /// Weak algorithms it names (keywords).
    package var weakKeywords: [String] {
        (encryption + integrity + prf + groups).filter(\.isWeak).map(\.keyword)
    }

    /// Parses one proposal with strongSwan's rules: IKE needs encryption + (integrity unless AEAD) +
    /// PRF (mandatory for AEAD) + a DH group; ESP needs encryption + integrity unless AEAD; AEAD and
    /// non-AEAD ciphers do not mix.
    /// `additionalKeyExchanges`: also read `keN_<ML-KEM parameter set>` and `keN_none`, as the proposals vpnprov
    /// derives from `quantum_safe:` carry them.
    package static func parse(_ text: String, purpose: Purpose, additionalKeyExchanges: Bool = false)
        throws(ProposalError) -> Proposal
    {
        var p = Proposal(
            text: text, purpose: purpose, encryption: [], integrity: [], prf: [], groups: [], groupOptional: false)
        guard !text.isEmpty else { throw ProposalError(message: "empty proposal") }
        for token in text.split(separator: "-", omittingEmptySubsequences: false).map(String.init) {
            if token.isEmpty { throw ProposalError(message: "empty algorithm in '\(text)'") }
            if additionalKeyExchanges, let (slot, method) = Self.additionalKeyExchange(token) {
                p.additionalKeyExchanges[slot, default: []].insert(method)
                continue
            }
            let noGroup = AlgorithmTable.noGroupKeywords.contains(token)  // ESP without a key exchange (no PFS)
            if noGroup || token == "esn" || token == "noesn" {  // ESP keywords, also extended sequence numbers
                guard purpose == .esp else { throw ProposalError(message: "'\(token)' is only valid in ESP proposals") }
                if noGroup { p.groupOptional = true }
                continue
            }
            guard let info = AlgorithmTable.all[token] else {
                if AlgorithmTable.isAdditionalKeyExchange(token) {
                    throw ProposalError(
                        message: "'\(token)' in '\(text)': post-quantum/additional key exchanges are "
                            + "not supported (strongSwan 5.9 rejects them; Debian 13's 6.0.1 accepts ML-KEM in config, "
                            + "then fails every handshake that selects it)")
                }
                if let reason = AlgorithmTable.notOffered[token] {
                    throw ProposalError(message: "'\(token)' in '\(text)' is not supported: it \(reason)")
                }
                throw ProposalError(message: "unknown algorithm '\(token)' in '\(text)'")
            }
            switch info.kind {
            case .encryption: p.encryption.append(info)
            case .integrity: p.integrity.append(info)
            case .prf:
                guard purpose == .ike else {
                    throw ProposalError(message: "PRF '\(token)' is only valid in IKE proposals")
                }
                p.prf.append(info)
            case .keyExchange: p.groups.append(info)
            }
        }
        guard !p.encryption.isEmpty else { throw ProposalError(message: "'\(text)' names no encryption algorithm") }
        let aead = p.encryption.map(\.isAEAD)
        if aead.contains(true) && aead.contains(false) {
            throw ProposalError(message: "'\(text)' mixes AEAD and non-AEAD encryption")
        }
        if p.isAEAD && !p.integrity.isEmpty {
            throw ProposalError(message: "'\(text)': an AEAD cipher takes no integrity algorithm")
        }
        if p.isAEAD && purpose == .ike && p.prf.isEmpty {
            throw ProposalError(message: "'\(text)': an AEAD IKE proposal needs a PRF (e.g. prfsha256)")
        }
        if !p.isAEAD && p.integrity.isEmpty {
            throw ProposalError(message: "'\(text)' names no integrity algorithm")
        }
        if purpose == .ike && p.groups.isEmpty {
            throw ProposalError(message: "'\(text)': an IKE proposal needs a key exchange group (e.g. ecp256)")
        }
        return p
    }

    /// `ke<slot>_<method>` with a slot 1...7 and an ML-KEM parameter set or `none`; nil for anything else.
    static func additionalKeyExchange(_ token: String) -> (slot: Int, method: String)? {
        let parts = token.split(separator: "_", maxSplits: 1).map(String.init)
        guard parts.count == 2, parts[0].count == 3, parts[0].hasPrefix("ke"), let slot = Int(parts[0].dropFirst(2)),
            (1...7).contains(slot),
            parts[1] == "none" || QuantumSafe.MLKEM(rawValue: parts[1]) != nil
        else { return nil }
        return (slot, parts[1])
    }

    /// The PRFs in effect: explicit ones, else derived from integrity (`sha256` -> `prfsha256`).
    package var effectivePRFs: [AlgorithmInfo] {
        if !prf.isEmpty { return prf }
        return integrity.compactMap { AlgorithmTable.all["prf" + $0.keyword] }
    }
}

/// The single IKE/Child SA parameter set an Apple IKEv2 profile pins (Apple's schema,
/// IKESecurityAssociationParameters): Apple sends
/// exactly one proposal built from these, so it must be one the server accepts.
package struct AppleSAParameters: Sendable, Hashable {
    package var encryptionAlgorithm: String  // e.g. "AES-256-GCM"
    package var integrityAlgorithm: String  // e.g. "SHA2-256" (the PRF for AEAD ciphers)
    package var diffieHellmanGroup: Int  // e.g. 19

    /// First combination of `proposal` Apple can express, in the proposal's preference order.
    /// For ESP, `fallbackGroup` is the group used when the ESP proposal names none (Apple's Child SA
    /// dictionary always carries one; it only matters with EnablePFS).
    package static func first(in proposal: Proposal, fallbackGroup: Int? = nil) -> AppleSAParameters? {
        guard let enc = proposal.encryption.first(where: { $0.apple != nil }) else { return nil }
        let integrityCandidates =
            proposal.purpose == .ike && enc.isAEAD
            ? proposal.effectivePRFs
            : proposal.purpose == .ike
                ? proposal.integrity.filter { i in
                    proposal.effectivePRFs.contains { $0.keyword == "prf" + i.keyword }
                }
                : proposal.integrity
        let integrity: String
        if enc.isAEAD && proposal.purpose == .esp {
            integrity = "SHA2-256"  // ignored by the device for AEAD Child SAs, required by the schema
        } else {
            guard let i = integrityCandidates.first(where: { $0.apple != nil })?.apple else { return nil }
            integrity = i
        }
        let group: Int
        if let g = proposal.groups.first(where: { $0.apple != nil })?.group {
            group = g
        } else if let fallbackGroup, proposal.purpose == .esp {
            group = fallbackGroup
        } else {
            return nil
        }
        return AppleSAParameters(
            encryptionAlgorithm: enc.apple!, integrityAlgorithm: integrity, diffieHellmanGroup: group)
    }

    /// The first IKE and Child SA parameter pair Apple can express, in the node's preference order: the first
    /// IKE proposal with an Apple combination and the first ESP proposal with one (an ESP proposal without a
    /// group takes the IKE group). `espIndex` is the ESP proposal's position; nil entries (proposals that did
    /// not parse) are skipped. The validator asks whether a pair exists, the plan pins it.
    package static func firstPair(ike: [Proposal?], esp: [Proposal?])
        -> (ike: AppleSAParameters, child: AppleSAParameters, espIndex: Int)?
    {
        guard let ikeParameters = ike.lazy.compactMap({ $0.flatMap { first(in: $0) } }).first else { return nil }
        for (index, proposal) in esp.enumerated() {
            guard let proposal else { continue }
            if let child = first(in: proposal, fallbackGroup: ikeParameters.diffieHellmanGroup) {
                return (ikeParameters, child, index)
            }
        }
        return nil
    }

    /// The strongSwan proposal this parameter set amounts to (what the device offers).
    package func strongSwanProposal(purpose: Proposal.Purpose, pfs: Bool = false) -> String {
        let encKeyword = AlgorithmTable.all.values.first {
            $0.kind == .encryption && $0.apple == encryptionAlgorithm && AlgorithmTable.all[$0.keyword] == $0
        }!.keyword
        let isAEAD = AlgorithmTable.all[encKeyword]!.isAEAD
        let hash = AlgorithmTable.all.values.first { $0.kind == .integrity && $0.apple == integrityAlgorithm }!.keyword
        let groupKeyword = AlgorithmTable.all.values.filter { $0.group == diffieHellmanGroup }.map(\.keyword).min()!
        switch purpose {
        case .ike:
            return isAEAD ? "\(encKeyword)-prf\(hash)-\(groupKeyword)" : "\(encKeyword)-\(hash)-\(groupKeyword)"
        case .esp:
            let base = isAEAD ? encKeyword : "\(encKeyword)-\(hash)"
            return pfs ? "\(base)-\(groupKeyword)" : base
        }
    }
}
