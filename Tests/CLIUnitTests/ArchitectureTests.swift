import Foundation
import Testing
import VPNProvTestFixtures

/// docs/architecture.md promises which target may import which; Package.swift is what the compiler
/// enforces. These tests keep the two the same, and keep the product free of test seams.
@Suite struct ArchitectureTests {
    static let root = Repository.root

    /// Every Swift file the docs and the README name exists: a path read from the repository root,
    /// `Sources/`, `Tests/` or a test target's directory, or a bare file name of a file at the root or below
    /// `Sources/` or `Tests/`. (Six paths went stale unnoticed when the sources were split into targets.)
    @Test func swiftPathsNamedInTheDocsExist() throws {
        let fm = FileManager.default
        let documents =
            ["README.md"]
            + (try fm.contentsOfDirectory(atPath: Self.root + "/docs")).filter { $0.hasSuffix(".md") }
            .map { "docs/" + $0 }
        let swiftFiles = Set(
            ["Sources", "Tests"].flatMap { top in
                (fm.enumerator(atPath: Self.root + "/" + top)?.allObjects as? [String] ?? []).filter {
                    $0.hasSuffix(".swift")
                }.map { top + "/" + $0 }
            })
        let names = Set(swiftFiles.map { ($0 as NSString).lastPathComponent })
        let testTargets = (try fm.contentsOfDirectory(atPath: Self.root + "/Tests")).map { "Tests/" + $0 + "/" }
        let bases = ["", "Sources/", "Tests/"] + testTargets
        var named = 0
        for document in documents {
            let text = try String(contentsOfFile: Self.root + "/" + document, encoding: .utf8)
            for path in Set(Self.allMatches(#"([A-Za-z0-9_+./-]+\.swift)\b"#, in: text)) {
                named += 1
                let found =
                    path.contains("/")
                    ? bases.contains { fm.fileExists(atPath: Self.root + "/" + $0 + path) }
                    : names.contains(path) || fm.fileExists(atPath: Self.root + "/" + path)
                #expect(found, "\(document) names \(path), which does not exist")
            }
        }
        #expect(named > 30, "only \(named) Swift paths found in the docs: the pattern is off")
    }

    /// Every target of Package.swift with its direct dependencies, read from the manifest's text.
    static func manifestTargets() throws -> [String: Set<String>] {
        let text = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        let calls = try NSRegularExpression(pattern: #"\.(?:target|executableTarget|testTarget|systemLibrary)\("#)
        let starts = calls.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { $0.range.location }
        let nsText = text as NSString
        var targets: [String: Set<String>] = [:]
        for (n, start) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1] : nsText.length
            let call = nsText.substring(with: NSRange(location: start, length: end - start))
            guard let name = firstMatch(#"name: "([^"]+)""#, in: call) else { continue }
            var dependencies = Set<String>()
            if let list = firstMatch(#"dependencies: \[([^\]]*)\]"#, in: call) {
                dependencies = Set(allMatches(#""([^"]+)""#, in: list))
            }
            targets[name] = dependencies
        }
        return targets
    }

    /// The rows of the "Targets" table in docs/architecture.md: target → the targets in its last column.
    static func documentedTargets() throws -> [String: Set<String>] {
        let text = try String(contentsOfFile: root + "/docs/architecture.md", encoding: .utf8)
        let section =
            try #require(text.components(separatedBy: "\n## Targets\n").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        var targets: [String: Set<String>] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 4, let name = firstMatch("`([^`]+)`", in: cells[1]) else { continue }
            let last = cells[cells.count - 2]
            targets[name] = Set(allMatches("`([^`]+)`", in: last))
        }
        return targets
    }

    @Test func theArchitectureTableIsThePackageManifest() throws {
        let manifest = try Self.manifestTargets()
        let documented = try Self.documentedTargets()
        #expect(manifest.count > 15)
        #expect(
            Set(documented.keys) == Set(manifest.keys), "targets in only one of Package.swift and docs/architecture.md")
        for (name, dependencies) in manifest.sorted(by: { $0.key < $1.key }) {
            guard let listed = documented[name] else { continue }
            // Test targets are documented by what they reach ("every library target"), not listed one by one.
            if name.hasSuffix("Tests") { continue }
            #expect(
                listed == dependencies,
                "\(name): Package.swift says \(dependencies.sorted()), docs say \(listed.sorted())")
        }
    }

    /// The layers only go down: no library target depends on one that the table lists after it, and the
    /// product executable reaches no test support.
    @Test func layersOnlyImportDownwards() throws {
        let manifest = try Self.manifestTargets()
        func closure(_ name: String) -> Set<String> {
            var seen = Set<String>()
            var work = [name]
            while let next = work.popLast() {
                for d in manifest[next] ?? [] where seen.insert(d).inserted { work.append(d) }
            }
            return seen
        }
        #expect(!closure("vpnprov").contains("VPNProvTestSupport"))
        #expect(!closure("vpnprov").contains("VPNProvTestFixtures"))
        #expect(!closure("vpnprov-fuzz").contains("VPNProvTestFixtures"))
        #expect(
            !closure("VPNProvModel").contains(where: {
                ["VPNProvPKI", "VPNProvPlanning", "VPNProvRendering", "VPNProvEngine", "VPNProvCLI"].contains($0)
            }))
        #expect(closure("VPNProvOutputTree").isSubset(of: ["VPNProvSupport", "VPNProvCrypto", "CCrypto"]))
        #expect(!closure("VPNProvEngine").contains("VPNProvCLI"))
        #expect(!closure("VPNProvPlanning").contains("VPNProvPKI"))
    }

    /// The product reads no test variable: the seams live in vpnprov-testhooks and its support target.
    @Test func productSourcesReadNoTestVariables() throws {
        let manifest = try Self.manifestTargets()
        let productTargets =
            manifest.keys.filter {
                $0.hasPrefix("VPNProv") && !$0.hasSuffix("Tests") && $0 != "VPNProvTestSupport"
                    && $0 != "VPNProvTestFixtures"
            } + [
                "vpnprov"
            ]
        var offenders: [String] = []
        for target in productTargets {
            let directory = Self.root + "/Sources/" + target
            guard let walker = FileManager.default.enumerator(atPath: directory) else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                let text = try String(contentsOfFile: directory + "/" + path, encoding: .utf8)
                for seam in ["VPNPROV_CRASH_AFTER_WRITES", "VPNPROV_CRASH_SIGNAL", "VPNPROV_NOW"]
                where text.contains(seam) {
                    offenders.append("\(target)/\(path): \(seam)")
                }
            }
        }
        #expect(productTargets.count > 8)
        #expect(offenders.isEmpty, "test seams in the product: \(offenders)")
    }

    /// Every Swift file is formatted as the checked-in .swift-format says (swift-format from the
    /// toolchain; `swift format -i -r Sources Tests Package.swift` fixes what this finds).
    @Test(.needs(.swiftFormat)) func sourcesAreFormatted() throws {
        try TestDependency.swiftFormat.require()
        let lint = try runTool(
            [
                TestDependency.swiftFormat.path, "lint", "--strict", "--recursive", "--parallel", "Sources", "Tests",
                "Package.swift",
            ],
            in: Self.root)
        #expect(lint.status == 0 && lint.output.isEmpty, "swift-format lint:\n\(lint.output.prefix(4000))")
    }

    static func firstMatch(_ pattern: String, in text: String) -> String? {
        allMatches(pattern, in: text).first
    }

    static func allMatches(_ pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
