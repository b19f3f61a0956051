import Foundation
import Testing
import VPNProvTestHarness

/// The lab nodes' compiled-code cache (`ModuleCodeCache`) with the nodes' Python: a module imported from a zip,
/// as AnsiballZ's are, leaves one cache entry, and a second zip with the same source runs the entry's code
/// (swapped here, to tell it from a fresh compile) under its own file name.
@Suite struct ModuleCodeCacheTests {
    @Test func aZipImportedModuleIsCompiledOnceAndRunsUnderItsOwnFileName() throws {
        let dir = try Scratch.makeDirectory("module-code-cache").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try ModuleCodeCache.directory()
        let entries = { Set((try? FileManager.default.contentsOfDirectory(atPath: cache + "/cache")) ?? []) }
        let before = entries()
        // The source is unique to this run, so its entry is new; `where` fails, to show the file name the
        // code carries.
        let source = "answer = 41 + 1\n# \(UUID().uuidString)\ndef where():\n    raise RuntimeError('here')\n"
        let script = """
            import sys, traceback, zipfile
            path, source = sys.argv[1], sys.argv[2]
            with zipfile.ZipFile(path, 'w') as z:
                z.writestr('probe.py', source)
            sys.path.insert(0, path)
            import probe
            try:
                probe.where()
            except RuntimeError:
                print(probe.answer, traceback.extract_tb(sys.exc_info()[2])[-1].filename)
            """
        let first = try Subprocess.check(
            "/usr/bin/python3", ["-c", script, dir + "/first.zip", source], environment: ["PYTHONPATH": cache])
        #expect(first.stdout == "42 \(dir)/first.zip/probe.py\n", "\(first)")
        let made = entries().subtracting(before)
        try #require(made.count == 1, "new cache entries: \(made.sorted())")
        // The entry now holds other code for that source: the second run must run it, and under its own name.
        try Subprocess.check(
            "/usr/bin/python3",
            [
                "-c",
                "import marshal, sys; marshal.dump(compile(sys.argv[2], 'elsewhere.py', 'exec'), open(sys.argv[1], 'wb'))",
                cache + "/cache/" + made.first!, source.replacingOccurrences(of: "41 + 1", with: "7"),
            ])
        let second = try Subprocess.check(
            "/usr/bin/python3", ["-c", script, dir + "/second.zip", source], environment: ["PYTHONPATH": cache])
        #expect(second.stdout == "7 \(dir)/second.zip/probe.py\n", "\(second)")
    }
}
