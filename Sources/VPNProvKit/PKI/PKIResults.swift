import Foundation
import VPNProvCrypto

/// One thing a PKI run did, for the summary line.
public struct PKIChange: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
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

    public enum Holder: Sendable, Hashable, CustomStringConvertible {
        case ca
        case node(String)
        case user(String)
        public var description: String {
            switch self {
            case .ca: return "CA"
            case .node(let n): return "node '\(n)'"
            case .user(let n): return "user '\(n)'"
            }
        }
    }

    public var kind: Kind
    public var holder: Holder
    /// Certificate serial (hex) or CRL number.
    public var serial: String?
    /// Why (e.g. "identity changed", "expires in 12 days", "removed from the inventory").
    public var reason: String?

    public init(_ kind: Kind, _ holder: Holder, serial: String? = nil, reason: String? = nil) {
        self.kind = kind
        self.holder = holder
        self.serial = serial
        self.reason = reason
    }

    public var description: String {
        // "created CA", not "created CA CA".
        var text = kind.rawValue.contains("CA") && holder == .ca ? kind.rawValue : "\(kind.rawValue) \(kind == .secretGenerated ? "for " : "")\(holder)"
        if let serial { text += " (\(serial))" }
        if let reason { text += ": \(reason)" }
        return text
    }
}

public struct PrepareResult {
    public var materials: Materials
    public var changes: [PKIChange]
    /// Non-fatal remarks (e.g. pki.ca settings that differ from the existing CA, which is kept).
    public var warnings: [String]
    /// The inventory as the state sees it: users revoked with `vpnprov revoke` are marked revoked.
    /// Render from this, not from the inventory as written.
    public var inventory: Inventory
    /// With `persist: false`, the loaded and updated state, written only by `commit()`.
    let pendingStore: StateStore?

    /// Writes what `prepare(persist: false)` computed (no-op after `persist: true`). Lets a caller check
    /// everything it derives from the materials before the state changes.
    public func commit() throws {
        try pendingStore?.commit()
    }

    /// Records every certificate this run signed in the state's issuing journal, before the first of
    /// them is written anywhere (the output tree's temporary files included).
    func recordIssuing() throws {
        try pendingStore?.recordIssuing()
    }

    /// Takes the journal back after a failure that removed everything this run wrote.
    func abandonIssuing() {
        pendingStore?.abandonIssuing()
    }
}

public struct RevokeResult: Sendable {
    /// The revoked serial, nil when the user had no certificate (the user is still held out).
    public var serial: String?
    public var changes: [PKIChange]
}
