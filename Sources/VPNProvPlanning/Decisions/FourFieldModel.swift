import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

// The seed iOS app's own server model: per server only `protocol` (IPSec or IKEv2), `localID`,
// `remoteID` and `pskEnabled`. Its connection code always turns extended authentication on (EAP for
// IKEv2, XAuth for IPSec), takes the PSK and the password from the user's credentials, and derives
// everything else from `pskEnabled`; it sets no IKE/ESP parameters, so the device offers its
// defaults. docs/seed-app.md has the whole rule and its sources.

/// Which catalogue entries an app with the seed's four-field model can use as written.
package enum FourFieldModel {
    /// What the four-field code configures for (protocol, pskEnabled), always with extended auth:
    /// IKEv2 + PSK: server PSK, client EAP (ikev2-psk-eap); IKEv2 without: server certificate,
    /// client EAP (ikev2-eap); IPSec + PSK: PSK + XAuth (ipsec-xauth-psk); IPSec without: server
    /// certificate + XAuth, hybrid (ipsec-xauth-hybrid). ikev2-psk and ikev2-cert have no such form.
    package static func service(ikeVersion: Int, pskEnabled: Bool) -> Service {
        switch (ikeVersion, pskEnabled) {
        case (2, true): return .ikev2PSKEAP
        case (2, false): return .ikev2EAP
        case (_, true): return .ipsecXauthPSK
        default: return .ipsecXauthHybrid
        }
    }

    /// The proposals an NEVPNProtocolIKEv2 configured without SA parameters offers: Apple documents
    /// NEVPNIKEv2SecurityAssociationParameters defaults of AES-256, SHA2-256 (the PRF follows the
    /// integrity algorithm) and DH group 14 since iOS 14 / macOS 11, for the IKE and the Child SA;
    /// the Child SA's group only counts with enablePFS, which defaults to off.
    static let ikev2Offer = ProposalOffer(ike: ["aes256-sha256-modp2048"], esp: ["aes256-sha256"])

    /// What a device must hold before it can use the service on the node, beyond what an app configures
    /// (`needsOnDevice` of the catalogue): the deployment's CA, where the node's certificate comes from it
    /// and the device checks that certificate; the user's own certificate for `ikev2-cert`.
    package static func needsOnDevice(_ service: Service, on node: Node) -> [String] {
        var needs: [String] = []
        if service.serverUsesCert && node.certificate == .ca { needs.append("ca-certificate") }
        if service.needsClientCert { needs.append("client-certificate") }
        return needs
    }

    /// Whether the seed's code, given this node and service's four fields, configures exactly the
    /// connection the node serves: the service is the one the code derives from protocol and
    /// pskEnabled, and the node accepts what the device offers (IKEv1 nodes always accept the iPhone
    /// set, which the server plan appends).
    package static func usable(_ service: Service, on node: Node) -> Bool {
        guard self.service(ikeVersion: service.ikeVersion, pskEnabled: service.needsPSK) == service else {
            return false
        }
        // The code installs nothing: a server certificate must chain to a root the device already holds,
        // which only an ACME node's does (docs/acme.md).
        if !needsOnDevice(service, on: node).isEmpty { return false }
        if service.ikeVersion == 1 { return true }
        // The code sets no post-quantum key exchange and no PPK: a node must admit a classical device.
        if let settings = node.quantumSafe, !settings.admits([]) { return false }
        return Proposal.intersects(ikev2Offer.ike, node.proposals.ike, purpose: .ike, withGroups: true)
            && Proposal.intersects(ikev2Offer.esp, node.proposals.esp, purpose: .esp, withGroups: false)
    }
}
