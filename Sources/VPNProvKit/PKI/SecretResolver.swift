import Foundation
import VPNProvCrypto

/// Resolves `env:` / `file:` / `literal` secret references and generates `gen` secrets.
enum SecretResolver {
    /// Characters of generated secrets: letters and digits without look-alikes (0 O o 1 l I). Nothing
    /// that needs quoting in swanctl, XML, JSON or a shell; never starts with 0x/0s (no '0').
    static let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz")
    static let pskLength = 32
    static let passwordLength = 24

    static func generate(length: Int) throws -> String {
        do {
            return try RandomBytes.string(length: length, alphabet: alphabet)
        } catch {
            throw PKIError(.crypto, "cannot generate a secret: \(error)")
        }
    }

    /// The value of a non-`gen` reference. `what` names the owner ("node 'fra-1' psk"); the error names
    /// the reference, never a value.
    static func resolve(
        _ source: SecretSource, what: String, at location: SourceLocation?, inventoryDirectory: String,
        environment: [String: String]
    ) throws -> String? {
        switch source {
        case .generate:
            return nil
        case .literal(let value):
            return value
        case .env(let name):
            guard let value = environment[name] else {
                throw PKIError(.secretUnavailable, "\(what): environment variable \(name) is not set (\(source.reference))", at: location)
            }
            guard !value.isEmpty else {
                throw PKIError(.secretUnavailable, "\(what): environment variable \(name) is empty (\(source.reference))", at: location)
            }
            return value
        case .file(let path):
            let full = path.hasPrefix("/") ? path : (inventoryDirectory as NSString).appendingPathComponent(path)
            guard let data = FileManager.default.contents(atPath: full) else {
                throw PKIError(.secretUnavailable, "\(what): cannot read file \(full) (\(source.reference))", at: location)
            }
            guard var value = String(data: data, encoding: .utf8) else {
                throw PKIError(.secretUnavailable, "\(what): file \(full) is not UTF-8 text (\(source.reference))", at: location)
            }
            if value.hasSuffix("\r\n") {
                value.removeLast(2)
            } else if value.hasSuffix("\n") {
                value.removeLast()
            }
            guard !value.isEmpty else {
                throw PKIError(.secretUnavailable, "\(what): file \(full) is empty (\(source.reference))", at: location)
            }
            return value
        }
    }
}
