internal import CCrypto
import Foundation

/// PKCS#12 containers in the legacy form Apple and Android import: key and certificate bags
/// encrypted with pbeWithSHA1And3-KeyTripleDES-CBC, SHA-1 MAC, 2048 iterations (one for the
/// empty-password container).
package enum PKCS12 {
    /// A container protected by `password`, which must not be empty: macOS and iOS decode an empty
    /// PKCS#12 password differently, and some importers refuse one outright.
    package static func build(
        key: PrivateKey, certificate: X509Certificate, caCertificates: [X509Certificate], friendlyName: String,
        password: String
    ) throws -> [UInt8] {
        guard key.matches(certificate) else { throw CryptoError("the key does not match the certificate") }
        return try PKCS12Contents(
            key: key, certificate: certificate, caCertificates: caCertificates, friendlyName: friendlyName
        ).container(password: password)
    }

    /// A container with the empty password ("" encoded as the two-byte BMPString terminator), same
    /// algorithms. Only for importers that try the empty password before they ask (Android's
    /// certificate installer, strongSwan's pkcs12 plugin); never for Apple devices.
    ///
    /// Its key derivations and MAC use one iteration: the iteration count only slows down guessing a
    /// password, and this one is known, so 2,048 would buy nothing and cost five key derivations of
    /// 2,048 SHA-1 rounds per container. One iteration is the older form, what OpenSSL's `pkcs12
    /// -noiter -nomaciter` writes for importers that predate iteration counts.
    package static func buildWithEmptyPassword(
        key: PrivateKey, certificate: X509Certificate, caCertificates: [X509Certificate], friendlyName: String
    ) throws -> [UInt8] {
        guard key.matches(certificate) else { throw CryptoError("the key does not match the certificate") }
        return try PKCS12Contents(
            key: key, certificate: certificate, caCertificates: caCertificates, friendlyName: friendlyName
        ).containerWithEmptyPassword()
    }

    /// Opens a PKCS#12 (MAC checked): its key, certificate and extra certificates.
    package static func parse(_ der: [UInt8], password: String) throws -> (
        key: PrivateKey, certificate: X509Certificate, caCertificates: [X509Certificate]
    ) {
        ERR_clear_error()
        let p12: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS12(nil, &pointer, buffer.count)
        }
        guard let p12 else { throw CryptoError.openSSL("cannot parse the PKCS#12") }
        defer { PKCS12_free(p12) }
        var pkey: OpaquePointer? = nil
        var cert: OpaquePointer? = nil
        var ca: OpaquePointer? = nil
        let ok = password.withCString { PKCS12_parse(p12, $0, &pkey, &cert, &ca) }
        guard ok == 1, let pkey, let cert else {
            if let pkey { EVP_PKEY_free(pkey) }
            if let cert { X509_free(cert) }
            if let ca { vpnprov_sk_X509_pop_free(ca) }
            throw CryptoError.openSSL("cannot open the PKCS#12 (wrong password?)")
        }
        var extra: [X509Certificate] = []
        if let ca {
            for i in 0..<vpnprov_sk_X509_num(ca) {
                if let x = vpnprov_sk_X509_value(ca, i), X509_up_ref(x) == 1 {
                    extra.append(X509Certificate(owning: x))
                }
            }
            vpnprov_sk_X509_pop_free(ca)
        }
        return (PrivateKey(owning: pkey), X509Certificate(owning: cert), extra)
    }
}
