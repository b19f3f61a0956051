import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Identities a peer matches against must match exactly one identity.
//
// strongSwan parses every configured identity string (identification.c,
// identification_create_from_string) and matches it against what the peer sends with the type's
// own rules. Several spellings make it match more than one identity:
//   - "", "%any", "%any6", "*", "0.0.0.0", "::", "0::0" are ID_ANY (anything at all);
//   - an RDN value of exactly "*" in a DN matches any value of that attribute;
//   - a leading "*" in an FQDN or e-mail identity matches every identity with that suffix;
//   - "10.0.0.0/8" and "10.0.0.1-10.0.0.9" are subnets and ranges that match every address in them;
//   - a type prefix ("fqdn:", "email:", "asn1dn:", "ipv4net:", "{11}:"...) changes the type, and for
//     the string types a value in "^...$" after it becomes a regular expression;
//   - a leading "@" forces the type ("@x" FQDN, "@@x" e-mail, "@#hex" binary key ID).
// vpnprov refuses all of these (and any '*' at all, so no later matching rule can turn one into a
// pattern) in every identity it writes: node identities are what clients require of the server,
// user identities what the server and certificates carry.

enum IdentityPatterns {
    /// strongSwan's type prefixes, lower-cased (identification.c `prefixes`). `keyid:` is vpnprov's
    /// own key-ID syntax and is split off before this check.
    static let typePrefixes = [
        "ipv4:", "ipv6:", "ipv4net:", "ipv6net:", "ipv4range:", "ipv6range:", "rfc822:", "email:", "userfqdn:", "fqdn:",
        "dns:", "asn1dn:", "asn1gn:", "xmppaddr:", "keyid:", "uri:",
    ]

    /// Why strongSwan would read `id` as matching more than exactly one identity, or as another type;
    /// nil when it reads it literally.
    static func problem(_ id: IKEIdentity) -> String? {
        let value = id.value
        if value.isEmpty { return "is empty, which strongSwan reads as %any (any identity)" }
        if value.utf8.contains(UInt8(ascii: "*")) {
            return
                "contains '*', which strongSwan treats as a wildcard (a DN value '*' matches any value, a leading '*' in an FQDN or e-mail identity any prefix)"
        }
        if value.hasPrefix("%") { return "starts with '%', which strongSwan reads as %any (any identity)" }
        switch id {
        case .keyID:
            // Key IDs are compared as bytes; the remaining forms only apply to the text types.
            return nil
        case .ipv4(let v), .ipv6(let v):
            if let bytes = IPAddressText.parse(v), bytes.allSatisfy({ $0 == 0 }) {
                return "is the unspecified address, which strongSwan reads as %any (any identity)"
            }
        case .fqdn, .userFQDN, .dn:
            break
        }
        if value.hasPrefix("@") {
            return "starts with '@', which strongSwan reads as a type marker ('@' FQDN, '@@' e-mail, '@#' hex key ID)"
        }
        let lower = value.lowercased()
        if let prefix = typePrefixes.first(where: { lower.hasPrefix($0) }) {
            return
                "starts with strongSwan's type prefix '\(value.prefix(prefix.count))', which changes how it is matched (a '^...$' value after it is a regular expression)"
        }
        if hasNumericTypePrefix(value) {
            return "starts with a numeric type prefix ('{N}:'), which makes strongSwan read it as another identity type"
        }
        if let slash = value.firstIndex(of: "/"), slash != value.startIndex,
            IPAddressText.parse(String(value[..<slash])) != nil
        {
            return "is an IP subnet, which strongSwan matches against every address in it"
        }
        if let dash = value.firstIndex(of: "-"), IPAddressText.parse(String(value[..<dash])) != nil,
            IPAddressText.parse(String(value[value.index(after: dash)...])) != nil
        {
            return "is an IP address range, which strongSwan matches against every address in it"
        }
        return nil
    }

    /// `{digits}:` at the start (strongSwan's create_from_string_with_num_type; strtoul base 0 also
    /// takes hex `0x..`).
    static func hasNumericTypePrefix(_ value: String) -> Bool {
        guard value.hasPrefix("{"), let close = value.firstIndex(of: "}") else { return false }
        let after = value.index(after: close)
        return after < value.endIndex && value[after] == ":"
    }
}
