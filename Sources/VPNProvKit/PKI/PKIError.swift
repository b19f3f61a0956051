import Foundation

/// A PKI failure. `isEnvironment` errors (a crypto failure) map to exit 3; `isInventory` errors (a secret
/// reference that does not resolve, an unknown user) map to exit 1. The state directory's own failures
/// are `StateError`. Messages never contain secret values.
public struct PKIError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let crypto = Code(rawValue: "crypto-failure")
        /// env:/file: reference that cannot be resolved (inventory flavour).
        public static let secretUnavailable = Code(rawValue: "secret-unavailable")
        /// A secret reference the inventory's `secrets:` rules do not allow (inventory flavour).
        public static let secretSource = Code(rawValue: "secret-source")
        /// An identity that cannot be put into a certificate (inventory flavour).
        public static let badIdentity = Code(rawValue: "certificate-identity")
        /// `revoke` of a user without a current certificate (inventory flavour).
        public static let nothingToRevoke = Code(rawValue: "nothing-to-revoke")
        /// `unrevoke` of a user who is not held revoked by command (inventory flavour).
        public static let nothingToUnrevoke = Code(rawValue: "nothing-to-unrevoke")
        /// `rotate-psk` / `rotate-password` of a secret vpnprov did not generate (inventory flavour).
        public static let secretNotGenerated = Code(rawValue: "secret-not-generated")
        /// `rotate-ca` while a rotation is in progress, `--finish` without one (inventory flavour).
        public static let caRotation = Code(rawValue: "ca-rotation")
        /// A node identity on a client certificate the state issued (inventory flavour).
        public static let serverIdentityOverlap = Code(rawValue: RuleCode.serverIdentityOverlap.rawValue)
    }

    public var code: Code
    public var message: String
    /// Where in the inventory the problem is written (inventory flavour only).
    public var location: SourceLocation?

    public init(_ code: Code, _ message: String, at location: SourceLocation? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var isInventory: Bool {
        [.secretUnavailable, .secretSource, .badIdentity, .nothingToRevoke, .nothingToUnrevoke, .secretNotGenerated, .caRotation, .serverIdentityOverlap]
            .contains(code)
    }
    public var isEnvironment: Bool { !isInventory }

    public var description: String { message }

    /// The error as a diagnostic (rule code = `code`).
    public var diagnostic: Diagnostic { .error(RuleCode(code.rawValue), message, at: location) }
}
