import Foundation
import VPNProvTestHarness

/// Turns an Apple .mobileconfig VPN payload into the strongSwan client an iPhone/Mac amounts to
/// (Apple's schema, apple/device-management mdm/profiles/com.apple.vpn.managed.yaml): same identities, authentication,
/// credentials, and the single IKE/ESP proposal Apple
/// derives from the SA parameter dictionaries (schema defaults for absent keys). Every key must be
/// understood: an unknown one throws.
///
/// Supported: VPNType IKEv2 with Certificate+EAP-MSCHAPv2, Certificate (client cert from a pkcs12 payload),
/// SharedSecret, SharedSecret+EAP-MSCHAPv2; VPNType IPSec (IKEv1) with SharedSecret, optional group name
/// (aggressive mode, ID_KEY_ID) and XAuth, and hybrid (group name ending in "hybrid": server certificate + XAuth).
/// Quantum-safe (IKEv2): `PPK`, `PPKIdentifier`, `PPKMandatory` (Apple's schema, iOS 18 / macOS 15: the PPK's bytes,
/// its identifier, and whether the device refuses a server that does not take it, default 1) become strongSwan's
/// `ppk_id`, `ppk_required` and a `ppk` secret; `PostQuantumKeyExchangeMethods` of the IKE SA parameters (Apple's
/// documentation of `VPN.IKEv2.IKESecurityAssociationParameters`, iOS / macOS 26: one method per additional
/// exchange, ADDKE1 first; 36 ML-KEM-768, 37 ML-KEM-1024, 0 none) become `-ke<n>_<method>` of its proposal.
/// Not supported (throws): EAP-TLS, EAP-only (None), IKEv1 certificate, password prompts without a
/// `DeviceInputs` password, `PostQuantumKeyExchangeMethods` in the Child SA parameters and
/// `AllowPostQuantumKeyExchangeFallback`.
enum AppleProfileTranslator {
    static let connectionName = "home"
    static let childName = "home"

    /// All VPN payloads of a whole profile (plist bytes).
    static func translate(profileData: Data, inputs: DeviceInputs = DeviceInputs()) throws -> [ClientSetup] {
        let plist = try PropertyListSerialization.propertyList(from: profileData, format: nil)
        return try translate(profile: plist, inputs: inputs)
    }

    /// All VPN payloads of a whole profile (decoded plist).
    static func translate(profile: Any, inputs: DeviceInputs = DeviceInputs()) throws -> [ClientSetup] {
        var top = try StrictDictionary(profile, context: "profile")
        guard try top.requiredString("PayloadType") == "Configuration" else {
            throw TranslationError("profile.PayloadType is not Configuration")
        }
        guard let content = top.any("PayloadContent") as? [Any] else {
            throw TranslationError("profile.PayloadContent missing or not an array")
        }
        top.accept([
            "PayloadVersion", "PayloadIdentifier", "PayloadUUID", "PayloadDisplayName", "PayloadDescription",
            "PayloadOrganization", "PayloadRemovalDisallowed", "PayloadScope", "ConsentText", "TargetDeviceType",
            "RemovalDate", "DurationUntilRemoval", "PayloadExpirationDate",
        ])
        try top.finish()
        var vpns: [Any] = []
        var others: [[String: Any]] = []
        for payload in content {
            guard let dict = payload as? [String: Any] else { throw TranslationError("payload is not a dictionary") }
            if dict["PayloadType"] as? String == "com.apple.vpn.managed" {
                vpns.append(dict)
            } else {
                others.append(dict)
            }
        }
        guard !vpns.isEmpty else { throw TranslationError("profile has no com.apple.vpn.managed payload") }
        return try vpns.map { try translate(vpnPayload: $0, otherPayloads: others, inputs: inputs) }
    }

    /// One VPN payload; `otherPayloads` supplies the pkcs12 (by PayloadCertificateUUID) and root CA payloads.
    static func translate(vpnPayload: Any, otherPayloads: [[String: Any]] = [], inputs: DeviceInputs = DeviceInputs())
        throws -> ClientSetup
    {
        let certs = try CertificatePayloads(otherPayloads)
        var vpn = try StrictDictionary(vpnPayload, context: "VPN payload")
        guard try vpn.requiredString("PayloadType") == "com.apple.vpn.managed" else {
            throw TranslationError("not a com.apple.vpn.managed payload")
        }
        vpn.accept([
            "PayloadVersion", "PayloadIdentifier", "PayloadUUID", "PayloadDisplayName", "PayloadDescription",
            "PayloadOrganization", "UserDefinedName",
        ])
        if let sub = try vpn.string("VPNSubType"), !sub.isEmpty {
            throw TranslationError("VPNSubType \(sub) is for VPN plug-ins")
        }
        // Device-side routing/DNS/proxy settings: no effect on the handshake. Shapes are checked lightly.
        if var ipv4 = try vpn.dictionary("IPv4") {
            _ = try ipv4.integer("OverridePrimary")
            try ipv4.finish()
        }
        vpn.accept(["DNS", "Proxies"])
        let type = try vpn.requiredString("VPNType")
        let setup: ClientSetup
        switch type {
        case "IKEv2":
            if vpn.has("IPSec") { throw TranslationError("IKEv2 payload also has an IPSec dictionary") }
            setup = try ikev2(try vpn.dictionary("IKEv2")!, certs: certs, inputs: inputs)
        case "IPSec":
            if vpn.has("IKEv2") { throw TranslationError("IPSec payload also has an IKEv2 dictionary") }
            guard let dict = try vpn.dictionary("IPSec") else { throw TranslationError("IPSec dictionary missing") }
            setup = try ipsec(dict, certs: certs, inputs: inputs)
        default:
            throw TranslationError("VPNType \(type) is not translated")
        }
        try vpn.finish()
        return setup
    }

    // MARK: IKEv2

    /// Keys of the IKEv2 dictionary that only steer the device and change nothing a Linux host can show
    /// (cellular/APNs/companion exclusions, MTU, keepalive offload, fallback, internal subnet attributes,
    /// redirect, the on-demand toggle lock). Every other device-side key is translated below.
    static let ikev2DeviceSideKeys = [
        "OnDemandUserOverrideDisabled", "ExcludeCellularServices", "ExcludeAPNs", "ExcludeDeviceCommunication",
        "MTU", "NATKeepAliveOffloadEnable", "NATKeepAliveInterval", "EnableFallback",
        "UseConfigurationAttributeInternalIPSubnet", "DisableRedirect",
    ]

    /// IncludeAllNetworks / ExcludeLocalNetworks / EnforceRoutes as the routing the device applies:
    /// with IncludeAllNetworks every packet goes into the tunnel, so IPv6 the tunnel cannot carry is dropped
    /// (except towards local networks with ExcludeLocalNetworks; absent, macOS's default 0 is assumed).
    static func devicePolicy(_ d: inout StrictDictionary) throws -> DevicePolicy {
        let all = try d.integer("IncludeAllNetworks") ?? 0
        let local = try d.integer("ExcludeLocalNetworks")
        guard [0, 1].contains(all), local == nil || [0, 1].contains(local!) else {
            throw TranslationError("IncludeAllNetworks/ExcludeLocalNetworks must be 0 or 1")
        }
        if try d.integer("EnforceRoutes") == 1 && all == 0 { throw TranslationError("EnforceRoutes not translated") }
        var policy = DevicePolicy()
        if all == 1 { policy.blockIPv6 = local == 1 ? .exceptLocalNetworks : .all }
        return policy
    }

    /// OnDemandEnabled and OnDemandRules, checked against Apple's schema (Action values, match keys).
    static func onDemand(_ d: inout StrictDictionary, context: String) throws -> OnDemand? {
        let enabled = try d.integer("OnDemandEnabled") ?? 0
        guard [0, 1].contains(enabled) else { throw TranslationError("\(context).OnDemandEnabled must be 0 or 1") }
        guard let raw = d.any("OnDemandRules") else {
            if enabled == 1 { throw TranslationError("\(context): OnDemandEnabled without OnDemandRules") }
            return nil
        }
        guard let list = raw as? [Any] else { throw TranslationError("\(context).OnDemandRules is not an array") }
        var rules: [OnDemand.Rule] = []
        for (i, item) in list.enumerated() {
            var r = try StrictDictionary(item, context: "\(context).OnDemandRules[\(i)]")
            let action = try r.requiredString("Action")
            guard ["Allow", "Connect", "Disconnect", "EvaluateConnection", "Ignore"].contains(action) else {
                throw TranslationError("OnDemandRules Action \(action) unknown")
            }
            let interface = try r.string("InterfaceTypeMatch")
            if let interface, !["Ethernet", "WiFi", "Cellular"].contains(interface) {
                throw TranslationError("OnDemandRules InterfaceTypeMatch \(interface) unknown")
            }
            var ssids: [String]?
            if let value = r.any("SSIDMatch") {
                guard let strings = value as? [String] else {
                    throw TranslationError("SSIDMatch is not a string array")
                }
                ssids = strings
            }
            for key in ["DNSDomainMatch", "DNSServerAddressMatch", "URLStringProbe", "ActionParameters"]
            where r.has(key) {
                throw TranslationError("OnDemandRules \(key) not translated")
            }
            try r.finish()
            rules.append(OnDemand.Rule(action: action, interface: interface, ssids: ssids))
        }
        return enabled == 1 ? OnDemand(rules: rules) : nil
    }

    /// DisconnectOnIdle + DisconnectOnIdleTimer: strongSwan's CHILD_SA `inactivity` closes an idle tunnel.
    static func idleTimeout(_ d: inout StrictDictionary) throws -> Int? {
        let on = try d.integer("DisconnectOnIdle") ?? 0
        let timer = try d.integer("DisconnectOnIdleTimer")
        guard [0, 1].contains(on) else { throw TranslationError("DisconnectOnIdle must be 0 or 1") }
        guard on == 1 else { return nil }
        guard let timer, timer > 0 else {
            throw TranslationError("DisconnectOnIdle without a positive DisconnectOnIdleTimer")
        }
        return timer
    }

    private static func ikev2(_ d: StrictDictionary, certs: CertificatePayloads, inputs: DeviceInputs) throws
        -> ClientSetup
    {
        var d = d
        let profileAddress = try d.requiredString("RemoteAddress")
        let remoteAddress = inputs.remoteAddress ?? profileAddress
        let remoteID = try d.requiredString("RemoteIdentifier")
        let localID = try d.string("LocalIdentifier").flatMap { $0.isEmpty ? nil : $0 }
        let method = try d.string("AuthenticationMethod") ?? "None"
        let eap = (try d.integer("ExtendedAuthEnabled") ?? 0) == 1
        let certUUID = try d.string("PayloadCertificateUUID")
        if let common = try d.string("ServerCertificateCommonName"), common != remoteID {
            throw TranslationError("ServerCertificateCommonName differs from RemoteIdentifier: not translated")
        }
        _ = try d.string("ServerCertificateIssuerCommonName")  // makes the device send CERTREQ; strongSwan does anyway
        if let t = try d.string("CertificateType"),
            !["RSA", "ECDSA256", "ECDSA384", "ECDSA521", "RSA-PSS"].contains(t)
        {
            throw TranslationError("CertificateType \(t) unknown")
        }
        let ppk = try d.data("PPK")
        let ppkID = try d.string("PPKIdentifier")
        let ppkMandatory = try d.integer("PPKMandatory") ?? 1
        // "If this key is present PPKIdentifier must also be present" (and the other way round).
        if (ppk == nil) != (ppkID == nil) { throw TranslationError("IKEv2.PPK and IKEv2.PPKIdentifier go together") }
        guard [0, 1].contains(ppkMandatory) else { throw TranslationError("IKEv2.PPKMandatory \(ppkMandatory)") }
        for key in [
            "AllowPostQuantumKeyExchangeFallback", "TLSMinimumVersion", "TLSMaximumVersion",
            "ProviderType", "ProviderBundleIdentifier", "ProviderDesignatedRequirement", "Password",
        ]
        where d.has(key) {
            throw TranslationError("IKEv2.\(key) is not translated")
        }
        let dpd = try d.string("DeadPeerDetectionRate") ?? "Medium"
        let dpdDelay: String
        switch dpd {
        case "None": dpdDelay = "0s"
        case "Low": dpdDelay = "1800s"
        case "Medium": dpdDelay = "600s"
        case "High": dpdDelay = "60s"
        default: throw TranslationError("DeadPeerDetectionRate \(dpd) unknown")
        }
        let disableMOBIKE = (try d.integer("DisableMOBIKE") ?? 0) == 1
        let pfs = (try d.integer("EnablePFS") ?? 0) == 1
        // Apple: a best-effort check ("server response timeouts won't cause it to fail"): strongSwan's
        // `revocation = relaxed` fails only on a definite "revoked", with CRLs the device has fetched.
        let revocationCheck = (try d.integer("EnableCertificateRevocationCheck") ?? 0) == 1
        let device = try devicePolicy(&d)
        let onDemand = try onDemand(&d, context: "IKEv2")
        let idle = try idleTimeout(&d)
        let ikeSA = try SAParameters(try d.dictionary("IKESecurityAssociationParameters"))
        // "Child defaults to IKE values if omitted" (Apple's schema, com.apple.vpn.managed.yaml).
        let childSA =
            d.has("ChildSecurityAssociationParameters")
            ? try SAParameters(try d.dictionary("ChildSecurityAssociationParameters")) : ikeSA
        if d.has("ChildSecurityAssociationParameters") && !childSA.additionalKeyExchanges.isEmpty {
            throw TranslationError("ChildSecurityAssociationParameters.PostQuantumKeyExchangeMethods not translated")
        }
        let authName = try d.string("AuthName")
        let authPassword = try d.string("AuthPassword")
        let sharedSecret = try d.string("SharedSecret")
        d.accept(ikev2DeviceSideKeys)
        try d.finish()

        // The device trusts its own store and the profile's root payloads alike.
        var files: [String: Data] = certs.roots.merging(inputs.systemRootFiles) { profile, _ in profile }
        // A device that checks revocation has the CRLs it could fetch; one that does not never consults them.
        if revocationCheck {
            for (i, crl) in inputs.fetchableCRLs.enumerated() { files["x509crl/fetched-\(i + 1).crl"] = crl }
        }
        var w = SwanctlWriter()
        var secrets: [(String, [(String, String)])] = []
        try w.section("connections") { w in
            try w.section(connectionName) { w in
                w.raw("version", "2")
                try w.set("remote_addrs", remoteAddress)
                w.raw("vips", "0.0.0.0, ::")
                w.raw("proposals", ikeSA.ikeProposal)
                w.raw("rekey_time", "\(ikeSA.lifetimeMinutes)m")
                if let ppkID {
                    try w.set("ppk_id", ppkID)
                    w.raw("ppk_required", ppkMandatory == 1 ? "yes" : "no")
                }
                w.raw("dpd_delay", dpdDelay)
                if disableMOBIKE { w.raw("mobike", "no") }
                try w.section("local") { w in
                    switch (method, eap, certUUID) {
                    case ("Certificate", false, let uuid?):
                        w.raw("auth", "pubkey")
                        let p12 = try certs.pkcs12(uuid: uuid)
                        files["pkcs12/client.p12"] = p12.data
                        guard let password = p12.password ?? inputs.p12Password else {
                            throw TranslationError("pkcs12 payload without Password and no DeviceInputs.p12Password")
                        }
                        secrets.append(("pkcs12-client", [("file", "client.p12"), ("secret", password)]))
                    case ("Certificate", true, nil), ("SharedSecret", true, nil):
                        guard let user = authName else {
                            throw TranslationError("IKEv2.AuthName missing (device would prompt)")
                        }
                        guard let password = authPassword ?? inputs.password else {
                            throw TranslationError("IKEv2.AuthPassword missing and no DeviceInputs.password")
                        }
                        w.raw("auth", "eap-mschapv2")
                        try w.set("eap_id", user)
                        secrets.append(("eap-user", [("id", user), ("secret", password)]))
                    case ("SharedSecret", false, nil):
                        w.raw("auth", "psk")
                    case ("Certificate", true, _?):
                        throw TranslationError(
                            "EAP-TLS (Certificate + ExtendedAuthEnabled + certificate) not translated")
                    case ("None", _, _):
                        throw TranslationError("AuthenticationMethod None (EAP-only) not translated")
                    default:
                        throw TranslationError(
                            "AuthenticationMethod \(method) with ExtendedAuthEnabled \(eap) and"
                                + (certUUID == nil ? "out" : "") + " a certificate not translated")
                    }
                    if let localID { try w.set("id", localID) }
                }
                try w.section("remote") { w in
                    w.raw("auth", method == "SharedSecret" ? "psk" : "pubkey")
                    try w.set("id", remoteID)
                    if revocationCheck { w.raw("revocation", "relaxed") }
                }
                w.section("children") { w in
                    w.section(childName) { w in
                        w.raw("remote_ts", "0.0.0.0/0, ::/0")
                        w.raw("esp_proposals", childSA.espProposal(pfs: pfs))
                        w.raw("rekey_time", "\(childSA.lifetimeMinutes)m")
                        if let idle { w.raw("inactivity", "\(idle)s") }
                    }
                }
            }
        }
        if method == "SharedSecret" {
            guard let psk = sharedSecret else { throw TranslationError("IKEv2.SharedSecret missing") }
            var ids = [("id-1", remoteID)]
            if let localID { ids.append(("id-2", localID)) }
            secrets.append(("ike-psk", ids + [("secret", psk)]))
        }
        if let ppk, let ppkID {
            secrets.append(("ppk-1", [("id", ppkID), ("secretencoded", "0s" + ppk.base64EncodedString())]))
        }
        try writeSecrets(secrets, into: &w)
        return ClientSetup(
            connectionName: connectionName, childName: childName, swanctlConf: w.text, files: files, device: device,
            onDemand: onDemand, revocationCheck: revocationCheck)
    }

    // MARK: IPSec (IKEv1)

    /// IKE proposals assumed for an iPhone "IPSec" (Cisco) client. not documented by Apple (docs/decisions.md,
    /// "Clients"): the
    /// combinations known-good Apple-facing servers accept, newest first, several per IKEv1 rules.
    static let ikev1Proposals = [
        "aes256-sha256-modp2048", "aes128-sha256-modp2048", "aes256-sha1-modp2048", "aes128-sha1-modp2048",
        "aes256-sha1-modp1024", "aes128-sha1-modp1024", "3des-sha1-modp1024",
    ]
    static let ikev1ESPProposals = ["aes256-sha256", "aes128-sha256", "aes256-sha1", "aes128-sha1", "3des-sha1"]

    private static func ipsec(_ d: StrictDictionary, certs: CertificatePayloads, inputs: DeviceInputs) throws
        -> ClientSetup
    {
        var d = d
        let profileAddress = try d.requiredString("RemoteAddress")
        let remoteAddress = inputs.remoteAddress ?? profileAddress
        let method = try d.string("AuthenticationMethod") ?? "SharedSecret"
        guard method == "SharedSecret" else {
            throw TranslationError("IPSec AuthenticationMethod \(method) not translated")
        }
        let group = try d.string("LocalIdentifier").flatMap { $0.isEmpty ? nil : $0 }
        // Apple's schema: a group name ending in "hybrid" selects hybrid authentication (server certificate,
        // XAuth, no group PSK). Apple's vpnd then verifies the server's identity against the address it dials
        // (verify_identifier with peers_identifier address) and its certificate against the trusted roots.
        let hybrid = group?.hasSuffix("hybrid") ?? false
        if let type = try d.string("LocalIdentifierType"), type != "KeyID" {
            throw TranslationError("IPSec LocalIdentifierType \(type) unknown")
        }
        // vpnd refuses a SharedSecret/hybrid configuration without a SharedSecret, even though hybrid never uses it.
        guard let psk = try d.data("SharedSecret") else { throw TranslationError("IPSec.SharedSecret (data) missing") }
        if hybrid {
            guard IPText.bytes(profileAddress) != nil else {
                throw TranslationError(
                    "IPSec hybrid: the device checks the server against RemoteAddress, which is not an IP address")
            }
            guard !certs.roots.isEmpty || !inputs.systemRoots.isEmpty else {
                throw TranslationError("IPSec hybrid without a root certificate payload or a trusted system root")
            }
        }
        let xauth = (try d.integer("XAuthEnabled") ?? 0) == 1
        let xauthName = try d.string("XAuthName")
        var xauthPassword = try d.string("XAuthPassword")
        if let enc = try d.string("XAuthPasswordEncryption") {
            guard enc == "Prompt" else { throw TranslationError("XAuthPasswordEncryption \(enc) unknown") }
            xauthPassword = nil  // the device prompts on every connect
        }
        if try d.boolean("PromptForVPNPIN") == true { throw TranslationError("PromptForVPNPIN not translated") }
        if d.has("PayloadCertificateUUID") { throw TranslationError("IPSec certificate auth not translated") }
        for key in ["OnDemandMatchDomainsAlways", "OnDemandMatchDomainsNever", "OnDemandMatchDomainsOnRetry"]
        where d.has(key) {
            throw TranslationError("IPSec.\(key) not translated")
        }
        let onDemand = try onDemand(&d, context: "IPSec")
        let idle = try idleTimeout(&d)
        try d.finish()

        var w = SwanctlWriter()
        var secrets: [(String, [(String, String)])] = []
        try w.section("connections") { w in
            try w.section(connectionName) { w in
                w.raw("version", "1")
                // With a group name iOS uses aggressive mode and sends it as ID_KEY_ID (strongSwan's docs,
                // interop/ios).
                w.raw("aggressive", group == nil ? "no" : "yes")
                try w.set("remote_addrs", remoteAddress)
                w.raw("vips", "0.0.0.0")
                w.raw("proposals", ikev1Proposals.joined(separator: ", "))
                if !hybrid {
                    try w.section("local") { w in
                        w.raw("auth", "psk")
                        if let group { try w.set("id", "keyid:\(group)") }
                    }
                } else if !xauth {
                    throw TranslationError("IPSec hybrid without XAuthEnabled")
                }
                if xauth {
                    guard let name = xauthName else { throw TranslationError("IPSec.XAuthName missing") }
                    guard let password = xauthPassword ?? inputs.password else {
                        throw TranslationError("IPSec.XAuthPassword missing and no DeviceInputs.password")
                    }
                    // Hybrid: XAuth is the first (only) client round, carrying the group name as key ID.
                    try w.section(hybrid ? "local" : "local-xauth") { w in
                        w.raw("auth", "xauth")
                        if hybrid, let group { try w.set("id", "keyid:\(group)") }
                        try w.set("xauth_id", name)
                    }
                    secrets.append(("xauth-user", [("id", name), ("secret", password)]))
                }
                try w.section("remote") { w in
                    w.raw("auth", hybrid ? "pubkey" : "psk")
                    if hybrid { try w.set("id", profileAddress) }
                }
                w.section("children") { w in
                    w.section(childName) { w in
                        w.raw("remote_ts", "0.0.0.0/0")
                        w.raw("esp_proposals", ikev1ESPProposals.joined(separator: ", "))
                        if let idle { w.raw("inactivity", "\(idle)s") }
                    }
                }
            }
        }
        if !hybrid {
            var ids: [(String, String)] = []
            if let group { ids.append(("id", "keyid:\(group)")) }
            secrets.append(("ike-group", ids + [("secretdata", "")]))
        }
        try writeSecrets(secrets, into: &w, pskBytes: psk)
        return ClientSetup(
            connectionName: connectionName, childName: childName, swanctlConf: w.text,
            files: hybrid ? certs.roots.merging(inputs.systemRootFiles) { profile, _ in profile } : [:],
            onDemand: onDemand)
    }

    // MARK: shared

    /// `secret` values of eap/xauth/ike sections are written as `0s<base64>`; the special key `secretdata` takes
    /// `pskBytes`. A `pkcs12*`/`private*` section's `secret` is a passphrase that swanctl uses literally (no
    /// `0s`/`0x` decoding; seen: "MAC verification of PKCS#12 container failed"), so it is quoted instead.
    static func writeSecrets(
        _ secrets: [(String, [(String, String)])], into w: inout SwanctlWriter, pskBytes: Data? = nil
    )
        throws
    {
        guard !secrets.isEmpty else { return }
        try w.section("secrets") { w in
            for (name, entries) in secrets {
                try w.section(name) { w in
                    for (key, value) in entries {
                        switch key {
                        case "secret" where name.hasPrefix("pkcs12") || name.hasPrefix("private"):
                            try w.set("secret", value)
                        case "secret": w.raw("secret", SwanctlWriter.secret(value))
                        case "secretdata": w.raw("secret", SwanctlWriter.secret(pskBytes ?? Data()))
                        // Already in swanctl's encoding (`0s` + base64 of arbitrary bytes: a PPK).
                        case "secretencoded": w.raw("secret", value)
                        default: try w.set(key, value)
                        }
                    }
                }
            }
        }
    }
}

/// One `IKESecurityAssociationParameters` / `ChildSecurityAssociationParameters` dictionary with Apple's
/// schema defaults (AES-256, SHA2-256, group 14, 1440 minutes) for absent keys (Apple's schema,
/// com.apple.vpn.managed.yaml).
struct SAParameters: Equatable {
    var encryption: String
    var integrity: String
    var prf: String
    var dhGroup: String
    var aead: Bool
    var lifetimeMinutes: Int
    /// `PostQuantumKeyExchangeMethods`: strongSwan's keyword per additional exchange, ADDKE1 first (0: none).
    var additionalKeyExchanges: [String] = []

    static let postQuantumKeywords: [Int: String] = [0: "none", 36: "mlkem768", 37: "mlkem1024"]

    static let encryptionKeywords: [String: String] = [
        "DES": "des", "3DES": "3des", "AES-128": "aes128", "AES-256": "aes256",
        "AES-128-GCM": "aes128gcm16", "AES-256-GCM": "aes256gcm16", "ChaCha20Poly1305": "chacha20poly1305",
    ]
    static let integrityKeywords: [String: (integrity: String, prf: String)] = [
        "SHA1-96": ("sha1", "prfsha1"), "SHA1-160": ("sha1_160", "prfsha1"), "SHA2-256": ("sha256", "prfsha256"),
        "SHA2-384": ("sha384", "prfsha384"), "SHA2-512": ("sha512", "prfsha512"),
    ]
    static let dhKeywords: [Int: String] = [
        1: "modp768", 2: "modp1024", 5: "modp1536", 14: "modp2048", 15: "modp3072", 16: "modp4096",
        17: "modp6144", 18: "modp8192", 19: "ecp256", 20: "ecp384", 21: "ecp521", 31: "curve25519", 32: "curve448",
    ]

    init(_ dict: StrictDictionary?) throws {
        var d = dict
        let enc = try d?.string("EncryptionAlgorithm") ?? "AES-256"
        let integ = try d?.string("IntegrityAlgorithm") ?? "SHA2-256"
        let group = try d?.integer("DiffieHellmanGroup") ?? 14
        let life = try d?.integer("LifeTimeInMinutes") ?? 1440
        if let methods = d?.any("PostQuantumKeyExchangeMethods") {
            guard let list = methods as? [Int], (1...7).contains(list.count) else {
                throw TranslationError("PostQuantumKeyExchangeMethods: expected 1 to 7 integers")
            }
            additionalKeyExchanges = try list.map { method in
                guard let keyword = Self.postQuantumKeywords[method] else {
                    throw TranslationError("PostQuantumKeyExchangeMethods: \(method) is not 0, 36 or 37")
                }
                return keyword
            }
        }
        try d?.finish()
        guard let e = Self.encryptionKeywords[enc] else { throw TranslationError("EncryptionAlgorithm \(enc) unknown") }
        guard let i = Self.integrityKeywords[integ] else {
            throw TranslationError("IntegrityAlgorithm \(integ) unknown")
        }
        guard let g = Self.dhKeywords[group] else { throw TranslationError("DiffieHellmanGroup \(group) unknown") }
        guard (10...1440).contains(life) else { throw TranslationError("LifeTimeInMinutes \(life) out of 10…1440") }
        encryption = e
        integrity = i.integrity
        prf = i.prf
        dhGroup = g
        aead = enc.hasSuffix("-GCM") || enc == "ChaCha20Poly1305"
        lifetimeMinutes = life
    }

    /// The single IKE proposal: `aes256gcm16-prfsha256-ecp256` or `aes256-sha256-prfsha256-modp2048`.
    var ikeProposal: String {
        (aead ? "\(encryption)-\(prf)-\(dhGroup)" : "\(encryption)-\(integrity)-\(prf)-\(dhGroup)")
            + additionalKeyExchanges.enumerated().map { "-ke\($0.offset + 1)_\($0.element)" }.joined()
    }

    /// The single ESP proposal; with PFS the group is added (used on rekey only in IKEv2).
    func espProposal(pfs: Bool) -> String {
        (aead ? encryption : "\(encryption)-\(integrity)") + (pfs ? "-\(dhGroup)" : "")
    }
}

/// The certificate payloads of a profile: pkcs12 by UUID, root CAs as files for `x509ca/`.
struct CertificatePayloads {
    struct PKCS12 {
        var data: Data
        var password: String?
    }
    var pkcs12ByUUID: [String: PKCS12] = [:]
    var roots: [String: Data] = [:]

    init(_ payloads: [[String: Any]]) throws {
        for (index, payload) in payloads.enumerated() {
            var p = try StrictDictionary(payload, context: "payload \(index)")
            let type = try p.requiredString("PayloadType")
            let uuid = try p.requiredString("PayloadUUID")
            p.accept([
                "PayloadVersion", "PayloadIdentifier", "PayloadDisplayName", "PayloadDescription",
                "PayloadOrganization", "PayloadCertificateFileName",
            ])
            guard let content = try p.data("PayloadContent") else {
                throw TranslationError("\(type) payload without PayloadContent data")
            }
            switch type {
            case "com.apple.security.pkcs12":
                let password = try p.string("Password")
                p.accept(["AllowAllAppsAccess", "KeyIsExtractable"])
                pkcs12ByUUID[uuid] = PKCS12(data: content, password: password)
            case "com.apple.security.root":
                roots["x509ca/root-\(roots.count + 1).der"] = content
            default:
                throw TranslationError("payload type \(type) is not translated")
            }
            try p.finish()
        }
    }

    func pkcs12(uuid: String) throws -> PKCS12 {
        guard let p = pkcs12ByUUID[uuid] else {
            throw TranslationError("PayloadCertificateUUID \(uuid) not in profile")
        }
        return p
    }
}
