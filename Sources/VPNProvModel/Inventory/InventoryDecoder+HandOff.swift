import VPNProvYAML

extension InventoryDecoder {
    /// `handoff: {address, deploy: {host, port, user, become}, expires, downloads}` (docs/handoff.md).
    /// `address` is required: it is the host of every link.
    func decodeHandOff(_ node: YAMLNode, _ cx: DecodingContext) -> HandOffSettings? {
        guard let entries = cx.mapping(node, "'handoff'", keys: HandOffKey.self) else { return nil }
        var settings = HandOffSettings(address: "", location: cx.location(node))
        var sawAddress = false
        for (key, _, value) in entries {
            let field = "'handoff.\(key.rawValue)'"
            settings.fieldLocations[key] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .address:
                guard let address = cx.string(value, field) else { continue }
                sawAddress = true
                settings.address = address
            case .deploy:
                guard let deploy = cx.mapping(value, field, keys: DeployKey.self) else { continue }
                for (dk, _, dv) in deploy {
                    let sub = "'handoff.deploy.\(dk.rawValue)'"
                    settings.deployLocations[dk] = cx.location(dv)
                    switch dk {
                    case .host: settings.deploy.host = cx.string(dv, sub) ?? settings.deploy.host
                    case .port: settings.deploy.port = cx.integer(dv, sub, minimum: 1, maximum: 65535) ?? 22
                    case .user: settings.deploy.user = cx.string(dv, sub) ?? settings.deploy.user
                    case .become: settings.deploy.become = cx.bool(dv, sub) ?? false
                    }
                }
            case .expires:
                guard let text = cx.string(value, field) else { continue }
                let range = HandOffSettings.lifetimeRange
                guard let seconds = HandOffSettings.seconds(text), range.contains(seconds) else {
                    cx.error(
                        .invalidValue,
                        "\(field) must be a lifetime from \(HandOffSettings.text(seconds: range.lowerBound)) to "
                            + "\(HandOffSettings.text(seconds: range.upperBound)), written as minutes, hours or days "
                            + "('90m', '72h', '3d'); found \(cx.describe(value))", at: value)
                    continue
                }
                settings.lifetime = seconds
            case .downloads:
                let range = HandOffSettings.downloadsRange
                if let n = cx.integer(value, field, minimum: range.lowerBound, maximum: range.upperBound) {
                    settings.downloads = n
                }
            }
        }
        guard sawAddress else {
            cx.error(
                .missingKey,
                "'handoff': missing required key 'address' (the DNS name of the hand-off site, the host of every link)",
                at: node)
            return nil
        }
        return settings
    }
}
