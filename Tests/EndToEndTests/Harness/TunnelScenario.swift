import Foundation
import VPNProvTestHarness

/// A server charon and a client charon on a `NetworkPair`: the usual shape of an end-to-end test.
///
///     let s = try TunnelScenario.start(serverSettingsIncludes: [node + "/strongswan.d/vpnprov.conf"])
///     defer { s.teardown() }
///     try s.server.loadAllCleanly(confFile: node + "/swanctl/swanctl.conf")
///     try s.client.loadAllCleanly(confFile: clientDir.confFile)
///     let tunnel = try s.connect(child: "home")   // throws with both logs when the CHILD_SA does not come up
///     #expect(try s.pingThroughTunnel(tunnel).succeeded)
///
/// One scenario can serve several clients one after another: load another client swanctl.conf into `client`
/// (`--load-all` replaces the previous connections) after `client.terminate(ike:)`.
final class TunnelScenario: Sendable {
    let pair: NetworkPair
    let server: Charon
    let client: Charon

    private init(pair: NetworkPair, server: Charon, client: Charon) {
        self.pair = pair
        self.server = server
        self.client = client
    }

    static func start(
        builds: BuildPair = .host,
        serverSettingsIncludes: [String] = [],
        serverExtraSettings: String = "",
        clientSettingsIncludes: [String] = [],
        clientExtraSettings: String = "",
        clientHosts: [String] = [],
        extraServerAddresses: [String] = []
    ) throws -> TunnelScenario {
        let pair = try NetworkPair.create(clientHosts: clientHosts, extraServerAddresses: extraServerAddresses)
        do {
            let server = try Charon.start(
                in: pair.serverNamespace, build: builds.server, label: "server",
                settingsIncludes: serverSettingsIncludes, extraSettings: serverExtraSettings)
            do {
                let client = try Charon.start(
                    in: pair.clientNamespace, build: builds.client, label: "client",
                    settingsIncludes: clientSettingsIncludes, extraSettings: clientExtraSettings)
                return TunnelScenario(pair: pair, server: server, client: client)
            } catch {
                server.stop()
                throw error
            }
        } catch {
            pair.teardown()
            throw error
        }
    }

    /// Stops both daemons and deletes the namespaces (also what `deinit` does).
    func teardown() {
        client.stop()
        server.stop()
        pair.teardown()
    }

    deinit { teardown() }

    /// An established tunnel as the client sees it.
    struct Tunnel: Sendable {
        var ike: IKESA
        var virtualIPs: [String]
        var virtualIPv4: String? { virtualIPs.first { !$0.contains(":") } }
        var virtualIPv6: String? { virtualIPs.first { $0.contains(":") } }
    }

    /// Initiates `child` (of `ike`) on the client; throws with both daemons' relevant output unless it comes up.
    func connect(child: String, ike: String? = nil, timeout: Duration = .seconds(20)) throws -> Tunnel {
        let result = try client.initiate(child: child, ike: ike, timeout: timeout)
        guard result.succeeded else {
            throw HarnessError("initiate \(child) failed: \(result)\n--- server log ---\n\(server.log)")
        }
        let sas = try client.securityAssociations().filter {
            $0.state == "ESTABLISHED" && (ike == nil || $0.name == ike)
        }
        guard let sa = sas.first(where: { $0.children.contains { $0.name == child } }) ?? sas.first else {
            throw HarnessError("initiate said OK but no established IKE_SA is listed")
        }
        return Tunnel(ike: sa, virtualIPs: sa.localVirtualIPs)
    }

    /// Pings the server's inner address from the client's virtual IP (v4 unless `ipv6`).
    func pingThroughTunnel(_ tunnel: Tunnel, ipv6: Bool = false) throws -> ProgramResult {
        guard let source = ipv6 ? tunnel.virtualIPv6 : tunnel.virtualIPv4 else {
            throw HarnessError("no \(ipv6 ? "IPv6" : "IPv4") virtual IP in \(tunnel.virtualIPs)")
        }
        return try pair.pingServerThroughTunnel(source: source)
    }
}

/// Which strongSwan build runs the server and which the client of a scenario.
struct BuildPair: Sendable, Hashable, CustomStringConvertible {
    var server: StrongSwanBuild
    var client: StrongSwanBuild

    static let host = BuildPair(server: .host, client: .host)
    static let trixie = BuildPair(server: .trixie, client: .trixie)

    var isMixed: Bool { server != client }
    /// "5.9.8" or "6.0.1 server, 5.9.8 client".
    var description: String {
        isMixed ? "\(server.version) server, \(client.version) client" : server.version
    }

    func require() throws {
        try server.require()
        try client.require()
    }
}
