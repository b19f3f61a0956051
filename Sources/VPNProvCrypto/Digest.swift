internal import CCrypto

/// Message digests.
public enum Digest {
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] { run(EVP_sha1(), bytes) }
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { run(EVP_sha256(), bytes) }
    public static func sha384(_ bytes: [UInt8]) -> [UInt8] { run(EVP_sha384(), bytes) }

    private static func run(_ md: OpaquePointer?, _ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, md, nil) }
        precondition(ok == 1, "EVP_Digest failed")
        return Array(out.prefix(Int(length)))
    }
}

/// Cryptographically strong random bytes (RAND_bytes).
public enum RandomBytes {
    public static func generate(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw CryptoError.openSSL("the random generator failed")
        }
        return bytes
    }

    /// A random string of `length` characters drawn uniformly from `alphabet` (rejection sampling).
    public static func string(length: Int, alphabet: [Character]) throws -> String {
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
