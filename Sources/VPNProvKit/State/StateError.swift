import Foundation

/// A failure of the state directory: held lock, unreadable or inconsistent state, missing CA
/// passphrase, I/O. Always the environment's problem (exit 3), never the inventory's. Messages never
/// contain secret values.
public struct StateError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let lockHeld = Code(rawValue: "state-locked")
        public static let stateUnreadable = Code(rawValue: "state-unreadable")
        public static let stateInconsistent = Code(rawValue: "state-inconsistent")
        public static let caPassphrase = Code(rawValue: "ca-passphrase")
        public static let io = Code(rawValue: "state-io")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
