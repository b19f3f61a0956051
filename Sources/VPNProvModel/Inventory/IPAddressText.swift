import Glibc
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Parsing and printing of IP addresses with the C library (inet_pton/inet_ntop).
package enum IPAddressText {
    /// 4 bytes for IPv4, 16 for IPv6, nil when `text` is neither.
    package static func parse(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
            return withUnsafeBytes(of: &a) { Array($0) }
        }
        var a = in_addr()
        guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
        return withUnsafeBytes(of: &a) { Array($0) }
    }

    /// Canonical text form (RFC 5952 for IPv6, as inet_ntop prints it). Bytes of any other length
    /// than 4 or 16 (a damaged certificate's iPAddress) are no address: `#` and their hex, never
    /// handed to inet_ntop, which would read 4 or 16 bytes whatever the array holds.
    package static func format(_ bytes: [UInt8]) -> String {
        guard bytes.count == 4 || bytes.count == 16 else {
            let digits = Array("0123456789abcdef".utf8)
            return "#"
                + String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
        }
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 16 ? AF_INET6 : AF_INET
        _ = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses `a.b.c.d/n` or `x::/n`; nil when malformed.
    package static func parseCIDR(_ text: String) -> (address: [UInt8], prefix: Int)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let bytes = parse(String(parts[0])),
            let prefix = Int(parts[1]), prefix >= 0, prefix <= bytes.count * 8,
            parts[1].allSatisfy(\.isASCII)
        else { return nil }
        return (bytes, prefix)
    }
}
