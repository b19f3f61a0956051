import Foundation

/// Parsed options of `generate` and `check`. Paths are absolute (resolved against the working directory);
/// `inventory` is the path as the user wrote it, for diagnostics.
public struct GenerateOptions: Sendable, Hashable {
    /// Inventory path as given (or the default that was found), used as the file name in diagnostics.
    public var inventory: String
    /// Absolute inventory path.
    public var inventoryPath: String
    /// Output tree (`--out`, default `out` in the working directory).
    public var outDirectory: String
    /// State directory (`--state`, default `state` beside the inventory).
    public var stateDirectory: String
    /// Template directory (`--templates`); nil means the built-in templates.
    public var templatesDirectory: String?
    public var format: DiagnosticPrinter.Format
    /// Warnings fail the run.
    public var strict: Bool
    /// Environment for `env:VAR` secrets.
    public var environment: [String: String]

    public init(
        inventory: String, inventoryPath: String, outDirectory: String, stateDirectory: String,
        templatesDirectory: String? = nil, format: DiagnosticPrinter.Format = .text, strict: Bool = false,
        environment: [String: String] = [:]
    ) {
        self.inventory = inventory
        self.inventoryPath = inventoryPath
        self.outDirectory = outDirectory
        self.stateDirectory = stateDirectory
        self.templatesDirectory = templatesDirectory
        self.format = format
        self.strict = strict
        self.environment = environment
    }
}

/// `check` takes exactly the options of `generate`.
public typealias CheckOptions = GenerateOptions

/// Parsed options of `revoke USER [INVENTORY]`: the user, and the options of the `generate` that follows
/// (never strict: a warning must not stop a revocation half-way).
public struct RevokeOptions: Sendable, Hashable {
    public var user: String
    public var regenerate: GenerateOptions

    public init(user: String, regenerate: GenerateOptions) {
        self.user = user
        self.regenerate = regenerate
    }
}

/// The work behind `generate`, `check` and `revoke` (filled in by the pipeline: state, PKI, renderers).
/// Each returns the exit code; `loadInventory` is the shared front half (load, decode, validate, print).
public enum Pipeline {
    /// Outcome of reading and checking an inventory.
    public struct Loaded: Sendable {
        /// The inventory when it has no errors (and, with `strict`, no warnings).
        public var inventory: Inventory?
        public var diagnostics: [Diagnostic]
        /// Exit code if the run must stop now (1 for inventory errors), nil to carry on.
        public var exitCode: Int32?
    }

    /// Reads `path`, decodes and validates it, prints the diagnostics (text to stderr or JSON to stdout)
    /// and the summary. Throws `CLIError.usage` when the file cannot be read (exit 2).
    /// With `printJSONWhenClean` false, a clean run in JSON format prints nothing (so a later stage can
    /// print its own diagnostics); `validate` passes true so JSON output is always an array.
    public static func loadInventory(
        display: String, path: String, format: DiagnosticPrinter.Format, strict: Bool, console: Console,
        extraDiagnostics: [Diagnostic] = [], printJSONWhenClean: Bool = true
    ) throws(CLIError) -> Loaded {
        let bytes: [UInt8]
        do {
            bytes = try InventoryLoader.readFile(path)
        } catch {
            throw CLIError.usage("cannot read inventory '\(display)': \(error.reason)", command: nil)
        }
        let decoded = InventoryLoader.decode(bytes: bytes, file: display)
        var diagnostics = decoded.diagnostics
        if let inventory = decoded.inventory {
            diagnostics += Validator.validate(inventory)
        }
        diagnostics += extraDiagnostics
        let printer = DiagnosticPrinter(format: format, sources: [display: bytes], hiddenLines: [display: decoded.secretLines])
        let failed = diagnostics.hasErrors || (strict && diagnostics.contains { $0.severity == .warning })
        if format == .json {
            if printJSONWhenClean || !diagnostics.isEmpty { console.out(printer.render(diagnostics)) }
        } else {
            console.err(printer.render(diagnostics))
        }
        if let summary = DiagnosticPrinter.summary(diagnostics) {
            console.err("\(summary)\(failed && !diagnostics.hasErrors ? " (warnings are errors with --strict)" : "")\n")
        }
        return Loaded(inventory: failed ? nil : decoded.inventory, diagnostics: diagnostics, exitCode: failed ? ExitCode.failure : nil)
    }
}
