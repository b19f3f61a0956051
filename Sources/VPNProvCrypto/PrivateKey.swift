internal import CCrypto
import Foundation

/// Key algorithms the crypto layer can generate.
package enum KeyAlgorithm: Sendable, Hashable {
    case ecdsaP256
    case ecdsaP384
    case rsa(bits: Int)

    /// The digest certificates and CRLs signed with such a key use.
    var signingDigest: OpaquePointer? { self == .ecdsaP384 ? EVP_sha384() : EVP_sha256() }
}

/// A private key (EVP_PKEY). Immutable after creation; safe to share across threads for signing.
package final class PrivateKey: Sendable {
    // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the EVP_PKEY behind it is only read after init
    // (signing, encoding).
    nonisolated(unsafe) let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key.
    package static func generate(_ algorithm: KeyAlgorithm) throws -> PrivateKey {
        ERR_clear_error()
        let isRSA: Bool
        if case .rsa = algorithm { isRSA = true } else { isRSA = false }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, isRSA ? "RSA" : "EC", nil) else {
            throw CryptoError.openSSL("cannot create a key generation context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1 else { throw CryptoError.openSSL("cannot start key generation") }
        switch algorithm {
        case .ecdsaP256:
            guard EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1 else {
                throw CryptoError.openSSL("cannot select P-256")
            }
        case .ecdsaP384:
            guard EVP_PKEY_CTX_set_group_name(ctx, "P-384") == 1 else {
                throw CryptoError.openSSL("cannot select P-384")
            }
        case .rsa(let bits):
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1 else {
                throw CryptoError.openSSL("cannot select RSA-\(bits)")
            }
        }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else { throw CryptoError.openSSL("key generation failed") }
        return PrivateKey(owning: key)
    }

    /// Reads a PEM private key (PKCS#8, encrypted PKCS#8, or traditional). An encrypted key needs
    /// `passphrase`; without it the read fails (never prompts).
    package convenience init(pem: String, passphrase: String? = nil) throws {
        ERR_clear_error()
        let bio = try MemoryBIO(bytes: Array(pem.utf8))
        let key: OpaquePointer? = (passphrase ?? "").withCString { pass in
            PEM_read_bio_PrivateKey(bio.bio, nil, nil, UnsafeMutableRawPointer(mutating: pass))
        }
        guard let key else {
            if PrivateKey.isEncryptedPEM(pem) {
                throw CryptoError.openSSL(
                    passphrase == nil
                        ? "the private key is encrypted and no passphrase was given"
                        : "cannot decrypt the private key (wrong passphrase?)")
            }
            throw CryptoError.openSSL("cannot parse the private key")
        }
        self.init(owning: key)
    }

    /// True when `pem` holds an encrypted private key.
    package static func isEncryptedPEM(_ pem: String) -> Bool {
        pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pem.contains("Proc-Type: 4,ENCRYPTED")
    }

    /// Unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY").
    package func pkcs8PEM() throws -> String {
        ERR_clear_error()
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.openSSL("cannot encode the private key")
        }
        return bio.string
    }

    /// Encrypted PKCS#8 PEM (PBES2, PBKDF2, AES-256-CBC).
    package func encryptedPKCS8PEM(passphrase: String) throws -> String {
        ERR_clear_error()
        guard !passphrase.isEmpty else { throw CryptoError("an empty passphrase cannot protect a key") }
        let bio = try MemoryBIO()
        let ok = passphrase.withCString { pass in
            PEM_write_bio_PKCS8PrivateKey(
                bio.bio, pkey, EVP_aes_256_cbc(), nil, 0, nil, UnsafeMutableRawPointer(mutating: pass))
        }
        guard ok == 1 else { throw CryptoError.openSSL("cannot encrypt the private key") }
        return bio.string
    }

    /// DER SubjectPublicKeyInfo of the public half.
    package func publicKeyDER() throws -> [UInt8] {
        try derEncode { i2d_PUBKEY(pkey, $0) }
    }

    /// The algorithm and size of this key, when it is one vpnprov knows.
    package var algorithm: KeyAlgorithm? {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA: return .rsa(bits: Int(EVP_PKEY_get_bits(pkey)))
        case EVP_PKEY_EC:
            switch EVP_PKEY_get_bits(pkey) {
            case 256: return .ecdsaP256
            case 384: return .ecdsaP384
            default: return nil
            }
        default: return nil
        }
    }

    /// True when `certificate` certifies this key's public half.
    package func matches(_ certificate: X509Certificate) -> Bool {
        certificate.withPublicKey { EVP_PKEY_eq(pkey, $0) == 1 } ?? false
    }

    /// True when this key's private half signs what `certificate`'s public key verifies: the public
    /// halves are equal, and a test message signed with the private key (SHA-256; ECDSA or PKCS#1 v1.5)
    /// verifies under the certificate's key. `matches` alone compares the public half a PKCS#8 file
    /// carries beside the private one, so a damaged private scalar would pass it and sign certificates
    /// and CRLs that do not verify.
    ///
    /// Why a signature and not OpenSSL's key checks (measured with OpenSSL 3.0, every single-bit flip
    /// of a PKCS#8 key that still parses): `EVP_PKEY_private_check` only checks that the scalar is in
    /// range and passes every flipped EC scalar; `EVP_PKEY_pairwise_check` (and `EVP_PKEY_check`)
    /// recompute the public point of an EC key (0.06 ms) and find the same flips as the signature, but
    /// for RSA they test the primes (0.1 s for RSA-2048, 0.6 s for RSA-4096). The signature costs
    /// 0.3 ms (P-256), 1.3 ms (RSA-2048), 12 ms (RSA-4096). An RSA key whose d or CRT values are
    /// damaged can still pass it: OpenSSL checks each CRT result against the public key and recomputes
    /// it with d, so such a key still signs correctly; the state's digests of its key files find that
    /// damage (docs/state.md).
    package func signsFor(_ certificate: X509Certificate) -> Bool {
        certificate.withPublicKey { pub -> Bool in
            ERR_clear_error()
            defer { ERR_clear_error() }
            guard EVP_PKEY_eq(pkey, pub) == 1 else { return false }
            let message = Array("vpnprov: does this key sign for its certificate?".utf8)
            guard let signing = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(signing) }
            var length = 0
            guard EVP_DigestSignInit(signing, nil, EVP_sha256(), nil, pkey) == 1,
                EVP_DigestSign(signing, nil, &length, message, message.count) == 1
            else { return false }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(signing, &signature, &length, message, message.count) == 1 else { return false }
            guard let verifying = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(verifying) }
            return EVP_DigestVerifyInit(verifying, nil, EVP_sha256(), nil, pub) == 1
                && EVP_DigestVerify(verifying, signature, length, message, message.count) == 1
        } ?? false
    }
}
