import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPKI

let testLocation = SourceLocation(file: "test.yaml", line: 1, column: 1)
package let testNow = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21

package func makeNode(
    _ name: String, address: String, id: String? = nil, services: [Service] = [.ikev2Cert, .ikev2EAP],
    psk: SecretSource? = nil
)
    -> Node
{
    Node(
        name: name, address: address, id: IKEIdentity.classify(id ?? address), services: services, psk: psk,
        location: testLocation)
}

package func makeUser(
    _ name: String, id: String? = nil, cert: Bool = true, password: SecretSource? = nil, revoked: Bool = false
) -> User {
    User(
        name: name, password: password, cert: cert, id: IKEIdentity.classify(id ?? "\(name)@example.com"), nodes: [],
        revoked: revoked, location: testLocation)
}

package func makeInventory(
    nodes: [Node], users: [User], caKey: KeyType = .ecdsaP256, serverKey: KeyType? = nil, clientKey: KeyType? = nil,
    serverDays: Int = 825, clientDays: Int = 365
) -> Inventory {
    Inventory(
        file: "test.yaml", name: "acme",
        pki: PKISettings(
            ca: CASettings(name: "acme VPN Root CA", key: caKey, days: 3650), serverDays: serverDays,
            clientDays: clientDays,
            serverKey: serverKey, clientKey: clientKey),
        nodes: nodes, users: users)
}

package func standardInventory() -> Inventory {
    makeInventory(
        nodes: [
            makeNode(
                "fra-1", address: "fra-1.vpn.example.com", services: [.ikev2Cert, .ikev2EAP, .ikev2PSK], psk: .generate),
            makeNode("ams-1", address: "203.0.113.10"),
            makeNode("dn-1", address: "dn-1.vpn.example.com", id: "C=DE, O=acme, CN=dn-1.vpn.example.com"),
        ],
        users: [
            makeUser("alice", password: .generate),
            makeUser("bob", cert: false, password: .generate),
            makeUser("carol", id: "carol.example.com"),
            makeUser("dave", revoked: true),
        ])
}

@discardableResult
package func prepare(
    _ inventory: Inventory, state: String, env: [String: String] = [:], now: Date = testNow, persist: Bool = true
) throws
    -> PrepareResult
{
    try PKIManager.prepare(
        inventory: inventory, stateDirectory: state, inventoryDirectory: NSTemporaryDirectory(), environment: env,
        now: now,
        persist: persist)
}

/// Every file and directory below `root`: relative path -> (mode, SHA-256 of content or "dir").
package func snapshot(_ root: String) -> [String: String] {
    var out: [String: String] = [:]
    let fm = FileManager.default
    for case let rel as String in fm.enumerator(atPath: root)! {
        let path = root + "/" + rel
        var st = stat()
        guard lstat(path, &st) == 0 else { continue }
        let mode = String(st.st_mode & 0o7777, radix: 8)
        if (st.st_mode & S_IFMT) == S_IFDIR {
            out[rel] = "\(mode) dir"
        } else {
            out[rel] = "\(mode) \(hexString(Digest.sha256([UInt8](fm.contents(atPath: path)!))))"
        }
    }
    return out
}

package struct ProcessResult {
    package var status: Int32
    package var output: String
}

/// Runs a checker tool (openssl, pki) through env (a missing tool is exit 127) with optional environment
/// additions, in `directory` when given; stdout and stderr together (stdout first).
package func runTool(_ arguments: [String], environment: [String: String] = [:], in directory: String? = nil) throws
    -> ProcessResult
{
    let result = try Subprocess.run(
        "/usr/bin/env", arguments, environment: environment, directory: directory, timeout: .seconds(300))
    guard !result.timedOut else { throw HarnessError("\(result)") }
    return ProcessResult(status: result.exitCode, output: result.output)
}

package func write(_ text: String, to path: String) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
}
