import VPNProvSupport

// The values a template can see. Renderers build a context of these from Swift values; the engine
// escapes each one for the template's declared syntax (TemplateSyntax), so a template author never
// quotes or escapes anything by hand.

/// A value in a template context. Not `indirect`: lists and objects keep their members in arrays
/// already, and a box per value was a heap allocation for every string of every context
/// (docs/benchmarks.md, "Why the code is shaped this way").
package enum TemplateValue: Sendable, Hashable {
    /// Free text. Emitted through the syntax's escaper (`"..."` with escapes in swanctl syntax).
    case string(String)
    /// A name that may appear bare, e.g. a section name (`eap-u0001`). Must match `[A-Za-z0-9_-]+`
    /// or rendering fails; in every syntax it is emitted as is.
    case identifier(String)
    /// A decimal number, emitted bare.
    case int(Int)
    /// Only for sections: `{{#flag}}` renders once when true, `{{^flag}}` when false.
    case bool(Bool)
    /// Sections loop over the items (each pushed as the current context); empty = false.
    case list([TemplateValue])
    /// Named members, looked up with `{{name}}` or `{{outer.inner}}`.
    case object(TemplateObject)

    /// The member `key` of an object; nil for a missing member or another kind of value.
    func member(_ key: String) -> TemplateValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// Whether a `{{#section}}` renders (and `{{^section}}` does not).
    var isTruthy: Bool {
        switch self {
        case .string(let s), .identifier(let s): return !s.isEmpty
        case .int(let n): return n != 0
        case .bool(let b): return b
        case .list(let items): return !items.isEmpty
        case .object: return true
        }
    }
}

extension TemplateValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(arrayLiteral elements: TemplateValue...) { self = .list(elements) }
    package init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self = .object(TemplateObject(elements))
    }
}

/// The members of a `TemplateValue.object`: a handful of short names, looked up by comparing them in
/// turn rather than by hashing each name as a dictionary does, since a fleet's client files make
/// millions of lookups (docs/benchmarks.md, "Why the code is shaped this way").
/// Equal when they hold the same members in any order.
package struct TemplateObject: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    private var keys: [String] = []
    private var values: [TemplateValue] = []

    package init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self.init(elements)
    }

    /// The members in the order given, a later one replacing an earlier one of the same name.
    init(_ elements: [(String, TemplateValue)]) {
        keys = elements.map(\.0)
        values = elements.map(\.1)
        // A name given twice (a renderer's mistake) keeps its first place with the later value.
        if keys.indices.contains(where: { i in keys[..<i].contains(keys[i]) }) {
            (keys, values) = ([], [])
            for (key, value) in elements { self[key] = value }
        }
    }

    package var count: Int { keys.count }

    /// The member's value; setting one replaces it, setting nil removes it.
    package subscript(key: String) -> TemplateValue? {
        get { keys.firstIndex(of: key).map { values[$0] } }
        set {
            if let i = keys.firstIndex(of: key) {
                if let newValue {
                    values[i] = newValue
                } else {
                    keys.remove(at: i)
                    values.remove(at: i)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    package static func == (a: TemplateObject, b: TemplateObject) -> Bool {
        a.count == b.count && zip(a.keys, a.values).allSatisfy { b[$0.0] == $0.1 }
    }

    package func hash(into hasher: inout Hasher) {
        // Independent of the order: the members' hashes combined commutatively.
        var combined = 0
        for (key, value) in zip(keys, values) {
            var h = Hasher()
            h.combine(key)
            h.combine(value)
            combined ^= h.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}
