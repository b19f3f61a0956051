import Foundation
import VPNProvYAML

// The mappings of a node read as sections of their own: `apple:` (a user's too), `network:`, `quantum_safe:`.

extension InventoryDecoder {
    /// A node's `apple:` mapping; field locations go to `locations` as `.apple(key)`.
    func decodeApple(
        _ node: YAMLNode, _ what: String, locations: inout [NodeField: SourceLocation], _ cx: DecodingContext
    ) -> AppleOptions {
        let entries = cx.mapping(node, "\(what): 'apple'", keys: AppleKey.self)
        return decodeApple(entries, what, cx) { locations[.apple($0)] = $1 }
    }

    /// A user's `apple:` mapping (the keys of `UserAppleKey`); field locations go to `locations` as `.apple(key)`.
    func decodeUserApple(
        _ node: YAMLNode, _ what: String, locations: inout [UserField: SourceLocation], _ cx: DecodingContext
    ) -> AppleOptions {
        let entries = cx.mapping(node, "\(what): 'apple'", keys: UserAppleKey.self)?.map {
            (key: $0.key.appleKey, keyNode: $0.keyNode, value: $0.value)
        }
        return decodeApple(entries, what, cx) { locations[.apple($0)] = $1 }
    }

    /// The entries of an `apple:` mapping; `record` keeps where each value was written.
    func decodeApple(
        _ entries: [(key: AppleKey, keyNode: YAMLNode, value: YAMLNode)]?, _ what: String, _ cx: DecodingContext,
        record: (AppleKey, SourceLocation) -> Void
    ) -> AppleOptions {
        var o = AppleOptions()
        guard let entries else { return o }
        for (key, _, value) in entries {
            if value.isNull { continue }
            let field = "\(what): 'apple.\(key.rawValue)'"
            switch key {
            case .onDemand: o.onDemand = cx.bool(value, field)
            case .includeAllNetworks: o.includeAllNetworks = cx.bool(value, field)
            case .excludeLocalNetworks: o.excludeLocalNetworks = cx.bool(value, field)
            case .pfs: o.pfs = cx.bool(value, field)
            case .crlCheck: o.crlCheck = cx.bool(value, field)
            case .dpd: o.dpd = cx.choice(value, field, AppleDPDRate.self)
            case .disconnectOnIdle:
                o.disconnectOnIdle = cx.integer(value, field, minimum: 0, maximum: Self.maxDisconnectOnIdle)
            case .trustedSSIDs:
                guard let list = cx.stringList(value, field) else { continue }
                var ssids: [String] = []
                var repeats = DecodingContext.Repeats()
                defer { repeats.report(field, shown: DecodingContext.printable, into: cx) }
                for (ssid, item) in list {
                    // 802.11 SSIDs are 1 to 32 octets.
                    if ssid.isEmpty || ssid.utf8.count > 32 {
                        cx.error(
                            .invalidValue,
                            "\(field): '\(DecodingContext.printable(ssid))' is not a Wi-Fi network name (1 to 32 bytes)",
                            at: item)
                    } else if let bad = ssid.unicodeScalars.first(where: {
                        !TextCheck.xmlCanCarry($0) || TextCheck.isControl($0)
                    }) {
                        // The name goes into the Apple profile's XML (SSIDMatch), which cannot carry
                        // U+0000...U+001F but tab and line breaks, U+FFFE or U+FFFF, and a device would
                        // not match a name with any other control character either.
                        cx.error(
                            .unrepresentableText,
                            "\(field): '\(DecodingContext.printable(ssid))' contains \(String(format: "U+%04X", bad.value)), which an Apple profile cannot carry",
                            at: item)
                    } else if ssids.contains(ssid) {
                        repeats.add(ssid, at: item)
                    } else {
                        ssids.append(ssid)
                    }
                }
                o.trustedSSIDs = ssids
            }
            record(key, cx.location(value))
        }
        return o
    }

    /// A `network:` mapping. Interface names follow the kernel's rules (1 to 15 bytes, no `/`, no
    /// space), narrowed to the characters every output that names them can carry unquoted.
    func decodeNetwork(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext) {
        guard let entries = cx.mapping(value, "\(what): 'network'", keys: NetworkKey.self) else { return }
        for (key, _, v) in entries {
            if v.isNull { continue }
            let field = "\(what): 'network.\(key.rawValue)'"
            switch key {
            case .uplink:
                guard let name = cx.string(v, field) else { continue }
                guard Self.isInterfaceName(name) else {
                    cx.error(
                        .invalidValue,
                        "\(field): '\(DecodingContext.printable(name))' is not a network interface name (1 to 15 of A-Z a-z 0-9 . _ -, not '.' or '..')",
                        at: v)
                    continue
                }
                f.uplink = name
            case .mss:
                if case .scalar(let text, _) = v.kind, text == "auto" {
                    f.mss = .routeMTU
                } else if let n = cx.integer(
                    v, field, minimum: Self.mssRange.lowerBound, maximum: Self.mssRange.upperBound)
                {
                    f.mss = .fixed(n)
                } else {
                    continue
                }
            case .isolateClients:
                guard let b = cx.bool(v, field) else { continue }
                f.isolateClients = b
            case .ipsec:
                guard let c = cx.choice(v, field, NodeNetwork.IPsecPath.self) else { continue }
                f.ipsec = c
            case .allowPrivate:
                // Addresses or CIDR networks of either family, like accounts.disconnect_from; each entry's
                // line is kept for the validator (`network.allow_private.<index>`).
                guard let list = cx.stringList(v, field) else { continue }
                var networks: [CIDR] = []
                for (text, item) in list {
                    let single = IPAddressText.parse(text).map { CIDR(address: $0, prefix: $0.count * 8) }
                    guard let network = single ?? cx.cidr(item, "\(field) entry", ipv6: text.contains(":")) else {
                        continue
                    }
                    f.locations[.allowPrivate(networks.count)] = cx.location(item)
                    networks.append(network)
                }
                f.allowPrivate = networks
            case .ipv6:
                guard let c = cx.choice(v, field, NodeNetwork.IPv6Mode.self) else { continue }
                f.ipv6 = c
            }
            f.locations[.network(key)] = cx.location(v)
        }
    }

    /// `quantum_safe: {ml_kem: [mlkem768], classical_fallback: false, ppk: required|optional}`: at least one of
    /// `ml_kem` and `ppk`; each bad value at its line. nil (reported) when nothing usable was written.
    func decodeQuantumSafe(_ value: YAMLNode, _ what: String, into f: inout NodeFields, _ cx: DecodingContext)
        -> QuantumSafe?
    {
        guard let entries = cx.mapping(value, "\(what): 'quantum_safe'", keys: QuantumSafeKey.self) else { return nil }
        var settings = QuantumSafe(mlKEM: [], classicalFallback: false, ppk: nil)
        var ok = true
        for (key, _, v) in entries {
            if v.isNull { continue }
            let field = "\(what): 'quantum_safe.\(key.rawValue)'"
            switch key {
            case .mlKEM:
                guard let list = cx.choiceList(v, field, QuantumSafe.MLKEM.self) else {
                    ok = false
                    continue
                }
                if list.isEmpty {
                    cx.error(
                        .invalidValue, "\(field) names no ML-KEM parameter set (mlkem512, mlkem768, mlkem1024)", at: v)
                    ok = false
                    continue
                }
                settings.mlKEM = list
            case .classicalFallback:
                guard let b = cx.bool(v, field) else {
                    ok = false
                    continue
                }
                settings.classicalFallback = b
            case .ppk:
                guard let mode = cx.choice(v, field, QuantumSafe.PPKMode.self) else {
                    ok = false
                    continue
                }
                settings.ppk = mode
            }
            f.locations[.quantumSafe(key)] = cx.location(v)
        }
        guard ok else { return nil }
        if settings.mlKEM.isEmpty && settings.ppk == nil {
            cx.error(
                .missingKey,
                "\(what): 'quantum_safe' needs 'ml_kem' (a hybrid key exchange, e.g. [mlkem768]) or 'ppk' (required or optional), or both",
                at: value)
            return nil
        }
        return settings
    }
}
