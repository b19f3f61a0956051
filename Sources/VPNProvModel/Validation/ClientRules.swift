import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// What users' devices do beside the handshake: IPv6 outside an IPv4-only tunnel, and Apple options
// that have no effect as written.
//
// IPv6 leaks. A node without `pool6` gives clients no IPv6 address and no IPv6 traffic selector, so
// unless the device itself drops IPv6 while connected, IPv6 traffic keeps flowing outside the VPN.
// Android (strongSwan app) drops it with `split-tunneling.block-ipv6`, which vpnprov always sets
// then; Apple IKEv2 drops it with IncludeAllNetworks (`apple.include_all_networks`, on by default
// for such nodes); a NetworkManager keyfile carries a blackhole IPv6 default route for such nodes; Apple "IPSec"
// (IKEv1) has no such key, a Linux swanctl client has no setting for
// other traffic at all, and Windows' VPN cmdlets have no IPv6 block either. Those are named in one `ipv6-leak` warning
// per node.

enum ClientRules {
    static func check(_ inventory: Inventory, into diagnostics: inout [Diagnostic]) {
        ipv6Leaks(inventory, into: &diagnostics)
        unusedAppleOptions(inventory, into: &diagnostics)
    }

    static func ipv6Leaks(_ inventory: Inventory, into diagnostics: inout [Diagnostic]) {
        for node in inventory.nodes where node.pool6 == nil {
            var kinds = Set<String>()
            for user in inventory.users where !user.revoked && user.nodes.contains(node.name) {
                for service in node.inventoryUserServices {
                    if service.needsClientCert && !user.cert || service.needsPassword && user.password == nil {
                        continue
                    }
                    for device in service.devices where user.devices.contains(device) {
                        // Each kind says what leaks (ClientKind.ipv6Leak); the kill switch is resolved only for Apple.
                        let leak = device.kind.ipv6Leak(service: service) {
                            AppleOptions.effective(user: user, node: node).includeAllNetworks
                        }
                        if let leak { kinds.insert(leak) }
                    }
                }
            }
            if kinds.isEmpty { continue }
            diagnostics.append(
                .warning(
                    .ipv6Leak,
                    "node '\(node.name)' has no IPv6 pool, and IPv6 traffic of these clients bypasses the VPN: \(kinds.sorted().joined(separator: ", ")); give the node a pool6 to carry IPv6 through the tunnel",
                    at: node.location(of: .pool), about: .node(node.name)))
        }
    }

    static func unusedAppleOptions(_ inventory: Inventory, into diagnostics: inout [Diagnostic]) {
        // `what` is made only for a finding: a fleet has a (user, node) pair per user and node.
        func check(
            _ own: AppleOptions, merged: AppleOptions, what: @autoclosure () -> String,
            about subject: Diagnostic.Subject,
            at location: (InventoryDecoder.AppleKey) -> SourceLocation
        ) -> Bool {
            let before = diagnostics.count
            if let ssids = own.trustedSSIDs, !ssids.isEmpty, merged.onDemand != true {
                diagnostics.append(
                    .warning(
                        .appleOptionUnused,
                        "\(what()): apple.trusted_ssids has no effect without apple.on_demand: true",
                        at: location(.trustedSSIDs), about: subject))
            }
            if own.excludeLocalNetworks != nil, merged.includeAllNetworks == false {
                diagnostics.append(
                    .warning(
                        .appleOptionUnused,
                        "\(what()): apple.exclude_local_networks has no effect with apple.include_all_networks: false",
                        at: location(.excludeLocalNetworks), about: subject))
            }
            return diagnostics.count > before
        }
        for node in inventory.nodes {
            _ = check(
                node.apple, merged: node.apple, what: "node '\(node.name)'", about: .node(node.name),
                at: { node.location(of: .apple($0)) })
        }
        for user in inventory.users where !user.revoked {
            // Only a user's own option can be reported: most users set none.
            guard user.apple.trustedSSIDs?.isEmpty == false || user.apple.excludeLocalNetworks != nil else { continue }
            for name in user.nodes {
                guard let node = inventory.node(named: name) else { continue }
                // Reported once per user, at the first node where the option does nothing.
                if check(
                    user.apple, merged: user.apple.over(node.apple), what: "user '\(user.name)' on node '\(name)'",
                    about: .user(user.name), at: { user.location(of: .apple($0)) })
                {
                    break
                }
            }
        }
    }
}
