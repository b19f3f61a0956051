import VPNProvSupport

// Quantum-safe tunnels (`quantum_safe:` of a node, docs/quantum-safe.md). IKEv1 has neither additional key
// exchanges nor PPKs, and Debian's strongSwan 6.1 is built without it: a quantum-safe node offers IKEv2 services
// only (`quantum-safe-ikev1`). A PPK lives in the node's own credentials, never in RADIUS, so an app account
// has none: `ppk: required` on an `accounts: radius` node would refuse every account (`quantum-safe-radius`).
// A user reaching the node with a device whose generated configuration cannot carry what the node requires (its
// kind's `quantumSafe`) would be refused at every connect: an error at the node's `quantum_safe`
// (`quantum-safe-device`), unless the node admits classical clients.

enum QuantumSafeRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        for node in inventory.nodes {
            guard let settings = node.quantumSafe else { continue }
            let ikev1 = node.services.filter { $0.ikeVersion == 1 }
            if !ikev1.isEmpty {
                d.append(
                    .error(
                        .quantumSafeIKEv1,
                        "node '\(node.name)': quantum_safe applies to IKEv2, but the node offers "
                            + ikev1.map(\.rawValue).joined(separator: ", ")
                            + " (IKEv1 has no additional key exchange and no PPK, and Debian's strongSwan 6.1 has no IKEv1); remove them from this node",
                        at: node.location(of: .services)))
            }
            if settings.ppk == .required && node.usesRadius {
                d.append(
                    .error(
                        .quantumSafeRadius,
                        "node '\(node.name)': 'ppk: required' refuses every app account of 'accounts: radius' (a PPK lives in the node's credentials, RADIUS cannot hand one over); use 'ppk: optional' here",
                        at: node.location(of: .quantumSafe(.ppk))))
            }
            var refused: [(device: Device, users: [User])] = []
            for device in Device.allCases where !settings.admits(device.kind.quantumSafe) {
                let users = inventory.users.filter { user in
                    !user.revoked && user.devices.contains(device) && user.nodes.contains(node.name)
                        && node.inventoryUserServices.contains { s in
                            s.ikeVersion == 2 && device.speaks(s)
                                && (s.needsClientCert ? user.cert : user.password != nil)
                        }
                }
                if !users.isEmpty { refused.append((device, users)) }
            }
            guard !refused.isEmpty else { continue }
            let lacking = [
                settings.mlKEM.isEmpty || settings.classicalFallback ? nil : "ML-KEM (or 'classical_fallback: true')",
                settings.ppk != .required ? nil : "a PPK (or 'ppk: optional')",
            ].compactMap { $0 }
            let who = refused.map { entry in
                let names = entry.users.prefix(3).map { "'\($0.name)'" }.joined(separator: ", ")
                return "\(entry.device.rawValue) (\(names)\(entry.users.count > 3 ? ", ..." : ""))"
            }
            d.append(
                .error(
                    .quantumSafeDevice,
                    "node '\(node.name)' requires " + lacking.joined(separator: " and ")
                        + ", which the generated configuration of these devices of its users cannot carry, so the node would refuse them: "
                        + who.joined(separator: ", ")
                        + "; remove those devices from the users' devices (Linux carries both) or admit classical clients",
                    at: node.location(of: .quantumSafe)))
        }
    }
}
