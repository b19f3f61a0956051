internal import CCrypto
import Foundation

/// What a certificate to be issued says.
package struct CertificateTemplate: Sendable, Hashable {
    package var serial: [UInt8]
    package var subject: DistinguishedName
    package var notBefore: Date
    package var notAfter: Date
    package var subjectAlternativeNames: [GeneralName]
    package var extendedKeyUsages: [ExtendedKeyUsage]
    package var keyUsage: KeyUsage
    /// basicConstraints cA (critical for a CA).
    package var isCA: Bool
    /// URIs of the CRL distribution point (one DistributionPoint with these full names); empty: none.
    package var crlDistributionPoints: [String] = []
    /// Certificate policy OIDs (dotted decimal), in this order; empty: no certificatePolicies extension.
    package var policies: [String] = []

    package init(
        serial: [UInt8], subject: DistinguishedName, notBefore: Date, notAfter: Date,
        subjectAlternativeNames: [GeneralName] = [], extendedKeyUsages: [ExtendedKeyUsage] = [],
        keyUsage: KeyUsage, isCA: Bool = false, policies: [String] = []
    ) {
        self.policies = policies
        self.serial = serial
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectAlternativeNames = subjectAlternativeNames
        self.extendedKeyUsages = extendedKeyUsages
        self.keyUsage = keyUsage
        self.isCA = isCA
    }
}

package enum CertificateIssuer {
    /// Sets an EC key's SubjectPublicKeyInfo from the key's encoded point and named curve, the fields
    /// `X509_set_pubkey` writes; false for other keys (the caller then uses `X509_set_pubkey`). OpenSSL
    /// 3.0's `X509_set_pubkey` encodes the key with its encoder framework and decodes the result again,
    /// 3 % of a fleet's run from scratch for 400 users (docs/benchmarks.md, "Why the code is shaped
    /// this way"). The certificate then holds its public key only encoded: `X509Certificate` decodes it
    /// from a copy where a key is needed (`withPublicKey`). Leaf certificates only: a CA certificate's
    /// key is read in this run (CRLs, cross-certificates).
    private static func setEncodedPublicKey(_ x509: OpaquePointer, _ key: PrivateKey) -> Bool {
        let curve: Int32
        switch key.algorithm {
        case .ecdsaP256: curve = NID_X9_62_prime256v1
        case .ecdsaP384: curve = NID_secp384r1
        case .rsa, nil: return false
        }
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key.pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nil, 0, &length) == 1,
            length > 0, let point = CRYPTO_malloc(length, #fileID, #line)?.assumingMemoryBound(to: UInt8.self)
        else {
            ERR_clear_error()
            return false
        }
        guard
            EVP_PKEY_get_octet_string_param(key.pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, length, &length) == 1,
            let spki = X509_get_X509_PUBKEY(x509),
            // Takes `point`; the two objects are OpenSSL's static ones.
            X509_PUBKEY_set0_param(
                spki, OBJ_nid2obj(NID_X9_62_id_ecPublicKey), V_ASN1_OBJECT,
                UnsafeMutableRawPointer(OBJ_nid2obj(curve)), point, Int32(length)) == 1
        else {
            vpnprov_OPENSSL_free(point)
            ERR_clear_error()
            return false
        }
        return true
    }

    /// A self-signed CA certificate: basicConstraints CA (critical), keyUsage keyCertSign+cRLSign
    /// (critical), subject and authority key identifiers. SHA-384 for P-384 keys, else SHA-256.
    package static func selfSigned(_ template: CertificateTemplate, key: PrivateKey) throws -> X509Certificate {
        try issue(template, subjectKey: key, issuer: nil, issuerKey: key)
    }

    /// A certificate for `subjectKey` signed by `issuer`/`issuerKey`.
    package static func issue(
        _ template: CertificateTemplate, subjectKey: PrivateKey, issuer: X509Certificate?, issuerKey: PrivateKey
    ) throws -> X509Certificate {
        ERR_clear_error()
        guard let x509 = X509_new() else { throw CryptoError.openSSL("cannot allocate a certificate") }
        let cert = X509Certificate(owning: x509)
        guard X509_set_version(x509, 2) == 1 else { throw CryptoError.openSSL("cannot set the version") }
        let serial = try makeInteger(template.serial)
        defer { ASN1_INTEGER_free(serial) }
        guard X509_set_serialNumber(x509, serial) == 1 else { throw CryptoError.openSSL("cannot set the serial") }
        let subject = try template.subject.makeName()
        defer { X509_NAME_free(subject) }
        guard X509_set_subject_name(x509, subject) == 1 else { throw CryptoError.openSSL("cannot set the subject") }
        let issuerName = issuer.map { X509_get_subject_name($0.x509) } ?? subject
        guard X509_set_issuer_name(x509, issuerName) == 1 else { throw CryptoError.openSSL("cannot set the issuer") }
        try ASN1Time.set(X509_getm_notBefore(x509), template.notBefore)
        try ASN1Time.set(X509_getm_notAfter(x509), template.notAfter)
        if template.isCA || !setEncodedPublicKey(x509, subjectKey) {
            guard X509_set_pubkey(x509, subjectKey.pkey) == 1 else {
                throw CryptoError.openSSL("cannot set the public key")
            }
        }
        try addExtensions(template, to: x509, issuer: issuer)
        let algorithm = issuerKey.algorithm ?? .ecdsaP256
        guard X509_sign(x509, issuerKey.pkey, algorithm.signingDigest) > 0 else {
            throw CryptoError.openSSL("cannot sign the certificate")
        }
        return cert
    }

    /// The template's X.509v3 extensions: basic constraints, key usages, key identifiers, subject alternative
    /// names, CRL distribution points and certificate policies.
    private static func addExtensions(
        _ template: CertificateTemplate, to x509: OpaquePointer, issuer: X509Certificate?
    ) throws {
        var ctx = X509V3_CTX()
        vpnprov_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, issuer?.x509 ?? x509, x509, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                throw CryptoError.openSSL("cannot build extension \(String(cString: OBJ_nid2sn(nid)))")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { throw CryptoError.openSSL("cannot add an extension") }
        }
        try add(NID_basic_constraints, template.isCA ? "critical,CA:TRUE" : "CA:FALSE")
        if !template.keyUsage.isEmpty { try add(NID_key_usage, "critical," + template.keyUsage.extensionText) }
        if !template.extendedKeyUsages.isEmpty {
            try add(NID_ext_key_usage, template.extendedKeyUsages.map(\.oid).joined(separator: ","))
        }
        try add(NID_subject_key_identifier, "hash")
        try add(NID_authority_key_identifier, "keyid:always")
        if !template.subjectAlternativeNames.isEmpty {
            try addSubjectAlternativeNames(template.subjectAlternativeNames, to: x509)
        }
        if !template.crlDistributionPoints.isEmpty {
            // OpenSSL's configuration syntax separates names with commas; callers pass URIs without them.
            guard template.crlDistributionPoints.allSatisfy({ !$0.contains(",") && !$0.contains("\n") }) else {
                throw CryptoError.openSSL("a CRL distribution point URI contains a comma or a line break")
            }
            try add(
                NID_crl_distribution_points, template.crlDistributionPoints.map { "URI:" + $0 }.joined(separator: ","))
        }
        if !template.policies.isEmpty {
            // Plain dotted OIDs only: the configuration syntax would read anything else as a section
            // reference or a qualifier.
            guard
                template.policies.allSatisfy({ oid in
                    !oid.isEmpty && oid.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
                })
            else {
                throw CryptoError.openSSL("a certificate policy is not a dotted decimal OID")
            }
            // OpenSSL builds this extension only with a configuration database at hand, though plain
            // OIDs never read from it: an empty one.
            guard let conf = NCONF_new(nil) else { throw CryptoError.openSSL("cannot allocate a configuration") }
            defer { NCONF_free(conf) }
            X509V3_set_nconf(&ctx, conf)
            defer { X509V3_set_nconf(&ctx, nil) }
            try add(NID_certificate_policies, template.policies.joined(separator: ","))
        }
    }

    private static func addSubjectAlternativeNames(_ names: [GeneralName], to x509: OpaquePointer) throws {
        guard let stack = vpnprov_sk_GENERAL_NAME_new_null() else { throw CryptoError.openSSL("cannot allocate names") }
        defer { vpnprov_GENERAL_NAMES_free(stack) }
        for name in names {
            // dNSName and rfc822Name are IA5Strings, iPAddress an OCTET STRING of 4 or 16 bytes.
            let (type, stringType, bytes): (Int32, Int32, [UInt8])
            switch name {
            case .dnsName(let v): (type, stringType, bytes) = (vpnprov_GEN_DNS(), V_ASN1_IA5STRING, Array(v.utf8))
            case .rfc822Name(let v): (type, stringType, bytes) = (vpnprov_GEN_EMAIL(), V_ASN1_IA5STRING, Array(v.utf8))
            case .ipAddress(let b): (type, stringType, bytes) = (vpnprov_GEN_IPADD(), V_ASN1_OCTET_STRING, b)
            }
            guard let general = GENERAL_NAME_new() else { throw CryptoError.openSSL("cannot allocate a name") }
            guard let string = ASN1_STRING_type_new(stringType) else {
                GENERAL_NAME_free(general)
                throw CryptoError.openSSL("cannot allocate a string")
            }
            guard ASN1_STRING_set(string, bytes, Int32(bytes.count)) == 1 else {
                ASN1_STRING_free(string)
                GENERAL_NAME_free(general)
                throw CryptoError.openSSL("cannot set a name")
            }
            GENERAL_NAME_set0_value(general, type, UnsafeMutableRawPointer(string))
            guard vpnprov_sk_GENERAL_NAME_push(stack, general) > 0 else {
                GENERAL_NAME_free(general)
                throw CryptoError.openSSL("cannot add a name")
            }
        }
        guard
            X509_add1_ext_i2d(x509, NID_subject_alt_name, UnsafeMutableRawPointer(stack), 0, UInt(X509V3_ADD_DEFAULT))
                == 1
        else {
            throw CryptoError.openSSL("cannot add subjectAltName")
        }
    }
}
