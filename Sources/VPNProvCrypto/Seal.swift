internal import CCrypto

/// Authenticated encryption of a file with AES-256-GCM (NIST SP 800-38D), on libcrypto's EVP cipher
/// interface: `seal` returns the 12-byte random nonce, the ciphertext and the 16-byte tag, in that order,
/// which is the layout the hand-off host's gate opens with Python's `cryptography` (`AESGCM`). The
/// associated data is authenticated, not encrypted: it binds a sealed file to where it belongs.
package enum Seal {
    static let nonceLength = 12
    static let tagLength = 16
    static let keyLength = 32

    /// `plaintext` sealed under the 32-byte `key`: nonce ‖ ciphertext ‖ tag.
    package static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        precondition(key.count == keyLength, "AES-256-GCM takes a 32-byte key")
        let nonce = try RandomBytes.generate(count: nonceLength)
        let context = try Context(encrypt: true, key: key, nonce: nonce)
        try context.authenticate(associatedData)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError.openSSL("cannot read the AES-GCM tag")
        }
        return nonce + ciphertext + tag
    }

    /// The plaintext of what `seal` made under the same key and associated data; throws when anything was
    /// changed (the tag does not verify) or another key is given.
    package static func open(_ sealed: [UInt8], key: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        precondition(key.count == keyLength, "AES-256-GCM takes a 32-byte key")
        guard sealed.count >= nonceLength + tagLength else { throw CryptoError("sealed data too short") }
        let nonce = Array(sealed.prefix(nonceLength))
        var tag = Array(sealed.suffix(tagLength))
        let context = try Context(encrypt: false, key: key, nonce: nonce)
        try context.authenticate(associatedData)
        let plaintext = try context.update(Array(sealed.dropFirst(nonceLength).dropLast(tagLength)))
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError.openSSL("cannot set the AES-GCM tag")
        }
        do {
            try context.finish()
        } catch {
            throw CryptoError("sealed data does not open with this key (changed, or another key)")
        }
        return plaintext
    }

    /// One AES-256-GCM operation's cipher context, freed with it.
    private final class Context {
        let pointer: OpaquePointer
        let encrypt: Bool

        init(encrypt: Bool, key: [UInt8], nonce: [UInt8]) throws {
            guard let pointer = EVP_CIPHER_CTX_new() else { throw CryptoError.openSSL("cannot allocate a cipher") }
            self.pointer = pointer
            self.encrypt = encrypt
            let cipher = EVP_aes_256_gcm()
            let flag: Int32 = encrypt ? 1 : 0
            guard EVP_CipherInit_ex(pointer, cipher, nil, nil, nil, flag) == 1,
                EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1,
                EVP_CipherInit_ex(pointer, nil, nil, key, nonce, flag) == 1
            else { throw CryptoError.openSSL("cannot set up AES-256-GCM") }
        }

        deinit { EVP_CIPHER_CTX_free(pointer) }

        func authenticate(_ data: [UInt8]) throws {
            guard !data.isEmpty else { return }
            var length: Int32 = 0
            guard EVP_CipherUpdate(pointer, nil, &length, data, Int32(data.count)) == 1 else {
                throw CryptoError.openSSL("cannot authenticate the associated data")
            }
        }

        func update(_ input: [UInt8]) throws -> [UInt8] {
            guard !input.isEmpty else { return [] }
            var output = [UInt8](repeating: 0, count: input.count)
            var length: Int32 = 0
            guard input.count <= Int(Int32.max),
                EVP_CipherUpdate(pointer, &output, &length, input, Int32(input.count)) == 1
            else { throw CryptoError.openSSL(encrypt ? "cannot encrypt" : "cannot decrypt") }
            return Array(output.prefix(Int(length)))
        }

        func finish() throws {
            var rest = [UInt8](repeating: 0, count: 16)
            var length: Int32 = 0
            guard EVP_CipherFinal_ex(pointer, &rest, &length) == 1, length == 0 else {
                throw CryptoError.openSSL("cannot finish AES-GCM")
            }
        }
    }
}

/// HKDF with SHA-256 (RFC 5869), on libcrypto's KDF interface: `count` bytes derived from the input key
/// material, a salt and a context string (`info`). Different `info` strings give independent keys of one
/// secret.
package enum HKDF {
    package static func sha256(secret: [UInt8], salt: [UInt8] = [], info: [UInt8], count: Int) throws -> [UInt8] {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw CryptoError.openSSL("HKDF is not available") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw CryptoError.openSSL("cannot allocate HKDF") }
        defer { EVP_KDF_CTX_free(context) }
        var digest = Array("SHA256".utf8CString)
        var key = secret
        var saltBytes = salt
        var infoBytes = info
        var out = [UInt8](repeating: 0, count: count)
        let ok = digest.withUnsafeMutableBufferPointer { digest in
            key.withUnsafeMutableBytes { key in
                saltBytes.withUnsafeMutableBytes { salt in
                    infoBytes.withUnsafeMutableBytes { info in
                        // Without a salt HKDF extracts with a string of zeros (RFC 5869, section 2.2), as
                        // Python's HKDF(salt=None) does: the parameter is left out rather than given empty.
                        var params = [
                            OSSL_PARAM_construct_utf8_string(name("digest"), digest.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(name("key"), key.baseAddress, key.count),
                            OSSL_PARAM_construct_octet_string(name("info"), info.baseAddress, info.count),
                        ]
                        if salt.count > 0 {
                            params.append(OSSL_PARAM_construct_octet_string(name("salt"), salt.baseAddress, salt.count))
                        }
                        params.append(OSSL_PARAM_construct_end())
                        return EVP_KDF_derive(context, &out, count, params)
                    }
                }
            }
        }
        guard ok == 1 else { throw CryptoError.openSSL("HKDF failed") }
        return out
    }

    /// A parameter's name as C text that outlives the call: an OSSL_PARAM keeps the pointer it is given
    /// until the derivation reads it, and a static string's bytes (NUL-terminated) live as long as the program.
    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
