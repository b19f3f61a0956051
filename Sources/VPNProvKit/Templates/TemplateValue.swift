// The values a template can see. Renderers build a context of these from Swift values; the engine
// escapes each one for the template's declared syntax (TemplateSyntax), so a template author never
// quotes or escapes anything by hand.

/// A value in a template context.
public indirect enum TemplateValue: Sendable, Hashable {
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
    case object([String: TemplateValue])

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
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(arrayLiteral elements: TemplateValue...) { self = .list(elements) }
    public init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
