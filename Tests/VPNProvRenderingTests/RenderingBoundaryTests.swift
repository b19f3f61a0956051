import Foundation
import Testing
import VPNProvTestFixtures

/// Renderers render plans: no file of VPNProvRendering names the inventory or makes a plan or a planning
/// decision itself (docs/architecture.md, "renderers never re-derive a decision from the inventory"). The
/// deployment plan (VPNProvPlanning's `DeploymentPlan`) hands each renderer its part.
struct RenderingBoundaryTests {
    /// What only the planning layer may name: the inventory, and the calls that plan or decide.
    static let forbidden = [
        "Inventory", "ServerPlan.make", "RadiusPlan.make", "RadiusServersPlan.make", "MonitoringPlan.make",
        "ClientPlan.build", "CataloguePlan.make", "RolloutPlan.make", "HandOffPlan.make", "DeploymentPlan.make",
        "CertificatePlan.make", "CertificateProfile.", "AppleSA.derive", "WindowsIPsec.derive",
        "AppleOptions.effective",
    ]

    /// Code only: comments may explain where a value was decided.
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard let comment = line.range(of: "//") else { return String(line) }
            return String(line[..<comment.lowerBound])
        }.joined(separator: "\n")
    }

    @Test func noRendererNamesTheInventoryOrPlansItself() throws {
        let directory = Repository.root + "/Sources/VPNProvRendering"
        let files = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).filter {
            $0.hasSuffix(".swift")
        }
        #expect(files.count > 10)
        var found: [String] = []
        for file in files.sorted() {
            let text = Self.code(try String(contentsOfFile: directory + "/" + file, encoding: .utf8))
            for name in Self.forbidden where Self.names(text, name) { found.append("\(file): \(name)") }
        }
        #expect(found.isEmpty, "renderers that plan: \(found)")
    }

    /// `text` names `name` as a whole identifier (not `InventoryField` for `Inventory`).
    static func names(_ text: String, _ name: String) -> Bool {
        var rest = text[...]
        while let range = rest.range(of: name) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            let identifier: (Character?) -> Bool = { $0.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false }
            if !identifier(before) && (name.hasSuffix(".") || !identifier(after)) { return true }
            rest = text[range.upperBound...]
        }
        return false
    }
}
