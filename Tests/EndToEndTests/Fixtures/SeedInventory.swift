import Foundation
import VPNProvTestHarness

/// The seed app's world: two nodes offering every service (an IPv4 node with a group name, so IKEv1 PSK is
/// Aggressive Mode, and a DNS-name node without, so it is Main Mode), RSA server keys (IKEv1 hybrid signs
/// with RSA only), one user with a password. Secrets come in as `env:` references so the tests know them,
/// as the app's user would.
extension Inventories {
    static let seedV4PSK = "Vq7#Lm2x\"Zr9 Pk4Tw8Yn3Hd"
    static let seedDNSPSK = "Jt5Rw2Qx8\\Nc6 Vb3Mz9Kp7L"
    static let samPassword = "Hx4Tq9 Wm2#Zr7Kp"
    static let seedEnvironment = [
        "SEED_V4_PSK": seedV4PSK, "SEED_DNS_PSK": seedDNSPSK, "SEED_SAM_PASSWORD": samPassword,
    ]

    static let seed = """
        vpnprov: 1
        name: seed
        secrets:
          env_prefix: SEED_
        pki:
          server_key: rsa-2048
        defaults:
          proposals:
            ike: [aes256gcm16-prfsha256-ecp256, aes256-sha256-modp2048]
            esp: [aes256gcm16, aes256-sha256]
        nodes:
          seed-v4:
            address: 192.0.2.1
            pool: 10.80.0.0/24
            services: [ikev2-cert, ikev2-eap, ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk, ipsec-xauth-hybrid]
            psk: env:SEED_V4_PSK
            group: seed-group
          seed-dns:
            address: vpn.seed.test
            pool: 10.81.0.0/24
            services: [ikev2-cert, ikev2-eap, ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk, ipsec-xauth-hybrid]
            psk: env:SEED_DNS_PSK
        users:
          sam:
            password: env:SEED_SAM_PASSWORD
            cert: true
            devices: [apple, linux]

        """

    static func generateSeed(label: String = "seed") throws -> GeneratedDeployment {
        let dir = try Scratch.makeDirectory("seed-inventory")
        let path = dir.appendingPathComponent("seed.yaml")
        try seed.write(to: path, atomically: true, encoding: .utf8)
        return try GeneratedDeployment.generate(inventory: path.path, label: label, environment: seedEnvironment)
    }
}
