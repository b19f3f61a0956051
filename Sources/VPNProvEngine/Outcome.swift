import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates
import VPNProvYAML

/// How an engine command ended; the command line turns it into the exit status.
package enum Outcome: Sendable, Hashable {
    case success
    /// The inventory has errors (or warnings under --strict), or `check` found drift.
    case failure
    /// The command cannot run as asked (an output tree elsewhere, an unreadable input).
    case usage
    /// The environment or the state is unusable.
    case environment
}

/// Why an engine command stopped before it could report an outcome itself; the command line prints
/// the text with its usage hint.
package enum EngineError: Error, Sendable, Hashable {
    /// An input the command was given cannot be used (an unreadable inventory, broken templates).
    case usage(String)
    /// The environment or the state is unusable.
    case environment(String)
}
