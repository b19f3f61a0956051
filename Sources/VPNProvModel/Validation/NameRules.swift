import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Deployment, node and user names become directory and file names (servers/<node>/,
// clients/<user>/<user>.mobileconfig), profile names and parts of swanctl section names.
//
// Decisions: allowed characters are [A-Za-z0-9._-], 1...64 of them, no leading '.' or '-' (hidden
// files, command-line options), no "..". Renderers must still map '.' out of swanctl section names
// (a '.' there is a syntax error). Names equal to Windows device names warn (the tree cannot be
// unpacked on Windows). Names that differ only in case are errors: on macOS' default file system
// clients/Alice and clients/alice are one directory and one user's profile would overwrite the other's.

package enum NameRules {
    static let maxLength = 64
    static let windowsDeviceNames: Set<String> = {
        var s: Set<String> = ["con", "prn", "aux", "nul"]
        for i in 1...9 {
            s.insert("com\(i)")
            s.insert("lpt\(i)")
        }
        return s
    }()

    /// Why `name` is not a safe name, or nil.
    package static func problem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.unicodeScalars.contains(where: { $0.value == 0 }) { return "contains a NUL character" }
        if TextCheck.hasControlCharacters(name) { return "contains control characters" }
        if name.contains("/") || name.contains("\\") { return "contains a path separator" }
        if name.contains("..") { return "contains '..'" }
        if name.hasPrefix(".") { return "starts with '.' (hidden file)" }
        if name.hasPrefix("-") { return "starts with '-' (reads as a command-line option)" }
        if name.unicodeScalars.count > maxLength { return "is longer than \(maxLength) characters" }
        if let bad = name.unicodeScalars.first(where: {
            !(TextCheck.isASCIILetterOrDigit($0) || $0 == "." || $0 == "_" || $0 == "-")
        }) {
            return "contains \(TextCheck.quoted(String(bad))); allowed are letters A-Z a-z, digits, '.', '_' and '-'"
        }
        return nil
    }

    static func isReserved(_ name: String) -> Bool {
        let base = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
        return windowsDeviceNames.contains(base.lowercased())
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        let nameLocation = inventory.location(of: .name)
        if let p = problem(inventory.name) {
            d.append(.error(.invalidName, "deployment name \(TextCheck.quoted(inventory.name)) \(p)", at: nameLocation))
        }
        checkGroup(kind: "node", inventory.nodes.map { ($0.name, $0.location) }, into: &d)
        checkGroup(kind: "user", inventory.users.map { ($0.name, $0.location) }, into: &d)
    }

    static func subject(_ kind: String, _ name: String) -> Diagnostic.Subject {
        kind == "node" ? .node(name) : .user(name)
    }

    private static func checkGroup(kind: String, _ entries: [(String, SourceLocation)], into d: inout [Diagnostic]) {
        var seenExact: [String: SourceLocation] = [:]
        var seenFolded: [String: (String, SourceLocation)] = [:]
        for (name, location) in entries {
            if let p = problem(name) {
                d.append(.error(.invalidName, "\(kind) name \(TextCheck.quoted(name)) \(p)", at: location))
            } else if isReserved(name) {
                d.append(
                    .warning(
                        .reservedName,
                        "\(kind) name '\(name)' is a reserved device name on Windows; its output files cannot be created there",
                        at: location,
                        about: subject(kind, name)))
            }
            if let first = seenExact[name] {
                d.append(
                    .error(
                        .duplicateName, "\(kind) '\(name)' is defined twice", at: location,
                        notes: [.init(location: first, message: "first defined here")]))
                continue
            }
            seenExact[name] = location
            let folded = name.lowercased()
            if let (other, first) = seenFolded[folded] {
                d.append(
                    .error(
                        .nameCaseCollision,
                        "\(kind) '\(name)' differs from \(kind) '\(other)' only in case; their output files collide on case-insensitive file systems",
                        at: location, notes: [.init(location: first, message: "\(kind) '\(other)' defined here")]))
            } else {
                seenFolded[folded] = (name, location)
            }
        }
    }
}
