internal import CCrypto
import Foundation

/// One revoked certificate in a CRL.
package struct RevokedCertificate: Sendable, Hashable {
    package var serial: [UInt8]
    package var revocationDate: Date
    package init(serial: [UInt8], revocationDate: Date) {
        self.serial = serial
        self.revocationDate = revocationDate
    }
}

/// An X.509 v2 certificate revocation list.
package final class CertificateRevocationList: Sendable {
    // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the X509_CRL behind it is only read after init.
    nonisolated(unsafe) let crl: OpaquePointer

    init(owning crl: OpaquePointer) { self.crl = crl }
    deinit { X509_CRL_free(crl) }

    /// Builds and signs a v2 CRL with crlNumber and authorityKeyIdentifier; entries sorted by serial.
    package static func build(
        issuer: X509Certificate, issuerKey: PrivateKey, number: Int, thisUpdate: Date, nextUpdate: Date,
        revoked: [RevokedCertificate]
    ) throws -> CertificateRevocationList {
        ERR_clear_error()
        guard let crl = X509_CRL_new() else { throw CryptoError.openSSL("cannot allocate a CRL") }
        let result = CertificateRevocationList(owning: crl)
        guard X509_CRL_set_version(crl, 1) == 1,
            X509_CRL_set_issuer_name(crl, X509_get_subject_name(issuer.x509)) == 1
        else { throw CryptoError.openSSL("cannot set the CRL issuer") }
        for (date, setter) in [(thisUpdate, X509_CRL_set1_lastUpdate), (nextUpdate, X509_CRL_set1_nextUpdate)] {
            guard let time = ASN1_TIME_new() else { throw CryptoError.openSSL("cannot allocate a time") }
            defer { ASN1_TIME_free(time) }
            try ASN1Time.set(time, date)
            guard setter(crl, time) == 1 else { throw CryptoError.openSSL("cannot set a CRL time") }
        }
        for entry in revoked {
            guard let rev = X509_REVOKED_new() else { throw CryptoError.openSSL("cannot allocate a CRL entry") }
            // Owned here until the CRL takes it (X509_CRL_add0_revoked): every throw before frees it.
            var owned = true
            defer { if owned { X509_REVOKED_free(rev) } }
            let serial = try makeInteger(entry.serial)
            defer { ASN1_INTEGER_free(serial) }
            guard let time = ASN1_TIME_new() else { throw CryptoError.openSSL("cannot allocate a time") }
            defer { ASN1_TIME_free(time) }
            try ASN1Time.set(time, entry.revocationDate)
            guard X509_REVOKED_set_serialNumber(rev, serial) == 1, X509_REVOKED_set_revocationDate(rev, time) == 1
            else {
                throw CryptoError.openSSL("cannot set a CRL entry")
            }
            guard X509_CRL_add0_revoked(crl, rev) == 1 else { throw CryptoError.openSSL("cannot add a CRL entry") }
            owned = false
        }
        let numberInteger = try makeInteger(
            number == 0 ? [0] : withUnsafeBytes(of: UInt64(number).bigEndian) { Array($0) })
        defer { ASN1_INTEGER_free(numberInteger) }
        guard X509_CRL_add1_ext_i2d(crl, NID_crl_number, UnsafeMutableRawPointer(numberInteger), 0, 0) == 1 else {
            throw CryptoError.openSSL("cannot add crlNumber")
        }
        var ctx = X509V3_CTX()
        vpnprov_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, issuer.x509, nil, nil, crl, 0)
        guard let aki = X509V3_EXT_conf_nid(nil, &ctx, NID_authority_key_identifier, "keyid:always") else {
            throw CryptoError.openSSL("cannot build authorityKeyIdentifier")
        }
        defer { X509_EXTENSION_free(aki) }
        guard X509_CRL_add_ext(crl, aki, -1) == 1 else {
            throw CryptoError.openSSL("cannot add authorityKeyIdentifier")
        }
        guard X509_CRL_sort(crl) == 1 else { throw CryptoError.openSSL("cannot sort the CRL") }
        let algorithm = issuerKey.algorithm ?? .ecdsaP256
        guard X509_CRL_sign(crl, issuerKey.pkey, algorithm.signingDigest) > 0 else {
            throw CryptoError.openSSL("cannot sign the CRL")
        }
        return result
    }

    package convenience init(pem: String) throws {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        guard let crl = PEM_read_bio_X509_CRL(bio.bio, nil, nil, nil) else {
            throw CryptoError.openSSL("cannot parse the CRL")
        }
        self.init(owning: crl)
    }

    /// PEM of `der` (armoured in Swift, like `X509Certificate.pem`).
    package var pem: String { PEMArmour.wrap(der, label: "X509 CRL") }

    /// The DER encoding (empty instead of a trap if libcrypto could not encode it; see `X509Certificate.der`).
    package var der: [UInt8] { (try? derEncode { i2d_X509_CRL(crl, $0) }) ?? [] }

    package var number: Int? {
        guard let raw = X509_CRL_get_ext_d2i(crl, NID_crl_number, nil, nil) else { return nil }
        let integer = raw.assumingMemoryBound(to: ASN1_INTEGER.self)
        defer { ASN1_INTEGER_free(integer) }
        return integerBytes(integer).reduce(0) { $0 << 8 | Int($1) }
    }

    package var thisUpdate: Date { ASN1Time.date(X509_CRL_get0_lastUpdate(crl)) ?? .distantPast }
    package var nextUpdate: Date? { ASN1Time.date(X509_CRL_get0_nextUpdate(crl)) }
    package var issuer: DistinguishedName { DistinguishedName.read(X509_CRL_get_issuer(crl)) }

    package var revoked: [RevokedCertificate] {
        guard let stack = X509_CRL_get_REVOKED(crl) else { return [] }
        return (0..<vpnprov_sk_X509_REVOKED_num(stack)).compactMap { i in
            guard let rev = vpnprov_sk_X509_REVOKED_value(stack, i) else { return nil }
            return RevokedCertificate(
                serial: integerBytes(X509_REVOKED_get0_serialNumber(rev)),
                revocationDate: ASN1Time.date(X509_REVOKED_get0_revocationDate(rev)) ?? .distantPast)
        }
    }

    package func isSigned(by issuer: X509Certificate) -> Bool {
        issuer.withPublicKey { pub in
            ERR_clear_error()
            defer { ERR_clear_error() }
            return X509_CRL_verify(crl, pub) == 1
        } ?? false
    }
}
