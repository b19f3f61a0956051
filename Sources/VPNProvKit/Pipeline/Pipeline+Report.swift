import Foundation

/// What a run prints: diagnostics, the end-of-run summary, and every failure mapped to its exit code.
extension Pipeline {
    static func printDiagnostics(_ diagnostics: [Diagnostic], options: GenerateOptions, console: Console) {
        let source = (try? InventoryLoader.readFile(options.inventoryPath)) ?? []
        let printer = DiagnosticPrinter(format: options.format, sources: [options.inventory: source])
        let sorted = DiagnosticPrinter.sorted(diagnostics)
        if options.format == .json {
            console.out(printer.render(sorted))
        } else {
            console.err(printer.render(sorted))
        }
        if let summary = DiagnosticPrinter.summary(sorted) { console.err(summary + "\n") }
    }

    /// Renders and checks, then the state, then the output tree, then the summary. False when the
    /// consistency check failed (reported; nothing written).
    static func commitAndWrite(_ built: Built, options: GenerateOptions, console: Console) throws -> Bool {
        // Everything checked and rendered (changed files wait under temporary names): now the
        // state, then the output tree.
        guard let written = try write(built, options: options, console: console) else { return false }
        report(built, written, options: options, console: console)
        return true
    }

    static func report(_ built: Built, _ written: WriteSummary, options: GenerateOptions, console: Console) {
        for change in built.prepared.changes { console.err("vpnprov: \(change)\n") }
        let nodes = built.prepared.inventory.nodes.count
        let users = built.prepared.inventory.users.filter { !$0.revoked }.count
        console.err(
            "vpnprov: \(display(options.outDirectory)): \(nodes) nodes, \(users) users; \(written.written.count) files written, "
                + "\(written.unchanged.count) unchanged, \(written.removed.count) removed\n")
    }

    static func display(_ path: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath
        return path.hasPrefix(cwd + "/") ? String(path.dropFirst(cwd.count + 1)) : path
    }

    /// Runs a stage and maps every failure to its message and exit code in one place.
    static func run(_ console: Console, _ body: () throws -> Int32) -> Int32 {
        do {
            return try body()
        } catch let error as CLIError {
            return CommandLineTool.report(error, console)
        } catch let error as PKIError {
            console.err("vpnprov: error: \(error.message)\n")
            return error.isInventory ? ExitCode.failure : ExitCode.environment
        } catch let error as OutputError {
            console.err("vpnprov: error: \(error.message)\n")
            return ExitCode.environment
        } catch {
            // Renderer errors name what is missing, never a secret value.
            console.err("vpnprov: error: \(error)\n")
            return ExitCode.environment
        }
    }
}
