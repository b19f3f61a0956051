import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Secrets: after a command, nothing it printed may hold a secret or a private key of its
/// inventory or state; files holding one must be 0600.
package enum SecretLeaks {
    /// Secrets shorter than this are not searched for (a literal "x" in a bad-inventory test would
    /// match any output); generated secrets and key lines are far longer.
    package static let minimumLength = 8

    /// Every secret a run on these inventories and state directories could know: the values in
    /// secrets.json, each base64 line of every private key PEM in the state, and the literal and
    /// file secrets of the inventories.
    package static func secrets(stateDirectories: [String], inventories: [String], environment: [String: String] = [:])
        -> Set<
            String
        >
    {
        var found = Set<String>()
        for state in stateDirectories {
            if let data = FileManager.default.contents(atPath: state + "/secrets.json"),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            {
                for case let group as [String: String] in json.values { found.formUnion(group.values) }
            }
            for file in filesBelow(state) where file.hasSuffix(".pem") || file.hasSuffix(".key") {
                guard let text = try? String(contentsOfFile: state + "/" + file, encoding: .utf8),
                    text.contains("PRIVATE KEY")
                else { continue }
                found.formUnion(keyLines(text))
            }
        }
        for path in inventories {
            guard let (inventory, _) = try? InventoryLoader.load(path: path), let inventory else { continue }
            let base = (path as NSString).deletingLastPathComponent
            let sources =
                inventory.nodes.compactMap(\.psk) + inventory.users.compactMap(\.password)
                + [inventory.accounts?.database, inventory.accounts?.radiusDatabase].compactMap { $0 }
            for source in sources {
                switch source {
                case .literal(let value): found.insert(value)
                case .file(let file):
                    let full = file.hasPrefix("/") ? file : base + "/" + file
                    // Bounded, and never a FIFO or device: the tests plant such files on purpose.
                    if let bytes = try? BoundedFile.read(full, limit: SecretPolicy.fileLimit),
                        let text = String(validating: bytes, as: UTF8.self)
                    {
                        found.insert(text.trimmingCharacters(in: .newlines))
                    }
                case .env(let name): if let value = environment[name] { found.insert(value) }
                case .generate: break
                }
            }
        }
        return found.filter { $0.count >= minimumLength }
    }

    /// The base64 lines of a PEM private key (encrypted or not).
    package static func keyLines(_ pem: String) -> [String] {
        pem.split(separator: "\n").map(String.init).filter {
            !$0.hasPrefix("-----") && !$0.contains(":") && $0.count >= 16
        }
    }

    /// Records an issue for every secret found in `output`, naming only where it came from.
    package static func expectNone(
        in output: String, _ secrets: Set<String>, what: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        let leaked = secrets.filter { output.contains($0) }.count
        #expect(
            leaked == 0, "\(what) holds \(leaked) secret value(s) or private key line(s)",
            sourceLocation: sourceLocation)
    }

    /// Every regular file below `root` (relative paths, hidden files included, links not followed).
    package static func filesBelow(_ root: String) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        var files: [String] = []
        while let path = enumerator.nextObject() as? String {
            var st = stat()
            if lstat(root + "/" + path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { files.append(path) }
        }
        return files.sorted()
    }

    /// Every file under `roots` that holds a secret, a private key or a PKCS#12 bundle is 0600.
    package static func expectPrivateFilesOwnerOnly(
        _ roots: [String], secrets: Set<String>, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        var checked = 0
        for root in roots {
            for file in filesBelow(root) {
                let path = root + "/" + file
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                let text = String(decoding: data, as: UTF8.self)
                let holdsSecret =
                    file.hasSuffix(".p12") || file.hasSuffix(".mobileconfig") && text.contains("PKCS12")
                    || text.contains("PRIVATE KEY") || secrets.contains { text.contains($0) }
                guard holdsSecret else { continue }
                checked += 1
                var st = stat()
                #expect(
                    lstat(path, &st) == 0 && st.st_mode & 0o777 == 0o600,
                    "\(file) holds a secret but has mode \(String(st.st_mode & 0o777, radix: 8))",
                    sourceLocation: sourceLocation)
            }
        }
        _ = checked
    }
}
