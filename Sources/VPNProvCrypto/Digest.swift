internal import CCrypto

/// Message digests on libcrypto. (SHA-1 is used for name-based UUIDs, RFC 4122 version 5 — not for security.)
public enum Digest {
    /// SHA-1 of `bytes` (20 bytes).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha1(), nil)
            }
        }
        precondition(ok == 1 && length == 20, "EVP_Digest(SHA-1) failed")
        return out
    }
}
