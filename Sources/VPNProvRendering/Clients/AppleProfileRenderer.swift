import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `clients/<user>/<user>.mobileconfig`: one configuration profile per user with a
/// `com.apple.vpn.managed` payload per node and service, the CA as `com.apple.security.root` and the
/// user's PKCS#12 as `com.apple.security.pkcs12` (docs/formats.md, "Apple .mobileconfig"). Plist types follow Apple's
/// schema:
/// integer 0/1 flags, IPSec SharedSecret and certificates as data, IKEv2 SharedSecret as string.
package enum AppleProfileRenderer {
    package static func render(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials
    ) throws -> OutputFile? {
        let mine = connections.filter { $0.user == user && $0.devices.contains(.apple) }
        if mine.isEmpty { return nil }
        let namespace = NameBasedUUID.namespace(forDeployment: deployment.name)
        func uuid(_ name: String) -> String {
            NameBasedUUID(namespace: namespace, name: "apple/\(user)/\(name)").description
        }
        let identifier = "vpnprov.\(deployment.name).\(user)"
        let userMaterials = materials.users[user]

        var payloads: [AppleProfile.Payload] = []
        if mine.contains(where: { $0.credentials.contains(.caCertificate) }) {
            guard let der = PEMText.der(materials.caCertificatePEM) else {
                throw ClientRenderError("the CA certificate is not PEM")
            }
            payloads.append(
                AppleProfile.Payload(
                    PayloadCertificateFileName: "\(deployment.name)-ca.cer",
                    PayloadContent: Data(der),
                    PayloadDescription: "Certificate authority of the \(deployment.name) VPN servers",
                    PayloadDisplayName: materials.caCommonName,
                    PayloadIdentifier: "\(identifier).ca",
                    PayloadType: "com.apple.security.root",
                    PayloadUUID: uuid("ca"),
                    PayloadVersion: 1))
        }
        let certificateUUID = uuid("pkcs12")
        if mine.contains(where: { $0.credentials.contains(.clientCertificate) }) {
            guard let p12 = userMaterials?.p12, let password = userMaterials?.p12Password, !password.isEmpty else {
                throw ClientRenderError("user '\(user)': no PKCS#12 bundle or password for the client certificate")
            }
            payloads.append(
                AppleProfile.Payload(
                    Password: password,
                    PayloadCertificateFileName: "\(user).p12",
                    PayloadContent: Data(p12),
                    PayloadDescription: "Client certificate of \(user)",
                    PayloadDisplayName: "\(user) (\(deployment.name) VPN)",
                    PayloadIdentifier: "\(identifier).pkcs12",
                    PayloadType: "com.apple.security.pkcs12",
                    PayloadUUID: certificateUUID,
                    PayloadVersion: 1))
        }
        for connection in mine {
            let name = "\(deployment.name) \(connection.node) (\(connection.service.rawValue))"
            var payload = AppleProfile.Payload(
                PayloadDescription: "VPN \(connection.service.rawValue) to \(connection.remoteAddress)",
                PayloadDisplayName: name,
                PayloadIdentifier: "\(identifier).vpn.\(connection.node).\(connection.service.rawValue)",
                PayloadType: "com.apple.vpn.managed",
                PayloadUUID: uuid("vpn/\(connection.node)/\(connection.service.rawValue)"),
                PayloadVersion: 1,
                UserDefinedName: name)
            if connection.ikeVersion == 1 {
                payload.VPNType = "IPSec"
                payload.IPSec = try ipsecDictionary(connection, materials: materials, user: userMaterials)
                payload.IPv4 = AppleProfile.IPv4(OverridePrimary: 1)
            } else {
                payload.VPNType = "IKEv2"
                payload.IKEv2 = try ikev2Dictionary(
                    connection, materials: materials, user: userMaterials, certificateUUID: certificateUUID)
            }
            payloads.append(payload)
        }
        let profile = AppleProfile(
            PayloadContent: payloads,
            PayloadDescription: "VPN connections of the \(deployment.name) deployment for \(user)",
            PayloadDisplayName: "\(deployment.name) VPN (\(user))",
            PayloadIdentifier: identifier,
            PayloadOrganization: deployment.name,
            PayloadRemovalDisallowed: false,
            PayloadType: "Configuration",
            PayloadUUID: uuid("profile"),
            PayloadVersion: 1)
        var data = profile.xml()
        if let signer = materials.profileSigner { data = try sign(data, with: signer) }
        // Always private: passwords, PSKs or the p12 with its password are inside.
        return OutputFile(
            path: ClientRenderer.folder(user: user) + "/\(user).mobileconfig", contents: data, isPrivate: true
        )
    }

    /// The profile as CMS SignedData (DER) with the plist inside: the form a device shows as signed.
    static func sign(_ plist: [UInt8], with signer: ProfileSigner) throws -> [UInt8] {
        do {
            return try CMSSignedData.sign(
                content: plist, certificate: try X509Certificate(pem: signer.certificatePEM),
                key: try PrivateKey(pem: signer.keyPEM),
                chain: signer.chainPEM.isEmpty ? [] : try X509Certificate.all(pem: signer.chainPEM))
        } catch {
            throw ClientRenderError("cannot sign the Apple profile: \(error)")
        }
    }

    /// Largest signed profile read back from the tree (a profile with a p12 and many payloads is tens of KiB).
    package static let previousProfileLimit = 16 << 20

    /// The profile already in the tree instead of `file`, when the signer's signatures are randomized and
    /// the existing bytes are this signer's signature (same certificates) over the same plist: so an
    /// unchanged profile keeps its bytes across runs, and `check` sees no drift. Otherwise `file`.
    package static func keepingPreviousSignature(
        _ file: OutputFile, signer: ProfileSigner, previous: (String) -> [UInt8]?
    ) -> OutputFile {
        guard signer.randomizedSignatures, file.path.hasSuffix(".mobileconfig"), let old = previous(file.path),
            old != file.contents,
            let certificate = try? X509Certificate(pem: signer.certificatePEM),
            let chain = signer.chainPEM.isEmpty ? [] : try? X509Certificate.all(pem: signer.chainPEM),
            let plist = try? CMSSignedData.content(of: file.contents),
            CMSSignedData.contentSigned(old, by: certificate, chain: chain) == plist
        else { return file }
        var kept = file
        kept.contents = old
        return kept
    }

    static func securityAssociation(_ p: AppleSAParameters, lifetime: Int) -> AppleProfile.SecurityAssociation {
        AppleProfile.SecurityAssociation(
            DiffieHellmanGroup: p.diffieHellmanGroup, EncryptionAlgorithm: p.encryptionAlgorithm,
            IntegrityAlgorithm: p.integrityAlgorithm, LifeTimeInMinutes: lifetime)
    }

    static func ikev2Dictionary(
        _ c: ClientConnection, materials: Materials, user: UserMaterials?, certificateUUID: String
    ) throws -> AppleProfile.IKEv2 {
        guard let sa = c.apple else { throw ClientRenderError("\(c.name): no Apple SA parameters") }
        let usesEAP = c.localAuth.contains { $0.method == .eapMSCHAPv2 }
        var d = AppleProfile.IKEv2(
            AuthenticationMethod: "Certificate",
            ChildSecurityAssociationParameters: securityAssociation(sa.child, lifetime: sa.childLifetimeMinutes),
            DeadPeerDetectionRate: (c.appleSettings?.dpd ?? .medium).profileValue,
            DisableMOBIKE: 0,
            DisableRedirect: 0,
            EnableCertificateRevocationCheck: c.appleSettings?.crlCheck == true ? 1 : 0,
            EnablePFS: sa.enablePFS ? 1 : 0,
            ExtendedAuthEnabled: usesEAP ? 1 : 0,
            IKESecurityAssociationParameters: securityAssociation(sa.ike, lifetime: sa.ikeLifetimeMinutes),
            LocalIdentifier: c.localID?.value ?? "",
            RemoteAddress: c.remoteAddress,
            RemoteIdentifier: c.remoteID.value,
            UseConfigurationAttributeInternalIPSubnet: 0)
        // Quantum-safe (docs/quantum-safe.md): ML-KEM in the IKE SA's first additional exchange only. The node's
        // ESP proposals take no additional exchange, which a Child SA rekey proposing one would fail against.
        if let method = c.appleKeyExchange {
            d.IKESecurityAssociationParameters.PostQuantumKeyExchangeMethods = [method.transformID]
        }
        if let id = c.ppkID {
            guard let ppk = user?.ppk, !ppk.isEmpty else {
                throw ClientRenderError("user '\(c.user)': no post-quantum preshared key for \(c.service.rawValue)")
            }
            d.PPK = Array(ppk.utf8)
            d.PPKIdentifier = id
            d.PPKMandatory = c.ppkRequired ? 1 : 0
        }
        if let settings = c.appleSettings {
            if settings.includeAllNetworks {
                d.IncludeAllNetworks = 1
                d.ExcludeLocalNetworks = settings.excludeLocalNetworks ? 1 : 0
            }
            (d.OnDemandEnabled, d.OnDemandRules) = onDemand(settings)
            (d.DisconnectOnIdle, d.DisconnectOnIdleTimer) = idle(settings)
        }
        if usesEAP {
            guard let password = user?.password, !password.isEmpty else {
                throw ClientRenderError("user '\(c.user)': no password for \(c.service.rawValue)")
            }
            d.AuthName = c.localAuth.first { $0.method == .eapMSCHAPv2 }?.eapID ?? c.user
            d.AuthPassword = password
        }
        switch c.serverAuth {
        case .psk:
            guard let psk = materials.nodes[c.node]?.psk, !psk.isEmpty else {
                throw ClientRenderError("node '\(c.node)': no pre-shared key for \(c.service.rawValue)")
            }
            d.AuthenticationMethod = "SharedSecret"
            d.SharedSecret = psk
        // The server proves itself with a certificate (EAP and XAuth are the client's rounds, never the server's).
        case .pubkey, .eapMSCHAPv2, .xauth:
            // An ACME node's issuer is one of its CA's intermediates, which the CA changes at will: the device
            // checks the chain against its own roots and the name against RemoteIdentifier instead.
            if c.credentials.contains(.caCertificate) { d.ServerCertificateIssuerCommonName = materials.caCommonName }
            d.CertificateType = c.appleCertificateType
            if c.credentials.contains(.clientCertificate) { d.PayloadCertificateUUID = certificateUUID }
        }
        return d
    }

    static func ipsecDictionary(_ c: ClientConnection, materials: Materials, user: UserMaterials?) throws
        -> AppleProfile.IPSec
    {
        // Hybrid (ipsec-xauth-hybrid): Apple's schema has no method of its own for it; the IPSec
        // LocalIdentifier (group name) ending in "hybrid" selects it, with AuthenticationMethod
        // SharedSecret. Apple's IKEv1 client (vpnd) still refuses a SharedSecret/hybrid
        // configuration without a SharedSecret, which hybrid authentication never uses: it gets
        // the group name, nothing secret. The server is checked against the CA payload.
        let hybrid = c.serverAuth == .pubkey
        var psk: String? = c.localID?.value
        if !hybrid {
            guard let secret = materials.nodes[c.node]?.psk, !secret.isEmpty else {
                throw ClientRenderError("node '\(c.node)': no pre-shared key for \(c.service.rawValue)")
            }
            psk = secret
        }
        guard let password = user?.password, !password.isEmpty else {
            throw ClientRenderError("user '\(c.user)': no password for \(c.service.rawValue)")
        }
        var d = AppleProfile.IPSec(
            AuthenticationMethod: "SharedSecret",
            RemoteAddress: c.remoteAddress,
            SharedSecret: psk.map { Data($0.utf8) },
            XAuthEnabled: 1,
            XAuthName: c.localAuth.first { $0.method == .xauth }?.xauthID ?? c.user,
            XAuthPassword: password)
        if case .keyID(let group)? = c.localID {
            d.LocalIdentifier = group
            d.LocalIdentifierType = "KeyID"
        }
        if let settings = c.appleSettings {
            (d.OnDemandEnabled, d.OnDemandRules) = onDemand(settings)
            (d.DisconnectOnIdle, d.DisconnectOnIdleTimer) = idle(settings)
        }
        return d
    }

    /// OnDemandEnabled and OnDemandRules, in the order the device evaluates them (first match wins):
    /// on a trusted Wi-Fi network disconnect (and stay down), everywhere else connect.
    static func onDemand(_ s: AppleDeviceSettings) -> (Int?, [AppleProfile.OnDemandRule]?) {
        guard s.onDemand else { return (nil, nil) }
        var rules: [AppleProfile.OnDemandRule] = []
        if !s.trustedSSIDs.isEmpty {
            rules.append(
                AppleProfile.OnDemandRule(Action: "Disconnect", InterfaceTypeMatch: "WiFi", SSIDMatch: s.trustedSSIDs))
        }
        rules.append(AppleProfile.OnDemandRule(Action: "Connect"))
        return (1, rules)
    }

    /// DisconnectOnIdle and its timer (seconds), left out when off.
    static func idle(_ s: AppleDeviceSettings) -> (Int?, Int?) {
        s.disconnectOnIdle > 0 ? (1, s.disconnectOnIdle) : (nil, nil)
    }
}

// MARK: - ClientKindRenderer

extension AppleProfileRenderer: ClientKindRenderer {
    package static func files(_ input: ClientRenderInput) throws -> [OutputFile] {
        try render(
            user: input.user, connections: input.connections, deployment: input.deployment,
            materials: input.materials
        ).map { [$0] } ?? []
    }

    /// The README's Apple part: installing the profile on an iPhone, iPad or Mac.
    package static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String] {
        let user = input.user
        let deployment = input.deployment
        guard names.contains("\(user).mobileconfig") else { return [] }
        var lines: [String] = []
        lines += [
            "iPhone, iPad: \(user).mobileconfig",
            "  1. Open the file (AirDrop, Mail attachment or the Files app); the phone says",
            "     \"Profile Downloaded\".",
            "  2. Settings > General > VPN & Device Management > the profile > Install.",
            "  3. Type the device's own passcode when asked. Nothing else: the VPN passwords and the",
            "     certificate's password are inside the profile.",
            "Mac: \(user).mobileconfig",
            "  Double-click the file, then System Settings > General > Device Management (Profiles",
            "  on older macOS) > the profile > Install, and type the Mac's login password.",
            "  The profile holds one VPN per server and service, the certificate authority and, for",
            "  certificate logins, the user's certificate.",
        ]
        if deployment.signsProfiles {
            lines += [
                "  The profile is signed: the install screen names the signer, and says \"Verified\" when",
                "  the device trusts the signer's root certificate.",
            ]
        } else {
            lines += [
                "  The install screen says \"Not Verified\": the profile carries no signature, so the device",
                "  cannot tell who made it. That is expected for these files; install it only if it reached",
                "  you from your VPN operator over a channel you trust.",
            ]
        }
        lines.append("")
        return lines
    }
}
