import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// `index.json`: the certificate database and what is current. Encoded with sorted keys and ISO 8601
/// dates so an unchanged state re-encodes to the same bytes.
package struct StateIndex: Codable, Equatable {
    /// 2: sealed by `manifest.sha256` (`StateRecords`), with the digests of the CAs' files, the CRLs and
    /// the cross certificate. Version 1, from before, is read (strictly, key by key) and written as 2 by
    /// the next run that commits the state.
    static let currentVersion = 2
    static let readableVersions = 1...2

    var version: Int = StateIndex.currentVersion
    package var ca: CARecord?
    /// Every certificate ever issued, by serial (uppercase hex).
    package var certificates: [String: CertificateRecord] = [:]
    /// Current certificate of each node.
    package var nodes: [String: HolderRecord] = [:]
    /// Current certificate of each certificate user.
    package var users: [String: HolderRecord] = [:]
    package var crl: CRLRecord?
    /// Users revoked with `vpnprov revoke` while the inventory still lists them as active: user ->
    /// revoked serial ("" when the user had no certificate). They stay out until the inventory says
    /// `revoked: true` (the hold is then redundant and cleared) or drops them. Absent when empty, so
    /// older states read and re-encode unchanged.
    package var revokedByCommand: [String: String]?
    /// A CA rotation in its overlap phase (`vpnprov rotate-ca` until `rotate-ca --finish`): `ca` is
    /// already the new CA, this holds the previous one. Absent outside a rotation.
    package var rotation: CARotationRecord?
    /// CAs that a finished rotation retired, oldest first (kept for the record; never trusted again).
    var retiredCAs: [CARecord]?

    /// An empty index, as a new state starts.
    package init() {}
}

/// The overlap of a CA rotation: servers trust the previous CA and present the new CA's
/// certificates together with a cross certificate (the new CA's key and name, signed by the
/// previous CA), so profiles that trust only the previous CA keep verifying the servers.
package struct CARotationRecord: Codable, Equatable {
    var startedAt: Date
    var previous: CARecord
    /// Serial of the cross certificate (certs/<serial>.pem).
    var crossSerial: String
    /// The previous CA's CRL, kept current during the overlap (its certificates are still trusted).
    package var previousCRL: CRLRecord?
    /// SHA-256 of the cross certificate's file as written (absent in older states until their next run).
    var crossSHA256: String? = nil
}

package struct CARecord: Codable, Equatable {
    var serial: String
    var commonName: String
    var keyType: KeyType
    /// SHA-256 of the CA certificate's DER, hex.
    var fingerprint: String
    var notAfter: Date
    /// 1 (absent) for the deployment's first CA, stored as ca/ca.key + ca/ca.pem; later CAs (from
    /// `rotate-ca`) are stored as ca/<serial>.key + ca/<serial>.pem, so no CA file is ever replaced.
    var generation: Int?
    /// The CA certificate carries `anyPolicy`, so strongSwan 5.9 accepts the node policies of client
    /// certificates under it (NodeAccessPolicy); absent on CAs created before vpnprov scoped them.
    var anyPolicy: Bool? = nil
    /// SHA-256 of the CA's certificate and key files as written: a run reads the key file by its digest
    /// and checks its private half only before it signs. Absent in older states: the key is then
    /// checked by its private half when it can be read, and its digest recorded (docs/state.md).
    var certificateSHA256: String? = nil
    var keySHA256: String? = nil
}

package enum CertificateStatus: String, Codable, Equatable {
    /// Current and valid.
    case valid
    /// Replaced by a newer certificate for the same holder; not revoked, expires on its own.
    case superseded
    /// Listed in the CRL.
    case revoked
}

package struct CertificateRecord: Codable, Equatable {
    package var serial: String
    var kind: CertificateKind
    /// Node or user name ("" for the CA).
    var holder: String
    var subject: String
    var subjectAltNames: [String]
    var keyType: KeyType
    /// The lifetime setting it was issued under (server_days / client_days / ca days).
    var days: Int
    var notBefore: Date
    var notAfter: Date
    package var status: CertificateStatus
    package var revokedAt: Date?
    var revocationReason: String?
    /// Extended key usage OIDs the certificate carries; absent in states written before vpnprov recorded
    /// them (the certificate is then read once and the record completed).
    var extendedKeyUsages: [String]? = nil
    /// Serial of the issuing CA. Absent on certificates from before the first CA rotation: they
    /// were issued by the first CA (a rotation records it on every certificate it finds without).
    var issuer: String? = nil
    /// The CRL distribution point URIs it carries; absent: none (the `pki.crl_url` setting it was issued under).
    var crlDistributionPoints: [String]? = nil
    /// The certificate policy OIDs it carries (a client certificate: the nodes it opens); absent: none.
    var policies: [String]? = nil
}

package struct HolderRecord: Codable, Equatable {
    var serial: String
    /// Key file id (keys/<id>.pem): the first 20 bytes of SHA-256 over the key's SubjectPublicKeyInfo.
    var key: String
    var p12: P12Record?
    /// The same key and certificate in a PKCS#12 with the empty password, for the Android `.sswan`
    /// profiles (the Android certificate installer opens it without asking). Absent in older states
    /// and for nodes; built on the next run.
    var openP12: P12Record?
    /// SHA-256 of the key file as written. With it, loading checks the key file by digest and the
    /// certificate's public key against `key`, instead of parsing every private key with OpenSSL on
    /// every run (docs/benchmarks.md, "Why the code is shaped this way").
    /// Absent in older states: the key is then parsed.
    var keySHA256: String?
    /// SHA-256 of the certificate file as written: with it the certificate is checked by digest and
    /// parsed with OpenSSL only when it is used to issue, not on every run
    /// (docs/benchmarks.md, "Why the code is shaped this way").
    var certificateSHA256: String?
}

extension StateIndex {
    /// The first string of the index that becomes part of a state file's path (serials, key ids, p12
    /// file names) without being one of the names vpnprov writes: hexadecimal serials and key ids,
    /// `<hex>-<hex>.p12`, `<hex>-<hex>-open.p12`. Such a name could lead a read out of the state directory (`../`); nil
    /// when all
    /// are plain.
    var firstUnsafeFileName: String? {
        // Hex as vpnprov writes it (whole bytes), the same rule the CRL applies to serials.
        func isHex(_ s: String) -> Bool { !s.isEmpty && s.utf8.count <= 128 && bytesFromHex(s) != nil }
        func isP12(_ s: String) -> Bool {
            guard s.hasSuffix(".p12") else { return false }
            let parts = s.dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
            // <serial>-<digest>.p12, and <serial>-<digest>-open.p12 for the empty-password container.
            let hex = parts.count == 3 && parts[2] == "open" ? parts.dropLast() : parts[...]
            return hex.count == 2 && hex.allSatisfy { isHex(String($0)) }
        }
        // The serials read as files: current certificates (certs/<serial>.pem) and CAs (ca/<serial>.*).
        var serials = [ca?.serial, rotation?.previous.serial, rotation?.crossSerial].compactMap { $0 }
        serials += (retiredCAs ?? []).map(\.serial)
        for (_, holder) in nodes.sorted(by: { $0.key < $1.key }) + users.sorted(by: { $0.key < $1.key }) {
            serials.append(holder.serial)
            if !isHex(holder.key) { return holder.key }
            for p12 in [holder.p12, holder.openP12].compactMap({ $0 }) where !isP12(p12.file) { return p12.file }
        }
        return serials.sorted().first { !isHex($0) }
    }
}

struct P12Record: Codable, Equatable {
    /// File name under p12/.
    var file: String
    /// SHA-256 of the container bytes, hex.
    var sha256: String
}

package struct CRLRecord: Codable, Equatable {
    var number: Int
    var thisUpdate: Date
    var nextUpdate: Date
    /// Serials listed, sorted.
    var revokedSerials: [String]
    /// SHA-256 of the CRL file as written; absent in older states until their next run, which then
    /// checks the CRL's number and signature instead.
    var sha256: String? = nil
}

/// `secrets.json` (0600): generated PSKs and passwords, p12 passwords.
package struct SecretsFile: Codable, Equatable {
    var version: Int = 1
    /// Generated (`gen`) node PSKs.
    package var psks: [String: String] = [:]
    /// Generated (`gen`) user passwords.
    package var passwords: [String: String] = [:]
    /// PKCS#12 passwords of certificate users.
    package var p12Passwords: [String: String] = [:]
    /// Generated RADIUS shared secrets of the nodes with `accounts: radius` (absent before any).
    package var radiusSecrets: [String: String]?
    /// Generated secrets of those nodes' Disconnect-Request (DAE) listeners.
    package var daeSecrets: [String: String]?
    /// Generated IKE pre-shared keys of those nodes' IPsec connections to the RADIUS servers
    /// (`accounts.protection: ipsec`; absent before any).
    package var radiusIPsecSecrets: [String: String]?
    /// Generated secrets between those nodes' charon and their local RADIUS relay (absent before any).
    package var radiusRelaySecrets: [String: String]?
    /// Generated post-quantum preshared keys (RFC 8784) of the users who reach a node with `quantum_safe.ppk`
    /// (absent before any).
    package var ppks: [String: String]?
}

enum StateJSON {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(value)) + [0x0A]
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(bytes))
    }

    /// Where `bytes` (which decoded to `value`) hold what `value` does not: a key the type does not
    /// have (which the decoder skips and the next write would drop), a `null`, a date or number that
    /// does not read back as written (`T46:01:29Z` decodes to a date two days on), as a dotted path to
    /// it ("certificates.0A1B.revocationReason"); nil when the two are the same JSON. Names keys only,
    /// never a value (secrets.json's values are secrets). The strict reading of a record that no
    /// manifest vouches for, and of every issuing journal.
    static func firstDifference<T: Encodable>(_ bytes: [UInt8], _ value: T) throws -> String? {
        let read = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        let written = try JSONSerialization.jsonObject(with: Data(try encode(value)), options: [.fragmentsAllowed])
        return difference(read, written, at: "")
    }

    private static func difference(_ read: Any, _ written: Any, at path: String) -> String? {
        func child(_ key: String) -> String { path.isEmpty ? key : path + "." + key }
        switch (read, written) {
        case (let read as [String: Any], let written as [String: Any]):
            for key in read.keys.sorted() {
                guard let other = written[key] else {
                    return read[key] is NSNull ? "a null at \(child(key))" : "the unknown key \(child(key))"
                }
                if let found = difference(read[key]!, other, at: child(key)) { return found }
            }
            if let missing = written.keys.sorted().first(where: { read[$0] == nil }) { return "no \(child(missing))" }
            return nil
        case (let read as [Any], let written as [Any]):
            guard read.count == written.count else { return "the list \(path)" }
            for (i, (a, b)) in zip(read, written).enumerated() {
                if let found = difference(a, b, at: child(String(i))) { return found }
            }
            return nil
        default:
            guard let read = read as? NSObject, let written = written as? NSObject, read.isEqual(written),
                (read is NSString) == (written is NSString)
            else { return "the value of \(path.isEmpty ? "the file" : path)" }
            return nil
        }
    }
}
