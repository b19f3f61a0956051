import VPNProvSupport
import VPNProvYAML

/// Reads an inventory file: bytes -> YAML -> typed model, with diagnostics.
package enum InventoryLoader {
    /// The file could not be read at all (a usage/environment problem, not an inventory error).
    package struct FileError: Error, Sendable, Hashable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
        package var description: String { "cannot read inventory '\(path)': \(reason)" }
    }

    /// Largest inventory accepted (bytes).
    package static let maxFileSize = BoundedFile.inventoryLimit

    /// Reads and decodes the inventory at `path` (shown as `displayPath ?? path` in diagnostics).
    /// Throws only when the file cannot be read.
    package static func load(path: String, displayPath: String? = nil) throws(FileError) -> (Inventory?, [Diagnostic]) {
        let bytes = try readFile(path)
        let result = decode(bytes: bytes, file: displayPath ?? path)
        return (result.inventory, result.diagnostics)
    }

    /// Decodes inventory text already in memory.
    package static func decode(bytes: [UInt8], file: String) -> InventoryDecoder.Result {
        let root: YAMLNode?
        do {
            root = try YAMLLoader.load(bytes: bytes)
        } catch {
            return InventoryDecoder.Result(
                inventory: nil, diagnostics: [diagnostic(for: error, file: file, source: bytes)], secretLines: [])
        }
        return InventoryDecoder(file: file).decode(root)
    }

    static func diagnostic(for error: YAMLError, file: String, source: [UInt8]) -> Diagnostic {
        let code: RuleCode
        switch error.kind {
        case .syntax: code = .yamlSyntax
        case .multipleDocuments: code = .multipleDocuments
        case .duplicateKey: code = .duplicateKey
        case .aliasLimit: code = .aliasLimit
        case .depthLimit: code = .depthLimit
        case .invalidUTF8: code = .invalidUTF8
        case .invalidCharacter: code = .invalidCharacter
        case .scalarTooLong: code = .scalarTooLong
        case .tag: code = .yamlTag
        }
        let at = error.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
        var notes: [Diagnostic.Note] = []
        if let other = error.otherMark {
            let note = error.kind == .duplicateKey ? "first defined here" : "while parsing this"
            notes.append(
                .init(location: SourceLocation(file: file, line: other.line, column: other.column), message: note))
        }
        // libyaml names where it gave up; for an indentation mistake that can be the line after the
        // wrong one. The finding then points at the wrong line and says what to change there.
        if error.kind == .syntax, let mark = error.mark,
            let hint = IndentationHint.hint(
                for: (error.message, mark.line, mark.column, error.otherMark?.line, error.otherMark?.column),
                source: source)
        {
            var notes = notes
            if hint.line != mark.line {
                notes.insert(.init(location: at, message: "the YAML parser stopped here"), at: 0)
            }
            return .error(
                code, "\(error.message); \(hint.text)",
                at: SourceLocation(file: file, line: hint.line, column: hint.column), notes: notes)
        }
        return .error(code, error.message, at: at ?? SourceLocation(file: file, line: 1, column: 1), notes: notes)
    }

    /// Reads a whole file, refusing anything but a regular file and oversized files (BoundedFile).
    package static func readFile(_ path: String) throws(FileError) -> [UInt8] {
        do {
            return try BoundedFile.read(path, limit: maxFileSize)
        } catch {
            throw FileError(path: path, reason: error.reason)
        }
    }
}
