import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// One run's work on a loaded state: a reference, like the store it changes (one thread, one run).
package final class PKISession {
    let store: StateStore
    let inventory: Inventory
    let now: Date
    let passphrase: String?
    var changes: [PKIChange] = []
    var warnings: [String] = []

    init(store: StateStore, inventory: Inventory, now: Date, passphrase: String?) {
        self.store = store
        self.inventory = inventory
        self.now = now
        self.passphrase = passphrase
    }

    /// The store's index, mutated in place: with a plain get/set pair, `index.users[name] = x`
    /// would copy the whole dictionary for every certificate (quadratic in the number of users).
    var index: StateIndex {
        get { store.index }
        _modify { yield &store.index }
        set { store.index = newValue }
    }

    static func cryptoFailure(_ what: String, _ error: Error) -> any Error {
        if error is PKIError || error is StateError { return error }
        return PKIError(.crypto, "\(what): \(error)")
    }

    func newSerial() throws -> String {
        while true {
            var bytes = try RandomBytes.generate(count: 16)
            bytes[0] = bytes[0] & 0x7F | 0x01
            let hex = hexString(bytes)
            if index.certificates[hex] == nil { return hex }
        }
    }
}
