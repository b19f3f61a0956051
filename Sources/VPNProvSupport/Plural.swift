/// Counts in the tool's English text: "1 node", "3 nodes", "0 files" — one place for the plural, so no
/// message says "1 nodes".
package enum Plural {
    /// "`count` `noun`", with the plural `plural` (default: `noun` + "s") unless `count` is 1.
    package static func count(_ count: Int, _ noun: String, plural: String? = nil) -> String {
        "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
    }
}
