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
