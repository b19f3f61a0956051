import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Name-based UUIDs (RFC 4122 version 5, SHA-1) so that every profile, payload and catalogue entry
/// gets the same UUID on every run: the namespace is derived from the deployment name, the name
/// from what the UUID identifies (`apple/alice/vpn/fra-1/ikev2-eap`).
package struct NameBasedUUID: Sendable, Hashable, CustomStringConvertible {
    package let bytes: [UInt8]

    /// RFC 4122 Appendix C URL namespace.
    static let urlNamespace = NameBasedUUID(bytes: [
        0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
    ])

    init(bytes: [UInt8]) {
        precondition(bytes.count == 16)
        self.bytes = bytes
    }

    /// Version 5 UUID of `name` in `namespace`.
    package init(namespace: NameBasedUUID, name: String) {
        var hash = Array(Digest.sha1(namespace.bytes + Array(name.utf8)).prefix(16))
        hash[6] = (hash[6] & 0x0F) | 0x50  // version 5
        hash[8] = (hash[8] & 0x3F) | 0x80  // RFC 4122 variant
        self.init(bytes: hash)
    }

    /// The namespace of one deployment: v5 of `vpnprov:<deployment>` in the URL namespace.
    package static func namespace(forDeployment name: String) -> NameBasedUUID {
        NameBasedUUID(namespace: urlNamespace, name: "vpnprov:\(name)")
    }

    /// Upper-case canonical text, as Apple profiles usually carry it.
    package var description: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
