import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// A client profile cannot be rendered (normally caught earlier by Consistency as `missing-secret`).
package struct ClientRenderError: Error, Sendable, Hashable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// PEM text to DER bytes (base64 decoding of the first block of a type; no cryptography). Works on
/// the UTF-8 bytes: renderers call it for every profile of a fleet.
enum PEMText {
    static func der(_ pem: String, type: String = "CERTIFICATE") -> [UInt8]? {
        let text = Array(pem.utf8)
        let begin = Array("-----BEGIN \(type)-----".utf8)
        let end = Array("-----END \(type)-----".utf8)
        guard let start = find(begin, in: text, from: 0), let stop = find(end, in: text, from: start + begin.count)
        else {
            return nil
        }
        var body: [UInt8] = []
        body.reserveCapacity(stop - start - begin.count)
        for byte in text[(start + begin.count)..<stop] where !(byte == 0x20 || (0x09...0x0D).contains(byte)) {
            body.append(byte)
        }
        guard let data = Data(base64Encoded: Data(body)) else { return nil }
        return [UInt8](data)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
