import VPNProvYAML

extension InventoryDecoder {
    /// `monitoring: {from: [ADDRESS|NETWORK, ...], port, user_labels}` (docs/monitoring.md). `from` is
    /// required: an exporter nobody may reach is of no use, and one everybody may reach tells the world who
    /// is connected where.
    func decodeMonitoring(_ node: YAMLNode, _ cx: DecodingContext) -> MonitoringSettings? {
        guard let entries = cx.mapping(node, "'monitoring'", keys: MonitoringKey.self) else { return nil }
        var settings = MonitoringSettings(location: cx.location(node))
        var sawFrom = false
        for (key, _, value) in entries {
            let field = "'monitoring.\(key.rawValue)'"
            settings.fieldLocations[key] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .from:
                sawFrom = true
                guard let list = cx.stringList(value, field) else { continue }
                if list.isEmpty {
                    cx.error(
                        .invalidValue,
                        "\(field) names no address; name the Prometheus servers that scrape the nodes", at: value)
                }
                for (text, item) in list {
                    let single = IPAddressText.parse(text).map { CIDR(address: $0, prefix: $0.count * 8) }
                    guard let network = single ?? cx.cidr(item, "\(field) entry", ipv6: text.contains(":")) else {
                        continue
                    }
                    settings.from.append(network)
                    settings.fromLocations.append(cx.location(item))
                }
            case .port:
                if let port = cx.integer(
                    value, field, minimum: MonitoringSettings.portRange.lowerBound,
                    maximum: MonitoringSettings.portRange.upperBound)
                {
                    settings.port = port
                }
            case .userLabels:
                if let on = cx.bool(value, field) { settings.userLabels = on }
            }
        }
        if !sawFrom {
            cx.error(
                .missingKey,
                "'monitoring': missing required key 'from' (the addresses of the Prometheus servers allowed to "
                    + "scrape the nodes' exporters)", at: node)
        }
        return settings
    }
}
