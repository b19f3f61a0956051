import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// PKI settings (the inventory's `pki:`, docs/inventory.md). Key types are a closed enum already.
//
// Decisions: every lifetime is 1...36500 days (X.509 dates stay far below 9999); server_days above
// 825 warns (Apple rejects longer-lived server certificates); a CA living shorter than the server or
// client certificates it signs warns (they stop validating when the CA expires); the CA name becomes
// the CA's CN, so it must be 1...64 characters (X.520 upper bound) without control characters.

enum PKIRules {
    static let maxDays = 36500
    static let appleServerDays = 825

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let pki = inventory.pki
        let lifetimes = [
            (InventoryField.ca(.days), "ca.days", pki.ca.days), (.pki(.serverDays), "server_days", pki.serverDays),
            (.pki(.clientDays), "client_days", pki.clientDays),
        ]
        var valid = true
        for (field, label, days) in lifetimes where days < 1 || days > maxDays {
            d.append(
                .error(
                    .invalidDays, "pki: \(label) is \(days); it must be between 1 and \(maxDays)",
                    at: inventory.location(of: field)))
            valid = false
        }
        if pki.serverDays > appleServerDays && pki.serverDays <= maxDays {
            d.append(
                .warning(
                    .serverDaysApple,
                    "pki: server_days is \(pki.serverDays); Apple devices reject server certificates valid for more than \(appleServerDays) days",
                    at: inventory.location(of: .pki(.serverDays)), about: .deployment))
        }
        if valid {
            for (field, label, days) in lifetimes.dropFirst() where days > pki.ca.days {
                d.append(
                    .warning(
                        .caDaysShort,
                        "pki: ca.days (\(pki.ca.days)) is shorter than \(label) (\(days)); certificates stop validating when the CA expires",
                        at: inventory.location(of: .ca(.days)),
                        notes: [.init(location: inventory.location(of: field), message: "\(label) set here")],
                        about: .deployment))
            }
        }
        let name = pki.ca.name
        let nameLocation = inventory.location(of: .ca(.name))
        if name.isEmpty || name.allSatisfy({ $0 == " " }) {
            d.append(.error(.invalidCAName, "pki: ca.name is empty", at: nameLocation))
        } else if TextCheck.hasControlCharacters(name) {
            d.append(
                .error(
                    .invalidCAName, "pki: ca.name \(TextCheck.quoted(name)) contains control characters",
                    at: nameLocation))
        } else if name.unicodeScalars.count > 64 {
            d.append(
                .error(
                    .invalidCAName,
                    "pki: ca.name is longer than 64 characters (the limit for a certificate common name)",
                    at: nameLocation))
        }
    }
}
