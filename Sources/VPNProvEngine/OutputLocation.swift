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

/// Where a deployment's output tree is. `--out` defaults to `out` beside the inventory (like the
/// state), and the state records the tree's location after every successful run
/// (`state/output-location`), so a run that would write or check a second tree of the same
/// deployment elsewhere is refused while the recorded tree still exists. Moving the tree is moving
/// the directory, then running with `--out` at its new place.
package enum OutputLocation {
    static let fileName = "output-location"

    /// The recorded tree: relative to the state directory's parent when below it (the record stays
    /// right when the whole checkout moves, as on CI runners), else absolute.
    static func recorded(stateDirectory: String) -> String? {
        // A record of the state (checked against its manifest; bounded, a regular file, not a link, not a
        // FIFO that would block). A state that cannot be read is refused by the run's own load.
        guard let directory = try? StateDirectory.open(stateDirectory, create: false),
            let bytes = (try? directory.readRecords([.outputLocation]))?.bytes[.outputLocation]
        else { return nil }
        return recorded(bytes, stateDirectory: stateDirectory)
    }

    /// Largest record read (a longer file is not a record vpnprov wrote, and is ignored).
    package static let maxBytes = 4096

    /// The recorded tree from the file's bytes (at most `maxBytes`); touches no file.
    package static func recorded(_ bytes: [UInt8], stateDirectory: String) -> String? {
        guard let text = String(data: Data(bytes), encoding: .utf8)?.trimmingCharacters(in: .newlines), !text.isEmpty
        else { return nil }
        if text.hasPrefix("/") { return text }
        return base(stateDirectory) + "/" + text
    }

    /// The state directory without `--state`: `state` beside the inventory.
    package static func defaultStateDirectory(inventoryPath: String, currentDirectory: String) -> String {
        let dir = (inventoryPath as NSString).deletingLastPathComponent
        return (dir.isEmpty ? currentDirectory : dir) + "/state"
    }

    static func base(_ stateDirectory: String) -> String {
        let parent = (stateDirectory as NSString).deletingLastPathComponent
        return parent.isEmpty ? "/" : parent
    }

    static func hasTree(_ directory: String) -> Bool {
        FileManager.default.fileExists(atPath: directory + "/" + OutputTree.manifestName)
    }

    static func standardized(_ path: String) -> String {
        (path as NSString).standardizingPath
    }

    /// Nil when `options.outDirectory` may be used; else the message that refuses it (exit 2).
    static func conflict(_ options: GenerateOptions) -> String? {
        let out = standardized(options.outDirectory)
        if let recorded = recorded(stateDirectory: options.stateDirectory).map(standardized), recorded != out,
            hasTree(recorded)
        {
            let shown = Pipeline.display(recorded, options)
            return "the output tree of this deployment is at '\(shown)' (recorded in the state); this run would "
                + "\(options.outGiven ? "write a second one at" : "use") '\(Pipeline.display(out, options))'. "
                + "Pass '--out \(shown)', or move that directory to where you want it and pass its new place to --out"
        }
        return nil
    }

    /// A tree left where vpnprov wrote by default before (`out` in the working directory) when this
    /// deployment has no recorded tree yet: worth a warning, not a refusal.
    static func formerDefault(_ options: GenerateOptions) -> String? {
        guard !options.outGiven, recorded(stateDirectory: options.stateDirectory) == nil else { return nil }
        let former = standardized(options.currentDirectory + "/out")
        guard former != standardized(options.outDirectory), hasTree(former) else { return nil }
        return
            "'\(Pipeline.display(former, options))' holds an output tree (--out used to default to the working directory); "
            + "this deployment's tree is '\(Pipeline.display(options.outDirectory, options))', beside the inventory. "
            + "Remove the old one, or pass --out to keep using it"
    }

    /// Records `options.outDirectory` as the deployment's tree in the state directory the run holds
    /// locked (best effort: the run has succeeded).
    static func record(_ options: GenerateOptions, in state: StateDirectory) {
        let out = standardized(options.outDirectory)
        let base = base(standardized(options.stateDirectory))
        let text =
            out.hasPrefix(base == "/" ? "/" : base + "/") && base != "/" ? String(out.dropFirst(base.count + 1)) : out
        if recorded(stateDirectory: options.stateDirectory).map(standardized) == out { return }
        try? state.commitRecord(.outputLocation, Array((text + "\n").utf8))
    }

    /// The state directories a run that has just created a CA in `stateDirectory` may have meant
    /// instead: `state` beside the inventory (the default) and `state` in the current directory, when
    /// either is another directory that holds a CA. A relative `--state` given from the wrong directory
    /// (or left out where it was given before) otherwise makes a second CA without a word.
    static func otherStates(besides stateDirectory: String, inventoryPath: String, currentDirectory: String) -> [String]
    {
        let inventoryDirectory = (inventoryPath as NSString).deletingLastPathComponent
        var candidates: [String] = []
        for candidate in [inventoryDirectory + "/state", currentDirectory + "/state"].map(standardized) {
            if candidate != standardized(stateDirectory) && !candidates.contains(candidate)
                && FileManager.default.fileExists(atPath: StatePaths(root: candidate).caCertificate)
            {
                candidates.append(candidate)
            }
        }
        return candidates
    }
}
