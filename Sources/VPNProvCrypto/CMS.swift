internal import CCrypto

/// CMS SignedData (RFC 5652) over content carried inside it, DER encoded: what a signed Apple
/// configuration profile is (the plist is the encapsulated content; the device shows the signer's
/// name instead of "Not Verified" when the chain leads to a root it trusts).
///
/// Signed without signed attributes (CMS_NOATTR): the signature is over the content itself and the
/// output carries no signing time, so an RSA key (PKCS#1 v1.5 signatures are deterministic) gives
/// the same bytes for the same content on every run. ECDSA signatures take a random nonce in
/// OpenSSL 3.0 and differ from run to run.
package enum CMSSignedData {
    package static func sign(
        content: [UInt8], certificate: X509Certificate, key: PrivateKey, chain: [X509Certificate]
    ) throws -> [UInt8] {
        ERR_clear_error()
        guard key.matches(certificate) else {
            throw CryptoError("the signing key does not belong to the signing certificate")
        }
        guard let stack = vpnprov_sk_X509_new_null() else { throw CryptoError.openSSL("cannot allocate a stack") }
        defer { vpnprov_sk_X509_free(stack) }
        for c in chain {
            guard vpnprov_sk_X509_push(stack, c.x509) > 0 else {
                throw CryptoError.openSSL("cannot add a chain certificate")
            }
        }
        let input: OpaquePointer? = content.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let input else { throw CryptoError.openSSL("cannot allocate a buffer") }
        defer { BIO_free(input) }
        let flags = UInt32(CMS_BINARY | CMS_NOSMIMECAP | CMS_NOATTR)
        guard let cms = CMS_sign(certificate.x509, key.pkey, stack, input, flags) else {
            throw CryptoError.openSSL("cannot sign")
        }
        defer { CMS_ContentInfo_free(cms) }
        return try derEncode { i2d_CMS_ContentInfo(cms, $0) }
    }

    /// The encapsulated content of a DER SignedData (no signature check: tests verify with an
    /// independent tool).
    package static func content(of der: [UInt8]) throws -> [UInt8] {
        ERR_clear_error()
        let cms: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_CMS_ContentInfo(nil, &pointer, buffer.count)
        }
        guard let cms else { throw CryptoError.openSSL("not a CMS structure") }
        defer { CMS_ContentInfo_free(cms) }
        guard let pointer = CMS_get0_content(cms), let octets = pointer.pointee else {
            throw CryptoError("the CMS structure carries no content")
        }
        return asn1StringBytes(UnsafePointer(octets))
    }
}

extension CMSSignedData {
    /// The encapsulated content of `der` when it is a SignedData that `certificate` signed (the
    /// signature verifies with that certificate, which is its only signer) and that carries exactly
    /// `certificate` and `chain`; nil for anything else. The chain is not verified: the question is
    /// only whether these bytes are a signature this signer made over that content.
    package static func contentSigned(_ der: [UInt8], by certificate: X509Certificate, chain: [X509Certificate])
        -> [UInt8]?
    {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let cms: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_CMS_ContentInfo(nil, &pointer, buffer.count)
        }
        guard let cms else { return nil }
        defer { CMS_ContentInfo_free(cms) }
        guard let certificates = CMS_get1_certs(cms) else { return nil }
        defer { vpnprov_sk_X509_pop_free(certificates) }
        var carried: [[UInt8]] = []
        for i in 0..<vpnprov_sk_X509_num(certificates) {
            guard let x509 = vpnprov_sk_X509_value(certificates, i),
                let bytes = try? derEncode({ i2d_X509(x509, $0) })
            else { return nil }
            carried.append(bytes)
        }
        let expected = [certificate.der] + chain.map(\.der)
        guard carried.count == expected.count, Set(carried) == Set(expected) else { return nil }
        guard let out = try? MemoryBIO() else { return nil }
        let flags = UInt32(CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY)
        guard CMS_verify(cms, nil, nil, nil, out.bio, flags) == 1 else { return nil }
        guard let signers = CMS_get0_signers(cms) else { return nil }
        defer { vpnprov_sk_X509_free(signers) }
        guard vpnprov_sk_X509_num(signers) == 1, let signer = vpnprov_sk_X509_value(signers, 0),
            X509_cmp(signer, certificate.x509) == 0
        else { return nil }
        return out.bytes
    }
}
