import Foundation
import VPNProvSupport
import VPNProvTestHarness

/// The lab nodes' Python keeps the code it compiles from Ansible's module payloads, for the whole test run.
///
/// Ansible sends every module run its module and `module_utils` as a zip (AnsiballZ), which Python imports
/// with `zipimport`; `zipimport` never caches compiled code, so every task on every node compiled
/// `module_utils/basic.py` and some forty other files again: about 40 % of a module run's CPU, and module
/// runs are most of the CPU of the whole test run (docs/testing.md, "Where the seconds go"). The nodes' sshd
/// puts `directory` on `PYTHONPATH`; its `sitecustomize.py` wraps `zipimport`'s compile step with a cache
/// keyed by the SHA-256 of the source, so the same source gives the same code object, with the file name of
/// the run that asked for it. What runs is what Ansible sent; only its compilation is shared.
enum ModuleCodeCache {
    /// The directory for `PYTHONPATH` (its `sitecustomize.py`), with the cache below it; made once per run.
    static func directory() throws -> String {
        try made.withLock { made in
            if let made { return made }
            let directory = try Scratch.makeDirectory("python-code").path
            try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
            try sitecustomize(cache: directory + "/cache").write(
                toFile: directory + "/sitecustomize.py", atomically: true, encoding: .utf8)
            made = directory
            return directory
        }
    }

    private static let made = Locked<String?>(nil)

    /// Debian's own `sitecustomize` (which this one hides) only installs the apport crash hook when apport is
    /// there; the nodes do without it. A cache entry that cannot be read or written (a module run as another
    /// user) is compiled as before; entries are replaced whole (`os.replace`), so two nodes writing one entry
    /// never leave half of one.
    private static func sitecustomize(cache: String) -> String {
        """
        import hashlib, marshal, os, zipimport

        _CACHE = \(pythonLiteral(cache))
        _compile = getattr(zipimport, '_compile_source', None)

        def _renamed(code, path):
            consts = tuple(_renamed(c, path) if isinstance(c, type(code)) else c for c in code.co_consts)
            return code.replace(co_filename=path, co_consts=consts)

        def _cached_compile(pathname, source):
            entry = os.path.join(_CACHE, hashlib.sha256(source).hexdigest())
            try:
                with open(entry, 'rb') as cached:
                    return _renamed(marshal.load(cached), pathname)
            except (OSError, EOFError, ValueError, TypeError):
                pass
            code = _compile(pathname, source)
            part = '%s.%d' % (entry, os.getpid())
            try:
                with open(part, 'wb') as fresh:
                    marshal.dump(code, fresh)
                os.replace(part, entry)
            except OSError:
                try:
                    os.unlink(part)
                except OSError:
                    pass
            return code

        if _compile is not None:
            zipimport._compile_source = _cached_compile

        """
    }

    /// A single-quoted Python string literal of `text`.
    private static func pythonLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
