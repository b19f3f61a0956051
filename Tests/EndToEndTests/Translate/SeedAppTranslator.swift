import Foundation
import VPNProvTestHarness

/// The seed iOS app's connection code, as a strongSwan client. The app knows four fields per server
/// (`protocol`, `localID`, `remoteID`, `pskEnabled`) plus the host; its code, paraphrased:
/// - IKEv2: NEVPNProtocolIKEv2, useExtendedAuthentication = true, localIdentifier = localID,
///   remoteIdentifier = remoteID; pskEnabled: authenticationMethod .sharedSecret with the shared secret and
///   the password; else .none (EAP, the server proves itself with its certificate); no SA parameters, so the
///   device offers Apple's defaults (AES-256, SHA2-256, group 14 for IKE and Child SA, no PFS).
/// - IPSec: NEVPNProtocolIPSec, useExtendedAuthentication = true (XAuth), localIdentifier = localID ?? "VPN",
///   remoteIdentifier = remoteID; pskEnabled: .sharedSecret; else .none, i.e. hybrid (server certificate +
///   XAuth). A local identifier makes Apple's IKEv1 client use Aggressive Mode and send it as a key ID.
/// Only the four fields and the host are read from the catalogue entry; everything else is the code's.
enum SeedAppTranslator {
    struct Credentials {
        var username: String
        var password: String
        /// The node's PSK as the app's user received it (pskEnabled servers).
        var psk: String?
        /// A root the device trusts, which the server certificate must chain to: the deployment's CA, installed by a
        /// profile, or for an ACME node a public root of the device's own store (in the lab Pebble's).
        var caPEM: Data
    }

    static let connectionName = "seed"
    static let childName = "seed"

    static func translate(entry: [String: Any], credentials c: Credentials, remoteAddress: String? = nil) throws
        -> ClientSetup
    {
        guard let proto = entry["protocol"] as? String, let remoteID = entry["remoteID"] as? String,
            let pskEnabled = entry["pskEnabled"] as? Bool, let host = entry["host"] as? String
        else { throw TranslationError("catalogue entry without protocol/remoteID/pskEnabled/host") }
        // A JSON "" stays "" (an empty identifier); only an absent or null localID becomes the code's default.
        let localIDField = entry["localID"] as? String
        var w = SwanctlWriter()
        var secrets: [(String, [(String, String)])] = [("eap-user", [("id", c.username), ("secret", c.password)])]
        var files: [String: Data] = [:]
        switch proto {
        case "IKEv2":
            let localID = localIDField ?? ""
            try w.section("connections") { w in
                try w.section(connectionName) { w in
                    w.raw("version", "2")
                    try w.set("remote_addrs", remoteAddress ?? host)
                    w.raw("vips", "0.0.0.0")
                    w.raw("proposals", "aes256-sha256-modp2048")
                    w.raw("dpd_delay", "600s")  // deadPeerDetectionRate .medium
                    try w.section("local") { w in
                        w.raw("auth", "eap-mschapv2")  // useExtendedAuthentication = true
                        try w.set("eap_id", c.username)
                        if !localID.isEmpty { try w.set("id", localID) }
                    }
                    try w.section("remote") { w in
                        w.raw("auth", pskEnabled ? "psk" : "pubkey")
                        try w.set("id", remoteID)
                    }
                    w.section("children") { w in
                        w.section(childName) { w in
                            w.raw("remote_ts", "0.0.0.0/0")
                            w.raw("esp_proposals", "aes256-sha256")
                        }
                    }
                }
            }
            if pskEnabled {
                guard let psk = c.psk else { throw TranslationError("pskEnabled but no PSK among the credentials") }
                var ids = [("id-1", remoteID)]
                if !localID.isEmpty { ids.append(("id-2", localID)) }
                secrets.append(("ike-psk", ids + [("secret", psk)]))
            } else {
                files["x509ca/ca.pem"] = c.caPEM
            }
        case "IPSec":
            let localID = localIDField ?? "VPN"
            try w.section("connections") { w in
                try w.section(connectionName) { w in
                    w.raw("version", "1")
                    w.raw("aggressive", localID.isEmpty ? "no" : "yes")
                    try w.set("remote_addrs", remoteAddress ?? host)
                    w.raw("vips", "0.0.0.0")
                    w.raw("proposals", AppleProfileTranslator.ikev1Proposals.joined(separator: ", "))
                    if pskEnabled {
                        try w.section("local") { w in
                            w.raw("auth", "psk")
                            if !localID.isEmpty { try w.set("id", "keyid:\(localID)") }
                        }
                        try w.section("local-xauth") { w in
                            w.raw("auth", "xauth")
                            try w.set("xauth_id", c.username)
                        }
                    } else {
                        try w.section("local") { w in
                            w.raw("auth", "xauth")  // XAuth as the first round: hybrid
                            if !localID.isEmpty { try w.set("id", "keyid:\(localID)") }
                            try w.set("xauth_id", c.username)
                        }
                    }
                    try w.section("remote") { w in
                        w.raw("auth", pskEnabled ? "psk" : "pubkey")
                        if !pskEnabled { try w.set("id", remoteID) }
                    }
                    w.section("children") { w in
                        w.section(childName) { w in
                            w.raw("remote_ts", "0.0.0.0/0")
                            w.raw("esp_proposals", AppleProfileTranslator.ikev1ESPProposals.joined(separator: ", "))
                        }
                    }
                }
            }
            if pskEnabled {
                guard let psk = c.psk else { throw TranslationError("pskEnabled but no PSK among the credentials") }
                secrets.append(("ike-psk", (localID.isEmpty ? [] : [("id", "keyid:\(localID)")]) + [("secret", psk)]))
            } else {
                files["x509ca/ca.pem"] = c.caPEM
            }
        default:
            throw TranslationError("protocol \(proto) is not IKEv2 or IPSec")
        }
        try AppleProfileTranslator.writeSecrets(secrets, into: &w)
        return ClientSetup(connectionName: connectionName, childName: childName, swanctlConf: w.text, files: files)
    }
}
