import Foundation
import VPNProvTestHarness

/// The NetworkManager connection a Linux desktop user sets up for an app account, from the app catalogue's entry of
/// an IKEv2 EAP service: the keyfile docs/accounts.md ("A Linux desktop with an account") describes, field for field,
/// in NetworkManager's keyfile format with the strongSwan plugin's `[vpn]` keys (the plugin's
/// `properties/nm-strongswan.c` and charon-nm's `nm_service.c` read them). The real NetworkManager and charon-nm
/// then decide whether it connects.
enum AccountKeyfileTranslator {
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// `caFile`: where the desktop keeps the deployment's CA, for an entry that needs it on the device
    /// (`needsOnDevice` names `ca-certificate`); nil for an entry whose node has a publicly trusted certificate.
    static func keyfile(id: String, entry: [String: Any], account: String, password: String, caFile: String?)
        throws -> String
    {
        guard entry["protocol"] as? String == "IKEv2", entry["authMethod"] as? String == "eap" else {
            throw Refusal(description: "not an IKEv2 EAP entry: \(entry["id"] ?? "?")")
        }
        guard let host = entry["host"] as? String, let remoteID = entry["remoteID"] as? String,
            let ike = (entry["ikeSecurityAssociation"] as? [String: Any])?["proposal"] as? String,
            let esp = (entry["childSecurityAssociation"] as? [String: Any])?["proposal"] as? String
        else { throw Refusal(description: "entry \(entry["id"] ?? "?") lacks host, remoteID or proposals") }
        let needsCA = (entry["needsOnDevice"] as? [String] ?? []).contains("ca-certificate")
        if needsCA && caFile == nil { throw Refusal(description: "entry \(entry["id"] ?? "?") needs the CA") }
        var vpn = [
            "service-type=org.freedesktop.NetworkManager.strongswan", "address=\(host)", "remote-identity=\(remoteID)",
            "method=eap", "user=\(account)", "virtual=yes", "encap=no", "ipcomp=no", "proposal=yes", "ike=\(ike)",
            "esp=\(esp)", "password-flags=0",
        ]
        if needsCA, let caFile { vpn.append("certificate=\(caFile)") }
        var lines = ["[connection]", "id=\(id)", "type=vpn", "autoconnect=false", "", "[vpn]"] + vpn
        lines += [
            "", "[vpn-secrets]", "password=\(password)", "", "[ipv4]", "method=auto", "", "[ipv6]", "method=auto",
        ]
        if entry["blockIPv6"] as? Bool == true { lines += ["route1=::/0,::,1", "route1_options=type=blackhole"] }
        return lines.joined(separator: "\n") + "\n"
    }
}
