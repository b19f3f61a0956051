import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// NetworkManager's strongSwan plugin (charon-nm, network-manager-strongswan) speaks IKEv2 only, and the
// server proves itself with a certificate when the client uses EAP or a certificate, with the PSK when the
// client uses the PSK (src/charon-nm/nm/nm_service.c, `connect_`). So it can set up ikev2-eap, ikev2-cert
// and ikev2-psk, never ikev2-psk-eap (EAP against a PSK server) or the IKEv1 services. A user who asks for
// the `networkmanager` device and, on one of their nodes, holds credentials only for services the plugin
// cannot set up would get no connection to that node on the desktop: error `networkmanager-service` at
// the user's devices, naming the node and the services. Nodes where some service works are fine (the
// other services go to the user's other devices).

enum NetworkManagerRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let nodes = Dictionary(inventory.nodes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for user in inventory.users where !user.revoked && user.devices.contains(.networkmanager) {
            for name in user.nodes {
                guard let node = nodes[name] else { continue }
                let held = node.inventoryUserServices.filter { s in
                    (!s.needsClientCert || user.cert) && (!s.needsPassword || user.password != nil)
                }
                if held.isEmpty || held.contains(where: Device.networkmanager.speaks) { continue }
                d.append(
                    .error(
                        .networkManagerService,
                        "user '\(user.name)': NetworkManager's strongSwan plugin cannot set up \(held.map(\.rawValue).joined(separator: ", ")) (it speaks IKEv2 with EAP, a certificate or a PSK on both sides: ikev2-eap, ikev2-cert, ikev2-psk), so node '\(node.name)' gets no NetworkManager connection; offer one of those on the node, or remove networkmanager from the user's devices",
                        at: user.location(of: .devices)))
            }
        }
    }
}
