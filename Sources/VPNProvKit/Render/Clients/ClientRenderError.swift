import Foundation

/// A client profile cannot be rendered (normally caught earlier by Consistency as `missing-secret`).
public struct ClientRenderError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// PEM text to DER bytes (base64 decoding of the first block of a type; no cryptography).
enum PEMText {
    static func der(_ pem: String, type: String = "CERTIFICATE") -> [UInt8]? {
        let begin = "-----BEGIN \(type)-----"
        let end = "-----END \(type)-----"
        guard let start = pem.range(of: begin), let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex) else {
            return nil
        }
        let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: String(body)) else { return nil }
        return [UInt8](data)
    }
}
