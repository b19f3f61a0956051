internal import CCrypto
import Foundation

/// A key and its certificate made ready for the PKCS#12 containers of one holder: the key's PKCS#8
/// form and the certificate's local key ID (its SHA-1) are made once, for each container (a user's
/// password-protected and empty-password ones) and for the key's PEM. `PKCS12_create` makes both
/// again for every container, and first compares the key with the certificate, which decodes the
/// certificate's public key: three encodings of a key where one does (docs/benchmarks.md, "Why the
/// code is shaped this way"). The containers are what `PKCS12_create` builds, bag for bag: the
/// certificate bag (friendly name, local key ID) and the CA certificates in one encrypted safe, the
/// key bag (shrouded, friendly name, local key ID) in a plain one, then the MAC.
package final class PKCS12Contents: Sendable {
    // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the PKCS#8 structure behind it is only read after
    // init.
    nonisolated(unsafe) private let p8: OpaquePointer
    private let certificate: X509Certificate
    private let caCertificates: [X509Certificate]
    private let friendlyName: String
    private let localKeyID: [UInt8]

    /// `certificate` must certify `key`: the caller issued it for that key, or loaded both from a
    /// state that checks they match.
    package init(
        key: PrivateKey, certificate: X509Certificate, caCertificates: [X509Certificate], friendlyName: String
    ) throws {
        ERR_clear_error()
        guard let p8 = EVP_PKEY2PKCS8(key.pkey) else { throw CryptoError.openSSL("cannot encode the private key") }
        self.p8 = p8
        self.certificate = certificate
        self.caCertificates = caCertificates
        self.friendlyName = friendlyName
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate.x509, EVP_sha1(), &digest, &length) == 1 else {
            throw CryptoError.openSSL("cannot digest the certificate")
        }
        localKeyID = Array(digest.prefix(Int(length)))
    }

    deinit { PKCS8_PRIV_KEY_INFO_free(p8) }

    /// The key as unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY"), the bytes `PrivateKey.pkcs8PEM` writes.
    package func keyPEM() throws -> String {
        ERR_clear_error()
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8_PRIV_KEY_INFO(bio.bio, p8) == 1 else {
            throw CryptoError.openSSL("cannot encode the private key")
        }
        return bio.string
    }

    /// A container protected by `password` (not empty; see `PKCS12.build`).
    package func container(password: String) throws -> [UInt8] {
        guard !password.isEmpty else { throw CryptoError("a PKCS#12 password must not be empty") }
        return try container(anyPassword: password, iterations: vpnprov_PKCS12_DEFAULT_ITER())
    }

    /// A container with the empty password and one iteration (see `PKCS12.buildWithEmptyPassword`).
    package func containerWithEmptyPassword() throws -> [UInt8] {
        try container(anyPassword: "", iterations: 1)
    }

    private func container(anyPassword password: String, iterations: Int32) throws -> [UInt8] {
        ERR_clear_error()
        let nid = NID_pbe_WithSHA1And3_Key_TripleDES_CBC
        var safes: OpaquePointer? = nil
        defer { if let safes { vpnprov_sk_PKCS7_pop_free(safes) } }
        try password.withCString { pass in
            // The certificate bag and the CA certificates, in an encrypted safe.
            var bags: OpaquePointer? = nil
            defer { if let bags { vpnprov_sk_PKCS12_SAFEBAG_pop_free(bags) } }
            guard let bag = PKCS12_add_cert(&bags, certificate.x509) else {
                throw CryptoError.openSSL("cannot add the certificate to the PKCS#12")
            }
            try label(bag)
            for ca in caCertificates {
                guard PKCS12_add_cert(&bags, ca.x509) != nil else {
                    throw CryptoError.openSSL("cannot add a CA certificate to the PKCS#12")
                }
            }
            guard PKCS12_add_safe_ex(&safes, bags, nid, iterations, pass, nil, nil) == 1 else {
                throw CryptoError.openSSL("cannot encrypt the PKCS#12 certificates")
            }
            // The shrouded key bag, in a plain safe.
            guard let keyBags = vpnprov_sk_PKCS12_SAFEBAG_new_null() else {
                throw CryptoError.openSSL("cannot allocate a stack")
            }
            defer { vpnprov_sk_PKCS12_SAFEBAG_pop_free(keyBags) }
            guard let keyBag = PKCS12_SAFEBAG_create_pkcs8_encrypt_ex(nid, pass, -1, nil, 0, iterations, p8, nil, nil)
            else {
                throw CryptoError.openSSL("cannot encrypt the PKCS#12 key")
            }
            guard vpnprov_sk_PKCS12_SAFEBAG_push(keyBags, keyBag) > 0 else {
                PKCS12_SAFEBAG_free(keyBag)
                throw CryptoError.openSSL("cannot add the key to the PKCS#12")
            }
            try label(keyBag)
            guard PKCS12_add_safe_ex(&safes, keyBags, -1, 0, nil, nil, nil) == 1 else {
                throw CryptoError.openSSL("cannot add the PKCS#12 key")
            }
        }
        guard let p12 = PKCS12_add_safes_ex(safes, 0, nil, nil) else {
            throw CryptoError.openSSL("cannot build the PKCS#12")
        }
        defer { PKCS12_free(p12) }
        let macOK = password.withCString { pass in
            PKCS12_set_mac(p12, pass, -1, nil, 0, iterations, EVP_sha1())
        }
        guard macOK == 1 else { throw CryptoError.openSSL("cannot add the PKCS#12 MAC") }
        return try derEncode { i2d_PKCS12(p12, $0) }
    }

    /// The friendly name and local key ID that tie a certificate bag and a key bag together.
    private func label(_ bag: OpaquePointer) throws {
        var id = localKeyID
        guard PKCS12_add_friendlyname_utf8(bag, friendlyName, -1) == 1,
            PKCS12_add_localkeyid(bag, &id, Int32(id.count)) == 1
        else {
            throw CryptoError.openSSL("cannot label a PKCS#12 bag")
        }
    }
}
