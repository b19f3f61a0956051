import Foundation
import VPNProvSupport
import VPNProvTestHarness

/// Ansible's Python keeps the code it compiles and the module payloads it builds, for the whole test run.
///
/// Ansible sends every module run its module and `module_utils` as a zip (AnsiballZ), which Python imports
/// with `zipimport`; `zipimport` never caches compiled code, so every task on every node compiled
/// `module_utils/basic.py` and some forty other files again: about 40 % of a module run's CPU, and module
/// runs are most of the CPU of the whole test run (docs/testing.md, "Where the seconds go"). The nodes' sshd
/// puts `directory` on `PYTHONPATH`; its `sitecustomize.py` wraps `zipimport`'s compile step with a cache
/// keyed by the SHA-256 of the source, so the same source gives the same code object, with the file name of
/// the run that asked for it. What runs is what Ansible sent; only its compilation is shared.
///
/// On the controller (the same directory on ansible-playbook's `PYTHONPATH`), each ansible-playbook process
/// builds each module's payload once, in a cache below its own temporary directory: it finds the
/// `module_utils` the module imports by parsing every one of them, about 30 % of the controller's CPU in a
/// test run of a hundred short playbooks. The `sitecustomize.py` points that cache, for the one call that
/// builds or reads a payload, at a directory of this run keyed by the ansible-core version, the
/// compression, the module's source and the `module_utils` of the role it comes from (the only
/// `module_utils` outside ansible-core the tests use): a payload is built once per run, by Ansible's own code
/// and under its own lock, and reused by the playbooks after it.
enum ModuleCodeCache {
    /// The directory for `PYTHONPATH` (its `sitecustomize.py`), with the cache below it; made once per run.
    static func directory() throws -> String {
        try made.withLock { made in
            if let made { return made }
            let directory = try Scratch.makeDirectory("python-code").path
            try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory + "/payloads", withIntermediateDirectories: true)
            try sitecustomize(cache: directory + "/cache", payloads: directory + "/payloads").write(
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
    private static func sitecustomize(cache: String, payloads: String) -> String {
        """
        import hashlib, importlib.machinery, marshal, os, sys, zipimport

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

        _PAYLOADS = \(pythonLiteral(payloads))
        _BUILDER = 'ansible.executor.module_common'

        def _role_module_utils(module_path):
            # A module from a role's library/ imports that role's module_utils/ too.
            utils = os.path.join(os.path.dirname(os.path.dirname(module_path)), 'module_utils')
            digest = hashlib.sha256()
            if os.path.basename(os.path.dirname(module_path)) == 'library' and os.path.isdir(utils):
                for root, dirs, files in os.walk(utils):
                    dirs.sort()
                    for name in sorted(files):
                        with open(os.path.join(root, name), 'rb') as part:
                            digest.update(os.path.join(root, name)[len(utils):].encode() + b'\\0' + part.read())
            return digest.digest()

        def _share_payloads(builder):
            find = getattr(builder, '_find_module_utils', None)
            constants = getattr(builder, 'C', None)
            if find is None or constants is None:
                return
            from ansible.release import __version__

            def _shared(**arguments):
                data, path = arguments.get('b_module_data'), arguments.get('module_path')
                key = hashlib.sha256()
                try:
                    for part in (__version__.encode(), str(arguments.get('module_compression')).encode(), data,
                                 _role_module_utils(path)):
                        key.update(hashlib.sha256(part).digest())
                except (OSError, TypeError, AttributeError):
                    return find(**arguments)
                own = constants.DEFAULT_LOCAL_TMP
                constants.DEFAULT_LOCAL_TMP = os.path.join(_PAYLOADS, key.hexdigest())
                try:
                    return find(**arguments)
                finally:
                    constants.DEFAULT_LOCAL_TMP = own

            builder._find_module_utils = _shared

        class _PatchBuilder:
            # Patches the payload builder as it is imported (only ansible-playbook's processes import it).
            def find_spec(self, name, path, target=None):
                if name != _BUILDER:
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, path)
                if spec is None or spec.loader is None:
                    return spec
                run = spec.loader.exec_module

                def exec_module(module):
                    run(module)
                    _share_payloads(module)

                spec.loader.exec_module = exec_module
                return spec

        sys.meta_path.insert(0, _PatchBuilder())

        """
    }

    /// A single-quoted Python string literal of `text`.
    private static func pythonLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
