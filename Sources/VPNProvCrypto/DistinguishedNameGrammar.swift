internal import CCrypto

// The one grammar of distinguished names written in an inventory, used by validation and by issuing
// (`DistinguishedName.parse`), so that `validate` accepts exactly the DNs `generate` can issue and
// strongSwan reads back as the same name.
//
// strongSwan reads a DN identity in swanctl.conf with atodn (src/libstrongswan/utils/identification.c):
// RDNs separated by ',' (or by '/' when the text starts with '/'), each `keyword=value`, the keyword
// looked up case-insensitively in its `x501rdns` table; an unknown keyword makes the whole identity a
// key ID that never matches a certificate. vpnprov issues the certificate with OpenSSL, by object.
// Accepted are the keywords that strongSwan 5.9.8 and later know (the table has only grown since)
// whose OID OpenSSL knows too, issued with that very OID, and whose X.520 syntax is a string:
// not ND, EN/employeeNumber and TCGID (OpenSSL has no such object), not ID (x500UniqueIdentifier,
// a BIT STRING) or postalAddress (a SEQUENCE), not organizationIdentifier (6.x only). OpenSSL's own
// names that strongSwan does not know (S, GN, title, ...) and dotted OIDs (`2.5.4.3=x`) are refused.
//
// Values as atodn reads them: spaces around keyword and value are not part of them; a value that
// starts with '=' is refused (atodn skips every '=' before a value, OpenSSL would not); at most 20
// RDNs (strongSwan's RDN_MAX).

/// One attribute type a DN identity may use.
package struct DNAttributeType: Sendable, Hashable {
    /// strongSwan's keywords for it (x501rdns), matched case-insensitively; the first is its name here.
    package let keywords: [String]
    /// The OID, dotted.
    package let oid: String
    /// OpenSSL's short name for that OID (what `NameAttribute.type` holds).
    package let openSSLName: String
    /// strongSwan encodes the value as an IA5String (e-mail, unstructured name); else PrintableString
    /// when the value allows it, UTF8String otherwise.
    let ia5: Bool

    init(_ keywords: [String], _ oid: String, _ openSSLName: String, ia5: Bool = false) {
        self.keywords = keywords
        self.oid = oid
        self.openSSLName = openSSLName
        self.ia5 = ia5
    }
}

extension DistinguishedName {
    /// Every attribute type a DN identity may use (see the comment above).
    package static let attributeTypes: [DNAttributeType] = [
        DNAttributeType(["C"], "2.5.4.6", "C"),
        DNAttributeType(["ST"], "2.5.4.8", "ST"),
        DNAttributeType(["L"], "2.5.4.7", "L"),
        DNAttributeType(["STREET"], "2.5.4.9", "street"),
        DNAttributeType(["postalCode"], "2.5.4.17", "postalCode"),
        DNAttributeType(["O"], "2.5.4.10", "O"),
        DNAttributeType(["OU"], "2.5.4.11", "OU"),
        DNAttributeType(["CN"], "2.5.4.3", "CN"),
        DNAttributeType(["SN"], "2.5.4.4", "SN"),
        DNAttributeType(["G"], "2.5.4.42", "GN"),
        DNAttributeType(["I"], "2.5.4.43", "initials"),
        DNAttributeType(["N"], "2.5.4.41", "name"),
        DNAttributeType(["T"], "2.5.4.12", "title"),
        DNAttributeType(["D"], "2.5.4.13", "description"),
        DNAttributeType(["serialNumber"], "2.5.4.5", "serialNumber"),
        DNAttributeType(["dnQualifier"], "2.5.4.46", "dnQualifier"),
        DNAttributeType(["dmdName"], "2.5.4.54", "dmdName"),
        DNAttributeType(["pseudonym"], "2.5.4.65", "pseudonym"),
        DNAttributeType(["UID"], "0.9.2342.19200300.100.1.1", "UID"),
        DNAttributeType(["DC"], "0.9.2342.19200300.100.1.25", "DC", ia5: true),
        DNAttributeType(["E", "Email", "emailAddress"], "1.2.840.113549.1.9.1", "emailAddress", ia5: true),
        DNAttributeType(["UN", "unstructuredName"], "1.2.840.113549.1.9.2", "unstructuredName", ia5: true),
        DNAttributeType(["UA", "unstructuredAddress"], "1.2.840.113549.1.9.8", "unstructuredAddress"),
    ]

    /// strongSwan's RDN_MAX: atodn refuses a DN with more RDNs.
    static let maxRDNs = 20

    private static let byKeyword: [String: DNAttributeType] = {
        var table: [String: DNAttributeType] = [:]
        for t in attributeTypes { for k in t.keywords { table[k.lowercased()] = t } }
        return table
    }()

    private static let byOpenSSLName: [String: DNAttributeType] = {
        var table: [String: DNAttributeType] = [:]
        for t in attributeTypes { table[t.openSSLName.lowercased()] = t }
        return table
    }()

    /// Inventory keywords and OpenSSL's names (made once: a fleet's check reads a subject per connection).
    private static let byAnyName: [String: DNAttributeType] = byKeyword.merging(byOpenSSLName) { a, _ in a }

    /// The attribute type of an inventory keyword, nil when strongSwan or OpenSSL does not know it.
    static func attributeType(keyword: String) -> DNAttributeType? { byKeyword[keyword.lowercased()] }

    /// Why `text` is not a DN identity vpnprov can issue and strongSwan reads back, or nil.
    package enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case empty
        case emptyComponent
        case missingEquals(String)
        case missingAttribute
        case unknownAttribute(String)
        case emptyValue(String)
        case valueStartsWithEquals(String)
        case tooManyRDNs(Int)

        package var description: String {
            switch self {
            case .empty: return "is empty"
            case .emptyComponent: return "has an empty component"
            case .missingEquals(let pair): return "has a component without '=' ('\(pair)')"
            case .missingAttribute: return "has a component without an attribute type"
            case .unknownAttribute(let a):
                return "has an attribute type '\(a)' that strongSwan or OpenSSL does not know as the same attribute "
                    + "(allowed: \(DistinguishedName.attributeTypes.flatMap(\.keywords).joined(separator: ", ")), case-insensitive)"
            case .emptyValue(let a): return "has an empty value for '\(a)'"
            case .valueStartsWithEquals(let a):
                return "has a value for '\(a)' that starts with '=', which strongSwan would drop"
            case .tooManyRDNs(let n):
                return "has \(n) attributes; strongSwan reads at most \(DistinguishedName.maxRDNs)"
            }
        }
    }

    /// Parses a DN identity as written in an inventory (strongSwan's text form: `C=DE, O=acme, CN=x` or
    /// `/C=DE/O=acme/CN=x`): the one grammar validation and issuing share.
    package static func parseIdentity(_ text: String) -> Result<DistinguishedName, Problem> {
        parse(text, lookup: byKeyword)
    }

    /// `parseIdentity`, nil on a problem.
    package static func parse(_ text: String) -> DistinguishedName? {
        try? parseIdentity(text).get()
    }

    /// Parses `description` of a DN vpnprov issued or read from a certificate (OpenSSL's names,
    /// `title=x`), for comparing with identities; inventory keywords are accepted too.
    package static func parseDescription(_ text: String) -> DistinguishedName? {
        try? parse(text, lookup: byAnyName).get()
    }

    private static func parse(_ text: String, lookup: [String: DNAttributeType]) -> Result<DistinguishedName, Problem> {
        let trimmed = text.trimmingSpaces
        if trimmed.isEmpty { return .failure(.empty) }
        let parts: [Substring]
        if trimmed.hasPrefix("/") {
            parts = trimmed.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        } else {
            parts = trimmed.split(separator: ",", omittingEmptySubsequences: false)
        }
        if parts.count > maxRDNs { return .failure(.tooManyRDNs(parts.count)) }
        var attributes: [NameAttribute] = []
        for raw in parts {
            let pair = raw.trimmingSpaces
            if pair.isEmpty { return .failure(.emptyComponent) }
            guard let eq = pair.firstIndex(of: "=") else { return .failure(.missingEquals(String(pair))) }
            let keyword = pair[..<eq].trimmingSpaces
            let value = pair[pair.index(after: eq)...].trimmingSpaces
            if keyword.isEmpty { return .failure(.missingAttribute) }
            guard let type = lookup[keyword.lowercased()] else { return .failure(.unknownAttribute(String(keyword))) }
            if value.isEmpty { return .failure(.emptyValue(String(keyword))) }
            if value.hasPrefix("=") { return .failure(.valueStartsWithEquals(String(keyword))) }
            attributes.append(NameAttribute(type.openSSLName, String(value)))
        }
        return .success(DistinguishedName(attributes))
    }

    /// The dotted OID OpenSSL has for `name` (a short or long name), nil when it knows none.
    package static func openSSLObjectID(_ name: String) -> String? {
        let nid = OBJ_txt2nid(name)
        guard nid != NID_undef, let object = OBJ_nid2obj(nid) else { return nil }
        var buffer = [CChar](repeating: 0, count: 128)
        let n = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer.prefix(Int(n)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the value of an attribute of OpenSSL name `type` is written as an IA5String.
    static func isIA5(_ type: String) -> Bool {
        byOpenSSLName[type.lowercased()]?.ia5 ?? false
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces (U+0020 only: atodn treats nothing else as blank).
    var trimmingSpaces: SubSequence {
        var s = self[...]
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
