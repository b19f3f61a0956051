internal import CCrypto
import Foundation

/// A failure inside libcrypto (or a malformed input), with OpenSSL's error queue as text.
package struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// What vpnprov was doing.
    package var message: String
    /// OpenSSL's error queue at the time of the failure (may be empty).
    var openSSLErrors: [String]

    package init(_ message: String, openSSLErrors: [String] = []) {
        self.message = message
        self.openSSLErrors = openSSLErrors
    }

    package var description: String {
        openSSLErrors.isEmpty ? message : "\(message) (\(openSSLErrors.joined(separator: "; ")))"
    }

    /// Captures and clears the calling thread's OpenSSL error queue.
    static func openSSL(_ message: String) -> CryptoError {
        var errors: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            errors.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return CryptoError(message, openSSLErrors: errors)
    }
}

/// A memory BIO that frees itself.
final class MemoryBIO {
    let bio: OpaquePointer

    init() throws {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("cannot allocate a memory BIO") }
        self.bio = bio
    }

    init(bytes: [UInt8]) throws {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("cannot allocate a memory BIO") }
        self.bio = bio
        if !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
            guard written == Int32(bytes.count) else { throw CryptoError.openSSL("cannot fill a memory BIO") }
        }
    }

    deinit { BIO_free(bio) }

    var bytes: [UInt8] {
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let length = vpnprov_BIO_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    package var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// DER encoding through an `i2d_*` function.
func derEncode(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> [UInt8] {
    ERR_clear_error()
    let length = encode(nil)
    guard length > 0 else { throw CryptoError.openSSL("DER encoding failed") }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&pointer)
    }
    guard written == length else { throw CryptoError.openSSL("DER encoding failed") }
    return bytes
}

enum ASN1Time {
    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    static func set(_ time: UnsafeMutablePointer<ASN1_TIME>?, _ date: Date) throws {
        guard let time, ASN1_TIME_set(time, time_t(date.timeIntervalSince1970.rounded(.down))) != nil else {
            throw CryptoError.openSSL("cannot set a time value")
        }
    }
}

/// Big-endian magnitude of a non-negative ASN.1 INTEGER.
func integerBytes(_ integer: UnsafePointer<ASN1_INTEGER>?) -> [UInt8] {
    guard let integer, let bn = ASN1_INTEGER_to_BN(integer, nil) else { return [] }
    defer { BN_free(bn) }
    var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(bn) + 7) / 8))
    _ = BN_bn2bin(bn, &bytes)
    return bytes.isEmpty ? [0] : bytes
}

/// A fresh ASN1_INTEGER for a big-endian magnitude; the caller frees it.
func makeInteger(_ bytes: [UInt8]) throws -> UnsafeMutablePointer<ASN1_INTEGER> {
    guard let bn = BN_bin2bn(bytes, Int32(bytes.count), nil) else { throw CryptoError.openSSL("bad integer") }
    defer { BN_free(bn) }
    guard let integer = BN_to_ASN1_INTEGER(bn, nil) else { throw CryptoError.openSSL("bad integer") }
    return integer
}

func asn1StringBytes(_ string: UnsafePointer<ASN1_STRING>?) -> [UInt8] {
    guard let string, let data = ASN1_STRING_get0_data(string) else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
}

func objectText(_ object: OpaquePointer?) -> String {
    guard let object else { return "" }
    var buffer = [CChar](repeating: 0, count: 128)
    let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
    guard length > 0 else { return "" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Hex text of bytes, uppercase, no separators.
package func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Bytes from hex text (either case, no separators); nil when malformed.
package func bytesFromHex(_ text: String) -> [UInt8]? {
    let chars = Array(text.utf8)
    guard chars.count % 2 == 0 else { return nil }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
        guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

/// PEM armour as OpenSSL's PEM writers produce it: the label lines and base64 in lines of 64.
enum PEMArmour {
    static func wrap(_ der: [UInt8], label: String) -> String {
        let base64 = Data(der).base64EncodedString()
        var text = "-----BEGIN \(label)-----\n"
        text.reserveCapacity(base64.utf8.count + base64.utf8.count / 64 + 64)
        var line = Substring(base64)
        while !line.isEmpty {
            text += line.prefix(64)
            text += "\n"
            line = line.dropFirst(64)
        }
        text += "-----END \(label)-----\n"
        return text
    }
}
