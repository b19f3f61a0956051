import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPKI
import VPNProvSupport

/// Diagnostics as a SARIF 2.1.0 log (OASIS Static Analysis Results Interchange Format,
/// https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html), the format GitHub code scanning
/// and GitLab take to annotate a pull request. One run; one rule per code that occurs, with its help
/// text; one result per diagnostic with its file, line and column; notes become related locations.
/// An acknowledged warning carries a suppression (SARIF 2.1.0, 3.27.23 and 3.35): kind `inSource`
/// (the acknowledgement is written in the inventory, the analysed file), status `accepted`, the
/// operator's reason as its justification and the acknowledgement's place as its location.
struct SARIFLog: Encodable {
    var diagnostics: [Diagnostic]
    var command: String
    /// The run itself worked (findings or not): exit status 0 or 1.
    var executionSuccessful: Bool
    /// Where a finding without a place in a file is shown (code scanning wants a location for every
    /// result): the inventory the command read.
    var primaryFile: String?

    enum Keys: String, CodingKey {
        case schema = "$schema"
        case version
        case runs
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode("https://json.schemastore.org/sarif-2.1.0.json", forKey: .schema)
        try c.encode("2.1.0", forKey: .version)
        try c.encode([run], forKey: .runs)
    }

    var run: Run {
        var codes: [RuleCode] = []
        for d in diagnostics where !codes.contains(d.code) { codes.append(d.code) }
        codes.sort { $0.rawValue < $1.rawValue }
        let rules = codes.map { code -> Rule in
            let help = code.declaration.plainHelp
            let level = diagnostics.first { $0.code == code }.map { Self.level($0.severity) } ?? "error"
            return Rule(
                id: code.rawValue, shortDescription: .init(text: help), help: .init(text: help),
                defaultConfiguration: .init(level: level))
        }
        let results = diagnostics.map { d -> Result in
            var related: [Location]?
            if !d.notes.isEmpty {
                related = d.notes.enumerated().map { i, note in
                    Location(
                        id: i + 1, physicalLocation: (note.location ?? d.location).map(Self.physical),
                        message: .init(text: note.message))
                }
            }
            return Result(
                ruleId: d.code.rawValue, ruleIndex: codes.firstIndex(of: d.code)!,
                level: Self.level(d.severity),
                message: .init(text: d.message),
                locations: d.location.map { [Location(physicalLocation: Self.physical($0))] }
                    ?? primaryFile.map {
                        [Location(physicalLocation: PhysicalLocation(artifactLocation: Self.artifact($0)))]
                    },
                relatedLocations: related,
                suppressions: d.acknowledged.map { ack in
                    [
                        Suppression(
                            justification: ack.reason,
                            location: ack.location.map { Location(physicalLocation: Self.physical($0)) })
                    ]
                })
        }
        return Run(
            tool: .init(driver: .init(rules: rules)),
            invocations: [.init(executionSuccessful: executionSuccessful, commandLine: "vpnprov \(command)")],
            results: results)
    }

    static func level(_ severity: Severity) -> String {
        switch severity {
        case .error: return "error"
        case .warning: return "warning"
        case .note: return "note"
        }
    }

    static func physical(_ location: SourceLocation) -> PhysicalLocation {
        PhysicalLocation(
            artifactLocation: artifact(location.file),
            region: location.line >= 1 ? .init(startLine: location.line, startColumn: max(1, location.column)) : nil)
    }

    /// A relative path is relative to the source root (`%SRCROOT%`); an absolute one a file: URI.
    static func artifact(_ path: String) -> ArtifactLocation {
        path.hasPrefix("/")
            ? ArtifactLocation(uri: "file://" + uri(path), uriBaseId: nil) : ArtifactLocation(uri: uri(path))
    }

    /// A path as a URI reference: each segment percent-encoded where RFC 3986 requires it.
    static func uri(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~/!$&'()*+,;=:@".contains(c)) {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }

    struct Text: Encodable { var text: String }

    struct Rule: Encodable {
        struct Configuration: Encodable { var level: String }
        var id: String
        var shortDescription: Text
        var help: Text
        var defaultConfiguration: Configuration
    }

    struct Driver: Encodable {
        var name = "vpnprov"
        var version = ProductVersion.current
        var rules: [Rule]
    }

    struct Tool: Encodable { var driver: Driver }

    struct Invocation: Encodable {
        var executionSuccessful: Bool
        var commandLine: String
    }

    struct Region: Encodable {
        var startLine: Int
        var startColumn: Int
    }

    struct ArtifactLocation: Encodable {
        var uri: String
        var uriBaseId: String? = "%SRCROOT%"
    }

    struct PhysicalLocation: Encodable {
        var artifactLocation: ArtifactLocation
        var region: Region?
    }

    struct Location: Encodable {
        var id: Int?
        var physicalLocation: PhysicalLocation?
        package var message: Text?
    }

    struct Result: Encodable {
        var ruleId: String
        var ruleIndex: Int
        var level: String
        package var message: Text
        var locations: [Location]?
        var relatedLocations: [Location]?
        var suppressions: [Suppression]?
    }

    struct Suppression: Encodable {
        var kind = "inSource"
        var status = "accepted"
        var justification: String
        var location: Location?
    }

    struct Run: Encodable {
        var tool: Tool
        var invocations: [Invocation]
        /// Columns count Unicode code points, as vpnprov's diagnostics do.
        var columnKind = "unicodeCodePoints"
        var results: [Result]
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
