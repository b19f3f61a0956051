internal import CCrypto
import Foundation

/// One subjectAltName entry.
package enum GeneralName: Sendable, Hashable, CustomStringConvertible {
    case dnsName(String)
    /// 4 or 16 bytes in a well-formed certificate; a parsed one may carry any length.
    case ipAddress([UInt8])
    case rfc822Name(String)

    package var description: String {
        switch self {
        case .dnsName(let v): return "DNS:\(v)"
        case .rfc822Name(let v): return "email:\(v)"
        case .ipAddress(let b):
            if b.count == 4 { return "IP:" + b.map(String.init).joined(separator: ".") }
            if b.count == 16 {
                return "IP:"
                    + stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }
                    .joined(separator: ":")
            }
            // Any other length is no address (a crafted or damaged certificate): shown as its bytes,
            // never read past its end.
            return "IP:#" + hexString(b).lowercased()
        }
    }
}

/// One attribute of a distinguished name, e.g. ("CN", "fra-1").
package struct NameAttribute: Sendable, Hashable {
    /// OpenSSL short name ("C", "O", "OU", "CN", "emailAddress", ...).
    package var type: String
    package var value: String
    package init(_ type: String, _ value: String) {
        self.type = type
        self.value = value
    }
}

/// A distinguished name as an ordered list of single-valued RDNs.
package struct DistinguishedName: Sendable, Hashable, CustomStringConvertible {
    package var attributes: [NameAttribute]
    package init(_ attributes: [NameAttribute]) { self.attributes = attributes }

    /// strongSwan's textual form: "C=DE, O=acme, CN=fra-1".
    package var description: String { attributes.map { "\($0.type)=\($0.value)" }.joined(separator: ", ") }

    package var commonName: String? { attributes.last { $0.type == "CN" }?.value }

    /// An X509_NAME for this DN (caller frees). String types follow strongSwan's DN encoder:
    /// PrintableString when the value allows it, IA5String for e-mail, DC and unstructuredName,
    /// UTF8String otherwise. DNs come from `parse` (DistinguishedNameGrammar.swift).
    func makeName() throws -> OpaquePointer {
        guard let name = X509_NAME_new() else { throw CryptoError.openSSL("cannot allocate a name") }
        for attribute in attributes {
            let nid = OBJ_txt2nid(attribute.type)
            guard nid != NID_undef else {
                X509_NAME_free(name)
                throw CryptoError("unknown name attribute '\(attribute.type)'")
            }
            let bytes = Array(attribute.value.utf8)
            let type: Int32
            if DistinguishedName.isIA5(attribute.type) {
                type = V_ASN1_IA5STRING
            } else if DistinguishedName.isPrintable(bytes) {
                type = V_ASN1_PRINTABLESTRING
            } else {
                type = V_ASN1_UTF8STRING
            }
            guard X509_NAME_add_entry_by_NID(name, nid, type, bytes, Int32(bytes.count), -1, 0) == 1 else {
                X509_NAME_free(name)
                throw CryptoError.openSSL("cannot encode name attribute '\(attribute.type)'")
            }
        }
        return name
    }

    static func isPrintable(_ bytes: [UInt8]) -> Bool {
        let extra = Set(" '()+,-./:=?".utf8)
        return bytes.allSatisfy {
            (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || extra.contains($0)
        }
    }

    static func read(_ name: OpaquePointer?) -> DistinguishedName {
        guard let name else { return DistinguishedName([]) }
        var attributes: [NameAttribute] = []
        for i in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, i) else { continue }
            let nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))
            let type =
                nid == NID_undef ? objectText(X509_NAME_ENTRY_get_object(entry)) : String(cString: OBJ_nid2sn(nid))
            let value = String(decoding: asn1StringBytes(X509_NAME_ENTRY_get_data(entry)), as: UTF8.self)
            attributes.append(NameAttribute(type, value))
        }
        return DistinguishedName(attributes)
    }
}

/// Well-known extended key usages.
package enum ExtendedKeyUsage: String, Sendable, Hashable, CaseIterable {
    case serverAuth = "1.3.6.1.5.5.7.3.1"
    case clientAuth = "1.3.6.1.5.5.7.3.2"
    case ikeIntermediate = "1.3.6.1.5.5.8.2.2"
    package var oid: String { rawValue }
}

/// keyUsage bits.
package struct KeyUsage: OptionSet, Sendable, Hashable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package static let digitalSignature = KeyUsage(rawValue: 0x80)
    package static let keyEncipherment = KeyUsage(rawValue: 0x20)
    package static let keyCertSign = KeyUsage(rawValue: 0x04)
    package static let cRLSign = KeyUsage(rawValue: 0x02)

    var extensionText: String {
        var parts: [String] = []
        if contains(.digitalSignature) { parts.append("digitalSignature") }
        if contains(.keyEncipherment) { parts.append("keyEncipherment") }
        if contains(.keyCertSign) { parts.append("keyCertSign") }
        if contains(.cRLSign) { parts.append("cRLSign") }
        return parts.joined(separator: ",")
    }
}

/// An X.509 certificate (immutable; safe to share across threads).
package final class X509Certificate: Sendable {
    // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the X509 behind it is only read after init.
    nonisolated(unsafe) let x509: OpaquePointer

    init(owning x509: OpaquePointer) { self.x509 = x509 }
    deinit { X509_free(x509) }

    package convenience init(pem: String) throws {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        guard let x509 = PEM_read_bio_X509(bio.bio, nil, nil, nil) else {
            throw CryptoError.openSSL("cannot parse the certificate PEM")
        }
        self.init(owning: x509)
    }

    package convenience init(der: [UInt8]) throws {
        ERR_clear_error()
        let x509: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &pointer, buffer.count)
        }
        guard let x509 else { throw CryptoError.openSSL("cannot parse the certificate DER") }
        self.init(owning: x509)
    }

    /// PEM of `der` (armoured in Swift: no allocation inside libcrypto that could fail).
    package var pem: String { PEMArmour.wrap(der, label: "CERTIFICATE") }

    /// The DER encoding. A parsed or signed certificate keeps its encoding inside libcrypto, so this
    /// does not fail in practice; if it ever did, the result is empty (which every reader refuses)
    /// instead of a trap.
    package var der: [UInt8] { (try? derEncode { i2d_X509(x509, $0) }) ?? [] }

    /// Serial number, big-endian magnitude.
    package var serial: [UInt8] { integerBytes(X509_get0_serialNumber(x509)) }
    package var serialHex: String { hexString(serial) }

    package var notBefore: Date { ASN1Time.date(X509_get0_notBefore(x509)) ?? .distantPast }
    package var notAfter: Date { ASN1Time.date(X509_get0_notAfter(x509)) ?? .distantPast }

    package var subject: DistinguishedName { DistinguishedName.read(X509_get_subject_name(x509)) }
    package var issuer: DistinguishedName { DistinguishedName.read(X509_get_issuer_name(x509)) }

    package var subjectAlternativeNames: [GeneralName] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { vpnprov_GENERAL_NAMES_free(names) }
        var out: [GeneralName] = []
        for i in 0..<vpnprov_sk_GENERAL_NAME_num(names) {
            guard let name = vpnprov_sk_GENERAL_NAME_value(names, i) else { continue }
            let type = name.pointee.type
            if type == vpnprov_GEN_DNS() {
                out.append(.dnsName(String(decoding: asn1StringBytes(name.pointee.d.dNSName), as: UTF8.self)))
            } else if type == vpnprov_GEN_EMAIL() {
                out.append(.rfc822Name(String(decoding: asn1StringBytes(name.pointee.d.rfc822Name), as: UTF8.self)))
            } else if type == vpnprov_GEN_IPADD() {
                out.append(.ipAddress(asn1StringBytes(name.pointee.d.iPAddress)))
            }
        }
        return out
    }

    /// Extended key usage OIDs in dotted form.
    package var extendedKeyUsageOIDs: [String] {
        guard let raw = X509_get_ext_d2i(x509, NID_ext_key_usage, nil, nil) else { return [] }
        let usages = OpaquePointer(raw)
        defer { vpnprov_EXTENDED_KEY_USAGE_free(usages) }
        return (0..<vpnprov_sk_ASN1_OBJECT_num(usages)).map { objectText(vpnprov_sk_ASN1_OBJECT_value(usages, $0)) }
    }

    /// Certificate policy OIDs in dotted form, in the certificate's order (empty without the extension).
    package var certificatePolicyOIDs: [String] {
        guard let raw = X509_get_ext_d2i(x509, NID_certificate_policies, nil, nil) else { return [] }
        let policies = OpaquePointer(raw)
        defer { vpnprov_CERTIFICATEPOLICIES_free(policies) }
        return (0..<vpnprov_sk_POLICYINFO_num(policies)).map { objectText(vpnprov_POLICYINFO_oid(policies, $0)) }
    }

    /// keyUsage bits (empty when the extension is absent).
    package var keyUsage: KeyUsage {
        let flags = X509_get_extension_flags(x509)
        guard flags & UInt32(EXFLAG_KUSAGE) != 0 else { return [] }
        return KeyUsage(rawValue: X509_get_key_usage(x509))
    }

    /// basicConstraints cA is true.
    package var isCA: Bool { X509_get_extension_flags(x509) & UInt32(EXFLAG_CA) != 0 }

    /// Dotted OIDs of all extensions, and which of them are critical.
    package var extensions: [(oid: String, critical: Bool)] {
        (0..<X509_get_ext_count(x509)).compactMap { i in
            guard let ext = X509_get_ext(x509, i) else { return nil }
            return (objectText(X509_EXTENSION_get_object(ext)), X509_EXTENSION_get_critical(ext) == 1)
        }
    }

    package var subjectKeyIdentifier: [UInt8]? {
        _ = X509_get_extension_flags(x509)
        guard let id = X509_get0_subject_key_id(x509) else { return nil }
        return asn1StringBytes(id)
    }

    package var authorityKeyIdentifier: [UInt8]? {
        _ = X509_get_extension_flags(x509)
        guard let id = X509_get0_authority_key_id(x509) else { return nil }
        return asn1StringBytes(id)
    }

    /// Signature algorithm short name, e.g. "ecdsa-with-SHA256".
    package var signatureAlgorithm: String { String(cString: OBJ_nid2sn(X509_get_signature_nid(x509))) }

    package var fingerprintSHA256: [UInt8] { Digest.sha256(der) }

    /// DER SubjectPublicKeyInfo of the certified key (as `PrivateKey.publicKeyDER()` of its key).
    /// The certificate's own SubjectPublicKeyInfo is re-encoded as stored, without OpenSSL 3's
    /// key encoder, which is costly (docs/benchmarks.md, "Why the code is shaped this way").
    package func publicKeyDER() throws -> [UInt8] {
        guard let spki = X509_get_X509_PUBKEY(x509) else {
            throw CryptoError.openSSL("the certificate has no public key")
        }
        return try derEncode { i2d_X509_PUBKEY(spki, $0) }
    }

    /// The certified public key, decoded, for `body`; nil when it cannot be decoded. A leaf
    /// certificate this process issued holds its key only encoded (`CertificateIssuer`): the key is
    /// then decoded from a copy of the certificate.
    func withPublicKey<R>(_ body: (OpaquePointer) -> R) -> R? {
        if let pub = X509_get0_pubkey(x509) { return body(pub) }
        ERR_clear_error()
        guard let copy = try? X509Certificate(der: der), let pub = X509_get0_pubkey(copy.x509) else {
            ERR_clear_error()
            return nil
        }
        return withExtendedLifetime(copy) { body(pub) }
    }

    /// The public key's algorithm.
    package var publicKeyAlgorithm: KeyAlgorithm? {
        withPublicKey { pub -> KeyAlgorithm? in
            switch EVP_PKEY_get_base_id(pub) {
            case EVP_PKEY_RSA: return .rsa(bits: Int(EVP_PKEY_get_bits(pub)))
            case EVP_PKEY_EC:
                return EVP_PKEY_get_bits(pub) == 384 ? .ecdsaP384 : EVP_PKEY_get_bits(pub) == 256 ? .ecdsaP256 : nil
            default: return nil
            }
        } ?? nil
    }

    /// True when `issuer`'s key verifies this certificate's signature.
    package func isSigned(by issuer: X509Certificate) -> Bool {
        issuer.withPublicKey { pub in
            ERR_clear_error()
            defer { ERR_clear_error() }
            return X509_verify(x509, pub) == 1
        } ?? false
    }

    /// Parses every certificate in a PEM bundle.
    package static func all(pem: String) throws -> [X509Certificate] {
        var out: [X509Certificate] = []
        var rest = Substring(pem)
        let end = "-----END CERTIFICATE-----"
        while let range = rest.range(of: end) {
            out.append(try X509Certificate(pem: String(rest[..<range.upperBound]) + "\n"))
            rest = rest[range.upperBound...]
        }
        return out
    }
}
