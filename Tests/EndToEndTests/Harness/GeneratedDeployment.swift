import Foundation
import VPNProvTestFixtures
import VPNProvTestHarness

@testable import VPNProvCLI
@testable import VPNProvEngine
@testable import VPNProvModel
@testable import VPNProvOutputTree
@testable import VPNProvPKI
@testable import VPNProvPlanning
@testable import VPNProvRendering
@testable import VPNProvSupport
@testable import VPNProvTemplates

/// The services, longest first so `<node>-<service>` names split unambiguously.
enum Service {
    static let all = ["ipsec-xauth-hybrid", "ikev2-psk-eap", "ipsec-xauth-psk", "ikev2-cert", "ikev2-eap", "ikev2-psk"]
}

/// One `vpnprov generate` run: the output tree, the state, and what the tests need to know about them.
struct GeneratedDeployment: Sendable {
    struct Node: Sendable {
        var name: String
        /// What clients dial (catalogue `host`): a DNS name or an IP address.
        var host: String
        var directory: URL
        var confFile: String { directory.appendingPathComponent("swanctl/swanctl.conf").path }
        /// `strongswan.d/vpnprov.conf` when the node needs charon settings.
        var settingsInclude: String? {
            let path = directory.appendingPathComponent("strongswan.d/vpnprov.conf").path
            return FileManager.default.fileExists(atPath: path) ? path : nil
        }
        /// Pool CIDRs from the generated `pools { … addrs = … }`.
        var pools: [String]
        var pool4: String? { pools.first { !$0.contains(":") } }
        var pool6: String? { pools.first { $0.contains(":") } }
        var hostIsAddress: Bool { IPText.bytes(host) != nil }
    }

    let label: String
    let inventory: String
    let out: URL
    let state: URL
    let environment: [String: String]
    let generateOutput: ProgramResult
    private(set) var nodes: [Node] = []
    /// The passwords of users whose password is an `env:`/`file:` reference (generated ones are in the
    /// state): what the file in a Windows user's folder must hold.
    var typedPasswords: [String: String] = [:]

    /// Runs `vpnprov generate INVENTORY --out … --state …` in a fresh scratch directory; throws unless it exits 0.
    static func generate(inventory: String, label: String, environment: [String: String] = [:]) throws
        -> GeneratedDeployment
    {
        let dir = try Scratch.makeDirectory("gen-\(label)")
        let out = dir.appendingPathComponent("out")
        let state = dir.appendingPathComponent("state")
        let result = try VPNProvBinary.run(
            ["generate", inventory, "--out", out.path, "--state", state.path], environment: environment)
        guard result.succeeded else { throw HarnessError("vpnprov generate \(inventory) failed: \(result)") }
        var d = GeneratedDeployment(
            label: label, inventory: inventory, out: out, state: state, environment: environment,
            generateOutput: result)
        try d.readNodes()
        return d
    }

    /// `vpnprov revoke USER` on the same inventory, out and state.
    func revoke(user: String) throws -> ProgramResult {
        let result = try VPNProvBinary.run(
            ["revoke", user, inventory, "--out", out.path, "--state", state.path], environment: environment)
        guard result.succeeded else { throw HarnessError("vpnprov revoke \(user) failed: \(result)") }
        return result
    }

    private mutating func readNodes() throws {
        let catalog =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: out.appendingPathComponent("catalog/servers.json"))) as? [String: Any]
        guard let servers = catalog?["servers"] as? [[String: Any]] else {
            throw HarnessError("catalog without servers")
        }
        var hosts: [String: String] = [:]
        for s in servers {
            if let node = s["node"] as? String, let host = s["host"] as? String { hosts[node] = host }
        }
        let serverDirs = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("servers").path)
        nodes = try serverDirs.sorted().map { name in
            guard let host = hosts[name] else { throw HarnessError("node \(name) is not in the catalogue") }
            let dir = out.appendingPathComponent("servers/\(name)")
            let conf = try String(
                contentsOfFile: dir.appendingPathComponent("swanctl/swanctl.conf").path, encoding: .utf8)
            return Node(name: name, host: host, directory: dir, pools: Self.values(of: "addrs", in: conf))
        }
    }

    /// Every quoted value of `key = "…"` lines (simple values only).
    static func values(of key: String, in conf: String) -> [String] {
        conf.split(separator: "\n").compactMap { line in
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix("\(key) = \""), t.hasSuffix("\"") else { return nil }
            return String(t.dropFirst(key.count + 4).dropLast())
        }
    }

    /// The p12 passwords from the state (what a user types when importing a .sswan/.p12).
    func p12Password(user: String) throws -> String? {
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: state.appendingPathComponent("secrets.json")))
        return ((json as? [String: Any])?["p12Passwords"] as? [String: String])?[user]
    }

    /// A user's EAP password from the state (what a Windows user types at the first connect).
    func password(user: String) throws -> String? {
        let json = try JSONSerialization.jsonObject(
            with: Data(contentsOf: state.appendingPathComponent("secrets.json")))
        return ((json as? [String: Any])?["passwords"] as? [String: String])?[user]
    }

    /// DNS names and (non-192.0.2.1) addresses the client namespace must reach the server at.
    var clientHosts: [String] { nodes.filter { !$0.hostIsAddress }.map(\.host) }
    var extraServerAddresses: [String] {
        nodes.filter { $0.hostIsAddress && $0.host != "192.0.2.1" && $0.host != "2001:db8::1" }.map(\.host)
    }

    func node(_ name: String) throws -> Node {
        guard let n = nodes.first(where: { $0.name == name }) else { throw HarnessError("no node \(name)") }
        return n
    }

    // MARK: clients

    /// Every client configuration the run produced, one per (user, device kind, node, service).
    func clientCases() throws -> [ClientCase] {
        var cases: [ClientCase] = []
        let clientsDir = out.appendingPathComponent("clients")
        for user in try FileManager.default.contentsOfDirectory(atPath: clientsDir.path).sorted() {
            let dir = clientsDir.appendingPathComponent(user)
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
            if let mobileconfig = files.first(where: { $0.hasSuffix(".mobileconfig") }) {
                cases += try appleCases(user: user, file: dir.appendingPathComponent(mobileconfig))
            }
            for file in files where file.hasSuffix(".sswan") {
                let (node, service) = try split(String(file.dropLast(".sswan".count)), context: file)
                let url = dir.appendingPathComponent(file)
                // Nothing typed: the import must not need the operator's state (no p12 password).
                cases.append(
                    ClientCase(user: user, kind: .android, node: node, service: service) {
                        .translated(try SswanTranslator.translate(json: Data(contentsOf: url)))
                    })
            }
            if let script = files.first(where: { $0.hasSuffix("-windows.ps1") }) {
                cases += try windowsCases(user: user, file: dir.appendingPathComponent(script))
            }
            let linuxConf = dir.appendingPathComponent("linux/swanctl/swanctl.conf").path
            if FileManager.default.fileExists(atPath: linuxConf) {
                for name in try Self.connectionNames(inFile: linuxConf) {
                    let (node, service) = try split(name, context: linuxConf)
                    cases.append(
                        ClientCase(user: user, kind: .linux, node: node, service: service) {
                            .asWritten(confFile: linuxConf, connection: name, child: name)
                        })
                }
            }
        }
        return cases
    }

    /// One case per VPN connection the Windows script creates; its name is `<deployment> <node> <service>`.
    private func windowsCases(user: String, file: URL) throws -> [ClientCase] {
        let result = try WindowsScriptTranslator.interpret(script: try String(contentsOf: file, encoding: .utf8))
        // What Windows asks for is typed from the user's own folder (their README says it is there),
        // never from the state; with an env:/file: password it must be the one the inventory gives.
        let passwordFile = file.deletingLastPathComponent().appendingPathComponent(
            WindowsClientRenderer.passwordFile(user: user))
        var password: String?
        if FileManager.default.fileExists(atPath: passwordFile.path) {
            let lines = try String(contentsOf: passwordFile, encoding: .utf8).components(separatedBy: "\n")
            guard lines.count >= 3, lines[lines.count - 1].isEmpty, lines[lines.count - 3].isEmpty else {
                throw HarnessError("\(passwordFile.path): not a heading, an empty line and the password")
            }
            password = lines[lines.count - 2]
        }
        let asksForPassword = result.connections.contains { $0.authenticationMethod != "MachineCertificate" }
        if asksForPassword, let expected = try typedPasswords[user] ?? self.password(user: user), password != expected {
            throw HarnessError(
                "\(passwordFile.path) does not hand \(user) the password of their Windows password connections")
        }
        return try result.connections.map { c in
            let words = c.name.split(separator: " ").map(String.init)
            guard words.count == 3, nodes.contains(where: { $0.name == words[1] }) else {
                throw HarnessError("\(file.path): connection name \(c.name) does not name a node and a service")
            }
            return ClientCase(
                user: user, kind: .windows, node: words[1], service: words[2], windowsDialled: c.serverAddress
            ) {
                .translated(try WindowsScriptTranslator.setup(c, of: result, password: password))
            }
        }
    }

    private func appleCases(user: String, file: URL) throws -> [ClientCase] {
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
        guard let content = (plist as? [String: Any])?["PayloadContent"] as? [[String: Any]] else {
            throw HarnessError("\(file.path): no PayloadContent")
        }
        let vpns = content.filter { $0["PayloadType"] as? String == "com.apple.vpn.managed" }
        let others = content.filter { $0["PayloadType"] as? String != "com.apple.vpn.managed" }
        return try vpns.map { payload in
            let identifier = payload["PayloadIdentifier"] as? String ?? ""
            guard let range = identifier.range(of: ".vpn.", options: .backwards) else {
                throw HarnessError("\(file.path): VPN payload identifier \(identifier) does not name node and service")
            }
            let tail = identifier[range.upperBound...]
            guard let service = Service.all.first(where: { tail.hasSuffix(".\($0)") }) else {
                throw HarnessError("\(identifier): unknown service")
            }
            let node = String(tail.dropLast(service.count + 1))
            return ClientCase(
                user: user, kind: .apple, node: node, service: service, applePayload: payload,
                appleOthers: others
            ) {
                .translated(try AppleProfileTranslator.translate(vpnPayload: payload, otherPayloads: others))
            }
        }
    }

    /// `<node>-<service>` → (node, service), against the generated nodes.
    func split(_ name: String, context: String) throws -> (String, String) {
        for service in Service.all where name.hasSuffix("-\(service)") {
            let node = String(name.dropLast(service.count + 1))
            if nodes.contains(where: { $0.name == node }) { return (node, service) }
        }
        throw HarnessError("\(context): \(name) does not name a generated node and a service")
    }

    /// Top-level connection names of a generated swanctl.conf (`   <name> {` directly inside `connections {`).
    static func connectionNames(inFile path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var names: [String] = []
        var depth = 0
        var inConnections = false
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") { continue }
            if line.hasSuffix("{") {
                let name = line.dropLast().trimmingCharacters(in: .whitespaces)
                if depth == 0 && name == "connections" { inConnections = true }
                if depth == 1 && inConnections { names.append(name) }
                depth += 1
            } else if line == "}" {
                depth -= 1
                if depth == 0 { inConnections = false }
            }
        }
        return names
    }
}

/// One generated client configuration to try against its node.
struct ClientCase {
    enum Kind: String, Sendable { case apple, android, linux, windows }
    enum Loadable {
        /// A device profile turned into the strongSwan client it amounts to.
        case translated(ClientSetup)
        /// A generated Linux swanctl directory, loaded as written.
        case asWritten(confFile: String, connection: String, child: String)
    }

    var user: String
    var kind: Kind
    var node: String
    var service: String
    var applePayload: [String: Any]? = nil
    var appleOthers: [[String: Any]] = []
    /// Windows: the address the connection dials (its server certificate must name it as dNSName).
    var windowsDialled: String? = nil
    var make: () throws -> Loadable

    var label: String { "\(kind.rawValue) \(user) → \(node) \(service)" }
    var ikeVersion: Int { service.hasPrefix("ipsec") ? 1 : 2 }
}

/// IPv4/IPv6 text → bytes, and CIDR membership (test helper; the product has its own parser).
enum IPText {
    static func bytes(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
            return withUnsafeBytes(of: a) { Array($0) }
        }
        var a = in_addr()
        guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
        return withUnsafeBytes(of: a) { Array($0) }
    }

    static func cidr(_ cidr: String, contains address: String) -> Bool {
        let parts = cidr.split(separator: "/")
        guard parts.count == 2, let net = bytes(String(parts[0])), let bits = Int(parts[1]),
            let addr = bytes(address), net.count == addr.count
        else { return false }
        for i in 0..<net.count {
            let take = max(0, min(8, bits - 8 * i))
            let mask: UInt8 = take == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if net[i] & mask != addr[i] & mask { return false }
        }
        return true
    }
}
