import Foundation

/// The repository's root, and the shipped example inventory in it.
package enum Repository {
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "../.."
    )
    .standardized.path
    package static let example = root + "/inventory/example.yaml"
}
