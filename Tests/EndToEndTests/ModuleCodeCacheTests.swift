import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// The caches of `ModuleCodeCache`. With the nodes' Python: a module imported from a zip, as AnsiballZ's are,
/// leaves one cache entry, and a second zip with the same source runs the entry's code (swapped here, to tell
/// it from a fresh compile) under its own file name. With ansible-playbook: a module's payload is built once
/// for all the playbooks of a run, and a changed module gets a payload of its own.
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

    @Test(.ansible) func aModulePayloadIsBuiltOnceForEveryPlaybookAndAgainWhenTheModuleChanges() async throws {
        try AnsibleTools.require()
        let dir = try Scratch.makeDirectory("module-payloads").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let payloads = try ModuleCodeCache.directory() + "/payloads"
        let entries = { Set((try? FileManager.default.contentsOfDirectory(atPath: payloads)) ?? []) }
        let before = entries()
        try FileManager.default.createDirectory(atPath: dir + "/library", withIntermediateDirectories: true)
        try """
        - name: Probe
          hosts: localhost
          gather_facts: false
          tasks:
            - name: Ask the probe
              probe: {}
              register: probe
            - name: Show its answer
              ansible.builtin.debug:
                msg: "answer {{ probe.answer }}"

        """.write(toFile: dir + "/probe.yml", atomically: true, encoding: .utf8)
        // A module unique to this run, so its payload is new.
        let run = UUID().uuidString
        func module(answering answer: String) throws {
            try """
            #!/usr/bin/python
            # \(run)
            from ansible.module_utils.basic import AnsibleModule
            AnsibleModule(argument_spec={}).exit_json(changed=False, answer='\(answer)')

            """.write(toFile: dir + "/library/probe.py", atomically: true, encoding: .utf8)
        }
        func playbook() async throws -> String {
            let result = try await Subprocess.runAwaiting(
                "/usr/bin/env",
                [
                    "PATH=\(AnsibleTools.binDirectory):/usr/bin:/bin", "HOME=\(dir)", "ANSIBLE_NOCOLOR=1",
                    "ANSIBLE_LOCAL_TEMP=\(dir)/local", "ANSIBLE_REMOTE_TEMP=\(dir)/remote",
                    "PYTHONPATH=\(try ModuleCodeCache.directory())", AnsibleTools.playbook, "-i", "localhost,",
                    "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3", dir + "/probe.yml",
                ], timeout: .seconds(120))
            try #require(result.succeeded, "\(result)")
            return result.stdout
        }
        /// The probe's payload files below the new cache directories (other suites' playbooks add theirs
        /// meanwhile), with their inodes and modification times.
        func built() throws -> [String: String] {
            var files: [String: String] = [:]
            for entry in entries().subtracting(before) {
                let cache = payloads + "/" + entry + "/ansiballz_cache"
                let names = try FileManager.default.contentsOfDirectory(atPath: cache)
                for name in names where name.hasPrefix("ansible.legacy.probe-") && !name.hasSuffix(".lock") {
                    var info = stat()
                    try #require(stat(cache + "/" + name, &info) == 0)
                    files[entry + "/" + name] = "\(info.st_ino) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
                }
            }
            return files
        }

        try module(answering: "one")
        #expect(try await playbook().contains("answer one"))
        let first = try built()
        #expect(first.keys.contains { $0.hasSuffix("/ansible.legacy.probe-ZIP_DEFLATED-none") }, "\(first)")
        // The second playbook takes every payload as the first left it.
        #expect(try await playbook().contains("answer one"))
        #expect(try built() == first)
        // A changed module is built again, under a key of its own.
        try module(answering: "two")
        #expect(try await playbook().contains("answer two"))
        let third = try built()
        #expect(third.count == first.count + 1, "\(third.keys.sorted())")
    }
}
