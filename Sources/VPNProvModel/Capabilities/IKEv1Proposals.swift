import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// IKEv1 has no AEAD in Phase 1 and takes one algorithm of each kind per proposal, so a node's IKEv2
// proposals are rewritten for its IKEv1 services. The server offers these lists and a Linux IKEv1
// client sends the same ones, so both sides derive them from this one table.

/// The IKEv1 proposal lists of a node, derived from its IKEv2 ones.
package enum IKEv1Proposals {
    /// Extra IKEv1 Phase 1 proposals after the ones derived from the node's: what iOS/macOS "Cisco
    /// IPSec" clients offer, as accepted by setup-ipsec-vpn's tested server (docs/decisions.md, "Clients"). 3DES
    /// and MODP1024 are deliberately absent.
    static let fallbackIKE = [
        "aes256-sha256-modp2048", "aes128-sha256-modp2048", "aes256-sha1-modp2048", "aes128-sha1-modp2048",
    ]
    /// Extra IKEv1 Quick Mode (ESP) proposals after the node's.
    static let fallbackESP = ["aes256-sha256", "aes256-sha1", "aes128-sha1"]

    /// IKEv1 Phase 1 proposals derived from IKEv2 ones, then the fallbacks, without duplicates.
    /// IKEv1 takes one algorithm of each kind per proposal and has no AEAD in Phase 1, so every
    /// proposal is expanded into single-algorithm combinations and AEAD ciphers become their CBC
    /// counterpart with the PRF's hash as integrity: `aes256gcm16-prfsha256-ecp256` ->
    /// `aes256-sha256-ecp256`. ChaCha20-Poly1305 (no IKEv1 form) is dropped.
    package static func ike(from ike: [String]) -> [String] {
        var out: [String] = []
        for proposal in ike {
            let t = ProposalTokens(proposal)
            var encs: [String] = []
            for enc in t.encryption {
                if let cbc = cbcEquivalent(enc) { encs.append(cbc) } else if !isAEAD(enc) { encs.append(enc) }
            }
            var integs = t.integrity
            if integs.isEmpty { integs = t.prf.map { String($0.dropFirst(3)) }.filter { !$0.isEmpty } }
            if integs.isEmpty { integs = ["sha256"] }
            let groups = t.groups.filter { $0 != "none" && $0 != "modpnone" }
            for e in encs { for i in integs { for g in groups { out.append("\(e)-\(i)-\(g)") } } }
        }
        return unique(out + fallbackIKE)
    }

    /// IKEv1 ESP proposals: the node's ESP proposals split into single-algorithm ones (AEAD stays:
    /// AES-GCM ESP works with IKEv1), then the fallbacks, without duplicates.
    package static func esp(from esp: [String]) -> [String] {
        var out: [String] = []
        for proposal in esp {
            let t = ProposalTokens(proposal)
            let groups: [String?] = t.groups.isEmpty ? [nil] : t.groups.map { $0 }
            for e in t.encryption {
                let integs: [String?] = isAEAD(e) || t.integrity.isEmpty ? [nil] : t.integrity.map { $0 }
                for i in integs {
                    for g in groups { out.append(([e] + [i, g].compactMap { $0 }).joined(separator: "-")) }
                }
            }
        }
        return unique(out + fallbackESP)
    }

    private static func unique(_ list: [String]) -> [String] {
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }

    private static func isAEAD(_ enc: String) -> Bool {
        enc.contains("gcm") || enc.contains("ccm") || enc.hasPrefix("chacha20poly1305")
    }

    /// `aes256gcm16` -> `aes256`, `aes128ccm12` -> `aes128`; nil when not an AES AEAD keyword.
    private static func cbcEquivalent(_ enc: String) -> String? {
        guard enc.hasPrefix("aes"), isAEAD(enc) else { return nil }
        let bits = enc.dropFirst(3).prefix { $0.isNumber }
        return bits.isEmpty ? nil : "aes\(bits)"
    }
}

/// A strongSwan proposal split into its kinds of algorithm keywords.
struct ProposalTokens {
    var encryption: [String] = []
    var integrity: [String] = []
    var prf: [String] = []
    var groups: [String] = []

    private static let integrityKeywords: Set<String> = [
        "md5", "md5_128", "sha", "sha1", "sha1_160", "sha256", "sha2_256", "sha256_96", "sha2_256_96", "sha384",
        "sha2_384", "sha512", "sha2_512", "aesxcbc", "aescmac", "aes128gmac", "aes192gmac", "aes256gmac",
        "camelliaxcbc",
    ]

    init(_ proposal: String) {
        for raw in proposal.split(separator: "-") {
            let k = raw.lowercased()
            if k.hasPrefix("prf") {
                prf.append(k)
            } else if Self.integrityKeywords.contains(k) {
                integrity.append(k)
            } else if k.hasPrefix("modp") || k.hasPrefix("ecp") || k.hasPrefix("curve") || k == "x25519" || k == "x448"
                || k == "none"
            {
                groups.append(k)
            } else if k == "esn" || k == "noesn" {
                continue
            } else {
                encryption.append(k)
            }
        }
    }
}
