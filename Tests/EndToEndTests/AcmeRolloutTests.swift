import Foundation
import Testing
import VPNProvTestHarness

/// A node whose certificate comes from ACME: the generated deploy/'s vpnprov_node role, run by a
/// real ansible-playbook over SSH, obtains it with the node's lego from a real ACME server (Pebble, on a
/// server host of the lab that resolves the node's name to its lab address and validates HTTP-01 on the
/// node's port 80), installs it for the node's charon, leaves it alone on an unchanged rollout (and in check
/// mode), renews it on demand without ending a live tunnel, and keeps it when a renewal fails; every client
/// kind vpnprov writes for the node, and the seed app's code path, connects with only Pebble's root as its
/// trust anchor; `vpnprov status` shows the certificate the rollout reported. On strongSwan 6.0 only what
/// depends on charon runs (the first rollout, the clients, the renewal with a live tunnel).
@Suite struct AcmeRolloutTests {
    static let domain = "n1.vpn.test"
    /// The role writes /var/lib/vpnprov/acme (lego's state) and /usr/local/lib/vpnprov/acme-renew: the
    /// node's own, not the host's.
    static let nodeViews = ["/var/lib": ["vpnprov"], "/usr/local/lib": ["vpnprov"]]
    static let script = "/usr/local/lib/vpnprov/acme-renew"

    /// The lab's inventory: n1 takes its certificate from Pebble (`acme:` names Pebble's directory, the CA of
    /// its HTTPS as `ca_bundle` and its root as the Linux clients' root); ann logs in with a password, bob with a
    /// certificate of the deployment CA, on every client kind.
    static func inventory(_ pebble: PebbleServer, bundle: String, root: String, sshHost: String) -> String {
        """
        vpnprov: 1
        name: lab
        acme:
          directory: \(pebble.directoryURL)
          email: ops@vpn.test
          ca_bundle: \(bundle)
          roots: [\(root)]
        pki:
          server_key: rsa-2048
        defaults:
          network:
            ipsec: libipsec   # the lab's charons run kernel-libipsec
        nodes:
          \(domain):
            address: \(domain)
            id: \(domain)
            deploy: { host: \(sshHost) }   # the controller has no DNS for the lab
            pool: 10.81.0.0/24
            services: [ikev2-cert, ikev2-eap, ipsec-xauth-hybrid]
            certificate: acme
        users:
          ann:
            password: gen
            devices: [apple, android, linux, windows]
          bob:
            cert: true
            devices: [apple, android, linux, windows]

        """
    }

    static func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1
    }

    static func openssl(_ arguments: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.openSSLPath, arguments)
    }

    /// The serial number of the PEM certificate at `path`, as openssl prints it (`serial=…`).
    static func serial(_ path: String) throws -> String {
        try openssl(["x509", "-in", path, "-noout", "-serial"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // No `.timeLimit`: see AnsibleRolloutTests. Every command has a deadline of its own.
    @Test(
        .ansible,
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"))
    func nodeObtainsKeepsRenewsAndSurvivesAFailedRenewalOfItsACMECertificate() async throws {
        try await Subprocess.onOwnExecutor { try await scenario(build: .host) }
    }

    @Test(
        .ansible, .strongSwan6,
        .enabled(
            if: PebbleServer.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            "needs pebble, lego and curl (scripts/install-test-deps)"))
    func nodeObtainsKeepsRenewsAndSurvivesAFailedRenewalOfItsACMECertificate6() async throws {
        try await Subprocess.onOwnExecutor { try await scenario(build: .trixie) }
    }

    func scenario(build: StrongSwanBuild) async throws {
        let fleet = try OneNodeFleet.start(
            build: build, label: "acme-fleet", node: Self.domain, views: Self.nodeViews)
        defer { fleet.teardown() }
        let (lab, n1) = (fleet.lab, fleet.n1)
        let daemon = try lab.swanctl(n1, ["--version", "--daemon"])
        #expect(daemon.stdout.contains(build.version), "n1 runs charon \(build.version): \(daemon)")
        let pebble = try PebbleServer.start(in: lab, hosts: [Self.domain: n1.address])
        defer { pebble.stop() }

        // Pebble's root is new at every start: the inventory names it once Pebble runs.
        let root = fleet.dir.appendingPathComponent("pebble-root.pem").path
        try pebble.issuingRoot().write(toFile: root, atomically: true, encoding: .utf8)
        let bundle = fleet.dir.appendingPathComponent("pebble-https-ca.pem").path
        try FileManager.default.copyItem(atPath: pebble.httpsCA, toPath: bundle)
        try fleet.generate(Self.inventory(pebble, bundle: bundle, root: root, sshHost: n1.address))
        let intermediate = try pebble.issuingIntermediate()
        let leaf = n1.swanctlDirectory + "/x509/vpnprov-acme.pem"
        let chain = n1.swanctlDirectory + "/x509ca/vpnprov-acme-1.pem"
        let key = n1.swanctlDirectory + "/private/vpnprov-acme.pem"
        let reported = fleet.out.appendingPathComponent("rollout/acme/\(Self.domain).pem").path

        // What depends on the node's charon (it loads the certificate, serves it, reloads it on renewal) runs
        // on both builds; what only Ansible and lego decide (check mode, an unchanged rollout, a failed
        // renewal) runs once, on the host's build: the role's tasks are the same for both.
        let ansibleOnly = build == .host

        // A rollout in check mode obtains nothing (it would spend the ACME CA's rate limits).
        if ansibleOnly {
            let checked = try await fleet.attemptRollout(extra: ["--check"])
            #expect(checked.succeeded, "check mode: \(checked)")
            #expect(!FileManager.default.fileExists(atPath: leaf), "check mode installed a certificate")
            let legoState = try lab.run(n1, ["/usr/bin/test", "-e", "/var/lib/vpnprov/acme/certificates"])
            #expect(!legoState.succeeded, "check mode ran lego")
            #expect(!pebble.issuedAny, "check mode ordered a certificate:\n\(pebble.log)")
        }

        // (a) The first rollout obtains the certificate from Pebble, before the connections are loaded.
        let first = try await fleet.rollout("first")
        #expect((AnsibleRolloutTests.recap(first)[Self.domain]?.changed ?? 0) > 0, "first rollout: \(first.stdout)")
        #expect(try Self.mode(leaf) == 0o644)
        #expect(try Self.mode(chain) == 0o644)
        #expect(try Self.mode(key) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: n1.swanctlDirectory + "/x509ca/vpnprov-acme-2.pem"))
        let state = try lab.run(n1, ["/usr/bin/stat", "-c", "%a", "/var/lib/vpnprov/acme"])
        #expect(state.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "700", "lego's directory: \(state)")
        // The chain is Pebble's: the leaf verifies against its root through the installed intermediate,
        // which is the one Pebble serves; the leaf names the node; the key is the leaf's.
        #expect(try String(contentsOfFile: chain, encoding: .utf8) == intermediate)
        let verify = try Self.openssl(["verify", "-CAfile", root, "-untrusted", chain, leaf])
        #expect(verify.stdout.contains(": OK"), "\(verify)")
        let san = try Self.openssl(["x509", "-in", leaf, "-noout", "-ext", "subjectAltName"])
        #expect(san.stdout.contains("DNS:\(Self.domain)"), "\(san)")
        let certificateKey = try Self.openssl(["x509", "-in", leaf, "-noout", "-pubkey"]).stdout
        #expect(try Self.openssl(["pkey", "-in", key, "-pubout"]).stdout == certificateKey, "the key is the leaf's")
        // charon holds the leaf with its key, and the chain.
        let listed = try lab.swanctl(n1, ["--list-certs"])
        #expect(listed.succeeded, "\(listed)")
        #expect(listed.stdout.contains("altNames:  \(Self.domain)"), "\(listed.stdout)")
        #expect(listed.stdout.contains("has private key"), "\(listed.stdout)")
        #expect(listed.stdout.contains("subject:  \"CN=Pebble Intermediate CA"), "\(listed.stdout)")
        let issued = try Self.serial(leaf)
        #expect(pebble.issuedAny, "Pebble's log shows no issuance:\n\(pebble.log)")
        // vpnprov status knows its expiry from what the rollout reported.
        let status = try fleet.vpnprov(["status"]).stdout
        let reportedSerial = issued.replacingOccurrences(of: "serial=", with: "").lowercased()
        #expect(
            status.lowercased().contains(
                "acme certificate of \(Self.domain) (\(Self.domain)): serial \(reportedSerial)"),
            "\(status)")
        #expect(listed.stdout.contains(Self.swanctlSerial(issued)), "charon holds serial \(issued): \(listed.stdout)")
        // The controller gets the certificate (public), never the key.
        #expect(FileManager.default.contents(atPath: reported) == FileManager.default.contents(atPath: leaf))
        #expect(try Self.mode(reported) == 0o644)

        let keyBody = try Self.keyBody(key)
        #expect(!first.output.contains(keyBody), "the rollout's output shows the private key")
        #expect(try !Self.tree(fleet.out, contains: keyBody), "the private key reached the controller")

        // Every client kind connects with only Pebble's root as its trust anchor (no deployment CA for the
        // server) and reaches the node's inner address through the tunnel.
        try Self.clientsConnectWithThePublicRootOnly(fleet, rootPEM: Data(try pebble.issuingRoot().utf8))

        // (b) An unchanged rollout changes nothing and obtains no new certificate.
        if ansibleOnly {
            let second = try await fleet.rollout("second")
            #expect(AnsibleRolloutTests.recap(second)[Self.domain]?.changed == 0, "second rollout: \(second.stdout)")
            #expect(try Self.serial(leaf) == issued, "the unchanged rollout obtained a new certificate")
        }

        // (c) A forced renewal (what an operator runs) installs a new certificate; the live tunnel stays.
        let client = try lab.addClient("ann")
        let profile = try Self.linuxProfile(fleet, user: "ann")
        _ = try client.loadAllCleanly(confFile: profile)
        // The profile names the connection after the node, dots replaced.
        let connection = "n1_vpn_test-ikev2-eap"
        let initiated = try client.initiate(child: connection, ike: connection, timeout: .seconds(20))
        try #require(initiated.succeeded, "ann -> n1: \(initiated)\n--- node log ---\n\(lab.log(n1))")
        let before = try lab.securityAssociations(n1).map(\.uniqueID)
        try #require(before.count == 1, "ann's tunnel is up")
        let renewal = try lab.run(n1, [Self.script, "--force"])
        #expect(renewal.succeeded && renewal.stdout.hasPrefix("installed"), "forced renewal: \(renewal)")
        var renewed = try Self.serial(leaf)
        #expect(renewed != issued, "the forced renewal kept serial \(issued)")
        #expect(try Self.openssl(["verify", "-CAfile", root, "-untrusted", chain, leaf]).succeeded)
        let relisted = try lab.swanctl(n1, ["--list-certs"]).stdout
        #expect(relisted.contains(Self.swanctlSerial(renewed)), "charon holds serial \(renewed): \(relisted)")
        #expect(!relisted.contains(Self.swanctlSerial(issued)), "charon still holds serial \(issued): \(relisted)")
        #expect(try lab.securityAssociations(n1).map(\.uniqueID) == before, "the renewal ended ann's tunnel")
        let vip = try #require(try client.virtualIPs(ike: connection).first { !$0.contains(":") })
        #expect(
            try lab.ping(fromClient: "ann", source: vip, to: n1.innerAddress).succeeded,
            "ann's tunnel after the renewal")
        // The next connection is served with the new certificate, the only one charon holds now (bob's: a
        // second device of ann's would replace her tunnel, as a reinstalled device does).
        let bobPassword = try Self.secret(fleet, "bob/bob-p12-password.txt")
        let bobApple = try AppleProfileTranslator.translate(
            profileData: Data(contentsOf: fleet.out.appendingPathComponent("clients/bob/bob.mobileconfig")),
            inputs: DeviceInputs(
                remoteAddress: n1.address, p12Password: bobPassword, systemRoots: [Data(try pebble.issuingRoot().utf8)])
        )
        _ = try Self.connect(fleet, try #require(bobApple.first), label: "apple bob after the renewal")

        guard ansibleOnly else { return }

        // (c') A forced renewal by a rollout that is killed (AnsibleKiller) after the script installed the new
        // certificate and before anything loaded it: charon keeps the old one, and the next rollout, whose script
        // finds the certificate current, loads the new one (with the rest of the installed configuration).
        let killer = try AnsibleKiller(directory: fleet.dir.appendingPathComponent("callbacks"))
        let boundaries = fleet.dir.appendingPathComponent("boundaries-killed")
        let killed = try await fleet.attemptRollout(
            extra: ["-e", "vpnprov_acme_force_renewal=true"],
            environment: killer.environment(
                log: boundaries, killBefore: "Report the node's certificate to the controller"))
        #expect(
            AnsibleKiller.killed(AnsibleKiller.boundaries(boundaries), killed) != nil,
            "the rollout was not killed: \(killed)")
        let installedByTheKilledRun = try Self.serial(leaf)
        #expect(installedByTheKilledRun != renewed, "the killed rollout installed no new certificate")
        #expect(
            try lab.swanctl(n1, ["--list-certs"]).stdout.contains(Self.swanctlSerial(renewed)),
            "the killed rollout loaded its certificate")
        _ = try await fleet.rollout("the rollout after the killed one")
        let reloaded = try lab.swanctl(n1, ["--list-certs"]).stdout
        #expect(
            reloaded.contains(Self.swanctlSerial(installedByTheKilledRun))
                && !reloaded.contains(Self.swanctlSerial(renewed)),
            "charon does not hold the certificate the killed rollout installed: \(reloaded)")
        renewed = installedByTheKilledRun

        // (d) With the node's port 80 closed, a forced renewal fails with lego's reason, the play fails,
        // and the node keeps its certificate. Only an order Pebble validates can fail there: an authorization
        // the account completed before may come with a new order (RFC 8555, section 7.1.3), lego then skips
        // the challenge, and Pebble does that for about 1 order in 100 even with PEBBLE_AUTHZREUSE=0
        // (`PebbleServer`). lego's account on the node goes first: a new account has no authorization to reuse.
        let account = try lab.run(n1, ["/usr/bin/rm", "-rf", "/var/lib/vpnprov/acme/accounts"])
        try #require(account.succeeded, "removing lego's account: \(account)")
        let requests = pebble.validationRequests(for: Self.domain)
        for command in [
            "add table inet acmetest",
            "add chain inet acmetest input { type filter hook input priority -10; policy accept; }",
            "add rule inet acmetest input tcp dport 80 reject with tcp reset",
        ] {
            let result = try lab.run(n1, ["/usr/sbin/nft", command])
            try #require(result.succeeded, "nft \(command): \(result)")
        }
        let blocked = try await fleet.attemptRollout(
            extra: ["-e", "vpnprov_acme_force_renewal=true"])
        #expect(!blocked.succeeded, "the rollout succeeded with port 80 closed: \(blocked.stdout)")
        #expect(AnsibleRolloutTests.recap(blocked)[Self.domain]?.failed == 1, "\(blocked.stdout)")
        #expect(
            blocked.output.contains("lego could not obtain a certificate for \(Self.domain)"), "\(blocked.output)")
        #expect(blocked.output.contains("urn:ietf:params:acme:error:connection"), "lego's reason: \(blocked.output)")
        // Pebble tried the node's port 80 for this order, at the node's lab address.
        #expect(
            pebble.validationRequests(for: Self.domain) > requests,
            "Pebble validated nothing for the order:\n\(pebble.log)")
        #expect(
            blocked.output.contains("dial tcp \(n1.address):80: connect: connection refused"),
            "Pebble's connection to the node: \(blocked.output)")
        #expect(!blocked.output.contains(keyBody), "the failed rollout's output shows the private key")
        #expect(try Self.serial(leaf) == renewed, "the failed renewal replaced the certificate")
        #expect(try lab.swanctl(n1, ["--list-certs"]).stdout.contains(Self.swanctlSerial(renewed)))
        #expect(try lab.securityAssociations(n1).map(\.uniqueID) == before, "the failed renewal ended ann's tunnel")
    }

    /// A copy of the user's Linux swanctl directory as written, dialling the node's lab address instead of its
    /// name (the lab has no DNS); returns its swanctl.conf.
    static func linuxProfile(_ fleet: OneNodeFleet, user: String) throws -> String {
        let written = fleet.out.appendingPathComponent("clients/\(user)/linux/swanctl")
        let copy = try Scratch.makeDirectory("acme-linux-\(user)").appendingPathComponent("swanctl")
        try FileManager.default.copyItem(at: written, to: copy)
        let conf = copy.appendingPathComponent("swanctl.conf")
        let text = try String(contentsOf: conf, encoding: .utf8)
        let dialled = "remote_addrs = \"\(domain)\""
        guard text.contains(dialled) else { throw HarnessError("\(user)'s Linux profile does not dial \(domain)") }
        try text.replacingOccurrences(of: dialled, with: "remote_addrs = \"\(fleet.n1.address)\"")
            .write(to: conf, atomically: true, encoding: .utf8)
        return conf.path
    }

    /// A secret as its user received it: the last line of a text file beside the profiles (`clients/<path>`).
    static func secret(_ fleet: OneNodeFleet, _ path: String) throws -> String {
        let text = try String(
            contentsOf: fleet.out.appendingPathComponent("clients").appendingPathComponent(path), encoding: .utf8)
        return String(text.split(separator: "\n").last ?? "")
    }

    /// Connects `setup` from a client of its own, pings the node's inner address through the tunnel and ends the
    /// tunnel again (the renewal step counts the node's tunnels). Returns what was proven, for the log.
    static func connect(_ fleet: OneNodeFleet, _ setup: ClientSetup, label: String) throws -> String {
        let (lab, n1) = (fleet.lab, fleet.n1)
        let client = try lab.addClient(label)
        defer { client.stop() }
        let dir = try setup.write(label: label)
        _ = try client.loadAllCleanly(confFile: dir.confFile)
        let initiated = try client.initiate(child: setup.childName, ike: setup.connectionName, timeout: .seconds(20))
        guard initiated.succeeded else {
            throw HarnessError("\(label): \(initiated)\n--- node log ---\n\(lab.log(n1))")
        }
        guard let vip = try client.virtualIPs(ike: setup.connectionName).first(where: { !$0.contains(":") }) else {
            throw HarnessError("\(label): no virtual IPv4 address")
        }
        let ping = try lab.ping(fromClient: label, source: vip, to: n1.innerAddress)
        guard ping.succeeded else { throw HarnessError("\(label): no traffic through the tunnel: \(ping)") }
        _ = try client.terminate(ike: setup.connectionName)
        return "\(label) \(vip)"
    }

    /// The seed app's code path (the catalogue's four fields, a device trusting only Pebble's root), the Apple
    /// profiles, the Android .sswan files, bob's Linux directory and the Windows scripts, each translated into the
    /// strongSwan client it amounts to, connect to the ACME node.
    static func clientsConnectWithThePublicRootOnly(_ fleet: OneNodeFleet, rootPEM: Data) throws {
        let (out, n1) = (fleet.out, fleet.n1)
        let clients = out.appendingPathComponent("clients")
        let password = try Self.secret(fleet, "ann/ann-windows-password.txt")
        let p12Password = try Self.secret(fleet, "bob/bob-p12-password.txt")
        var proven: [String] = []
        func prove(_ label: String, _ setup: () throws -> ClientSetup) {
            do { proven.append(try connect(fleet, try setup(), label: label)) } catch { Issue.record("\(error)") }
        }

        // The app: the entries it can use alone are the node's ikev2-eap and hybrid ones, and they need nothing.
        let catalog = try JSONSerialization.jsonObject(
            with: Data(contentsOf: out.appendingPathComponent("catalog/servers.json")))
        let entries = ((catalog as? [String: Any])?["servers"] as? [[String: Any]] ?? []).filter {
            $0["fourFieldModel"] as? Bool == true
        }
        #expect(
            Set(entries.compactMap { $0["service"] as? String }) == ["ikev2-eap", "ipsec-xauth-hybrid"],
            "\(entries)")
        #expect(entries.allSatisfy { ($0["needsOnDevice"] as? [String]) == [] })
        let app = SeedAppTranslator.Credentials(username: "ann", password: password, psk: nil, caPEM: rootPEM)
        for entry in entries {
            prove("app \(entry["service"] as? String ?? "?")") {
                try SeedAppTranslator.translate(entry: entry, credentials: app, remoteAddress: n1.address)
            }
        }
        // Apple: the profiles carry no root payload; the device trusts its own store.
        for (user, expected) in [("ann", 1), ("bob", 1)] {
            let profile = try Data(contentsOf: clients.appendingPathComponent("\(user)/\(user).mobileconfig"))
            #expect(!String(decoding: profile, as: UTF8.self).contains("com.apple.security.root"), "\(user)")
            let inputs = DeviceInputs(remoteAddress: n1.address, p12Password: p12Password, systemRoots: [rootPEM])
            let setups = try AppleProfileTranslator.translate(profileData: profile, inputs: inputs)
            #expect(setups.count == expected, "\(user): \(setups.count) Apple connections")
            for (index, setup) in setups.enumerated() { prove("apple \(user) \(index)") { setup } }
        }
        // Android: no remote.cert, so the app trusts the device's CAs.
        for (user, service) in [("ann", "ikev2-eap"), ("bob", "ikev2-cert")] {
            let file = clients.appendingPathComponent("\(user)/\(Self.domain)-\(service).sswan")
            // The .sswan's PKCS#12 opens with the empty password (Android's installer tries it first).
            let inputs = DeviceInputs(remoteAddress: n1.address, password: password, systemRoots: [rootPEM])
            prove("android \(user)") { try SswanTranslator.translate(json: try Data(contentsOf: file), inputs: inputs) }
        }
        // Linux: bob's directory as written (ann's is the renewal step's client); cacerts names Pebble's root.
        let bobLinux = try Self.linuxProfile(fleet, user: "bob")
        #expect(
            !FileManager.default.fileExists(
                atPath: clients.appendingPathComponent("bob/linux/swanctl/x509ca/ca.pem").path))
        do {
            let client = try fleet.lab.addClient("linux-bob")
            defer { client.stop() }
            _ = try client.loadAllCleanly(confFile: bobLinux)
            let name = "n1_vpn_test-ikev2-cert"
            let up = try client.initiate(child: name, ike: name, timeout: .seconds(20))
            #expect(up.succeeded, "linux bob: \(up)")
            if up.succeeded { proven.append("linux bob") }
        } catch {
            Issue.record("\(error)")
        }
        // Windows: the scripts import no CA for the server; the machine's root store holds Pebble's root.
        for (user, method) in [("ann", "Eap"), ("bob", "MachineCertificate")] {
            let script = try String(
                contentsOf: clients.appendingPathComponent("\(user)/\(user)-windows.ps1"), encoding: .utf8)
            let result = try WindowsScriptTranslator.interpret(script: script)
            if user == "ann" { #expect(result.rootCertificates.isEmpty, "ann's script imports a root") }
            guard let connection = result.connections.first(where: { $0.authenticationMethod == method }) else {
                Issue.record("\(user): no \(method) connection in the Windows script")
                continue
            }
            prove("windows \(user)") {
                try WindowsScriptTranslator.setup(
                    connection, of: result, password: password, remoteAddress: n1.address, machineRoots: [rootPEM])
            }
        }
        // Windows' own checks of the server certificate (the dialled name as dNSName, serverAuth).
        let leaf = try String(contentsOfFile: n1.swanctlDirectory + "/x509/vpnprov-acme.pem", encoding: .utf8)
        #expect(try WindowsScriptTranslator.checkServerCertificate(pem: leaf, dialled: Self.domain) == nil)
        print("e2e acme: connected with only Pebble's root: \(proven.joined(separator: ", "))")
        #expect(proven.count == 9, "\(proven)")
    }

    /// openssl's `serial=0A1B…` as swanctl --list-certs prints it (`serial:    0a:1b:…`).
    static func swanctlSerial(_ openssl: String) -> String {
        var hex = openssl.replacingOccurrences(of: "serial=", with: "").lowercased()
        if hex.count % 2 == 1 { hex = "0" + hex }
        var pairs: [String] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            pairs.append(String(hex[index..<next]))
            index = next
        }
        return "serial:    " + pairs.joined(separator: ":")
    }

    /// A line from the middle of the PEM key's base64 (what a leak would show), never printed.
    static func keyBody(_ path: String) throws -> String {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter {
            !$0.hasPrefix("-----")
        }
        guard lines.count > 2 else { throw HarnessError("\(path) holds no PEM key") }
        return String(lines[lines.count / 2])
    }

    /// Whether any file below `dir` holds `text`.
    static func tree(_ dir: URL, contains text: String) throws -> Bool {
        let fm = FileManager.default
        for case let path as String in fm.enumerator(atPath: dir.path)?.allObjects ?? [] {
            let full = dir.appendingPathComponent(path).path
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if let data = fm.contents(atPath: full), String(decoding: data, as: UTF8.self).contains(text) {
                return true
            }
        }
        return false
    }
}
