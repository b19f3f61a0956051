import Testing

/// The machine-readable output's own checker: scripts/check-output validates JSON documents against
/// docs/json-output.schema.json and SARIF logs against the SARIF 2.1.0 rules it carries.
package enum OutputSchema {
    /// Runs scripts/check-output on `files` (`kind` is "sarif" or "json"); (exit status, output).
    package static func check(_ kind: String, _ files: [String]) throws -> (Int32, String) {
        try TestDependency.schemaPython.require()
        let result = try runTool(
            [TestDependency.schemaPython.path, Repository.root + "/scripts/check-output", kind] + files)
        return (result.status, result.output)
    }
}
