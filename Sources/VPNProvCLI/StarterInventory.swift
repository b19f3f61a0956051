import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// The commented starter inventory `vpnprov init` writes. It must validate clean, and it ends with a
/// newline: a user appended with `cat >> inventory.yaml` must start on a line of its own.
enum StarterInventory {
    static let text = #"""
        # vpnprov inventory (schema version 1). Reference: docs/inventory.md in the vpnprov repository.
        # Check it with:     vpnprov validate inventory.yaml
        # Generate with:     vpnprov generate inventory.yaml --out out
        vpnprov: 1
        name: example                     # deployment name: profile names, CA name, UUID namespace

        # pki:                            # optional; these are the defaults
        #   ca: { name: "example VPN Root CA", key: ecdsa-p256, days: 3650 }
        #   server_days: 825              # Apple rejects server certificates valid > 825 days
        #   client_days: 365

        defaults:                         # any node field, applied to every node (a node's own value wins)
          services: [ikev2-eap]           # ikev2-eap | ikev2-cert | ikev2-psk | ikev2-psk-eap | ipsec-xauth-psk | ipsec-xauth-hybrid
          dns: [192.0.2.53]

        nodes:
          vpn-1:
            address: vpn-1.example.com    # what clients dial: IPv4, IPv6 or DNS name
            region: eu-central
            country: DE                   # ISO 3166-1 alpha-2
            tier: free                    # free | pro
            pool: 10.10.0.0/24            # virtual IPs handed to clients
            pool6: fd00:10::/112          # IPv6 too; without it IPv6 bypasses the VPN on clients that cannot block it
            # apple: { on_demand: true, trusted_ssids: [Home], include_all_networks: true }
            # services: [ikev2-eap, ikev2-cert]
            # psk: gen                    # needed by ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk

        users:
          alice:
            password: gen                 # gen | env:VAR | file:PATH; generated once, kept in state/
            # cert: true                  # also issue a client certificate (ikev2-cert)
            # nodes: [vpn-1]              # default: every node
            # devices: [apple, android, linux, windows]   # default: all

        """#
}
