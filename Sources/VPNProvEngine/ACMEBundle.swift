import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// `acme.ca_bundle`: the CAs the nodes trust for a private ACME directory's HTTPS, read once per run and
/// shipped to each ACME node as `servers/<node>/acme/ca-bundle.pem` (docs/acme.md) and to the hand-off site in
/// its host_vars (docs/handoff.md).
enum ACMEBundle {
    /// A bundle is a few certificates; more than this is not one.
    static let limit = 1 << 20

    /// The bundle's certificates, re-encoded one after another, or nil when none is configured or neither a
    /// node nor the hand-off site uses ACME; a diagnostic at `ca_bundle` instead when the file cannot be read
    /// or holds no certificate.
    static func read(_ inventory: Inventory, inventoryDirectory: String) -> Result<String?, Failure> {
        guard let acme = inventory.acme, let path = acme.caBundle,
            inventory.nodes.contains(where: { $0.certificate == .acme }) || inventory.handOff != nil
        else { return .success(nil) }
        let location = acme.location(of: .caBundle)
        let full = path.hasPrefix("/") ? path : inventoryDirectory.isEmpty ? path : inventoryDirectory + "/" + path
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(full, limit: limit)
        } catch {
            return .failure(
                Failure(
                    diagnostic: .error(.invalidValue, "'acme.ca_bundle': cannot read '\(path)': \(error)", at: location)
                ))
        }
        guard let text = String(validating: bytes, as: UTF8.self),
            let certificates = try? X509Certificate.all(pem: text), !certificates.isEmpty
        else {
            return .failure(
                Failure(
                    diagnostic: .error(
                        .invalidValue,
                        "'acme.ca_bundle': '\(path)' holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                        at: location)))
        }
        return .success(certificates.map(\.pem).joined())
    }

    struct Failure: Error {
        var diagnostic: Diagnostic
    }
}
