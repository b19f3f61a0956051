import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport
import VPNProvYAML

/// Which nodes a client certificate lets its holder into. Each node has a certificate policy OID;
/// a user's certificate carries the OIDs of the nodes in the user's `nodes:`, and the node's
/// `ikev2-cert` connection requires its own OID (swanctl `cert_policy`), which charon's constraints
/// plugin checks against the policies the certificate carries and its chain allows. So a
/// certificate of the deployment's CA opens only the nodes it names, and a change of `nodes:`
/// re-issues the certificate (docs/decisions.md, "Certificate users are scoped to their nodes").
///
/// The CA certificates carry `anyPolicy`: strongSwan before 6.0.1 only accepts a certificate policy
/// that every certificate of the chain, the self-signed root included, allows.
package enum NodeAccessPolicy {
    /// The arc under which vpnprov names node policies: `2.25` (ITU-T X.667, UUIDs: usable without
    /// registration) with a fixed value below 2^32, because strongSwan parses OID arcs into 32 bits.
    package static let arc = "2.25.3613195157"
    /// RFC 5280's anyPolicy, carried by every CA certificate vpnprov issues.
    package static let anyPolicy = "2.5.29.32.0"

    /// The node's policy OID: the arc, then two 31-bit arcs from SHA-256 of the node's name (a
    /// node keeps its OID for as long as it keeps its name; renaming it re-issues its users).
    package static func oid(forNode name: String) -> String {
        let d = Digest.sha256(Array("vpnprov node access: \(name)".utf8))
        func part(_ at: Int) -> UInt32 {
            (UInt32(d[at]) << 24 | UInt32(d[at + 1]) << 16 | UInt32(d[at + 2]) << 8 | UInt32(d[at + 3])) & 0x7FFF_FFFF
        }
        return "\(Self.arc)." + String(part(0)) + "." + String(part(4))
    }
}
