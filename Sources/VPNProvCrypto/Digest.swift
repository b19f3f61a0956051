internal import CCrypto

/// Message digests.
package enum Digest {
    package static func sha1(_ bytes: [UInt8]) -> [UInt8] { run(Fetched.sha1.md, bytes) }
    package static func sha256(_ bytes: [UInt8]) -> [UInt8] { run(Fetched.sha256.md, bytes) }
    package static func sha384(_ bytes: [UInt8]) -> [UInt8] { run(Fetched.sha384.md, bytes) }

    /// A digest implementation fetched from the default provider once. `EVP_sha256()` and friends
    /// make OpenSSL 3 fetch the implementation again on every call, under a global lock that every file
    /// digest and name-based UUID of a run would contend on (docs/benchmarks.md, "Why the code is shaped this way").
    /// Fetched methods are immutable and safe to share between threads; they live as long as the process.
    private struct Fetched: Sendable {
        // nonisolated(unsafe): an OpenSSL pointer is not Sendable; the fetched EVP_MD is never changed or freed.
        nonisolated(unsafe) let md: OpaquePointer?
        init(_ name: String, fallback: () -> OpaquePointer?) { md = EVP_MD_fetch(nil, name, nil) ?? fallback() }
        static let sha1 = Fetched("SHA1") { EVP_sha1() }
        static let sha256 = Fetched("SHA256") { EVP_sha256() }
        static let sha384 = Fetched("SHA384") { EVP_sha384() }
    }

    /// SHA-256 over data that arrives in pieces (a file written as it is made).
    package final class SHA256Stream {
        private let context: OpaquePointer?

        package init() {
            context = EVP_MD_CTX_new()
            precondition(
                context != nil && EVP_DigestInit_ex(context, Fetched.sha256.md, nil) == 1, "EVP_DigestInit_ex failed")
        }

        deinit { EVP_MD_CTX_free(context) }

        package func update(_ bytes: [UInt8]) {
            let ok = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
            precondition(ok == 1, "EVP_DigestUpdate failed")
        }

        /// The digest of everything given so far (the stream is done after this).
        package func finish() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            precondition(EVP_DigestFinal_ex(context, &out, &length) == 1, "EVP_DigestFinal_ex failed")
            return Array(out.prefix(Int(length)))
        }
    }

    static func run(_ md: OpaquePointer?, _ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
        precondition(ok == 1, "EVP_Digest failed")
        return Array(out.prefix(Int(length)))
    }
}

/// Cryptographically strong random bytes (RAND_bytes).
package enum RandomBytes {
    package static func generate(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw CryptoError.openSSL("the random generator failed")
        }
        return bytes
    }

    /// A random string of `length` characters drawn uniformly from `alphabet` (rejection sampling).
    package static func string(length: Int, alphabet: [Character]) throws -> String {
        precondition(!alphabet.isEmpty && alphabet.count <= 256)
        let limit = 256 - 256 % alphabet.count
        var out = ""
        while out.count < length {
            for b in try generate(count: length * 2) where Int(b) < limit {
                out.append(alphabet[Int(b) % alphabet.count])
                if out.count == length { break }
            }
        }
        return out
    }
}
