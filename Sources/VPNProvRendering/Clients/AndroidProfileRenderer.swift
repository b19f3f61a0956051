import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `clients/<user>/<node>-<service>.sswan`: strongSwan Android app profiles (docs/formats.md, "strongSwan Android
/// .sswan") for the
/// services the app supports (ikev2-eap, ikev2-cert). The server CA travels in `remote.cert`; the
/// proposals are the node's first IKE and ESP proposal (the app accepts any strongSwan proposal).
package enum AndroidProfileRenderer {
    struct Profile: Encodable {
        struct Remote: Encodable {
            var addr: String
            var id: String
            var cert: String?
        }
        struct Local: Encodable {
            var id: String?
            var eapID: String?
            var sharedSecret: String?
            var p12: String?
            enum CodingKeys: String, CodingKey {
                case id
                case eapID = "eap_id"
                case sharedSecret = "shared_secret"
                case p12
            }
        }
        var uuid: String
        var name: String
        var type: String
        var remote: Remote
        var local: Local
        /// `split-tunneling` (VpnProfileImportActivity.parseProfile reads `block-ipv4`/`block-ipv6`
        /// with optBoolean into VpnProfile.SPLIT_TUNNELING_BLOCK_IPV*).
        struct SplitTunneling: Encodable {
            var blockIPv6: Bool
            enum CodingKeys: String, CodingKey { case blockIPv6 = "block-ipv6" }
        }
        var ikeProposal: String?
        var espProposal: String?
        var splitTunneling: SplitTunneling?
        enum CodingKeys: String, CodingKey {
            case uuid, name, type, remote, local
            case ikeProposal = "ike-proposal"
            case espProposal = "esp-proposal"
            case splitTunneling = "split-tunneling"
        }
    }

    /// The user's `.sswan` files, one per connection the app supports. The CA and the user's p12
    /// are encoded once for all of them.
    package static func render(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials
    ) throws -> [OutputFile] {
        let mine = connections.filter {
            $0.user == user && $0.devices.contains(.android) && Device.android.speaks($0.service)
        }
        if mine.isEmpty { return [] }
        var caBase64: String?
        if mine.contains(where: { $0.credentials.contains(.caCertificate) }) {
            guard let caDER = PEMText.der(materials.caCertificatePEM) else {
                throw ClientRenderError("the CA certificate is not PEM")
            }
            caBase64 = Data(caDER).base64EncodedString()
        }
        let shared = Shared(
            caBase64: caBase64,
            // The empty-password container: the app hands it to Android's certificate installer
            // (KeyChain.createInstallIntent with EXTRA_PKCS12), which tries the empty password before
            // it shows a password prompt, so the import asks for nothing.
            p12Base64: materials.users[user]?.openP12.map { Data($0).base64EncodedString() },
            namespace: NameBasedUUID.namespace(forDeployment: deployment.name))
        return try mine.compactMap {
            try render(connection: $0, deployment: deployment, materials: materials, shared: shared)
        }
    }

    /// What every profile of one user shares.
    struct Shared {
        /// nil when no profile of the user needs the deployment CA (ACME nodes only).
        var caBase64: String?
        var p12Base64: String?
        var namespace: NameBasedUUID
    }

    static func render(
        connection c: ClientConnection, deployment: DeploymentFacts, materials: Materials, shared: Shared
    ) throws -> OutputFile? {
        let user = materials.users[c.user]
        var local = Profile.Local(id: c.localID?.value)
        switch c.service {
        case .ikev2EAP:
            guard let password = user?.password, !password.isEmpty else {
                throw ClientRenderError("user '\(c.user)': no password for \(c.service.rawValue)")
            }
            local.eapID = c.localAuth.first { $0.method == .eapMSCHAPv2 }?.eapID ?? c.user
            local.sharedSecret = password
        case .ikev2Cert:
            guard let p12 = shared.p12Base64 else { throw ClientRenderError("user '\(c.user)': no PKCS#12 bundle") }
            local.p12 = p12
        // Not among `AndroidClientKind.services`: the plan gives Android no such connection.
        case .ikev2PSK, .ikev2PSKEAP, .ipsecXauthPSK, .ipsecXauthHybrid:
            return nil
        }
        let offer = c.offer(for: .android)
        let profile = Profile(
            uuid: NameBasedUUID(namespace: shared.namespace, name: "android/\(c.user)/\(c.node)/\(c.service.rawValue)")
                .description
                .lowercased(),
            name: "\(deployment.name) \(c.node) (\(c.service.rawValue))",
            type: c.service.rawValue,
            // Without `remote.cert` the app verifies the server against the device's CA store (ACME nodes).
            remote: Profile.Remote(
                addr: c.remoteAddress, id: c.remoteID.value,
                cert: c.credentials.contains(.caCertificate) ? shared.caBase64 : nil),
            local: local,
            ikeProposal: offer?.ike.first,
            espProposal: offer?.esp.first,
            // A node without an IPv6 pool: the app would let IPv6 bypass the tunnel (CharonVpnService
            // calls allowFamily(AF_INET6) when no IPv6 address or route came from the server);
            // with block-ipv6 it leaves the family out and Android drops IPv6 while connected.
            splitTunneling: c.wantsIPv6 ? nil : Profile.SplitTunneling(blockIPv6: true))
        return OutputFile(
            path: ClientRenderer.folder(user: c.user) + "/\(c.name).sswan", contents: profile.json(), isPrivate: true)
    }
}

extension AndroidProfileRenderer.Profile {
    /// The bytes `JSONEncoder` writes for this value (sorted keys, pretty-printed, absent optionals
    /// left out) and a newline, written directly: keys in UTF-8 byte order. `DirectProfileWriterTests`
    /// proves them against `JSONEncoder` and `JSONSerialization` (the `Encodable` conformance is
    /// what they compare with).
    func json() -> [UInt8] {
        var s = JSONStream(capacity: 1024 + (remote.cert?.utf8.count ?? 0) + (local.p12?.utf8.count ?? 0))
        func member(_ key: String, _ value: String?) {
            if let value {
                s.key(key)
                s.string(value)
            }
        }
        s.beginObject()
        member("esp-proposal", espProposal)
        member("ike-proposal", ikeProposal)
        s.key("local")
        s.beginObject()
        member("eap_id", local.eapID)
        member("id", local.id)
        member("p12", local.p12)
        member("shared_secret", local.sharedSecret)
        s.endObject()
        member("name", name)
        s.key("remote")
        s.beginObject()
        member("addr", remote.addr)
        member("cert", remote.cert)
        member("id", remote.id)
        s.endObject()
        if let split = splitTunneling {
            s.key("split-tunneling")
            s.beginObject()
            s.key("block-ipv6")
            s.bool(split.blockIPv6)
            s.endObject()
        }
        member("type", type)
        member("uuid", uuid)
        s.endObject()
        var bytes = s.bytes
        bytes.append(0x0A)
        return bytes
    }
}

// MARK: - ClientKindRenderer

extension AndroidProfileRenderer: ClientKindRenderer {
    package static func files(_ input: ClientRenderInput) throws -> [OutputFile] {
        try render(
            user: input.user, connections: input.connections, deployment: input.deployment,
            materials: input.materials)
    }

    /// The README's Android part: the app, then importing each `.sswan` file.
    package static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String] {
        let sswan = names.filter { $0.hasSuffix(".sswan") }.sorted()
        if sswan.isEmpty { return [] }
        var lines: [String] = []
        lines += [
            "Android: the strongSwan VPN Client app (Google Play or F-Droid), then for each file:"
        ]
        for name in sswan { lines.append("  \(name)") }
        lines += [
            "  1. Open the file with the app (or in the app: menu > Import VPN profile) and tap Import."
        ]
        if sswan.contains(where: { $0.hasSuffix("-ikev2-cert.sswan") }) {
            lines += [
                "  2. Certificate profiles (…-ikev2-cert.sswan) show \"Install certificate\": tap it and",
                "     confirm the name Android suggests. No password is asked: the certificate inside",
                "     these files has none (Android may ask you to set a screen lock first).",
            ]
        }
        lines += [
            "  Nothing else to type: the VPN password is inside the profile.",
            "",
        ]
        return lines
    }
}
