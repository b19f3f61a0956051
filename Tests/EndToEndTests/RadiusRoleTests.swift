import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// The generated `vpnprov_radius` role run by a real `ansible-playbook` (docs/deploy.md, "RADIUS
/// servers"): on a local connection into a temporary directory instead of /etc/vpnprov/freeradius, without
/// the packages and the service (nothing here runs systemd). It installs every file of `radius/<server>/`
/// with its mode and group, lets FreeRADIUS check the installed directory, removes a file vpnprov does not
/// write, and changes nothing on a second run. The server's IPsec side (`radius/<server>/ipsec/`) goes to its
/// own places instead: the swanctl file root-only (0600), the firewall table loaded (the playbook runs in a
/// network namespace of its own, so `nft -f` changes only that). A rollout of a changed table killed after it
/// installed the file and before its handler loaded it (`AnsibleKiller`) is loaded by the next run, although
/// that run's copy finds the file in place. The configuration itself serving logins is proven by
/// `RadiusAccountsTests`.
@Suite struct RadiusRoleTests {
    /// The accounts scenario's deployment generated in `dir` (its database a host name: nothing connects to it),
    /// its inventory changed by `edit`.
    static func generate(
        in dir: URL, label: String, edit: (String) -> String = { $0 }
    ) throws -> GeneratedDeployment {
        let inventory = dir.appendingPathComponent("\(label).yaml").path
        try edit(RadiusGeneratedInputs.inventory()).write(toFile: inventory, atomically: true, encoding: .utf8)
        let environment = [
            "VPN_RADIUS_DB": "host=db.example.com dbname=vpn user=radius sslmode=verify-full",
            "VPN_PSK_FREE": RadiusGeneratedInputs.random(), "VPN_PSK_PRO": RadiusGeneratedInputs.random(),
        ]
        return try GeneratedDeployment.generate(inventory: inventory, label: label, environment: environment)
    }

    @Test(.ansible, .radius) func theRoleInstallsChecksAndKeepsTheRadiusDirectory() async throws {
        try AnsibleTools.require()
        try RadiusEnvironment.require()
        let dir = try Scratch.makeDirectory("radius-role")
        defer { try? FileManager.default.removeItem(at: dir) }
        let deployment = try Self.generate(in: dir, label: "role")
        defer { try? FileManager.default.removeItem(at: deployment.out.deletingLastPathComponent()) }
        let out = deployment.out.path
        let installed = dir.appendingPathComponent("etc/freeradius").path
        let swanctlConf = dir.appendingPathComponent("etc/swanctl/conf.d/vpnprov-radius.conf").path
        let nftFile = dir.appendingPathComponent("etc/vpnprov/vpnprov-radius.nft").path
        let namespace = "\(Scratch.prefix)-\(Scratch.pid)-\(Scratch.next())-role"
        try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "add", namespace])
        defer { NetworkPair.delete(namespace: namespace) }

        let killer = try AnsibleKiller(directory: dir.appendingPathComponent("callbacks"))
        func attempt(_ out: String, killBefore: String? = nil) async throws -> ProgramResult {
            let environment = killer.environment(
                log: dir.appendingPathComponent("boundaries-\(Scratch.next())"), killBefore: killBefore)
            return try await Subprocess.runAwaiting(
                StrongSwanEnvironment.ipPath,
                [
                    "netns", "exec", namespace, "/usr/bin/env",
                    "PATH=\(AnsibleTools.binDirectory):/usr/bin:/bin:/usr/sbin:/sbin", "HOME=\(dir.path)",
                    "ANSIBLE_NOCOLOR=1", "PYTHONPATH=\(try ModuleCodeCache.directory())",
                ] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [
                    AnsibleTools.playbook, "-i", out + "/deploy/inventory.yml",
                    out + "/deploy/site.yml", "--limit", "rad-1", "-e", "ansible_connection=local",
                    "-e", "ansible_python_interpreter=/usr/bin/python3", "-e", "vpnprov_radius_config_dir=\(installed)",
                    "-e", "vpnprov_radius_manage_service=false", "-e", "vpnprov_radius_install_packages=false",
                    "-e", "vpnprov_radius_swanctl_conf=\(swanctlConf)", "-e", "vpnprov_radius_nftables_file=\(nftFile)",
                ],
                timeout: .seconds(300))
        }
        func rollout(_ label: String, out: String = out) async throws -> ProgramResult {
            let result = try await attempt(out)
            try #require(result.succeeded, "\(label): \(result)")
            return result
        }
        func recap(_ result: ProgramResult) -> String {
            result.stdout.split(separator: "\n").first { $0.hasPrefix("rad-1") && $0.contains("changed=") }
                .map(String.init) ?? ""
        }

        _ = try await rollout("first rollout")
        // Every generated file is there, with its mode and the freerad group; the secrets are 0640.
        let fm = FileManager.default
        let group = try #require(getgrnam("freerad")).pointee.gr_gid
        let files = try #require(fm.enumerator(atPath: out + "/radius/rad-1")?.allObjects as? [String])
            .filter {
                !((try? fm.attributesOfItem(atPath: out + "/radius/rad-1/" + $0)[.type] as? FileAttributeType)
                    == .typeDirectory) && !$0.hasPrefix("ipsec/")
            }
        #expect(files.count == 16, "\(files)")  // RadiusRenderer.serverFiles
        #expect(!fm.fileExists(atPath: installed + "/ipsec"), "the IPsec side is not FreeRADIUS's")
        // The IPsec side: the connections root-only, the firewall table installed and loaded.
        for (file, source, mode) in [
            (swanctlConf, "ipsec/swanctl.conf", 0o600), (nftFile, "ipsec/vpnprov-radius.nft", 0o644),
        ] {
            var st = stat()
            try #require(stat(file, &st) == 0, "\(source) not installed")
            #expect(st.st_mode & 0o777 == mode && st.st_uid == 0 && st.st_gid == 0, "\(source)")
            #expect(fm.contentsEqual(atPath: file, andPath: out + "/radius/rad-1/" + source), "\(source)")
        }
        let table = try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", namespace, "nft", "list", "table", "inet", "vpnprov-radius"])
        #expect(table.succeeded && table.stdout.contains("RADIUS only through IPsec"), "\(table)")
        for file in files {
            var st = stat()
            try #require(stat(installed + "/" + file, &st) == 0, "\(file) not installed")
            let secret = file == "clients.conf" || file == "mods-enabled/sql"
            #expect(st.st_mode & 0o777 == (secret ? 0o640 : 0o644), "\(file): \(String(st.st_mode & 0o777, radix: 8))")
            #expect(st.st_gid == group && st.st_uid == 0, "\(file)")
            #expect(fm.contentsEqual(atPath: installed + "/" + file, andPath: out + "/radius/rad-1/" + file), "\(file)")
        }
        // A file vpnprov does not write is removed; a second rollout changes nothing.
        try "not vpnprov's\n".write(toFile: installed + "/mods-enabled/stray", atomically: true, encoding: .utf8)
        let second = try await rollout("second rollout")
        #expect(!fm.fileExists(atPath: installed + "/mods-enabled/stray"))
        #expect(!recap(second).contains("changed=0"), "the stray file's removal is a change: \(recap(second))")
        // The server moves to other ports (its firewall table changes), and the rollout is killed after the new
        // table was installed and before the handlers ran: the next run loads it although its copy finds it in place.
        let moved = try Self.generate(in: dir, label: "role-moved") {
            $0.replacingOccurrences(
                of: "rad-1: { address: 192.0.2.11 }",
                with: "rad-1: { address: 192.0.2.11, auth_port: 1912, acct_port: 1913 }")
        }
        defer { try? FileManager.default.removeItem(at: moved.out.deletingLastPathComponent()) }
        let movedOut = moved.out.path
        func loadedTable() throws -> String {
            try Subprocess.run(
                StrongSwanEnvironment.ipPath,
                ["netns", "exec", namespace, "nft", "list", "table", "inet", "vpnprov-radius"]
            ).stdout
        }
        try #require(
            (try String(contentsOfFile: movedOut + "/radius/rad-1/ipsec/vpnprov-radius.nft", encoding: .utf8))
                .contains("1912"), "the new ports are in the new table")
        let killed = try await attempt(movedOut, killBefore: "Put the configuration live")
        #expect(!killed.succeeded && !killed.stdout.contains("PLAY RECAP"), "\(killed)")
        #expect(fm.contentsEqual(atPath: nftFile, andPath: movedOut + "/radius/rad-1/ipsec/vpnprov-radius.nft"))
        #expect(!(try loadedTable()).contains("1912"), "the killed run loaded the table")
        let rerun = try await rollout("the run after the killed one", out: movedOut)
        #expect(try loadedTable().contains("1912"), "the rerun did not load the new table: \(recap(rerun))")
        let third = try await rollout("third rollout", out: movedOut)
        #expect(recap(third).contains("changed=0"), "\(recap(third))")
        // The secrets never reach Ansible's output.
        let secrets = try ["clients.conf", "ipsec/swanctl.conf"].map {
            try String(contentsOfFile: out + "/radius/rad-1/" + $0, encoding: .utf8)
        }.joined(separator: "\n")
            .split(separator: "\n").filter { $0.contains("secret = ") }
            .map { $0.replacingOccurrences(of: "secret = ", with: "").trimmingCharacters(in: .whitespaces) }
        #expect(!secrets.isEmpty)
        for secret in secrets {
            #expect(!(second.output + third.output).contains(secret.trimmingCharacters(in: ["\""])))
        }
    }
}

/// The `vpnprov_node` role's part for a RADIUS node's relay (`tasks/radius-relay.yml`, docs/deploy.md), run by a real
/// `ansible-playbook` on a local connection into a temporary directory instead of /etc/vpnprov/radius-relay, without
/// the package and the service (nothing here runs systemd): every file of `servers/<node>/radius-relay/` installed
/// with its mode and the freerad group, FreeRADIUS's check of the installed directory, a file vpnprov does not write
/// removed, and a second run, in check mode, that finds nothing to change. The relay serving logins and accounting is
/// proven by `RadiusAccountsTests`.
@Suite struct RadiusRelayRoleTests {
    @Test(.ansible, .radius) func theNodeRoleInstallsAndChecksTheRelay() async throws {
        try AnsibleTools.require()
        try RadiusEnvironment.require()
        let dir = try Scratch.makeDirectory("relay-role")
        defer { try? FileManager.default.removeItem(at: dir) }
        let deployment = try RadiusRoleTests.generate(in: dir, label: "relay")
        defer { try? FileManager.default.removeItem(at: deployment.out.deletingLastPathComponent()) }
        let out = deployment.out.path
        let installed = dir.appendingPathComponent("etc/radius-relay").path
        // What present.yml does before it includes the file: the node's generated files, listed with checksums.
        let playbook = dir.appendingPathComponent("relay.yml")
        try """
        - name: The RADIUS relay of one node, as the role's present.yml puts it live
          hosts: free-1
          gather_facts: false
          tasks:
            - name: List the files vpnprov generated for this node
              ansible.builtin.find:
                paths: "{{ vpnprov_node_dir }}"
                recurse: true
                file_type: file
                get_checksum: true
              register: vpnprov_node_found
            - name: Put the node's RADIUS relay live
              ansible.builtin.include_role:
                name: vpnprov_node
                tasks_from: radius-relay.yml

        """.write(to: playbook, atomically: true, encoding: .utf8)

        func rollout(_ label: String, check: Bool = false) async throws -> ProgramResult {
            let result = try await Subprocess.runAwaiting(
                "/usr/bin/env",
                [
                    "PATH=\(AnsibleTools.binDirectory):/usr/bin:/bin:/usr/sbin:/sbin", "HOME=\(dir.path)",
                    "ANSIBLE_NOCOLOR=1", "ANSIBLE_ROLES_PATH=\(out)/deploy/roles",
                    "PYTHONPATH=\(try ModuleCodeCache.directory())", AnsibleTools.playbook,
                    "-i", out + "/deploy/inventory.yml", playbook.path, "-e", "ansible_connection=local",
                    "-e", "ansible_python_interpreter=/usr/bin/python3",
                    "-e", "vpnprov_node_dir=\(out)/servers/free-1", "-e", "vpnprov_radius_relay_dir=\(installed)",
                    "-e", "vpnprov_manage_service=false", "-e", "vpnprov_install_packages=false",
                ] + (check ? ["--check"] : []),
                timeout: .seconds(300))
            try #require(result.succeeded, "\(label): \(result)")
            return result
        }
        func recap(_ result: ProgramResult) -> String {
            result.stdout.split(separator: "\n").first { $0.hasPrefix("free-1") && $0.contains("changed=") }
                .map(String.init) ?? ""
        }

        // A file vpnprov does not write, left by someone in the directory, goes on the first rollout.
        try FileManager.default.createDirectory(
            atPath: installed + "/mods-enabled", withIntermediateDirectories: true)
        try "not vpnprov's\n".write(toFile: installed + "/mods-enabled/stray", atomically: true, encoding: .utf8)
        let first = try await rollout("first rollout")
        #expect(!recap(first).contains("changed=0"), "\(recap(first))")
        let fm = FileManager.default
        #expect(!fm.fileExists(atPath: installed + "/mods-enabled/stray"))
        let group = try #require(getgrnam("freerad")).pointee.gr_gid
        let source = out + "/servers/free-1/radius-relay"
        let files = try #require(fm.enumerator(atPath: source)?.allObjects as? [String]).filter {
            (try? fm.attributesOfItem(atPath: source + "/" + $0)[.type] as? FileAttributeType) != .typeDirectory
        }
        #expect(files.count == 10, "\(files)")  // RadiusRenderer.relayFiles
        for file in files {
            var st = stat()
            try #require(stat(installed + "/" + file, &st) == 0, "\(file) not installed")
            let secret = file == "clients.conf" || file == "proxy.conf"
            #expect(st.st_mode & 0o777 == (secret ? 0o640 : 0o644), "\(file): \(String(st.st_mode & 0o777, radix: 8))")
            #expect(st.st_gid == group && st.st_uid == 0, "\(file)")
            #expect(fm.contentsEqual(atPath: installed + "/" + file, andPath: source + "/" + file), "\(file)")
        }
        // A second run, in check mode, finds nothing to change.
        let second = try await rollout("a check-mode run", check: true)
        #expect(recap(second).contains("changed=0"), "\(recap(second))")
        // Drift: a changed file, a secret file readable by all, a file of another group, a directory of another
        // mode, a stray file. The next run puts back exactly those; the one after copies nothing at all (the
        // listing shows every file in place, so no copy runs).
        try "# changed on the node\n".write(toFile: installed + "/radiusd.conf", atomically: true, encoding: .utf8)
        #expect(chmod(installed + "/clients.conf", 0o644) == 0)
        #expect(chown(installed + "/mods-enabled/detail", 0, 0) == 0)
        #expect(chmod(installed + "/policy.d", 0o755) == 0)
        try "not vpnprov's\n".write(toFile: installed + "/sites-enabled/stray", atomically: true, encoding: .utf8)
        let repair = try await rollout("a run after drift")
        // Four tasks changed: the directories, the configuration, the secrets, the removal.
        #expect(recap(repair).contains("changed=4"), "\(recap(repair))")
        var st = stat()
        #expect(fm.contentsEqual(atPath: installed + "/radiusd.conf", andPath: source + "/radiusd.conf"))
        #expect(stat(installed + "/clients.conf", &st) == 0 && st.st_mode & 0o777 == 0o640)
        #expect(stat(installed + "/mods-enabled/detail", &st) == 0 && st.st_gid == group)
        #expect(stat(installed + "/policy.d", &st) == 0 && st.st_mode & 0o777 == 0o750)
        #expect(!fm.fileExists(atPath: installed + "/sites-enabled/stray"))
        let steady = try await rollout("a run with everything in place")
        #expect(recap(steady).contains("changed=0"), "\(recap(steady))")
        for task in [
            "Create the RADIUS relay's directories", "Install the RADIUS relay's configuration",
            "Install the RADIUS relay's files holding secrets",
        ] {
            let printed = try #require(playbookOutput(ofTask: "vpnprov_node : " + task, in: steady.stdout), "\(task)")
            let ran = printed.split(separator: "\n").filter { $0.hasPrefix("ok: ") || $0.hasPrefix("changed: ") }
            #expect(ran.isEmpty, "\(task) ran a module with everything in place: \(ran)")
        }
        // The node's RADIUS secret and the relay's never reach Ansible's output.
        let secrets = try ["clients.conf", "proxy.conf"].map {
            try String(contentsOfFile: source + "/" + $0, encoding: .utf8)
        }.joined(separator: "\n").split(separator: "\n").filter { $0.contains("secret = \"") }
            .map { $0.split(separator: "\"")[1] }
        #expect(secrets.count == 5, "\(secrets.count)")
        for secret in secrets {
            #expect(![first, second, repair, steady].contains { $0.output.contains(secret) })
        }
    }

}
