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
