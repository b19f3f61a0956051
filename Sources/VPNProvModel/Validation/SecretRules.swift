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

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        var pskOwners: [String: (String, SourceLocation)] = [:]
        for node in inventory.nodes {
            guard let psk = node.psk else { continue }
            let location = node.location(of: .psk)
            checkSource(
                psk, kind: .psk, owner: "node '\(node.name)'", about: .node(node.name),
                names: [node.name, inventory.name], at: location,
                checkStrength: true, settings: inventory.secrets, into: &d)
            let key: String
            let shown: String
            switch psk {
            case .generate: continue
            case .env(let name):
                key = "env:" + name
                shown = "the PSK env:\(name)"
            case .file(let path):
                key = "file:" + path
                shown = "the PSK file:\(path)"
            case .literal(let value):
                key = "literal:" + value
                shown = "the same literal PSK"
            }
            if let (other, otherLocation) = pskOwners[key] {
                d.append(
                    .warning(
                        .pskReused,
                        "node '\(node.name)' uses \(shown) as node '\(other)'; anyone holding it can impersonate either server",
                        at: location, notes: [.init(location: otherLocation, message: "node '\(other)' uses it here")],
                        about: .node(node.name)))
            } else {
                pskOwners[key] = (node.name, location)
            }
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
