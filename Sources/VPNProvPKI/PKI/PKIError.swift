import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// A PKI failure. `isEnvironment` errors (a crypto failure) map to exit 3; `isInventory` errors (a secret
/// reference that does not resolve, an unknown user) map to exit 1. The state directory's own failures
/// are `StateError`. Messages never contain secret values.
package struct PKIError: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: RuleCode
    package var message: String
    /// Where in the inventory the problem is written (inventory flavour only).
    package var location: SourceLocation?

    package init(_ code: RuleCode, _ message: String, at location: SourceLocation? = nil) {
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
    package var diagnostic: Diagnostic { .error(code, message, at: location) }
}

/// The rule codes of `PKIError`; `secretSource` and `serverIdentityOverlap` are validation's own codes,
/// which the PKI reports when it finds the same problem later (docs/diagnostics.md lists them all).
extension RuleCode {
    package static let crypto = RuleCode("crypto-failure")
    /// env:/file: reference that cannot be resolved (inventory flavour).
    package static let secretUnavailable = RuleCode("secret-unavailable")
    /// An identity that cannot be put into a certificate (inventory flavour).
    static let badIdentity = RuleCode("certificate-identity")
    /// `revoke` of a user without a current certificate (inventory flavour).
    static let nothingToRevoke = RuleCode("nothing-to-revoke")
    /// `unrevoke` of a user who is not held revoked by command (inventory flavour).
    package static let nothingToUnrevoke = RuleCode("nothing-to-unrevoke")
    /// `rotate-psk` / `rotate-password` of a secret vpnprov did not generate (inventory flavour).
    package static let secretNotGenerated = RuleCode("secret-not-generated")
    /// `rotate-ca` while a rotation is in progress, `--finish` without one (inventory flavour).
    package static let caRotation = RuleCode("ca-rotation")
}
