internal import CCrypto
import Foundation

/// The digests RADIUS and the accounts database need, from libcrypto: MD5 (RADIUS authenticators),
/// HMAC-MD5 (the Message-Authenticator attribute) and the NT hash (MD4, from OpenSSL 3's `legacy`
/// provider: the default provider has no MD4).
extension Digest {
    package static func md5(_ bytes: [UInt8]) -> [UInt8] { run(FetchedMD5.md5.md, bytes) }

    private struct FetchedMD5: Sendable {
        // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the fetched method is never changed or freed.
        nonisolated(unsafe) let md: OpaquePointer?
        static let md5 = FetchedMD5(md: EVP_MD_fetch(nil, "MD5", nil) ?? EVP_md5())
    }

    /// HMAC-MD5 of `bytes` under `key` (RFC 2104), as RADIUS's Message-Authenticator (RFC 3579 §3.2).
    package static func hmacMD5(key: [UInt8], _ bytes: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length = 0
        let keyBytes = key.isEmpty ? [0] : key
        let result = keyBytes.withUnsafeBufferPointer { k in
            bytes.withUnsafeBufferPointer { d in
                EVP_Q_mac(
                    nil, "HMAC", nil, "MD5", nil, k.baseAddress, key.count, d.baseAddress, d.count, &out, out.count,
                    &length)
            }
        }
        guard result != nil else { throw CryptoError.openSSL("HMAC-MD5 failed") }
        return Array(out.prefix(length))
    }
}

/// The NT hash of a password (MD4 over its UTF-16LE encoding), the form FreeRADIUS's `NT-Password`
/// check item holds: MS-CHAPv2 and PAP both verify against it, so no cleartext is stored.
package enum NTHash {
    /// MD4 from a library context of its own with the `legacy` and `default` providers loaded, so
    /// the process's default context keeps OpenSSL's defaults.
    private struct LegacyMD4: Sendable {
        // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the method (and its context) is never changed
        // or freed, and lives as long as the process.
        nonisolated(unsafe) let md: OpaquePointer?
        let failure: String?
        static let shared = LegacyMD4()

        init() {
            guard let context = OSSL_LIB_CTX_new() else {
                md = nil
                failure = "cannot create an OpenSSL library context"
                return
            }
            guard OSSL_PROVIDER_load(context, "legacy") != nil else {
                // Nothing keeps the context then: freed, so a run without the provider leaks nothing.
                OSSL_LIB_CTX_free(context)
                md = nil
                failure =
                    "OpenSSL's legacy provider (legacy.so, which has MD4) cannot be loaded; "
                    + "install it (Debian: libssl3) or set OPENSSL_MODULES to its directory"
                ERR_clear_error()
                return
            }
            _ = OSSL_PROVIDER_load(context, "default")
            md = EVP_MD_fetch(context, "MD4", nil)
            failure = md == nil ? "OpenSSL's legacy provider has no MD4" : nil
            ERR_clear_error()
        }
    }

    /// 32 uppercase hex digits.
    package static func hex(password: String) throws -> String {
        hexString(try digest(password: password))
    }

    package static func digest(password: String) throws -> [UInt8] {
        let md4 = LegacyMD4.shared
        guard let md = md4.md else { throw CryptoError(md4.failure ?? "MD4 is not available") }
        var utf16le: [UInt8] = []
        utf16le.reserveCapacity(password.utf16.count * 2)
        for unit in password.utf16 {
            utf16le.append(UInt8(unit & 0xFF))
            utf16le.append(UInt8(unit >> 8))
        }
        defer { for i in utf16le.indices { utf16le[i] = 0 } }
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = utf16le.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
        guard ok == 1 else { throw CryptoError.openSSL("MD4 failed") }
        return Array(out.prefix(Int(length)))
    }
}
