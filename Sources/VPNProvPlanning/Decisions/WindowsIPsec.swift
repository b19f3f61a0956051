import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

// What Windows' built-in IKEv2 client can be told to offer, and how a node's strongSwan proposals map
// onto it. Windows sends exactly one IKE and one ESP proposal once `Set-VpnConnectionIPsecConfiguration`
// has set the six values of its CustomPolicy parameter set (without it, every Windows release up to 11
// proposes IKE with MODP1024 only, which a modern server refuses: strongSwan's "Windows Clients" page,
// https://docs.strongswan.org/docs/latest/interop/windowsClients.html). The accepted values are those
// of the cmdlet reference,
// https://learn.microsoft.com/powershell/module/vpnclient/set-vpnconnectionipsecconfiguration :
//   -EncryptionMethod                  DES DES3 AES128 AES192 AES256 GCMAES128 GCMAES256      (IKE)
//   -IntegrityCheckMethod              MD5 SHA1 SHA256 SHA384                                (IKE integrity + PRF)
//   -DHGroup                           None Group1 Group2 Group14 ECP256 ECP384 Group24        (IKE)
//   -CipherTransformConstants          DES DES3 AES128 AES192 AES256 GCMAES128 GCMAES192 GCMAES256 None (ESP)
//   -AuthenticationTransformConstants  MD596 SHA196 SHA256128 GCMAES128 GCMAES192 GCMAES256 None     (ESP)
//   -PfsGroup                          None PFS1 PFS2 PFS2048 ECP256 ECP384 PFSMM PFS24        (CHILD_SA rekey)
// The cmdlet has no SA lifetime parameters: Windows keeps its own lifetimes and rekeys by itself (the
// server never starts a rekey, `rekey_time = 0`).
// Mapping decisions: an AES-GCM IKE SA takes its PRF from IntegrityCheckMethod (Windows 11's default
// GCM proposal is `aes128gcm16-aes256gcm16-sha1-sha256-sha384-modp1024` in strongSwan's notation); an
// AES-GCM ESP SA names the same GCMAESxxx as cipher and as authentication transform (cipher None with
// GCMAESxxx would be GMAC, integrity without encryption). ESP groups become the PFS group; a proposal
// whose group is optional (`none`/`modpnone`) or absent gets PfsGroup None.

/// The six values `Set-VpnConnectionIPsecConfiguration` takes (cmdlet spelling) and what they amount to.
package struct WindowsIPsec: Sendable, Hashable, Codable {
    package var encryptionMethod: String
    package var integrityCheckMethod: String
    package var dhGroup: String
    package var cipherTransformConstants: String
    package var authenticationTransformConstants: String
    package var pfsGroup: String
    /// The strongSwan proposals the client sends with these values.
    package var ikeProposal: String
    package var espProposal: String

    package var offer: ProposalOffer { ProposalOffer(ike: [ikeProposal], esp: [espProposal]) }

    /// strongSwan keyword -> `-EncryptionMethod`.
    static let ikeEncryption: [String: String] = [
        "des": "DES", "3des": "DES3", "aes128": "AES128", "aes192": "AES192", "aes256": "AES256",
        "aes128gcm16": "GCMAES128", "aes256gcm16": "GCMAES256",
    ]
    /// strongSwan integrity keyword -> `-IntegrityCheckMethod` (the PRF uses the same hash).
    static let ikeIntegrity: [String: String] = ["md5": "MD5", "sha1": "SHA1", "sha256": "SHA256", "sha384": "SHA384"]
    /// strongSwan key exchange keyword -> `-DHGroup`.
    static let ikeGroup: [String: String] = [
        "modp768": "Group1", "modp1024": "Group2", "modp2048": "Group14", "ecp256": "ECP256", "ecp384": "ECP384",
        "modp2048s256": "Group24",
    ]
    /// strongSwan ESP cipher keyword -> `-CipherTransformConstants`.
    static let espCipher: [String: String] = [
        "des": "DES", "3des": "DES3", "aes128": "AES128", "aes192": "AES192", "aes256": "AES256",
        "aes128gcm16": "GCMAES128", "aes192gcm16": "GCMAES192", "aes256gcm16": "GCMAES256",
    ]
    /// strongSwan ESP integrity keyword -> `-AuthenticationTransformConstants`.
    static let espIntegrity: [String: String] = ["md5": "MD596", "sha1": "SHA196", "sha256": "SHA256128"]
    /// strongSwan key exchange keyword -> `-PfsGroup`.
    static let pfsGroups: [String: String] = [
        "modp768": "PFS1", "modp1024": "PFS2", "modp2048": "PFS2048", "ecp256": "ECP256", "ecp384": "ECP384",
        "modp2048s256": "PFS24",
    ]

    /// What Windows supports, for diagnostics.
    package static let supportedSummary =
        "IKE AES-128/192/256-CBC or AES-128/256-GCM with SHA-256/SHA-384 and DH group 14, 19 (ecp256) or 20 (ecp384); ESP AES-CBC with SHA-256 or AES-GCM"

    /// The first IKE combination and the first ESP combination of the node's proposals that Windows
    /// can express, in the node's preference order; nil when either list has none.
    package static func derive(from proposals: Proposals) -> WindowsIPsec? {
        var ike: (enc: String, integ: String, group: String, text: String)?
        search: for text in proposals.ike {
            guard let p = try? Proposal.parse(text, purpose: .ike) else { continue }
            for enc in p.encryption {
                guard let encName = ikeEncryption[enc.keyword] else { continue }
                // CBC: integrity and PRF are one hash; AEAD: the PRF alone.
                let hashes =
                    enc.isAEAD
                    ? p.effectivePRFs.map { String($0.keyword.dropFirst(3)) }
                    : p.integrity.map(\.keyword).filter { i in p.effectivePRFs.contains { $0.keyword == "prf" + i } }
                guard let hash = hashes.first(where: { ikeIntegrity[$0] != nil }) else { continue }
                guard let group = p.groups.first(where: { ikeGroup[$0.keyword] != nil }) else { continue }
                let proposal =
                    enc.isAEAD
                    ? "\(enc.keyword)-prf\(hash)-\(group.keyword)" : "\(enc.keyword)-\(hash)-\(group.keyword)"
                ike = (encName, ikeIntegrity[hash]!, ikeGroup[group.keyword]!, proposal)
                break search
            }
        }
        guard let ike else { return nil }
        for text in proposals.esp {
            guard let p = try? Proposal.parse(text, purpose: .esp) else { continue }
            // PFS: none when the proposal names no group or makes it optional; else a group Windows knows.
            let pfs: (name: String, keyword: String?)?
            if p.groups.isEmpty || p.groupOptional {
                pfs = ("None", nil)
            } else if let g = p.groups.first(where: { pfsGroups[$0.keyword] != nil }) {
                pfs = (pfsGroups[g.keyword]!, g.keyword)
            } else {
                pfs = nil
            }
            guard let pfs else { continue }
            for enc in p.encryption {
                guard let cipher = espCipher[enc.keyword] else { continue }
                var auth = cipher
                var proposal = enc.keyword
                if !enc.isAEAD {
                    guard let integ = p.integrity.first(where: { espIntegrity[$0.keyword] != nil }) else { continue }
                    auth = espIntegrity[integ.keyword]!
                    proposal += "-\(integ.keyword)"
                }
                if let group = pfs.keyword { proposal += "-\(group)" }
                return WindowsIPsec(
                    encryptionMethod: ike.enc, integrityCheckMethod: ike.integ, dhGroup: ike.group,
                    cipherTransformConstants: cipher, authenticationTransformConstants: auth, pfsGroup: pfs.name,
                    ikeProposal: ike.text, espProposal: proposal)
            }
        }
        return nil
    }
}

/// `Add-VpnConnection -AuthenticationMethod`: what Windows' client proves itself with (its raw value the word
/// the script passes).
package enum WindowsAuthenticationMethod: String, Sendable, Hashable {
    /// EAP-MSCHAPv2 with the user's password.
    case eap = "Eap"
    /// The user's certificate.
    case machineCertificate = "MachineCertificate"
}

/// How Windows' built-in client makes one connection (what the PowerShell script configures).
package struct WindowsConnection: Sendable, Hashable {
    package var authenticationMethod: WindowsAuthenticationMethod
    /// The IKE identity Windows sends (IDi): with EAP its own IP address (nil here), with a machine
    /// certificate the certificate's subject DN (strongSwan's Windows interop pages show both).
    package var localID: IKEIdentity?
    package var ipsec: WindowsIPsec

    package init(authenticationMethod: WindowsAuthenticationMethod, localID: IKEIdentity?, ipsec: WindowsIPsec) {
        self.authenticationMethod = authenticationMethod
        self.localID = localID
        self.ipsec = ipsec
    }
}
