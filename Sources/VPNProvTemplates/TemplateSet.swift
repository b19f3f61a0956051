import Foundation
import VPNProvSupport

// The templates one run uses: the defaults built into vpnprov (a copy of templates/ in the
// repository, kept identical by scripts/embed-templates and a test), or a directory given with
// `--templates DIR`.
//
// Decision for `--templates DIR`: DIR mirrors templates/ (e.g. DIR/server/README.tmpl). A template
// missing from DIR falls back to the built-in one, so an operator overrides only what they change;
// a `.tmpl` file in DIR that vpnprov does not know is an error (a misspelt name would otherwise be
// ignored silently). Every template is parsed when the set is loaded, so a broken one fails the run
// before anything is written.

package struct TemplateSetError: Error, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        case directoryNotFound
        /// Not UTF-8 text, or BoundedFile's reason (not a regular file, too large, an errno).
        case unreadable(String)
        case unknownTemplate
        case invalid(TemplateError)
        case missing
    }
    package var path: String
    package var kind: Kind

    package var description: String {
        switch kind {
        case .directoryNotFound: return "\(path): templates directory not found"
        case .unreadable(let reason): return "\(path): cannot read template: \(reason)"
        case .unknownTemplate:
            return "\(path): unknown template (known: \(TemplateSet.knownNames.joined(separator: ", ")))"
        case .invalid(let error): return error.description
        case .missing: return "\(path): no such template"
        }
    }
}

package struct TemplateSet: Sendable {
    /// Names (paths relative to templates/) of every template vpnprov uses.
    static var knownNames: [String] { BuiltinTemplates.files.keys.sorted() }

    /// Parsed templates by name.
    package private(set) var templates: [String: Template]
    /// Where each template came from: "built-in" or a file path.
    package private(set) var origins: [String: String]

    /// The built-in defaults.
    package static func builtin() throws(TemplateSetError) -> TemplateSet {
        var set = TemplateSet(templates: [:], origins: [:])
        for (name, text) in BuiltinTemplates.files {
            do {
                set.templates[name] = try Template(name: name, text: text)
            } catch {
                throw TemplateSetError(path: name, kind: .invalid(error))
            }
            set.origins[name] = "built-in"
        }
        return set
    }

    /// The built-in templates, overridden by the files in `directory` when given (see above).
    package static func load(directory: String?) throws(TemplateSetError) -> TemplateSet {
        var set = try builtin()
        guard let directory else { return set }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue else {
            throw TemplateSetError(path: directory, kind: .directoryNotFound)
        }
        let base = URL(fileURLWithPath: directory)
        let files = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".tmpl") }
            .sorted()
        for relative in files {
            let path = base.appendingPathComponent(relative).path
            guard BuiltinTemplates.files[relative] != nil else {
                throw TemplateSetError(path: path, kind: .unknownTemplate)
            }
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(path, limit: BoundedFile.templateLimit)
            } catch {
                throw TemplateSetError(path: path, kind: .unreadable(error.reason))
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw TemplateSetError(path: path, kind: .unreadable("not UTF-8 text"))
            }
            do {
                set.templates[relative] = try Template(name: path, text: text)
            } catch {
                throw TemplateSetError(path: path, kind: .invalid(error))
            }
            set.origins[relative] = path
        }
        return set
    }

    /// The template called `name` (e.g. "server/swanctl.conf.tmpl").
    package func template(_ name: String) throws(TemplateSetError) -> Template {
        guard let template = templates[name] else { throw TemplateSetError(path: name, kind: .missing) }
        return template
    }
}
