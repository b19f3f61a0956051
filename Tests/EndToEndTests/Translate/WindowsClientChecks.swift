import Foundation
import VPNProvCrypto
import VPNProvTestHarness

/// The server-certificate checks Windows makes that charon's own checks do not cover (serverAuth EKU, the dialled
/// address as dNSName). charon verifies the chain to the CA the script imported during IKE_AUTH and keeps the
/// certificate the server sent in its certificate cache; `received` is what the cache gained during the handshake
/// (flushed before it), judged the way Windows judges it. Windows refuses such a certificate before the tunnel
/// is up (error 13801); here the case fails after the handshake, with the reason.
enum WindowsClientChecks {
    /// Flushes the client daemon's certificate cache and returns what it lists afterwards (loaded credentials).
    static func prepare(_ nut: NodeUnderTest) throws -> Set<String> {
        let flush = try nut.client.swanctl(["--flush-certs"])
        guard flush.succeeded else { throw HarnessError("flush-certs failed: \(flush)") }
        return Set(try nut.clientEndEntityCertificates())
    }

    /// The certificates the client holds now and did not hold before the handshake (the server's), leaving out
    /// the client's own (`own`: what the setup loaded, which the load replaced the earlier setup's with).
    static func received(_ nut: NodeUnderTest, before: Set<String>, own: [Data] = []) throws -> [String] {
        let ownDER = Set(own.compactMap { try? X509Certificate(pem: String(decoding: $0, as: UTF8.self)).der })
        return try nut.clientEndEntityCertificates().filter { pem in
            guard !before.contains(pem), let cert = try? X509Certificate(pem: pem) else { return false }
            return !cert.isCA && !ownDER.contains(cert.der)
        }
    }

    /// The PEM certificates a translated setup loads as the client's own (`x509/`).
    static func own(_ loadable: ClientCase.Loadable) -> [Data] {
        guard case .translated(let setup) = loadable else { return [] }
        return setup.files.filter { $0.key.hasPrefix("x509/") }.map(\.value)
    }

    /// Why Windows refuses the server certificate received during the handshake, or nil.
    static func refusal(_ nut: NodeUnderTest, dialled: String, before: Set<String>, own: [Data] = []) throws -> String?
    {
        let received = try received(nut, before: before, own: own)
        guard !received.isEmpty else { throw HarnessError("the client daemon received no server certificate") }
        for pem in received {
            if let reason = try WindowsScriptTranslator.checkServerCertificate(pem: pem, dialled: dialled) {
                return reason
            }
        }
        return nil
    }
}
