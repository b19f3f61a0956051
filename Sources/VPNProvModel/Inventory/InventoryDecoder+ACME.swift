import VPNProvYAML

extension InventoryDecoder {
    /// `acme: {directory, email, challenge, key, ca_bundle, renew_days, roots}` (docs/acme.md). The values end up in
    /// the nodes' Ansible variables and in the renewal unit's command line, so each is held to characters
    /// that are plain in YAML, a shell word and a systemd unit.
    func decodeACME(_ node: YAMLNode, _ cx: DecodingContext) -> ACMESettings? {
        guard let entries = cx.mapping(node, "'acme'", keys: ACMEKey.self) else { return nil }
        var settings = ACMESettings(location: cx.location(node))
        for (key, _, value) in entries {
            let field = "'acme.\(key.rawValue)'"
            settings.fieldLocations[key] = cx.location(value)
            if value.isNull { continue }
            switch key {
            case .directory:
                guard let url = cx.string(value, field) else { continue }
                if let problem = Self.acmeDirectoryProblem(url) {
                    cx.error(.invalidValue, "\(field) \(problem)", at: value)
                } else {
                    settings.directory = url
                }
            case .email:
                guard let email = cx.string(value, field) else { continue }
                if Self.isPlainEmail(email) {
                    settings.email = email
                } else {
                    cx.error(
                        .invalidValue,
                        "\(field) must be an e-mail address (name@domain, no spaces or quotes), found "
                            + "'\(DecodingContext.printable(email))': the ACME CA writes to it about expiring "
                            + "certificates", at: value)
                }
            case .challenge:
                if let challenge = cx.choice(value, field, ACMESettings.Challenge.self) {
                    settings.challenge = challenge
                }
            case .key:
                if let key = cx.choice(value, field, ACMESettings.Key.self) { settings.key = key }
            case .caBundle:
                guard let path = cx.string(value, field) else { continue }
                if path.isEmpty || path.contains(where: { $0.isNewline || $0 == "\0" }) {
                    cx.error(.invalidValue, "\(field) must be the path of a PEM file", at: value)
                } else {
                    settings.caBundle = path
                }
            case .roots:
                guard let list = cx.stringList(value, field) else { continue }
                let roots = Self.acmeRoots(list, field, cx)
                if !roots.isEmpty { settings.roots = roots }
            case .renewDays:
                if let days = cx.integer(
                    value, field, minimum: ACMESettings.renewDaysRange.lowerBound,
                    maximum: ACMESettings.renewDaysRange.upperBound)
                {
                    settings.renewDays = days
                }
            }
        }
        return settings
    }

    /// `acme.roots`: the absolute paths of PEM files on the Linux clients, each of plain characters.
    static func acmeRoots(_ list: [(String, YAMLNode)], _ field: String, _ cx: DecodingContext) -> [String] {
        var roots: [String] = []
        for (path, item) in list {
            if path.hasPrefix("/"), !path.contains("//"),
                path.unicodeScalars.allSatisfy({ Self.plainPathCharacters.contains($0) })
            {
                roots.append(path)
            } else {
                cx.error(
                    .invalidValue,
                    "\(field): '\(DecodingContext.printable(path))' must be an absolute path on the Linux "
                        + "clients (letters, digits and - . _ / only), e.g. /etc/ssl/certs/ISRG_Root_X1.pem",
                    at: item)
            }
        }
        return roots
    }

    /// Why `url` cannot be an ACME directory, or nil: an `https://` URL with a host, of characters that need
    /// no quoting anywhere it is written.
    static func acmeDirectoryProblem(_ url: String) -> String? {
        guard url.hasPrefix("https://") else {
            return "must be an https:// URL (RFC 8555 requires HTTPS), found '\(DecodingContext.printable(url))'"
        }
        let rest = url.dropFirst("https://".count)
        let host = rest.prefix { $0 != "/" && $0 != ":" }
        guard !host.isEmpty else { return "has no host: '\(DecodingContext.printable(url))'" }
        guard url.unicodeScalars.allSatisfy({ Self.plainURLCharacters.contains($0) }) else {
            return "may hold only letters, digits and - . _ ~ : / ? = & % +, found '\(DecodingContext.printable(url))'"
        }
        return nil
    }

    static let plainPathCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/".unicodeScalars)

    static let plainURLCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?=&%+".unicodeScalars)

    /// One `@` between a non-empty local part and a domain with a dot, of letters, digits and `. _ + -`.
    static func isPlainEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix(".")
        else { return false }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-".unicodeScalars)
        return parts.allSatisfy { $0.unicodeScalars.allSatisfy(allowed.contains) }
    }
}
