import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// IKE identities: each must parse as its type the way strongSwan parses it
// (strongSwan's src/libstrongswan/utils/identification.c) and be safe in swanctl.conf, Apple plists, .sswan JSON and
// certificates.
//
// Decisions: a single-label FQDN (`vpn`) warns; a trailing dot is an error (strongSwan compares
// identities literally, so `vpn.example.com.` never matches a certificate for `vpn.example.com`);
// wildcards, ranges and type markers are errors (IdentityPatterns); user@FQDN domains may contain '_'
// (default user ids are derived from the deployment name, which may); DNs follow the one DN grammar
// (VPNProvCrypto's DistinguishedNameGrammar.swift): attribute keywords strongSwan and OpenSSL both
// know as the same OID, case-insensitive; no dotted OIDs. Two users (not revoked) with the
// same identity, compared case-insensitively, are an error: the server could not tell them apart.

enum IdentityRules {
    struct Finding: Equatable {
        var severity: Severity
        var code: RuleCode
        package var message: String
    }

    /// Every problem of one identity.
    static func findings(_ id: IKEIdentity) -> [Finding] {
        var out: [Finding] = []
        func error(_ m: String) { out.append(Finding(severity: .error, code: .invalidIdentity, message: m)) }
        let value = id.value
        // Never a pattern: a peer must match exactly this identity (see IdentityPatterns).
        if let problem = IdentityPatterns.problem(id) {
            return [
                Finding(
                    severity: .error, code: .identityPattern, message: "\(TextCheck.quoted(id.swanctlValue)) \(problem)"
                )
            ]
        }
        // Safety in every output syntax, whatever the type.
        var q: String { TextCheck.quoted(value) }
        if TextCheck.hasControlCharacters(value) { error("\(q) contains control characters") }
        if value.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            error("\(q) contains '\"' or '\\'")
        }
        if value.first == " " || value.last == " " { error("\(q) starts or ends with a space") }
        if !out.isEmpty { return out }

        switch id {
        case .fqdn(let v):
            out += fqdnFindings(v)
        case .userFQDN(let v):
            out += userFQDNFindings(v)
        case .ipv4(let v), .ipv6(let v):
            if IPAddressText.parse(v) == nil { error("'\(v)' is not a valid IP address") }
        case .dn(let v):
            if let p = dnProblem(v) { error("'\(v)' (a distinguished name) \(p)") }
        case .keyID(let v):
            if v.isEmpty {
                error("keyid: has an empty key ID")
            } else if let bad = v.unicodeScalars.first(where: { !TextCheck.isPrintableASCII($0) }) {
                error(
                    "'keyid:\(v)' contains \(TextCheck.quoted(String(bad))); allowed is printable ASCII without spaces")
            } else if v.hasPrefix("#") {
                error("'keyid:\(v)' starts with '#', which strongSwan reads as hex")
            }
        }
        return out
    }

    /// A user FQDN (user@domain): one '@', a user part strongSwan reads as it is, a valid domain.
    static func userFQDNFindings(_ v: String) -> [Finding] {
        var out: [Finding] = []
        func error(_ m: String) { out.append(Finding(severity: .error, code: .invalidIdentity, message: m)) }
        let parts = v.split(separator: "@", omittingEmptySubsequences: false)
        if parts.count != 2 {
            error("'\(v)' must contain exactly one '@' (user@domain)")
            return out
        }
        let local = parts[0]
        let domain = parts[1]
        if local.isEmpty {
            error("'\(v)' has an empty user part; for an FQDN identity write it without '@'")
        } else if let bad = local.unicodeScalars.first(where: {
            !TextCheck.isPrintableASCII($0) || "\"',*".unicodeScalars.contains($0)
        }) {
            error(
                "'\(v)': the user part contains \(TextCheck.quoted(String(bad))); allowed is printable ASCII without spaces, quotes, commas or '*'"
            )
        }
        if domain.isEmpty {
            error("'\(v)' has an empty domain part")
        } else if let p = domainProblem(String(domain), allowUnderscore: true) {
            error("'\(v)': the domain \(p)")
        }
        return out
    }

    static func fqdnFindings(_ v: String) -> [Finding] {
        if v.hasSuffix(".") {
            return [
                Finding(
                    severity: .error, code: .invalidIdentity,
                    message: "'\(v)' ends with '.'; strongSwan compares identities literally, write it without the dot")
            ]
        }
        if v.contains(":") {
            return [
                Finding(
                    severity: .error, code: .invalidIdentity,
                    message: "'\(v)' is neither an IPv6 address nor an FQDN (only the keyid: type prefix is supported)")
            ]
        }
        if let p = domainProblem(v, allowUnderscore: false) {
            return [Finding(severity: .error, code: .invalidIdentity, message: "'\(v)' \(p)")]
        }
        if !v.contains(".") {
            return [
                Finding(
                    severity: .warning, code: .identitySingleLabel,
                    message:
                        "'\(v)' is a single-label FQDN: certificates and clients usually need a fully qualified name")
            ]
        }
        return []
    }

    /// Host-name rules (RFC 1123): labels of 1...63 letters, digits and hyphens, no hyphen at either
    /// end, at most 253 characters, and a last label that is not all digits (that would be a bad IP).
    static func domainProblem(_ v: String, allowUnderscore: Bool) -> String? {
        if v.unicodeScalars.count > 253 { return "is longer than 253 characters" }
        let labels = v.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            if label.isEmpty { return "has an empty label" }
            if label.unicodeScalars.count > 63 { return "has a label longer than 63 characters" }
            if let bad = label.unicodeScalars.first(where: {
                !(TextCheck.isASCIILetterOrDigit($0) || $0 == "-" || (allowUnderscore && $0 == "_"))
            }) {
                return
                    "contains \(TextCheck.quoted(String(bad))); labels allow letters, digits and '-'\(allowUnderscore ? " or '_'" : "")"
            }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "has a label starting or ending with '-'" }
        }
        if let last = labels.last, labels.count > 1, last.allSatisfy(\.isNumber) {
            return "looks like an IP address but is not a valid one"
        }
        return nil
    }

    /// Why `v` is not a DN identity: the grammar issuing uses too (DistinguishedName.parseIdentity in
    /// VPNProvCrypto), so every DN that validates is one `generate` issues and strongSwan reads back.
    static func dnProblem(_ v: String) -> String? {
        if case .failure(let problem) = DistinguishedName.parseIdentity(v) { return problem.description }
        return nil
    }

    static func describe(_ id: IKEIdentity) -> String {
        switch id {
        case .fqdn: return "FQDN"
        case .userFQDN: return "user@FQDN"
        case .ipv4: return "IPv4"
        case .ipv6: return "IPv6"
        case .dn: return "DN"
        case .keyID: return "key ID"
        }
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        for node in inventory.nodes {
            let location = node.fieldLocations[.key(.id)] ?? node.location(of: .address)
            for f in findings(node.id) {
                d.append(
                    Diagnostic(
                        f.severity, f.code, "node '\(node.name)': identity \(f.message)", at: location,
                        about: .node(node.name)))
            }
        }
        var seen: [String: (String, SourceLocation)] = [:]
        seen.reserveCapacity(inventory.users.count)
        for user in inventory.users {
            let location = user.location(of: .id)
            let findings = findings(user.id)
            for f in findings {
                d.append(
                    Diagnostic(
                        f.severity, f.code, "user '\(user.name)': identity \(f.message)", at: location,
                        about: .user(user.name)))
            }
            if user.revoked || findings.contains(where: { $0.severity == .error }) { continue }
            let key = "\(describe(user.id)):\(user.id.value.lowercased())"
            if let (other, otherLocation) = seen[key] {
                d.append(
                    .error(
                        .duplicateIdentity,
                        "user '\(user.name)': identity '\(user.id.value)' is also used by user '\(other)'; the server could not tell them apart",
                        at: location, notes: [.init(location: otherLocation, message: "user '\(other)' has it here")]))
            } else {
                seen[key] = (user.name, location)
            }
        }
    }
}
