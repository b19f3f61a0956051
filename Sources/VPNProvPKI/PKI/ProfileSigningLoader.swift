import Foundation
import Glibc
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Reads the profile-signing identity (`pki.profile_signing`) for one run: every file read is
/// bounded, the key must belong to the certificate, and errors name the reference, never a value.
enum ProfileSigningLoader {
    /// Largest PEM file accepted (a certificate chain is a few KiB).
    static let maxFileSize = 1 << 20

    static func load(
        _ settings: ProfileSigningSettings, inventory: Inventory, inventoryDirectory: String,
        environment: [String: String]
    ) throws -> ProfileSigner {
        let location = inventory.location(of: .pki(.profileSigning))
        func text(_ source: SecretSource, _ what: String) throws -> String {
            try sourceText(
                source, what, inventory: inventory, inventoryDirectory: inventoryDirectory, environment: environment,
                location: location)
        }
        let certificatePEM = try text(settings.certificate, "cert")
        let keyPEM = try text(settings.key, "key")
        let chainPEM = try settings.chain.map { try text($0, "chain") } ?? ""
        var randomized = false
        do {
            let certificate = try X509Certificate(pem: certificatePEM)
            let key = try PrivateKey(pem: keyPEM)
            // PKCS#1 v1.5 (RSA) signatures are a function of key and content; ECDSA's are not.
            randomized = !(key.algorithm?.isRSA ?? false)
            // By its private half: a key file whose private part is damaged still carries the
            // certificate's public key, and would sign profiles that no device verifies.
            guard key.signsFor(certificate) else {
                throw PKIError(
                    .crypto,
                    "pki.profile_signing: the key (\(settings.key.reference)) does not sign for the certificate (\(settings.certificate.reference))",
                    at: location)
            }
            if !chainPEM.isEmpty { _ = try X509Certificate.all(pem: chainPEM) }
        } catch let error as PKIError {
            throw error
        } catch {
            throw PKIError(
                .crypto,
                "pki.profile_signing: cannot read the certificate, key or chain as PEM (\(settings.certificate.reference), \(settings.key.reference))",
                at: location)
        }
        var signer = ProfileSigner(certificatePEM: certificatePEM, keyPEM: keyPEM, chainPEM: chainPEM)
        signer.randomizedSignatures = randomized
        return signer
    }

    /// The text of one `pki.profile_signing` reference (`env:` or `file:`, under the rules of every such secret).
    private static func sourceText(
        _ source: SecretSource, _ what: String, inventory: Inventory, inventoryDirectory: String,
        environment: [String: String], location: SourceLocation?
    ) throws -> String {
        // The same rules as every env:/file: secret: the signing key is one.
        if let problem = SecretSourcePolicy.problem(source, inventory.secrets) {
            throw PKIError(.secretSource, "pki.profile_signing \(what): \(problem)", at: location)
        }
        switch source {
        case .env(let name):
            guard let value = environment[name], !value.isEmpty else {
                throw PKIError(
                    .secretUnavailable,
                    "pki.profile_signing \(what): environment variable \(name) is not set (\(source.reference))",
                    at: location)
            }
            return value
        case .file(let path):
            let full: String
            do {
                full = try SecretSourcePolicy.confinedFile(
                    path, inventory.secrets, inventoryDirectory: inventoryDirectory)
            } catch {
                throw PKIError(.secretSource, "pki.profile_signing \(what): \(error.message)", at: location)
            }
            return try readBounded(
                full, what: "pki.profile_signing \(what)", reference: source.reference, location: location)
        case .generate, .literal:
            throw PKIError(
                .secretUnavailable, "pki.profile_signing \(what) must be env:VAR or file:PATH", at: location)
        }
    }

    /// A regular file's text, refused past `maxFileSize` (BoundedFile, like every outside read).
    static func readBounded(_ path: String, what: String, reference: String, location: SourceLocation?) throws -> String
    {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: maxFileSize)
        } catch {
            switch error {
            case .tooLarge:
                throw PKIError(
                    .secretUnavailable, "\(what): \(path) is larger than \(maxFileSize >> 20) MiB (\(reference))",
                    at: location)
            case .notRegular:
                throw PKIError(
                    .secretUnavailable, "\(what): \(path) is not a regular file (\(reference))", at: location)
            case .symlink, .system: break
            }
            throw PKIError(.secretUnavailable, "\(what): cannot read file \(path) (\(reference))", at: location)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PKIError(.secretUnavailable, "\(what): \(path) is not UTF-8 text (\(reference))", at: location)
        }
        return text
    }
}
