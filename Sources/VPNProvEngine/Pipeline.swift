import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates
import VPNProvYAML

/// Parsed options of `generate` and `check`. Paths are absolute (resolved against the working directory);
/// `inventory` is the path as the user wrote it, for diagnostics.
package struct GenerateOptions: Sendable, Hashable {
    /// Inventory path as given (or the default that was found), used as the file name in diagnostics.
    package var inventory: String
    /// Absolute inventory path.
    package var inventoryPath: String
    /// Output tree (`--out`, default `out` beside the inventory).
    package var outDirectory: String
    /// State directory (`--state`, default `state` beside the inventory).
    package var stateDirectory: String
    /// Template directory (`--templates`); nil means the built-in templates.
    package var templatesDirectory: String?
    /// Warnings fail the run.
    package var strict: Bool
    /// Environment for `env:VAR` secrets.
    package var environment: [String: String]
    /// `--out` was given (else `outDirectory` is the default beside the inventory).
    package var outGiven: Bool
    /// The working directory, for paths shown relative to it.
    package var currentDirectory: String
    /// The run's clock: certificates are issued, renewed and revoked as of this time.
    package var now: Date

    package init(
        inventory: String, inventoryPath: String, outDirectory: String, stateDirectory: String,
        templatesDirectory: String? = nil, strict: Bool = false,
        environment: [String: String] = [:], outGiven: Bool = true,
        currentDirectory: String = FileManager.default.currentDirectoryPath,
        now: Date
    ) {
        self.now = now
        self.outGiven = outGiven
        self.currentDirectory = currentDirectory
        self.inventory = inventory
        self.inventoryPath = inventoryPath
        self.outDirectory = outDirectory
        self.stateDirectory = stateDirectory
        self.templatesDirectory = templatesDirectory
        self.strict = strict
        self.environment = environment
    }
}

/// `check` takes exactly the options of `generate`.
package typealias CheckOptions = GenerateOptions

/// Parsed options of `revoke USER [INVENTORY]`: the user, and the options of the `generate` that follows
/// (never strict: a warning must not stop a revocation half-way).
package struct RevokeOptions: Sendable, Hashable {
    package var user: String
    package var regenerate: GenerateOptions

    package init(user: String, regenerate: GenerateOptions) {
        self.user = user
        self.regenerate = regenerate
    }
}

/// The work behind `generate`, `check` and `revoke` (filled in by the pipeline: state, PKI, renderers).
/// Each returns its outcome; `loadInventory` is the shared front half (load, decode, validate, print).
package enum Pipeline {
    /// Outcome of reading and checking an inventory.
    package struct Loaded: Sendable {
        /// The inventory when it has no errors (and, with `strict`, no warnings).
        package var inventory: Inventory?
        package var diagnostics: [Diagnostic]
        /// The outcome if the run must stop now (`.failure` for inventory errors), nil to carry on.
        package var outcome: Outcome?
    }

    /// Reads `path`, decodes and validates it (with `secretsEnvironment`, also resolves and checks
    /// its env:/file: secrets) and reports the diagnostics to `output` (none when `report` is false:
    /// a second load in the same run). Throws `EngineError.usage` when the file cannot be read.
    package static func loadInventory(
        display: String, path: String, strict: Bool, output: any RunReporter, report: Bool = true,
        secretsEnvironment: [String: String]? = nil
    ) throws(EngineError) -> Loaded {
        let bytes: [UInt8]
        do {
            bytes = try InventoryLoader.readFile(path)
        } catch {
            throw EngineError.usage("cannot read inventory '\(display)': \(error.reason)")
        }
        let decoded = InventoryLoader.decode(bytes: bytes, file: display)
        var diagnostics = decoded.diagnostics
        if let inventory = decoded.inventory {
            diagnostics += validate(inventory)
            Acknowledgements.apply(inventory, to: &diagnostics, reportStale: true)
            if let environment = secretsEnvironment, !diagnostics.hasErrors {
                diagnostics += checkSecrets(
                    inventory, inventoryDirectory: (path as NSString).deletingLastPathComponent,
                    environment: environment)
            }
        } else if let partial = decoded.partial {
            // Schema errors: the rules still judge every part that decoded, so one run reports all.
            diagnostics += validate(partial, broken: decoded.broken)
            Acknowledgements.apply(partial, to: &diagnostics, reportStale: false)
        }
        // One finding repeated at one place (an aliased anchor) is reported a bounded number of times.
        diagnostics = diagnostics.cappingRepeats()
        let failed = diagnostics.hasErrors || (strict && diagnostics.hasOpenWarnings)
        // Every load registers the lines and values to hide: later stages report through `output` too.
        output.addSource(
            display, bytes, hidden: decoded.secretLines, hiddenValues: decoded.secretValues, cut: decoded.cutLines)
        if report {
            output.primaryFile = output.primaryFile ?? display
            output.diagnostics(diagnostics.inReportOrder())
            output.countSummary(diagnostics, strictFailure: failed && !diagnostics.hasErrors)
        }
        return Loaded(
            inventory: failed ? nil : decoded.inventory, diagnostics: diagnostics, outcome: failed ? .failure : nil)
    }

    /// The validator's rules and the planning rules (`PlanRules`: those that ask a decision of the plan),
    /// in the validator's order.
    package static func validate(_ inventory: Inventory, broken: InventoryDecoder.BrokenParts = .init())
        -> [Diagnostic]
    {
        Validator.sorted(Validator.validate(inventory, broken: broken) + PlanRules.check(inventory))
    }
}
