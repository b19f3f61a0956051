import Foundation

/// What tests do to a state directory on purpose: make it look like one an earlier vpnprov wrote (to
/// edit index.json by hand, which a sealed state refuses), and damage a key file's private half.
package enum StateDamage {
    /// Makes the state directory `state` one written before vpnprov sealed its records: no
    /// `manifest.sha256`, index.json of version 1. Its records are then read key by key, and the next
    /// run that commits the state seals it again. Call before editing index.json by hand (a state
    /// without a manifest is left as it is).
    package static func unseal(_ state: String) throws {
        guard FileManager.default.fileExists(atPath: state + "/manifest.sha256") else { return }
        let path = state + "/index.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let older = text.replacingOccurrences(of: "\n  \"version\" : 2\n}", with: "\n  \"version\" : 1\n}")
        guard older != text else { throw CocoaError(.fileReadCorruptFile) }
        try older.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: state + "/manifest.sha256")
    }

    /// The DER of a PEM file's first block.
    package static func der(_ pem: [UInt8]) -> [UInt8]? {
        let lines = String(decoding: pem, as: UTF8.self).split(separator: "\n")
        let body = lines.filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: body).map(Array.init)
    }

    /// `der` as PEM, with the BEGIN and END lines of `original` and 64 characters a line.
    package static func pem(_ der: [UInt8], like original: [UInt8]) -> [UInt8] {
        let lines = String(decoding: original, as: UTF8.self).split(separator: "\n")
        var base64 = Data(der).base64EncodedString()[...]
        var body: [String] = []
        while !base64.isEmpty {
            body.append(String(base64.prefix(64)))
            base64 = base64.dropFirst(64)
        }
        return Array(([String(lines.first!)] + body + [String(lines.last!)]).joined(separator: "\n").utf8) + [0x0A]
    }

    /// An unencrypted PKCS#8 EC key (PEM) with one bit flipped in the middle of its private scalar
    /// (RFC 5915 ECPrivateKey: version 1, then the scalar as an OCTET STRING), its public half in the
    /// file untouched; nil when `pem` holds no such key.
    package static func flipScalar(_ pem: [UInt8]) -> [UInt8]? {
        guard var der = der(pem), der.count > 5 else { return nil }
        guard let at = (0..<(der.count - 5)).first(where: { Array(der[$0..<$0 + 4]) == [0x02, 0x01, 0x01, 0x04] })
        else { return nil }
        let length = Int(der[at + 4])
        guard at + 5 + length <= der.count else { return nil }
        der[at + 5 + length / 2] ^= 0x01
        return Self.pem(der, like: pem)
    }
}
