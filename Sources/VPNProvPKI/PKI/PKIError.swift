import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// A PKI failure. `isEnvironment` errors (a crypto failure) map to exit 3; `isInventory` errors (a secret
/// reference that does not resolve, an unknown user) map to exit 1. The state directory's own failures
/// are `StateError`. Messages never contain secret values.
package struct PKIError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        package static let crypto = Code(rawValue: "crypto-failure")
        /// env:/file: reference that cannot be resolved (inventory flavour).
        package static let secretUnavailable = Code(rawValue: "secret-unavailable")
        /// A secret reference the inventory's `secrets:` rules do not allow (inventory flavour).
        package static let secretSource = Code(rawValue: "secret-source")
        /// An identity that cannot be put into a certificate (inventory flavour).
        package static let badIdentity = Code(rawValue: "certificate-identity")
        /// `revoke` of a user without a current certificate (inventory flavour).
        package static let nothingToRevoke = Code(rawValue: "nothing-to-revoke")
        /// `unrevoke` of a user who is not held revoked by command (inventory flavour).
        package static let nothingToUnrevoke = Code(rawValue: "nothing-to-unrevoke")
        /// `rotate-psk` / `rotate-password` of a secret vpnprov did not generate (inventory flavour).
        package static let secretNotGenerated = Code(rawValue: "secret-not-generated")
        /// `rotate-ca` while a rotation is in progress, `--finish` without one (inventory flavour).
        package static let caRotation = Code(rawValue: "ca-rotation")
        /// A node identity on a client certificate the state issued (inventory flavour).
        package static let serverIdentityOverlap = Code(rawValue: RuleCode.serverIdentityOverlap.rawValue)
    }

    package var code: Code
    package var message: String
    /// Where in the inventory the problem is written (inventory flavour only).
    package var location: SourceLocation?

    package init(_ code: Code, _ message: String, at location: SourceLocation? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    package var isInventory: Bool {
        [
            .secretUnavailable, .secretSource, .badIdentity, .nothingToRevoke, .nothingToUnrevoke, .secretNotGenerated,
            .caRotation, .serverIdentityOverlap,
        ]
        .contains(code)
    }
    package var isEnvironment: Bool { !isInventory }

    package var description: String { message }

    /// The error as a diagnostic (rule code = `code`).
    package var diagnostic: Diagnostic { .error(RuleCode(code.rawValue), message, at: location) }
}
