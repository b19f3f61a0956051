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

    /// What a Linux client needs of an app catalogue entry of an IKEv2 EAP service, read as docs/accounts.md ("A
    /// Linux desktop with an account") reads it.
    struct Entry {
        var id: String
        var host: String
        var remoteID: String
        var ikeProposal: String
        var espProposal: String
        var needsCA: Bool
        var blockIPv6: Bool

        init(_ entry: [String: Any]) throws {
            id = entry["id"] as? String ?? "?"
            guard entry["protocol"] as? String == "IKEv2", entry["authMethod"] as? String == "eap" else {
                throw Refusal(description: "not an IKEv2 EAP entry: \(id)")
            }
            guard let host = entry["host"] as? String, let remoteID = entry["remoteID"] as? String,
                let ike = (entry["ikeSecurityAssociation"] as? [String: Any])?["proposal"] as? String,
                let esp = (entry["childSecurityAssociation"] as? [String: Any])?["proposal"] as? String
            else { throw Refusal(description: "entry \(id) lacks host, remoteID or proposals") }
            self.host = host
            self.remoteID = remoteID
            ikeProposal = ike
            espProposal = esp
            needsCA = (entry["needsOnDevice"] as? [String] ?? []).contains("ca-certificate")
            blockIPv6 = entry["blockIPv6"] as? Bool == true
        }
    }

    /// `caFile`: where the desktop keeps the deployment's CA, for an entry that needs it on the device
    /// (`needsOnDevice` names `ca-certificate`); nil for an entry whose node has a publicly trusted certificate.
    static func keyfile(id: String, entry: [String: Any], account: String, password: String, caFile: String?)
        throws -> String
    {
        let e = try Entry(entry)
        if e.needsCA && caFile == nil { throw Refusal(description: "entry \(e.id) needs the CA") }
        var vpn = [
            "service-type=org.freedesktop.NetworkManager.strongswan", "address=\(e.host)",
            "remote-identity=\(e.remoteID)", "method=eap", "user=\(account)", "virtual=yes", "encap=no", "ipcomp=no",
            "proposal=yes", "ike=\(e.ikeProposal)", "esp=\(e.espProposal)", "password-flags=0",
        ]
        if e.needsCA, let caFile { vpn.append("certificate=\(caFile)") }
        var lines = ["[connection]", "id=\(id)", "type=vpn", "autoconnect=false", "", "[vpn]"] + vpn
        lines += [
            "", "[vpn-secrets]", "password=\(password)", "", "[ipv4]", "method=auto", "", "[ipv6]", "method=auto",
        ]
        if e.blockIPv6 { lines += ["route1=::/0,::,1", "route1_options=type=blackhole"] }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same entry on a Linux host that runs strongSwan's own charon instead of NetworkManager: the keyfile's
    /// values as swanctl.conf keys (strongSwan's swanctl.conf reference): `remote_addrs` the host, `remote.id` the
    /// remote identity, `remote.auth = pubkey` (checked against `caPEM`, the deployment's CA, for an entry that
    /// needs it), `local.auth = eap-mschapv2` with the account as `eap_id`, a virtual IP (`vips`), the entry's IKE
    /// and ESP proposals, and all IPv4 through the tunnel (`remote_ts`), as the keyfile's `virtual=yes` asks of
    /// charon-nm. Connection and child `connectionName`.
    static func swanctl(entry: [String: Any], account: String, password: String, caPEM: Data?) throws
        -> ClientSetup
    {
        let e = try Entry(entry)
        if e.needsCA && caPEM == nil { throw Refusal(description: "entry \(e.id) needs the CA") }
        var w = SwanctlWriter()
        try w.section("connections") { w in
            try w.section(connectionName) { w in
                w.raw("version", "2")
                try w.set("remote_addrs", e.host)
                w.raw("vips", "0.0.0.0")
                try w.set("proposals", e.ikeProposal)
                try w.section("local") { w in
                    w.raw("auth", "eap-mschapv2")
                    try w.set("id", account)
                    try w.set("eap_id", account)
                }
                try w.section("remote") { w in
                    w.raw("auth", "pubkey")
                    try w.set("id", e.remoteID)
                }
                try w.section("children") { w in
                    try w.section(connectionName) { w in
                        w.raw("remote_ts", "0.0.0.0/0")
                        try w.set("esp_proposals", e.espProposal)
                    }
                }
            }
        }
        try w.section("secrets") { w in
            try w.section("eap-account") { w in
                try w.set("id", account)
                w.raw("secret", SwanctlWriter.secret(password))
            }
        }
        return ClientSetup(
            connectionName: connectionName, childName: connectionName, swanctlConf: w.text,
            files: caPEM.map { ["x509ca/ca.pem": $0] } ?? [:])
    }

    static let connectionName = "account"
}
