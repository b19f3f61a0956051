import Foundation
import VPNProvTestHarness

/// Turns a strongSwan Android `.sswan` profile (docs/formats.md; the app's VpnProfileImportActivity.java) into the
/// strongSwan client the app amounts to.
/// Supported types: `ikev2-eap` (EAP-MSCHAPv2), `ikev2-cert` (p12). Unknown keys throw; so do types and
/// options the translation does not model (EAP-TLS, BYOD, cert+EAP, IPv6 transport, excluded subnets).
///
/// Differences from the app worth knowing: without `remote.id` the app sends no IDr and checks the server
/// certificate against `remote.addr`; here `remote.id` defaults to the profile's `remote.addr` (sent as IDr).
/// Without `ike-proposal`/`esp-proposal` the app offers strongSwan's defaults, as does this client (`default`).
enum SswanTranslator {
    static let connectionName = "home"
    static let childName = "home"

    static func translate(json: Data, inputs: DeviceInputs = DeviceInputs()) throws -> ClientSetup {
        try translate(profile: try JSONSerialization.jsonObject(with: json), inputs: inputs)
    }

    static func translate(profile: Any, inputs: DeviceInputs = DeviceInputs()) throws -> ClientSetup {
        var p = try StrictDictionary(profile, context: "sswan")
        let uuid = try p.requiredString("uuid")
        guard UUID(uuidString: uuid) != nil else { throw TranslationError("sswan.uuid is not a UUID") }
        _ = try p.requiredString("name")
        let type = try p.requiredString("type")
        guard ["ikev2-eap", "ikev2-cert"].contains(type) else {
            // The app turns unknown types into ikev2-eap silently; a generator must never rely on that.
            throw TranslationError("sswan.type \(type) is not translated")
        }
        guard var remote = try p.dictionary("remote") else { throw TranslationError("sswan.remote missing") }
        let addr = try remote.requiredString("addr")
        let port = try remote.integer("port")
        let remoteID = try remote.string("id") ?? addr
        let caCert = try remote.string("cert")
        let certreq = try remote.boolean("certreq") ?? true
        if var revocation = try remote.dictionary("revocation") {
            _ = try revocation.boolean("crl")
            _ = try revocation.boolean("ocsp")
            if try revocation.boolean("strict") == true {
                throw TranslationError("sswan.remote.revocation.strict not translated")
            }
            try revocation.finish()
        }
        try remote.finish()

        var local = try p.dictionary("local") ?? StrictDictionary([String: Any](), context: "sswan.local")
        let eapID = try local.string("eap_id")
        let password = try local.string("shared_secret") ?? inputs.password
        let localID = try local.string("id")
        let p12 = try local.string("p12")
        if try local.boolean("rsa-pss") == true { throw TranslationError("sswan.local.rsa-pss not translated") }
        try local.finish()

        let ikeProposal = try p.string("ike-proposal")
        let espProposal = try p.string("esp-proposal")
        var remoteTS = ["0.0.0.0/0", "::/0"]
        var device = DevicePolicy()
        if var split = try p.dictionary("split-tunneling") {
            if let subnets = try list(split.any("subnets"), "split-tunneling.subnets") { remoteTS = subnets }
            if try list(split.any("excluded"), "split-tunneling.excluded")?.isEmpty == false {
                throw TranslationError("sswan.split-tunneling.excluded not translated")
            }
            if try split.boolean("block-ipv4") == true {
                throw TranslationError("sswan.split-tunneling.block-ipv4 not translated")
            }
            // CharonVpnService.applyData: with SPLIT_TUNNELING_BLOCK_IPV6 and no IPv6 from the server the
            // app never calls allowFamily(AF_INET6), so Android drops every IPv6 packet while the VPN is up
            // (local networks included; the app's own IKE socket is protected and unaffected).
            if try split.boolean("block-ipv6") == true { device.blockIPv6 = .all }
            try split.finish()
        }
        if try p.boolean("ipv6-transport") == true { throw TranslationError("sswan.ipv6-transport not translated") }
        // Device-side only: DNS override, MTU, keepalive, per-app VPN, proxy.
        p.accept(["dns-servers", "mtu", "nat-keepalive", "apps", "excluded-apps", "proxy"])
        try p.finish()

        var files: [String: Data] = [:]
        if let caCert {
            guard let der = Data(base64Encoded: caCert) else { throw TranslationError("sswan.remote.cert not base64") }
            files["x509ca/remote.der"] = der
        } else {
            // Without remote.cert the app trusts every CA of the device ("automatic CA certificate selection":
            // VpnProfile without a CA alias, no CA restriction when android_service.c initiates).
            files = inputs.systemRootFiles
        }
        var secrets: [(String, [(String, String)])] = []
        var w = SwanctlWriter()
        try w.section("connections") { w in
            try w.section(connectionName) { w in
                w.raw("version", "2")
                try w.set("remote_addrs", inputs.remoteAddress ?? addr)
                if let port { w.raw("remote_port", String(port)) }
                w.raw("vips", "0.0.0.0, ::")
                try w.set("proposals", ikeProposal ?? "default")
                if !certreq { w.raw("send_certreq", "no") }
                try w.section("local") { w in
                    if type == "ikev2-eap" {
                        guard let eapID else { throw TranslationError("ikev2-eap without local.eap_id") }
                        guard let password else {
                            throw TranslationError("ikev2-eap without local.shared_secret and no DeviceInputs.password")
                        }
                        w.raw("auth", "eap-mschapv2")
                        try w.set("eap_id", eapID)
                        secrets.append(("eap-user", [("id", eapID), ("secret", password)]))
                    } else {
                        guard let p12, let bytes = Data(base64Encoded: p12) else {
                            throw TranslationError("ikev2-cert without a base64 local.p12")
                        }
                        // The app hands the container to Android's certificate installer, which tries the
                        // empty password first and prompts only when that fails. Without a typed password
                        // (DeviceInputs.p12Password) the empty one is configured, so a container that needs a
                        // real password fails the load ("configured decryption secret ... invalid").
                        w.raw("auth", "pubkey")
                        files["pkcs12/client.p12"] = bytes
                        secrets.append(
                            ("pkcs12-client", [("file", "client.p12"), ("secret", inputs.p12Password ?? "")]))
                    }
                    if let localID { try w.set("id", localID) }
                }
                try w.section("remote") { w in
                    w.raw("auth", "pubkey")
                    try w.set("id", remoteID)
                }
                try w.section("children") { w in
                    try w.section(childName) { w in
                        try w.set("remote_ts", remoteTS.joined(separator: ", "))
                        try w.set("esp_proposals", espProposal ?? "default")
                    }
                }
            }
        }
        try AppleProfileTranslator.writeSecrets(secrets, into: &w)
        return ClientSetup(
            connectionName: connectionName, childName: childName, swanctlConf: w.text, files: files, device: device)
    }

    /// JSON array of strings or one space-separated string (what the app accepts).
    private static func list(_ value: Any?, _ context: String) throws -> [String]? {
        guard let value else { return nil }
        if let s = value as? String { return s.split(separator: " ").map(String.init) }
        if let a = value as? [String] { return a.map { $0.replacingOccurrences(of: " ", with: "") } }
        throw TranslationError("sswan.\(context): expected a list")
    }
}
