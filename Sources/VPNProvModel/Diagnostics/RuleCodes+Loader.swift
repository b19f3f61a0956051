import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Rule codes produced while reading an inventory (YAML loading and decoding into the typed model).
// The Validator's codes live in their own file.

extension RuleCode {
    // YAML text
    /// libyaml rejected the text, or an alias names no anchor.
    package static let yamlSyntax = RuleCode("yaml-syntax")
    /// More than one YAML document in the file.
    package static let multipleDocuments = RuleCode("multiple-documents")
    /// A mapping holds the same key twice.
    package static let duplicateKey = RuleCode("duplicate-key")
    /// Alias expansion exceeds the node or alias limit (alias bomb).
    package static let aliasLimit = RuleCode("alias-limit")
    /// Collections nested deeper than the limit.
    package static let depthLimit = RuleCode("depth-limit")
    /// The file is not valid UTF-8.
    package static let invalidUTF8 = RuleCode("invalid-utf8")
    /// NUL or another character YAML forbids.
    package static let invalidCharacter = RuleCode("invalid-character")
    /// A scalar longer than the limit (1 MiB).
    package static let scalarTooLong = RuleCode("scalar-too-long")
    /// An explicit YAML tag (`!!str`, `!custom`): the schema does not take tags.
    package static let yamlTag = RuleCode("yaml-tag")
    /// The file holds no YAML document.
    static let emptyInventory = RuleCode("empty-inventory")

    // Schema
    /// `vpnprov:` is not a supported schema version.
    package static let schemaVersion = RuleCode("schema-version")
    /// A key the schema does not know (with a "did you mean" hint).
    package static let unknownKey = RuleCode("unknown-key")
    /// A required key is absent.
    static let missingKey = RuleCode("missing-key")
    /// A value has the wrong YAML type (list for a string, yes/no for a boolean, quoted number...).
    package static let typeMismatch = RuleCode("type-mismatch")
    /// A value of the right type but not one of the allowed values (tier, key type, service, device...).
    package static let invalidValue = RuleCode("invalid-value")
    /// A pool that is not a CIDR network, or has host bits set.
    static let invalidCIDR = RuleCode("invalid-cidr")
    /// A user's `nodes:` names a node the inventory does not define.
    package static let unknownNode = RuleCode("unknown-node")
    /// The same entry twice in a list (services, devices, nodes); the duplicate is ignored.
    package static let duplicateEntry = RuleCode("duplicate-entry")
    /// A value that goes into an Apple profile (an XML plist) holds a character XML 1.0 cannot carry, or a control
    /// character.
    static let unrepresentableText = RuleCode("unrepresentable-text")
}
