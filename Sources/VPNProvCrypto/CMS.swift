internal import CCrypto

/// CMS SignedData (RFC 5652) over content carried inside it, DER encoded: what a signed Apple
/// configuration profile is (the plist is the encapsulated content; the device shows the signer's
/// name instead of "Not Verified" when the chain leads to a root it trusts).
///
/// Signed without signed attributes (CMS_NOATTR): the signature is over the content itself and the
/// output carries no signing time, so an RSA key (PKCS#1 v1.5 signatures are deterministic) gives
/// the same bytes for the same content on every run. ECDSA signatures take a random nonce in
/// OpenSSL 3.0 and differ from run to run.
public enum CMSSignedData {
    public static func sign(
        content: [UInt8], certificate: X509Certificate, key: PrivateKey, chain: [X509Certificate]
    ) throws -> [UInt8] {
        ERR_clear_error()
        guard key.matches(certificate) else { throw CryptoError("the signing key does not belong to the signing certificate") }
        guard let stack = vpnprov_sk_X509_new_null() else { throw CryptoError.openSSL("cannot allocate a stack") }
        defer { vpnprov_sk_X509_free(stack) }
        for c in chain {
            guard vpnprov_sk_X509_push(stack, c.x509) > 0 else { throw CryptoError.openSSL("cannot add a chain certificate") }
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
    public static func content(of der: [UInt8]) throws -> [UInt8] {
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
