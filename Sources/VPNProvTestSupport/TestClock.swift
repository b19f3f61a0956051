import Foundation

/// The test clock of `vpnprov-testhooks`: `VPNPROV_NOW` replaces the time of a run, so a test proves the
/// expiry gate without waiting a year. The product never reads it.
package enum TestClock {
    package static let variable = "VPNPROV_NOW"

    /// Seconds since 1970, an ISO 8601 date and time (`2027-11-15T08:00:00Z`) or a calendar date
    /// (`2027-11-15`, midnight UTC); nil for anything else.
    package static func parse(_ text: String) -> Date? {
        if let seconds = TimeInterval(text) { return Date(timeIntervalSince1970: seconds) }
        if let date = ISO8601DateFormatter().date(from: text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        return day.date(from: text)
    }
}
