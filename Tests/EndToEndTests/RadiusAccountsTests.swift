import Foundation
import Testing
import VPNProvTestHarness

/// Central accounts, end to end: VPN nodes whose password services (IKEv2 EAP-MSCHAPv2, IKEv1 XAuth) go to RADIUS
/// (strongSwan's eap-radius), two FreeRADIUS 3.2 servers, one PostgreSQL with the accounts, real strongSwan
/// clients, a host behind each node (`RadiusLab`). One lab per strongSwan version of the nodes runs the whole
/// scenario — the steps share it to keep the run short — and every step is reported on its own:
/// - RADIUS between node and RADIUS server travels in the generated IPsec connection: a capture of the link while
///   an account logs in holds only ESP, no account name, no client address, no RADIUS; a request in clear is
///   dropped by the server's generated rule (and its answer by the node's), and answered once both are gone;
/// - a tunnel client's UDP to a RADIUS server is refused by the node's table; without that rule it arrives at the
///   server through the node's IPsec, as the node;
/// - a free account reaches a host behind the free node over IKEv2 and IKEv1 XAuth; accounting Start and Stop
///   rows name the node (NAS-Identifier) and the tier (Class);
/// - the pro node refuses it (RADIUS's tier policy), and refuses it by itself (`groups`) when RADIUS is mis-set
///   to accept it; after its tier becomes pro it connects there;
/// - a disabled account is refused; disabling one with a live tunnel ends the tunnel within seconds
///   (Disconnect-Request to the node), and it cannot come back;
/// - a device limit of 1 refuses a second device while the first is up, and admits it once the first is gone;
/// - a node whose accounting Stop never arrives (its RADIUS relay killed as its tunnel ends): the open row counts while
///   it is fresh, and no longer once stale (aged by the window in the database); `accounts catalogue` shows the node with
///   the session and alive, then not alive;
/// - a node's charon killed with a session open and started again: the account logs in there at once, its old
///   row closed (NAS-Reboot) by the new charon's first request;
/// - a device limit of 2: two devices up at once, both passing traffic; parallel logins never exceed it (charon
///   logins at once, and a burst of Access-Requests at the RADIUS server);
/// - account names that collide (in case, or with an inventory identity) are refused by `accounts add`, and by the
///   RADIUS policy when a backend wrote them;
/// - accounting forged with one node's secret for another node is dropped and logged, radacct unchanged;
/// - a wrong per-node secret (in the node's RADIUS relay) is refused: the RADIUS server's log names the node and
///   "Shared secret is incorrect", the node only sees the request time out (FreeRADIUS drops such a request
///   without an answer);
/// - the preferred RADIUS server stopped, or silent like a dead host: the other one answers the first attempt
///   (the node's relay gives the silent server up and charon's retransmission goes to the other);
/// - on strongSwan 5.9, the faults (`RadiusAccountingFaultSteps.swift`): PostgreSQL killed while sessions end, the
///   preferred RADIUS server killed as a session ends, and both servers stopped while sessions end lose no Stop and
///   double none; a login while the preferred server is dead succeeds at the first attempt;
/// - no account password in any log or in radpostauth, no node secret in any log.
///
/// The two labs run side by side, each on a thread of its own: a scenario is mostly waiting (RADIUS time-outs,
/// claims lapsing), and one after the other they were the last suite of the whole run to end.
@Suite(.strongSwan, .radius)
struct RadiusAccountsTests {
    @Test("Central accounts via RADIUS, nodes on strongSwan 5.9")
    func accountsOnStrongSwan59() async throws {
        try RadiusEnvironment.require()
        try StrongSwanBuild.host.requireEAPRadius()
        let report = try await Subprocess.onOwnThread { try RadiusScenario.run(build: .host) }
        report.record()
    }

    @Test("Central accounts via RADIUS, nodes on strongSwan 6.0", .strongSwan6)
    func accountsOnStrongSwan60() async throws {
        try RadiusEnvironment.require()
        try StrongSwanBuild.trixie.requireEAPRadius()
        let report = try await Subprocess.onOwnThread { try RadiusScenario.run(build: .trixie) }
        report.record()
    }
}

/// An app's user, as an account of the central accounts, on a node whose certificate comes from ACME (Pebble): a
/// lab of its own, beside the accounts scenario rather than after it. Its node, free-1, reaches the RADIUS servers
/// from a second address (`radius_address`, a private network between them), not from the address clients dial.
@Suite(.strongSwan, .radius)
struct RadiusACMETests {
    /// An app's user, as an account of the central accounts, on a node whose certificate comes from ACME
    /// (Pebble): the seed app's code path on a device that trusts only Pebble's root reaches the host behind the
    /// node over IKEv2 EAP, its login checked by the RADIUS servers; then a Linux desktop (the real NetworkManager
    /// and charon-nm, trusting only Pebble's root) with the same account, set up from the catalogue as
    /// docs/accounts.md says. The node's RADIUS, accounting and Disconnect-Requests all take its `radius_address`.
    @Test(
        "A RADIUS account on an ACME node reached from its radius_address: the seed app's code path and a NetworkManager desktop with only Pebble's root reach the host behind",
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"),
        arguments: StrongSwanBuild.all)
    func accountOnAnACMENode(_ build: StrongSwanBuild) async throws {
        try RadiusEnvironment.require()
        try build.require()
        try build.requireEAPRadius()
        try NetworkManagerDesktop.require()
        let detail = try await Subprocess.onOwnThread { () throws -> String in
            // Client 0: the seed app's code path (a charon); client 1: a NetworkManager desktop; the last: Pebble.
            let (lab, inputs, pebble) = try RadiusGeneratedInputs.startACMELab(build: build, clients: 3, desktops: [1])
            defer {
                pebble.stop()
                lab.teardown()
                for host in lab.clients.dropFirst() { PrivateView.remove(for: host.namespace) }
            }
            try inputs.migrate()
            let password = RadiusGeneratedInputs.random()
            try inputs.addAccount("ann", password: password, tier: "free", devices: 1, lab: lab)
            let root = try pebble.issuingRoot()
            let nas = try #require(RadiusGeneratedInputs.nodes.first { $0.name == "free-1" }).address
            /// ann's open accounting rows on free-1 that name the address clients dial (not the RADIUS path's).
            func openRows() throws -> Int {
                let postgres = try #require(lab.postgres)
                return Int(
                    try postgres.psql(
                        "SELECT count(*) FROM radacct WHERE username = 'ann' AND acctstoptime IS NULL "
                            + "AND nasidentifier = 'free-1' AND nasipaddress = '\(nas)'")) ?? -1
            }
            func wait(_ what: String, _ condition: () throws -> Bool) throws {
                let deadline = ContinuousClock.now + .seconds(15)
                while try !condition() {
                    if ContinuousClock.now > deadline {
                        let log = try inputs.radiusServers.map { try lab.radius($0.name).log(since: 0) }.joined()
                        throw HarnessError("timeout waiting for \(what)\n--- RADIUS ---\n\(log.suffix(3000))")
                    }
                    usleep(50_000)
                }
            }

            // The seed app's code path.
            let setups = try inputs.seedAppSetups(
                node: "free-1", user: "ann", password: password, trust: Data(root.utf8))
            guard let eap = setups.first(where: { $0.label == "ikev2-eap" })?.setup else {
                throw HarnessError("free-1's ikev2-eap entry is not for the four-field code: \(setups.map(\.label))")
            }
            let client = try lab.client(0)
            try client.loadAllCleanly(confFile: try eap.write(label: "seed-acme").confFile, clear: true)
            let up = try client.initiate(child: eap.childName, ike: eap.connectionName, timeout: .seconds(15))
            guard up.succeeded else {
                throw HarnessError("initiate: \(up)\n\(try lab.nodeDaemon("free-1").log.suffix(3000))")
            }
            guard let vip = try client.virtualIPs(ike: eap.connectionName).first(where: { !$0.contains(":") }) else {
                throw HarnessError("no IPv4 virtual IP")
            }
            let ping = try lab.pingHostBehind(fromClient: 0, source: vip)
            guard ping.succeeded else { throw HarnessError("ping from \(vip) to the host behind free-1: \(ping)") }
            let received = client.logLines(containing: "received end entity cert").joined(separator: " / ")
            guard received.contains("CN=\(RadiusGeneratedInputs.acmeDomain)") else {
                throw HarnessError("the client was not served the ACME certificate: \(received)")
            }
            // The RADIUS servers know free-1 only by its radius_address: they answered its login, and took its
            // accounting (sent from there, naming the address clients dial), Start and Stop.
            try wait("ann's accounting Start from free-1's radius_address") { try openRows() == 1 }
            _ = try client.terminate(ike: eap.connectionName)
            try wait("ann's accounting Stop") { try openRows() == 0 }

            // A Linux desktop with the same account, from the catalogue's ikev2-eap entry of free-1.
            let catalog = try JSONSerialization.jsonObject(
                with: Data(contentsOf: inputs.deployment.out.appendingPathComponent("catalog/servers.json")))
            let entry = try #require(
                ((catalog as? [String: Any])?["servers"] as? [[String: Any]] ?? []).first {
                    $0["node"] as? String == "free-1" && $0["service"] as? String == "ikev2-eap"
                })
            let scratch = try Scratch.makeDirectory("nm-account")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let trust = scratch.appendingPathComponent("ca-dir")
            try FileManager.default.createDirectory(at: trust, withIntermediateDirectories: true)
            try root.write(to: trust.appendingPathComponent("pebble-root.pem"), atomically: true, encoding: .utf8)
            let keyfile = scratch.appendingPathComponent("app-free-1.nmconnection")
            try AccountKeyfileTranslator.keyfile(
                id: "app free-1", entry: entry, account: "ann", password: password, caFile: nil
            ).write(to: keyfile, atomically: true, encoding: .utf8)
            let host = lab.clients[1]
            let desktop = try NetworkManagerDesktop.start(
                on: .init(namespace: host.namespace, interfaceName: "eth0", address: host.address, ipv6: nil),
                caDirectory: trust.path)
            defer { desktop.stop() }
            try desktop.load(connectionFile: keyfile)
            let nmUp = try desktop.up("app free-1")
            guard nmUp.succeeded else {
                throw HarnessError(
                    "nmcli connection up: \(nmUp)\n--- charon-nm ---\n\(desktop.charonLog.suffix(3000))"
                        + "\n--- node ---\n\(try lab.nodeDaemon("free-1").log.suffix(3000))")
            }
            let desktopPing = try lab.pingHostBehind(fromClient: 1)
            guard desktopPing.succeeded else { throw HarnessError("desktop ping to the host behind: \(desktopPing)") }
            guard desktop.charonLog.contains("CN=\(RadiusGeneratedInputs.acmeDomain)") else {
                throw HarnessError("charon-nm was not served the ACME certificate")
            }
            try wait("the desktop's accounting Start") { try openRows() == 1 }
            // Disabling the account ends the desktop's tunnel: the Disconnect-Request goes to free-1's radius_address.
            let disabled = try inputs.disable("ann", lab: lab)
            guard disabled.contains("free-1: disconnected") else {
                throw HarnessError("disable did not disconnect free-1: \(disabled)")
            }
            try wait("the desktop's VPN to go down") {
                !(try desktop.nmcli(["-t", "-f", "TYPE", "connection", "show", "--active"], timeout: .seconds(5)))
                    .stdout.split(separator: "\n").contains("vpn")
            }
            return "virtual IP \(vip), served \(received); desktop connected and pinged, then disconnected by disable"
        }
        print("e2e radius acme \(build.version): \(detail)")
    }
}
