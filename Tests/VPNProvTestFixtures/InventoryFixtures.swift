import Foundation
import Testing
import VPNProvModel

/// Fixture inventories: `Fixtures/inventories/bad/*.yaml` start with `# expect: <code> <line>:<column>` lines
/// naming exactly the errors they must produce; `good/*.yaml` must decode without any.
package enum InventoryFixtures {
    package static var root: URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("inventories")
    }

    package static func names(_ kind: String) -> [String] {
        let dir = root.appendingPathComponent(kind)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return files.filter { $0.hasSuffix(".yaml") }.sorted()
    }

    package static func bytes(_ kind: String, _ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(kind).appendingPathComponent(name)))
    }

    /// "code line:column" for each `# expect:` line at the top of the file.
    package static func expectations(_ bytes: [UInt8]) -> [String] {
        var result: [String] = []
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("# expect: ") else { break }
            result.append(String(text.dropFirst("# expect: ".count)))
        }
        return result
    }

    /// Repository root (for inventory/example.yaml).
    package static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }
}

package func decode(_ text: String, file: String = "t.yaml") -> InventoryDecoder.Result {
    InventoryLoader.decode(bytes: Array(text.utf8), file: file)
}

package func summary(_ diagnostics: [Diagnostic]) -> [String] {
    diagnostics.filter { $0.severity == .error }.map { "\($0.code) \($0.location!.line):\($0.location!.column)" }
        .sorted()
}
