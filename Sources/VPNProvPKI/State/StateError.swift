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
}
