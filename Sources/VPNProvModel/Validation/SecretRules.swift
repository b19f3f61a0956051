import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// PSKs and passwords written in the inventory. Values behind env:/file: are only known at generate
// time; the PKI/state layer checks them with SecretPolicy then. Diagnostics name the reference
// ("literal value") and the location, never the value.
//
// Decisions: a literal secret warns (`literal-secret`) and must still meet SecretPolicy (errors);
// secrets starting with 0x/0s are not flagged because every swanctl secret is written as
// 0s<base64>; PSK reuse compares literals by value and env:/file: references as written.

enum SecretRules {
    static func isValidEnvironmentName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !(first.value >= 0x30 && first.value <= 0x39) else { return false }
        return name.unicodeScalars.allSatisfy { TextCheck.isASCIILetterOrDigit($0) || $0 == "_" }
    }

    /// Reference problems for env:/file: sources, literal warnings and policy problems.
    private static func checkSource(
        _ source: SecretSource, kind: SecretPolicy.Kind, owner: String, about subject: Diagnostic.Subject,
        names: [String], at location: SourceLocation,
        checkStrength: Bool, settings: SecretSettings, into d: inout [Diagnostic]
    ) {
        let what = kind == .psk ? "PSK" : "password"
        // Where it may come from, once the reference itself is well-formed.
        func checkPlace() {
            if let problem = SecretSourcePolicy.problem(source, settings) {
                d.append(
                    .error(.secretSource, "\(owner) \(kind == .psk ? "psk" : "password"): \(problem)", at: location))
            }
        }
        switch source {
        case .generate:
            break
        case .env(let name):
            if !isValidEnvironmentName(name) {
                d.append(
                    .error(
                        .invalidSecretReference,
                        "\(owner): \(what) reference env:\(TextCheck.quoted(name)) is not a valid environment variable name (letters, digits, '_', not starting with a digit)",
                        at: location))
            } else {
                checkPlace()
            }
        case .file(let path):
            if path.isEmpty || TextCheck.hasControlCharacters(path) {
                d.append(
                    .error(
                        .invalidSecretReference,
                        "\(owner): \(what) reference file: needs a path without control characters", at: location))
            } else {
                checkPlace()
            }
        case .literal(let value):
            d.append(
                .warning(
                    .literalSecret,
                    "\(owner): \(what) is written in the inventory as a literal value; use gen, env:VAR or file:PATH so it stays out of version control",
                    at: location, about: subject))
            guard checkStrength else { return }
            for problem in SecretPolicy.check(secret: value, kind: kind, names: names) {
                let code: RuleCode =
                    problem.category == .unrepresentable
                    ? .unrepresentableSecret : (kind == .psk ? .weakPSK : .weakPassword)
                d.append(.error(code, "\(owner): \(what) (literal value) \(problem.message)", at: location))
            }
        }
    }

    /// How PSK reuse compares a secret as written (literals by value, env:/file: references by their text) and how
    /// a message names it (never a literal's value); nil for a generated one, which is never shared.
    static func reuseKey(_ source: SecretSource) -> (key: String, shown: String)? {
        switch source {
        case .generate: return nil
        case .env(let name): return ("env:" + name, "the PSK env:\(name)")
        case .file(let path): return ("file:" + path, "the PSK file:\(path)")
        case .literal(let value): return ("literal:" + value, "the same literal PSK")
        }
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        var pskOwners: [String: Node] = [:]
        for node in inventory.nodes {
            guard let psk = node.psk else { continue }
            let location = node.location(of: .psk)
            checkSource(
                psk, kind: .psk, owner: "node '\(node.name)'", about: .node(node.name),
                names: [node.name, inventory.name], at: location,
                checkStrength: true, settings: inventory.secrets, into: &d)
            guard let (key, shown) = reuseKey(psk) else { continue }
            guard let other = pskOwners[key] else {
                pskOwners[key] = node
                continue
            }
            // A node that hands this PSK to app accounts and a node whose ikev2-psk it opens: an error of their
            // own (`radius-psk-reused`, AccountsRules), not this warning.
            if AccountsRules.opensAccountBypass(node, other) { continue }
            d.append(
                .warning(
                    .pskReused,
                    "node '\(node.name)' uses \(shown) as node '\(other.name)'; anyone holding it can impersonate either server",
                    at: location,
                    notes: [.init(location: other.location(of: .psk), message: "node '\(other.name)' uses it here")],
                    about: .node(node.name)))
        }
        for user in inventory.users {
            guard let password = user.password else { continue }
            checkSource(
                password, kind: .password, owner: "user '\(user.name)'", about: .user(user.name),
                names: [user.name, inventory.name],
                at: user.location(of: .password), checkStrength: !user.revoked, settings: inventory.secrets, into: &d)
        }
        checkAccountsDatabases(inventory, into: &d)
    }

    /// The connection strings of `accounts:` are env:/file: references (the decoder refuses the rest),
    /// held to the same places as every other secret.
    private static func checkAccountsDatabases(_ inventory: Inventory, into d: inout [Diagnostic]) {
        guard let accounts = inventory.accounts else { return }
        for (key, source) in [
            (InventoryDecoder.AccountsKey.database, accounts.database), (.radiusDatabase, accounts.radiusDatabase),
        ] {
            guard let source else { continue }
            let location = accounts.location(of: key)
            if case .env(let name) = source, !isValidEnvironmentName(name) {
                d.append(
                    .error(
                        .invalidSecretReference,
                        "'accounts.\(key.rawValue)': env:\(TextCheck.quoted(name)) is not a valid environment variable name (letters, digits, '_', not starting with a digit)",
                        at: location))
            } else if let problem = SecretSourcePolicy.problem(source, inventory.secrets) {
                d.append(.error(.secretSource, "'accounts.\(key.rawValue)': \(problem)", at: location))
            }
        }
    }
}
