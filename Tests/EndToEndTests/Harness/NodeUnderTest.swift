import Foundation
import VPNProvTestHarness

/// One generated node running in a server charon (its `servers/<node>/` tree loaded as written, with its
/// `strongswan.d/vpnprov.conf` included), and a client charon beside it that tries generated clients one by one.
final class NodeUnderTest {
    let deployment: GeneratedDeployment
    let node: GeneratedDeployment.Node
    let scenario: TunnelScenario
    let serverLoad: ProgramResult
    private var loadedClientConf: String?

    var server: Charon { scenario.server }
    var client: Charon { scenario.client }

    /// Starts both daemons; the server loads the node cleanly (any failed/invalid/ignored/discarded line throws).
    /// `includeSettings: false` leaves out the node's strongswan.d snippet (to prove it is needed);
    /// `clientExtraSettings` is appended to the client's strongswan.conf.
    static func start(
        _ deployment: GeneratedDeployment, node name: String, builds: BuildPair = .host, includeSettings: Bool = true,
        clientExtraSettings: String = "", editConf: ((String) -> String)? = nil
    ) throws -> NodeUnderTest {
        let node = try deployment.node(name)
        let scenario = try TunnelScenario.start(
            builds: builds,
            serverSettingsIncludes: includeSettings ? node.settingsInclude.map { [$0] } ?? [] : [],
            clientExtraSettings: clientExtraSettings,
            clientHosts: deployment.clientHosts, extraServerAddresses: deployment.extraServerAddresses)
        do {
            if let editConf {
                let text = try String(contentsOfFile: node.confFile, encoding: .utf8)
                try editConf(text).write(toFile: node.confFile, atomically: true, encoding: .utf8)
            }
            let load = try scenario.server.loadAllCleanly(confFile: node.confFile)
            return NodeUnderTest(deployment: deployment, node: node, scenario: scenario, load: load)
        } catch {
            scenario.teardown()
            throw error
        }
    }

    private init(
        deployment: GeneratedDeployment, node: GeneratedDeployment.Node, scenario: TunnelScenario,
        load: ProgramResult
    ) {
        self.deployment = deployment
        self.node = node
        self.scenario = scenario
        self.serverLoad = load
    }

    func teardown() { scenario.teardown() }

    /// Loads a client into the client charon (cleanly); returns (ike, child) to initiate.
    func load(_ loadable: ClientCase.Loadable, label: String) throws -> (ike: String, child: String) {
        switch loadable {
        case .translated(let setup):
            let dir = try setup.write(label: "client")
            // The device trusts what this setup holds, not what an earlier one loaded.
            try client.loadAllCleanly(confFile: dir.confFile, clear: true)
            loadedClientConf = nil
            return (setup.connectionName, setup.childName)
        case .asWritten(let conf, let connection, let child):
            if loadedClientConf != conf {
                try client.loadAllCleanly(confFile: conf, clear: true)
                loadedClientConf = conf
            }
            return (connection, child)
        }
    }

    /// What a proven handshake looked like.
    struct Proof {
        var ike: IKESA
        /// The peer config (connection) the server's IKE_SA belongs to.
        var serverPeerConfig: String?
        /// Server log lines written during this handshake.
        var serverLog: String
        /// The device's policy was applied and IPv6 outside the tunnel proven blocked.
        var ipv6Blocked = false
    }

    /// Initiates, checks the virtual IPs come from the node's pools, pings the server's inner address through the
    /// tunnel (and its inner IPv6 address for IKEv2 when the node has an IPv6 pool), then terminates.
    ///
    /// A translated device that blocks IPv6 outside the tunnel (DevicePolicy) gets its policy applied once the
    /// tunnel is up, and must then fail to reach the outside IPv6 host it reached before connecting (and, with
    /// local networks excluded, still reach the server's link address).
    func prove(_ loadable: ClientCase.Loadable, label: String, ikeVersion: Int) throws -> Proof {
        let (ike, child) = try load(loadable, label: label)
        var policy = DevicePolicy()
        if case .translated(let setup) = loadable { policy = setup.device }
        if policy.blockIPv6 != .none {
            let before = try scenario.pair.ping(from: scenario.pair.clientNamespace, to: scenario.pair.outsideAddress6)
            guard before.succeeded else {
                throw HarnessError("\(label): outside IPv6 host unreachable before connecting: \(before)")
            }
        }
        let mark = server.log.utf8.count
        defer {
            scenario.pair.removeDevicePolicy()
            _ = try? client.terminate(ike: ike)
        }
        let result = try client.initiate(child: child, ike: ike, timeout: .seconds(15))
        let log = Self.since(mark, server.log)
        guard result.succeeded else {
            throw HarnessError("\(label): initiate failed: \(result)\n--- server log of this attempt ---\n\(log)")
        }
        guard let sa = try client.securityAssociations().first(where: { $0.name == ike && $0.state == "ESTABLISHED" })
        else { throw HarnessError("\(label): initiate said OK but no established IKE_SA \(ike)") }
        guard sa.children.contains(where: { $0.name == child && $0.state == "INSTALLED" }) else {
            throw HarnessError("\(label): CHILD_SA \(child) not installed: \(sa.children)")
        }
        let tunnel = TunnelScenario.Tunnel(ike: sa, virtualIPs: sa.localVirtualIPs)
        guard let pool4 = node.pool4, let vip4 = tunnel.virtualIPv4, IPText.cidr(pool4, contains: vip4) else {
            throw HarnessError("\(label): IPv4 virtual IP \(tunnel.virtualIPs) not from pool \(node.pool4 ?? "-")")
        }
        let ping = try scenario.pingThroughTunnel(tunnel)
        guard ping.succeeded else { throw HarnessError("\(label): ping through the tunnel failed: \(ping)") }
        if ikeVersion == 2, let pool6 = node.pool6 {
            guard let vip6 = tunnel.virtualIPv6, IPText.cidr(pool6, contains: vip6) else {
                throw HarnessError("\(label): IPv6 virtual IP \(tunnel.virtualIPs) not from pool \(pool6)")
            }
            let ping6 = try scenario.pingThroughTunnel(tunnel, ipv6: true)
            guard ping6.succeeded else { throw HarnessError("\(label): ping6 through the tunnel failed: \(ping6)") }
        }
        if policy.blockIPv6 != .none {
            try scenario.pair.applyDevicePolicy(policy)
            let outside = try scenario.pair.ping(from: scenario.pair.clientNamespace, to: scenario.pair.outsideAddress6)
            guard !outside.succeeded else {
                throw HarnessError("\(label): IPv6 leaks: the outside host answered while connected with \(policy)")
            }
            if policy.blockIPv6 == .exceptLocalNetworks {
                let local = try scenario.pair.ping(
                    from: scenario.pair.clientNamespace, to: scenario.pair.serverAddress6)
                guard local.succeeded else {
                    throw HarnessError("\(label): local network unreachable with \(policy): \(local)")
                }
            }
            // IPv4 still goes through the tunnel with the policy in place.
            let again = try scenario.pingThroughTunnel(tunnel)
            guard again.succeeded else { throw HarnessError("\(label): tunnel ping failed with \(policy): \(again)") }
        }
        // The server names its IKE_SA after the peer config (connection) it chose.
        let peerConfig = try server.securityAssociations().first { $0.state == "ESTABLISHED" }?.name
        return Proof(ike: sa, serverPeerConfig: peerConfig, serverLog: log, ipv6Blocked: policy.blockIPv6 != .none)
    }

    /// The end-entity certificates the client daemon holds (its own and those received from servers, which
    /// charon keeps in its certificate cache once verified), as PEM.
    func clientEndEntityCertificates() throws -> [String] {
        let result = try client.swanctl(["--list-certs", "--type", "x509", "--pem"])
        guard result.succeeded else { throw HarnessError("list-certs failed: \(result)") }
        var out: [String] = []
        var rest = Substring(result.stdout)
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<rest.endIndex)
        {
            out.append(String(rest[begin.lowerBound..<end.upperBound]) + "\n")
            rest = rest[end.upperBound...]
        }
        return out
    }

    /// Initiates and expects failure; returns the server log lines of the attempt (for the reason).
    func refuse(_ loadable: ClientCase.Loadable, label: String) throws -> String {
        let (ike, child) = try load(loadable, label: label)
        let mark = server.log.utf8.count
        defer { _ = try? client.terminate(ike: ike, timeout: .seconds(3)) }
        let result = try client.initiate(child: child, ike: ike, timeout: .seconds(8))
        let log = Self.since(mark, server.log)
        if result.succeeded { throw HarnessError("\(label): connected but must be refused\n\(log)") }
        return log
    }

    static func since(_ mark: Int, _ log: String) -> String {
        let bytes = Array(log.utf8)
        return mark <= bytes.count ? String(decoding: bytes[mark...], as: UTF8.self) : log
    }

    /// `swanctl --list-conns`, split into one block per connection (name → block text).
    func listConnections() throws -> [String: String] {
        let result = try server.swanctl(["--list-conns"])
        guard result.succeeded else { throw HarnessError("list-conns failed: \(result)") }
        var blocks: [String: String] = [:]
        var current: String?
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if let first = line.first, first != " ", let colon = line.firstIndex(of: ":") {
                current = String(line[..<colon])
                blocks[current!] = String(line) + "\n"
            } else if let current {
                blocks[current, default: ""] += String(line) + "\n"
            }
        }
        return blocks
    }
}
