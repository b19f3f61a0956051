import Foundation
import VPNProvTestHarness

/// Two network namespaces ("server" and "client") joined by a veth pair.
///
/// Addresses (documentation ranges only; nothing leaves the namespaces):
/// - link: server 192.0.2.1/24 + 2001:db8::1/64, client 192.0.2.2/24 + 2001:db8::2/64 (interface `veth0` on both);
/// - server "inner" addresses on its loopback, 198.51.100.1/32 and 2001:db8:ffff::1/128. The client has no route to
///   them except through the tunnel, so a ping to them proves the CHILD_SA carries traffic both ways
///   (a ping to 192.0.2.1 would not: kernel-libipsec excludes the IKE peer address from the tunnel route);
/// - an "outside" IPv6 host, 2001:db8:beef::1 on the server's loopback, which the client reaches through its
///   IPv6 default route via 2001:db8::1, not through the tunnel: a device that lets IPv6 bypass the VPN reaches
///   it while connected, one that blocks IPv6 outside the tunnel does not.
///
/// Names are `vpnp-<pid>-<n>-s` / `-c`; namespaces left by killed runs (pid gone) are removed on the next `create()`.
final class NetworkPair: Sendable {
    let serverNamespace: String
    let clientNamespace: String
    let serverAddress = "192.0.2.1"
    let clientAddress = "192.0.2.2"
    let serverAddress6 = "2001:db8::1"
    let clientAddress6 = "2001:db8::2"
    let serverInnerAddress = "198.51.100.1"
    let serverInnerAddress6 = "2001:db8:ffff::1"
    let outsideAddress6 = "2001:db8:beef::1"
    /// The client's directly attached IPv6 network (what "local networks" means for the device).
    let linkPrefix6 = "2001:db8::/64"
    let interfaceName = "veth0"
    /// Names the client resolves to `serverAddress` (through the `hosts` file of the client's own /etc,
    /// `PrivateView`, which every strongSwan process the harness starts in the client namespace sees).
    let clientHosts: [String]
    /// More addresses the server answers on (on its loopback; the client routes them via `serverAddress`):
    /// a node whose generated configs name e.g. 203.0.113.10 is then reached at exactly that address.
    let extraServerAddresses: [String]
    private let tornDown = Once()

    private init(server: String, client: String, clientHosts: [String], extraServerAddresses: [String]) {
        serverNamespace = server
        clientNamespace = client
        self.clientHosts = clientHosts
        self.extraServerAddresses = extraServerAddresses
    }

    /// Creates both namespaces and the link; on any failure removes what was made.
    static func create(clientHosts: [String] = [], extraServerAddresses: [String] = []) throws -> NetworkPair {
        removeStale()
        let base = "\(Scratch.prefix)-\(Scratch.pid)-\(Scratch.next())"
        let pair = NetworkPair(
            server: base + "-s", client: base + "-c", clientHosts: clientHosts,
            extraServerAddresses: extraServerAddresses)
        do {
            try pair.setUp()
        } catch {
            pair.teardown()
            throw error
        }
        return pair
    }

    private func setUp() throws {
        try ip(["netns", "add", serverNamespace])
        try ip(["netns", "add", clientNamespace])
        // Both ends are created directly inside their namespaces, so the fixed name cannot clash between runs.
        try ip([
            "link", "add", interfaceName, "netns", serverNamespace, "type", "veth",
            "peer", "name", interfaceName, "netns", clientNamespace,
        ])
        for (ns, v4, v6) in [
            (serverNamespace, serverAddress, serverAddress6), (clientNamespace, clientAddress, clientAddress6),
        ] {
            try ip(["-n", ns, "link", "set", "lo", "up"])
            try ip(["-n", ns, "addr", "add", "\(v4)/24", "dev", interfaceName])
            // nodad: usable at once instead of "tentative" for a second or two.
            try ip(["-n", ns, "addr", "add", "\(v6)/64", "dev", interfaceName, "nodad"])
            try ip(["-n", ns, "link", "set", interfaceName, "up"])
        }
        try ip(["-n", serverNamespace, "addr", "add", "\(serverInnerAddress)/32", "dev", "lo"])
        try ip(["-n", serverNamespace, "addr", "add", "\(serverInnerAddress6)/128", "dev", "lo"])
        try ip(["-n", serverNamespace, "addr", "add", "\(outsideAddress6)/128", "dev", "lo"])
        try ip(["-n", clientNamespace, "-6", "route", "add", "default", "via", serverAddress6])
        for address in extraServerAddresses {
            let v6 = address.contains(":")
            try ip(["-n", serverNamespace, "addr", "add", "\(address)/\(v6 ? 128 : 32)", "dev", "lo"])
            try ip([
                "-n", clientNamespace, "route", "add", "\(address)/\(v6 ? 128 : 32)",
                "via", v6 ? serverAddress6 : serverAddress,
            ])
        }
        if !clientHosts.isEmpty {
            let etc = try PrivateView.create(of: "/etc", for: clientNamespace, own: ["hosts"])
            let hosts =
                "127.0.0.1 localhost\n::1 localhost\n"
                + clientHosts.map { "\(serverAddress) \($0)\n" }.joined()
            try hosts.write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
        }
    }

    /// Loads an nftables ruleset (or nft commands) into `namespace` with `nft -f`; throws unless nft accepts it.
    static func loadNftables(_ rules: String, in namespace: String) throws {
        let file = try Scratch.makeDirectory("nft").appendingPathComponent("rules.nft")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "exec", namespace, "nft", "-f", file.path])
    }

    /// Kills whatever still runs inside and deletes both namespaces. Safe to call twice.
    func teardown() {
        guard tornDown.claim() else { return }
        for ns in [clientNamespace, serverNamespace] { Self.delete(namespace: ns) }
    }

    deinit { teardown() }

    /// Pings `destination` from inside `namespace` (optionally from `source`); one echo, bounded wait.
    /// `within`: keep sending (one a second) until `count` replies came or that many seconds passed, for a
    /// proof of reach whose first echo a loaded machine may lose; without it, one wait of 3 s per echo.
    func ping(
        from namespace: String, source: String? = nil, to destination: String, count: Int = 1, within: Int? = nil
    ) throws -> ProgramResult {
        var args = ["netns", "exec", namespace, StrongSwanEnvironment.pingPath]
        if destination.contains(":") { args.append("-6") }
        args += ["-n", "-c", String(count)] + (within.map { ["-w", String($0)] } ?? ["-W", "3"])
        if let source { args += ["-I", source] }
        args.append(destination)
        return try Subprocess.run(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10 + 3 * count + (within ?? 0)))
    }

    /// Pings the server's inner address from the client (through the tunnel), from `source` (a virtual IP).
    func pingServerThroughTunnel(source: String? = nil) throws -> ProgramResult {
        let target = source?.contains(":") == true ? serverInnerAddress6 : serverInnerAddress
        return try ping(from: clientNamespace, source: source, to: target)
    }

    /// Rule priorities of the device policy: after strongSwan's routing table 220 (priority 220), so
    /// traffic the tunnel carries still goes into it, and before the main table (32766).
    static let deviceRulePriorityLocal = "300"
    static let deviceRulePriorityBlock = "301"

    /// Applies what a device does on its own while connected (DevicePolicy) in the client namespace.
    func applyDevicePolicy(_ policy: DevicePolicy) throws {
        switch policy.blockIPv6 {
        case .none: return
        case .exceptLocalNetworks:
            try ip([
                "-n", clientNamespace, "-6", "rule", "add", "priority", Self.deviceRulePriorityLocal,
                "to", linkPrefix6, "lookup", "main",
            ])
            fallthrough
        case .all:
            try ip(["-n", clientNamespace, "-6", "rule", "add", "priority", Self.deviceRulePriorityBlock, "prohibit"])
        }
    }

    /// Undoes `applyDevicePolicy` (rules that are not there are ignored).
    func removeDevicePolicy() {
        for priority in [Self.deviceRulePriorityLocal, Self.deviceRulePriorityBlock] {
            _ = try? Subprocess.run(
                StrongSwanEnvironment.ipPath, ["-n", clientNamespace, "-6", "rule", "del", "priority", priority],
                timeout: .seconds(10))
        }
    }

    @discardableResult
    private func ip(_ args: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10))
    }

    /// Kills whatever still runs inside `ns` and deletes it (and its private views).
    static func delete(namespace ns: String) {
        if let pids = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "pids", ns], timeout: .seconds(10)) {
            for pid in pids.stdout.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) {
                kill(pid, SIGKILL)
            }
        }
        _ = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "delete", ns], timeout: .seconds(10))
        PrivateView.remove(for: ns)
    }

    /// Deletes `vpnp-<pid>-…` namespaces (and temp dirs) whose creating process no longer exists.
    static func removeStale() {
        Scratch.removeStaleDirectories()
        guard let list = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "list"], timeout: .seconds(10))
        else { return }
        for line in list.stdout.split(separator: "\n") {
            guard let name = line.split(separator: " ").first.map(String.init),
                name.hasPrefix("\(Scratch.prefix)-")
            else { continue }
            let fields = name.split(separator: "-")
            guard fields.count == 4, let pid = Int32(fields[1]), pid != Scratch.pid, !Scratch.processExists(pid)
            else { continue }
            delete(namespace: name)
        }
    }
}
