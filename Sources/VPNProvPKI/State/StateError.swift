import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// A failure of the state directory: held lock, unreadable or inconsistent state, missing CA
/// passphrase, I/O. Always the environment's problem (exit 3), never the inventory's. Messages never
/// contain secret values.
package struct StateError: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        package static let lockHeld = Code(rawValue: "state-locked")
        package static let stateUnreadable = Code(rawValue: "state-unreadable")
        package static let stateInconsistent = Code(rawValue: "state-inconsistent")
        package static let caPassphrase = Code(rawValue: "ca-passphrase")
        package static let io = Code(rawValue: "state-io")
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
