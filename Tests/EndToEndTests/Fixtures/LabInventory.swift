import Foundation
import VPNProvTestHarness

/// Test inventories written into a temp dir, and the repository's own example.
enum Inventories {
    /// `<package>/inventory/example.yaml`.
    static let example: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("inventory/example.yaml").path

    /// Secrets full of what breaks naive quoting (`#`, `"`, `\`, spaces, braces, non-ASCII), long and random-looking
    /// enough for the strength policy. They reach vpnprov only as `file:` and `env:` references.
    static let labV4PSK = #"7#q"Zr\ {ñ}Vx 9"Lk#\\pW{€ 3}mQ  ü"Tb#"#
    static let labDNSPSK = #"Hf" #8\ }{ q~Ж2"\\Rz# k{W9 Łm}""#
    static let annPassword = #"Xn#4 "q\ {Öw}7 Lp#"#
    static let benPassword = #"b{9#" \\Kq} Rä7 #T"m"#

    /// Environment for the lab inventory's `env:` references.
    static let labEnvironment = ["LAB_DNS_PSK": labDNSPSK, "LAB_ANN_PASSWORD": annPassword]

    /// Two nodes: `lab-v4` dialled at 192.0.2.1 with all five services (IKEv1 with a group: aggressive mode);
    /// `lab-dns` dialled by DNS name, with an identity different from that name, IKEv1 without a group (main
    /// mode). Both have IPv6 pools. Proposals differ from example.yaml (AES-128-GCM, PRF SHA-384, ECP-384 first).
    static let lab = """
        vpnprov: 1
        name: lab
        secrets:
          env_prefix: [LAB_]
        defaults:
          services: [ikev2-eap]
          proposals:
            ike: [aes128gcm16-prfsha384-ecp384, aes256-sha256-modp2048]
            esp: [aes128gcm16, aes256-sha256]
          dns: [192.0.2.53]
        nodes:
          lab-v4:
            address: 192.0.2.1
            region: lab
            country: DE
            tier: free
            pool: 10.70.0.0/24
            pool6: fd00:70::/112
            services: [ikev2-cert, ikev2-eap, ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk]
            psk: file:lab-v4.psk
            group: lab-group
          lab-dns:
            address: vpn.lab.test
            id: gw.lab.test
            region: lab
            country: FR
            tier: pro
            pool: 10.71.0.0/24
            pool6: fd00:71::/112
            services: [ikev2-cert, ikev2-eap, ikev2-psk-eap, ipsec-xauth-psk]
            psk: env:LAB_DNS_PSK
        users:
          ann:                      # password and certificate, every node, every device
            password: env:LAB_ANN_PASSWORD
            cert: true
          ben:                      # password only, the DNS node, Apple and Linux
            password: file:ben.password
            nodes: [lab-dns]
            devices: [apple, linux]
          vic:                      # certificate only, an identity with '#' and braces; revoked by the test
            cert: true
            id: "vic+vpn#1{x}@lab.test"
            nodes: [lab-v4]

        """

    /// Writes the lab inventory and its secret files into a fresh directory; returns the inventory path.
    static func writeLab() throws -> String {
        let dir = try Scratch.makeDirectory("lab-inventory")
        try lab.write(to: dir.appendingPathComponent("lab.yaml"), atomically: true, encoding: .utf8)
        for (name, secret) in [("lab-v4.psk", labV4PSK), ("ben.password", benPassword)] {
            let url = dir.appendingPathComponent(name)
            try Data(secret.utf8).write(to: url)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        }
        return dir.appendingPathComponent("lab.yaml").path
    }

    static func generateLab(label: String = "lab") throws -> GeneratedDeployment {
        var lab = try GeneratedDeployment.generate(inventory: try writeLab(), label: label, environment: labEnvironment)
        lab.typedPasswords = ["ann": annPassword, "ben": benPassword]
        return lab
    }
}
