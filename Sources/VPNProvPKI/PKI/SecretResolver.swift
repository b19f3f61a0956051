import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Resolves `env:` / `file:` / `literal` secret references and generates `gen` secrets.
package enum SecretResolver {
    /// Characters of generated secrets: letters and digits without look-alikes (0 O o 1 l I). Nothing
    /// that needs quoting in swanctl, XML, JSON or a shell; never starts with 0x/0s (no '0').
    static let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz")
    static let pskLength = 32
    static let passwordLength = 24
    /// 48 characters of the alphabet: 277 bits, above the 256 bits of entropy strongSwan asks of a PPK for
    /// 128-bit security against a quantum computer (swanctl.opt, `secrets.ppk<suffix>.secret`).
    static let ppkLength = 48

    static func generate(length: Int) throws -> String {
        do {
            return try RandomBytes.string(length: length, alphabet: alphabet)
        } catch {
            throw PKIError(.crypto, "cannot generate a secret: \(error)")
        }
    }

    /// A generated secret of `length` other than `old` (what a rotation must end with).
    static func generate(length: Int, replacing old: String) throws -> String {
        var new = old
        while new == old { new = try generate(length: length) }
        return new
    }

    /// The value of a non-`gen` reference. `what` names the owner ("node 'fra-1' psk"); the error names
    /// the reference, never a value.
    package static func resolve(
        _ source: SecretSource, what: String, at location: SourceLocation?, inventoryDirectory: String,
        environment: [String: String], settings: SecretSettings = SecretSettings()
    ) throws -> String? {
        if let problem = SecretSourcePolicy.problem(source, settings) {
            throw PKIError(.secretSource, "\(what): \(problem)", at: location)
        }
        switch source {
        case .generate:
            return nil
        case .literal(let value):
            return value
        case .env(let name):
            return try environmentSecret(name, source, what: what, at: location, environment: environment)
        case .file(let path):
            return try fileSecret(
                path, source, what: what, at: location, inventoryDirectory: inventoryDirectory, settings: settings)
        }
    }

    /// An `env:` secret: set, non-empty, valid UTF-8 and at most `SecretPolicy.maxBytes` bytes.
    private static func environmentSecret(
        _ name: String, _ source: SecretSource, what: String, at location: SourceLocation?,
        environment: [String: String]
    ) throws -> String {
        guard let value = environment[name] else {
            throw PKIError(
                .secretUnavailable, "\(what): environment variable \(name) is not set (\(source.reference))",
                at: location)
        }
        guard !value.isEmpty else {
            throw PKIError(
                .secretUnavailable, "\(what): environment variable \(name) is empty (\(source.reference))",
                at: location)
        }
        // The process environment is decoded with invalid bytes replaced by U+FFFD: refuse it
        // the way a file with the same bytes is refused, instead of using a changed secret.
        guard !value.unicodeScalars.contains("\u{FFFD}") else {
            throw PKIError(
                .secretUnavailable,
                "\(what): environment variable \(name) is not valid UTF-8 text (\(source.reference))", at: location)
        }
        guard value.utf8.count <= SecretPolicy.maxBytes else {
            throw PKIError(
                .secretUnavailable,
                "\(what): environment variable \(name) is longer than \(SecretPolicy.maxBytes) bytes (\(source.reference))",
                at: location)
        }
        return value
    }

    /// A `file:` secret: a file inside the allowed directories, read bounded, holding one secret (`SecretFile`).
    private static func fileSecret(
        _ path: String, _ source: SecretSource, what: String, at location: SourceLocation?,
        inventoryDirectory: String, settings: SecretSettings
    ) throws -> String {
        let full: String
        do {
            full = try SecretSourcePolicy.confinedFile(path, settings, inventoryDirectory: inventoryDirectory)
        } catch {
            throw PKIError(.secretSource, "\(what): \(error.message)", at: location)
        }
        func failure(_ reason: String) -> PKIError {
            PKIError(.secretUnavailable, "\(what): file \(full) \(reason) (\(source.reference))", at: location)
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(full, limit: SecretPolicy.fileLimit)
        } catch {
            if case .tooLarge = error {
                throw failure("holds more than a \(SecretPolicy.maxBytes)-byte secret")
            }
            throw PKIError(
                .secretUnavailable, "\(what): cannot read file \(full): \(error.reason) (\(source.reference))",
                at: location)
        }
        switch SecretFile.value(of: bytes) {
        case .success(let value): return value
        case .failure(let problem): throw failure(problem.reason)
        }
    }
}

/// The secret a `file:` secret's bytes hold: the bytes with exactly one trailing line ending ("\n"
/// or "\r\n") taken off (on bytes: in a String "\r\n" is a single Character), which must then be
/// non-empty UTF-8 of at most `SecretPolicy.maxBytes` bytes. Public for the fuzz target.
package enum SecretFile {
    package struct Problem: Error, Sendable, Hashable {
        /// Completes "file X ...": never contains the bytes.
        package var reason: String
    }

    package static func value(of input: [UInt8]) -> Result<String, Problem> {
        var bytes = input[...]
        guard !bytes.isEmpty else { return .failure(Problem(reason: "is empty")) }
        if bytes.last == 0x0A {
            bytes.removeLast()
            if bytes.last == 0x0D { bytes.removeLast() }
            guard !bytes.isEmpty else { return .failure(Problem(reason: "holds only a line ending")) }
        }
        guard bytes.count <= SecretPolicy.maxBytes else {
            return .failure(Problem(reason: "holds more than a \(SecretPolicy.maxBytes)-byte secret"))
        }
        guard let value = String(validating: bytes, as: UTF8.self), !value.unicodeScalars.contains("\u{FFFD}") else {
            return .failure(Problem(reason: "is not valid UTF-8 text"))
        }
        return .success(value)
    }
}
