import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// One thing a PKI run did, for the summary line.
package struct PKIChange: Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, Hashable {
        case caCreated = "created CA"
        case caAdopted = "adopted CA"
        case issued
        case reissued = "re-issued"
        case revoked
        case crlUpdated = "updated CRL"
        case secretGenerated = "generated secret"
        case secretRotated = "rotated secret"
        case caRotationStarted = "started CA rotation"
        case caRotationFinished = "finished CA rotation"
        case unrevoked
    }

    package enum Holder: Sendable, Hashable, CustomStringConvertible {
        case ca
        case node(String)
        case user(String)
        package var description: String {
            switch self {
            case .ca: return "CA"
            case .node(let n): return "node '\(n)'"
            case .user(let n): return "user '\(n)'"
            }
        }
    }

    package var kind: Kind
    package var holder: Holder
    /// Certificate serial (hex) or CRL number.
    package var serial: String?
    /// Why (e.g. "identity changed", "expires in 12 days", "removed from the inventory").
    package var reason: String?

    package init(_ kind: Kind, _ holder: Holder, serial: String? = nil, reason: String? = nil) {
        self.kind = kind
        self.holder = holder
        self.serial = serial
        self.reason = reason
    }

    package var description: String {
        // "created CA", not "created CA CA".
        var text =
            kind.rawValue.contains("CA") && holder == .ca
            ? kind.rawValue : "\(kind.rawValue) \(kind == .secretGenerated ? "for " : "")\(holder)"
        if let serial { text += " (\(serial))" }
        if let reason { text += ": \(reason)" }
        return text
    }
}

package struct PrepareResult {
    package var materials: Materials
    package var changes: [PKIChange]
    /// Non-fatal remarks (e.g. pki.ca settings that differ from the existing CA, which is kept).
    package var warnings: [String]
    /// The inventory as the state sees it: users revoked with `vpnprov revoke` are marked revoked.
    /// Render from this, not from the inventory as written.
    package var inventory: Inventory
    /// The certificate profiles the run issued from (of the inventory as written).
    package var certificates: CertificatePlan
    /// With `persist: false`, the loaded and updated state, written only by `commit()`.
    let pendingStore: StateStore?
    /// The node and user certificates of `materials` the state holds parsed already (those this run
    /// issued, or read for another reason), by their PEM text: what reads a certificate of the materials
    /// need not parse it again.
    package var parsedCertificates: [String: X509Certificate] = [:]

    /// Writes what `prepare(persist: false)` computed (no-op after `persist: true`). Lets a caller check
    /// everything it derives from the materials before the state changes.
    package func commit() throws {
        try pendingStore?.commit()
    }

    /// The entries of the state the commit gave vpnprov's own modes (they were wider: readable by others).
    package var narrowedModes: [StatePermissions.Wide] { pendingStore?.narrowedModes ?? [] }

    /// Records every certificate this run signed in the state's issuing journal, before the first of
    /// them is written anywhere (the output tree's temporary files included).
    package func recordIssuing() throws {
        try pendingStore?.recordIssuing()
    }

    /// Takes the journal back after a failure that removed everything this run wrote.
    package func abandonIssuing() {
        pendingStore?.abandonIssuing()
    }
}

package struct RevokeResult: Sendable {
    /// The revoked serial, nil when the user had no certificate (the user is still held out).
    package var serial: String?
    package var changes: [PKIChange]
}
