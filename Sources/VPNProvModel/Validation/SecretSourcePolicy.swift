import Foundation
import Glibc
import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

/// Where `env:` and `file:` secrets may come from (docs/security.md section 3, docs/inventory.md
/// `secrets`). The process that runs vpnprov holds other secrets (the CA passphrase, a CI job's
/// tokens, files elsewhere on the machine); a secret reference ends up in profiles handed to users
/// and in the servers' configuration, so an inventory must not be able to name any of them:
/// - `env:` only variables whose name starts with an allowed prefix (`secrets.env_prefix`, default
///   `VPN_`), and never vpnprov's own `VPNPROV_*`;
/// - `file:` only files inside the secrets directory (`secrets.file_dir`, default the inventory's
///   directory), after resolving `.`, `..` and symbolic links.
/// The validator applies the written form (`problem`), the run the file system too (`confinedFile`).
package enum SecretSourcePolicy {
    /// Why `source` may not be a secret under `settings`, judged on what is written (no file is
    /// looked at); nil when it may.
    package static func problem(_ source: SecretSource, _ settings: SecretSettings) -> String? {
        switch source {
        case .env(let name):
            if name.hasPrefix(SecretSettings.reservedPrefix) {
                return
                    "env:\(name) is one of vpnprov's own variables (\(SecretSettings.reservedPrefix)...), never a secret of the inventory"
            }
            if !settings.envPrefixes.contains(where: { name.hasPrefix($0) }) {
                let allowed =
                    settings.envPrefixes.isEmpty
                    ? "no variable is allowed"
                    : "names must start with "
                        + settings.envPrefixes.map { "\($0)" }.joined(separator: " or ")
                return
                    "env:\(name) is not a variable secrets may come from: \(allowed) ('secrets.env_prefix' in the inventory allows others)"
            }
        case .file(let path):
            let directory = settings.fileDirectory ?? "."
            let outside =
                "file:\(path) is outside \(describe(settings)) ('secrets.file_dir' in the inventory widens it)"
            switch (path.hasPrefix("/"), directory.hasPrefix("/")) {
            case (true, false):
                return
                    "file:\(path) is an absolute path; file: secrets are relative to the inventory's directory and stay inside "
                    + "\(describe(settings)) ('secrets.file_dir' in the inventory widens it)"
            case (true, true), (false, false):
                guard let inside = components(path), let base = components(directory), contains(base, inside) else {
                    return outside
                }
            case (false, true):
                // Relative to the inventory's directory, against an absolute directory: known only when read.
                break
            }
        case .generate, .literal:
            break
        }
        return nil
    }

    /// The file a `file:` reference reads, checked with symbolic links resolved: the real path when
    /// the file exists (read that, so a link swapped later is not followed), else the path as joined
    /// (reading it then fails with the usual reason). Throws the reason it is outside.
    package static func confinedFile(_ path: String, _ settings: SecretSettings, inventoryDirectory: String)
        throws(Refusal) -> String
    {
        if let problem = problem(.file(path), settings) { throw Refusal(message: problem) }
        func joined(_ p: String) -> String {
            p.hasPrefix("/") ? p : (inventoryDirectory as NSString).appendingPathComponent(p)
        }
        let full = joined(path)
        guard let real = realPath(full) else { return full }
        let base = joined(settings.fileDirectory ?? ".")
        let realBase = realPath(base) ?? base
        guard realBase == "/" || real.hasPrefix(realBase.hasSuffix("/") ? realBase : realBase + "/") else {
            throw Refusal(
                message:
                    "file:\(path) resolves to \(real), outside \(describe(settings)) (\(realBase)); symbolic links are followed "
                    + "before the check ('secrets.file_dir' in the inventory widens it)")
        }
        return real
    }

    package struct Refusal: Error {
        package var message: String
    }

    static func describe(_ settings: SecretSettings) -> String {
        settings.fileDirectory.map { "the secrets directory '\($0)'" } ?? "the inventory's directory"
    }

    /// `path` split into components with `.` dropped and `..` applied; `..` that climbs above the start
    /// stays at the front. An absolute path starts with "/".
    static func components(_ path: String) -> [String]? {
        var out: [String] = path.hasPrefix("/") ? ["/"] : []
        for part in path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) {
            switch part {
            case ".": continue
            case "..":
                if let last = out.last, last != "..", last != "/" {
                    out.removeLast()
                } else if out.first == "/" {
                    continue
                } else {
                    out.append("..")
                }
            default: out.append(part)
            }
        }
        return out
    }

    /// `inside` names something strictly below `base` (both from `components`).
    static func contains(_ base: [String], _ inside: [String]) -> Bool {
        inside.count > base.count && inside.starts(with: base) && !inside[base.count...].contains("..")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
