import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// A failure of the state directory: held lock, unreadable or inconsistent state, missing CA
/// passphrase, I/O. Always the environment's problem (exit 3), never the inventory's. Messages never
/// contain secret values.
package struct StateError: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: RuleCode
    package var message: String

    package init(_ code: RuleCode, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}

/// The rule codes of `StateError` (docs/diagnostics.md lists them with the others).
extension RuleCode {
    package static let lockHeld = RuleCode("state-locked")
    static let stateUnreadable = RuleCode("state-unreadable")
    package static let stateInconsistent = RuleCode("state-inconsistent")
    package static let caPassphrase = RuleCode("ca-passphrase")
    package static let io = RuleCode("state-io")
    /// The state directory or a file in it belongs to another user or others can write it (refused);
    /// as a warning, a mode wider than vpnprov's own that the run narrowed.
    package static let statePermissions = RuleCode("state-permissions")
}
