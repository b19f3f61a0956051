import Foundation
import Glibc
import Testing
import VPNProvTestHarness

/// Where the end-to-end tests find Ansible: `VPNPROV_ANSIBLE_BIN` (a directory holding `ansible-playbook`,
/// e.g. a virtual environment's `bin/`), else `<package>/.build/ansible-venv/bin`, which `.ci/run` creates.
enum AnsibleTools {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let binDirectory: String = {
        if let dir = ProcessInfo.processInfo.environment["VPNPROV_ANSIBLE_BIN"], !dir.isEmpty { return dir }
        return packageRoot.appendingPathComponent(".build/ansible-venv/bin").path
    }()

    static var playbook: String { binDirectory + "/ansible-playbook" }
    static var lint: String { binDirectory + "/ansible-lint" }
    static let sshdPath = "/usr/sbin/sshd"
    static let sshKeygenPath = "/usr/bin/ssh-keygen"

    /// Why the Ansible end-to-end test cannot run here, or nil.
    static var unavailableReason: String? {
        if case .unavailable(let reason) = StrongSwanEnvironment.availability { return reason }
        for (path, what) in [
            (
                playbook,
                "ansible-playbook (.ci/run installs ansible-core into .build/ansible-venv; or set VPNPROV_ANSIBLE_BIN)"
            ),
            (sshdPath, "sshd (apt: openssh-server)"),
            (sshKeygenPath, "ssh-keygen (apt: openssh-client)"),
            ("/usr/bin/ssh", "ssh (apt: openssh-client)"),
            ("/usr/bin/python3", "python3 on the managed nodes"),
        ] where !FileManager.default.isExecutableFile(atPath: path) {
            return "\(what) not found at \(path)"
        }
        return nil
    }

    /// Throws (failing the test) when the environment cannot run the test.
    static func require() throws {
        if let reason = unavailableReason {
            throw HarnessError("the Ansible end-to-end test cannot run: \(reason)")
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when real strongSwan and Ansible are usable, or when `VPNPROV_REQUIRE_E2E=1`
    /// (then `AnsibleTools.require()` fails it).
    static var ansible: Self {
        .enabled(
            if: AnsibleTools.unavailableReason == nil || StrongSwanEnvironment.isRequired,
            Comment(
                rawValue: AnsibleTools.unavailableReason.map {
                    "Ansible end-to-end test cannot run: \($0) (set VPNPROV_REQUIRE_E2E=1 to make this a failure)"
                } ?? "available"))
    }
}

/// A fleet of VPN nodes managed over SSH, all on one machine. Every host is a network namespace on one
/// bridge (192.0.2.0/24, in a hub namespace that is also the Ansible controller):
/// - node k (1-based): `192.0.2.k` on the bridge, an "inner" address `198.51.100.k/32` on its loopback
///   (reached by clients only through a tunnel), its own `/etc` (`PrivateView`, in the scratch directory)
///   holding `ssh/` (sshd config, host key, the controller's public key), `swanctl/`, `strongswan.d/`,
///   `sysctl.d/`, `vpnprov/`, `passwd` and a `strongswan.conf` whose vici socket is the node's own, over the
///   host's other entries read-only, and its own `/run/sshd`. The node's sshd, everything Ansible runs
///   through it, and the node's charon all see the node's files at the standard paths, as on a real server,
///   whatever the host's `/etc` holds (a fresh machine has no `/etc/vpnprov`), and nothing they write
///   reaches the host;
/// - client namespaces (`addClient`) at `192.0.2.(100+n)` with a charon of their own (harness `Charon`).
/// Names are `vpnp-<pid>-<n>-<role>` so stale ones are cleaned like the other harness namespaces.
final class AnsibleLab: @unchecked Sendable {
    struct Node {
        var name: String
        var namespace: String
        var address: String
        var innerAddress: String
        var etc: String
        var run: URL
        var swanctlDirectory: String { etc + "/swanctl" }
        var settingsDirectory: String { etc + "/strongswan.d" }
    }

    let base: String
    let hub: String
    /// The strongSwan of the nodes' charons. With the Debian 13 tree (6.0) each node's charon runs chrooted
    /// there (`StrongSwanBuild.command`) and reads a copy of the node's strongswan.conf from its run directory
    /// (below the scratch directory, which the tree sees at the same path): the vici socket and log are the
    /// same, the node's strongswan.d/ is not included. Everything else on the node (sshd, Python, the
    /// `swanctl` Ansible runs) is the host's: swanctl 5.9 talks vici to the 6.0 charon.
    let build: StrongSwanBuild
    let scratch: URL
    let keyFile: String
    let configFile: String
    private(set) var nodes: [Node] = []
    private(set) var clients: [String: (namespace: String, charon: Charon)] = [:]
    private var daemons: [String: Daemon] = [:]  // "<node>/charon"
    private var sshdPIDs: [Int32] = []
    private var namespaces: [String] = []
    private var serverHosts = 0
    private var tornDown = false
    /// The units of the stand-in `systemctl` (`start(services:)`) besides charon's, or nil: no stand-in.
    private var services: [String: StandInSystemctl.VendorUnit]?
    /// Plugins the nodes' charons load beyond the build's list.
    private var plugins: [String] = []
    /// Whether the nodes run a charon (and the stand-in knows `strongswan.service`), and whether the stand-in
    /// runs units as their `User=`.
    private var charon = true
    private var serviceUsers = false

    private init(base: String, scratch: URL, build: StrongSwanBuild) {
        self.base = base
        self.build = build
        self.hub = base + "-hub"
        self.scratch = scratch
        self.keyFile = scratch.appendingPathComponent("controller_ed25519").path
        self.configFile = scratch.appendingPathComponent("ansible.cfg").path
    }

    /// Creates the hub and one namespace per node name, each with sshd and charon running. `views`: more host
    /// directories each node gets a view of, with the given entries its own (empty directories), e.g.
    /// `["/var/lib": ["vpnprov"]]` for a role that writes `/var/lib/vpnprov` (which must not reach the host).
    /// `etc`: more entries of each node's `/etc` that are its own (empty directories), e.g. `["default"]` for a
    /// role that writes `/etc/default/...`.
    /// `services`: the nodes get a stand-in `systemctl` (`StandInSystemctl`) first on their SSH sessions' PATH,
    /// knowing `strongswan.service` (the node's charon, the one the lab started at first) and these units the
    /// distribution would ship, so a rollout can run with `vpnprov_manage_service=true`; each node then owns
    /// `/etc/systemd/system`, `/run/systemd/system` and the `/run` entries `run`. `plugins`: plugins the nodes'
    /// charons load beyond the build's list (e.g. `eap-radius` on a RADIUS node). Host strongSwan only.
    /// `charon: false`: hosts that are no VPN node (a database host) run no charon. `serviceUsers`: the stand-in
    /// runs a unit as its `User=` (`StandInSystemctl.install(users:)`).
    static func start(
        nodes names: [String], build: StrongSwanBuild = .host, views: [String: [String]] = [:], etc: [String] = [],
        services: [String: StandInSystemctl.VendorUnit]? = nil, run: [String] = [], plugins: [String] = [],
        charon: Bool = true, serviceUsers: Bool = false
    ) throws -> AnsibleLab {
        try build.require()
        if services != nil && build.root != nil {
            throw HarnessError("the stand-in systemctl runs the host's charon only")
        }
        NetworkPair.removeStale()
        let lab = AnsibleLab(
            base: "\(Scratch.prefix)-\(Scratch.pid)-\(Scratch.next())",
            scratch: try Scratch.makeDirectory("ansible-lab"),
            build: build)
        lab.services = services
        lab.plugins = plugins
        lab.charon = charon
        lab.serviceUsers = serviceUsers
        do {
            let etc = etc + (services == nil ? [] : ["systemd/system"])
            try lab.setUp(names, views: views, etc: etc, run: run + ["sshd", "mount"])
        } catch {
            lab.teardown()
            throw error
        }
        return lab
    }

    private func setUp(_ names: [String], views: [String: [String]], etc: [String], run: [String]) throws {
        try addNamespace(hub)
        try ip(["-n", hub, "link", "add", "br0", "type", "bridge"])
        try ip(["-n", hub, "link", "set", "br0", "up"])
        try ip(["-n", hub, "addr", "add", "192.0.2.254/24", "dev", "br0"])
        try Subprocess.check(
            AnsibleTools.sshKeygenPath, ["-q", "-t", "ed25519", "-N", "", "-C", "vpnprov-e2e", "-f", keyFile])
        // The controller's one setting (no other ansible.cfg is read): while modules run on the nodes,
        // ansible-playbook polls its workers every millisecond by default, which costs CPU the lab's nodes
        // need on these two cores; every 10 ms is still far below a module run (about 0.3 s).
        try "[defaults]\ninternal_poll_interval = 0.01\n".write(
            toFile: configFile, atomically: true, encoding: .utf8)
        let publicKey = try String(contentsOfFile: keyFile + ".pub", encoding: .utf8)
        for (i, name) in names.enumerated() {
            let ns = base + "-" + name.filter { $0.isLetter || $0.isNumber }
            let node = Node(
                name: name, namespace: ns, address: "192.0.2.\(i + 1)", innerAddress: "198.51.100.\(i + 1)",
                etc: try PrivateView.create(
                    of: "/etc", for: ns, own: ["passwd", "strongswan.conf"] + (services == nil ? [] : ["systemd"]),
                    directories: ["ssh", "swanctl", "strongswan.d", "sysctl.d", "vpnprov"] + etc),
                run: try Scratch.makeDirectory("node-\(name)"))
            // sshd's privilege-separation directory, which the host may not have (nothing here starts its sshd);
            // with the stand-in systemctl, /run/systemd/system (where Ansible looks whether systemd runs).
            try PrivateView.create(
                of: "/run", for: ns, own: services == nil ? [] : ["systemd"],
                directories: run + (services == nil ? [] : ["systemd/system"]))
            for (host, directories) in views.sorted(by: { $0.key < $1.key }) {
                try PrivateView.create(of: host, for: ns, own: [], directories: directories)
            }
            try attach(ns, address: node.address, port: "n\(i + 1)")
            try ip(["-n", ns, "addr", "add", "\(node.innerAddress)/32", "dev", "lo"])
            try writeEtc(node, publicKey: publicKey)
            nodes.append(node)
            try startSSHD(node)
            if charon { try startCharon(node) }
            if let services {
                let state = node.run.appendingPathComponent("systemd").path
                var units = services
                if charon {
                    units["strongswan.service"] = StandInSystemctl.VendorUnit(
                        exec: [StrongSwanBuild.charonPath], ready: node.run.appendingPathComponent("charon.vici").path)
                }
                try StandInSystemctl.install(
                    bin: node.run.path + "/bin", state: state, vendor: units, users: serviceUsers)
                if charon {
                    let pid = daemons["\(node.name)/charon"]?.pid ?? 0
                    try "\(pid)\n".write(toFile: state + "/pids/strongswan.service", atomically: true, encoding: .utf8)
                }
            }
        }
    }

    /// sshd's PATH for root (Debian's), after the stand-in systemctl's directory.
    private static let defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// The stand-in systemctl's state directory on `node` (`StandInSystemctl`): its pid files, the unit files as
    /// it last read them.
    func serviceState(_ node: Node) -> String { node.run.appendingPathComponent("systemd").path }

    private func addNamespace(_ ns: String) throws {
        try ip(["netns", "add", ns])
        namespaces.append(ns)
        try ip(["-n", ns, "link", "set", "lo", "up"])
    }

    /// A namespace on the hub's bridge at `address`/24 (veth `port` in the hub, `eth0` inside).
    private func attach(_ ns: String, address: String, port: String) throws {
        try addNamespace(ns)
        try ip(["link", "add", port, "netns", hub, "type", "veth", "peer", "name", "eth0", "netns", ns])
        try ip(["-n", hub, "link", "set", port, "master", "br0", "up"])
        try ip(["-n", ns, "link", "set", "eth0", "up"])
        try ip(["-n", ns, "addr", "add", "\(address)/24", "dev", "eth0"])
    }

    private func writeEtc(_ node: Node, publicKey: String) throws {
        let fm = FileManager.default
        // sysctl.d and vpnprov: where the role puts the node's kernel settings and nftables table.
        for dir in ["swanctl/conf.d"] {
            try fm.createDirectory(atPath: node.etc + "/" + dir, withIntermediateDirectories: true)
        }
        try Subprocess.check(
            AnsibleTools.sshKeygenPath, ["-q", "-t", "ed25519", "-N", "", "-f", node.etc + "/ssh/ssh_host_ed25519_key"])
        try publicKey.write(toFile: node.etc + "/ssh/authorized_keys", atomically: true, encoding: .utf8)
        try writeRootHome(node)
        // Paths as the node's processes see them: /etc/ssh is the overlay.
        let sshd = """
            ListenAddress \(node.address)
            HostKey /etc/ssh/ssh_host_ed25519_key
            AuthorizedKeysFile /etc/ssh/authorized_keys
            PermitRootLogin prohibit-password
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            UsePAM no
            StrictModes no
            PidFile \(node.run.path)/sshd.pid
            Subsystem sftp internal-sftp

            """
            + "SetEnv PYTHONPATH=\(try ModuleCodeCache.directory())"
            + (services == nil ? "" : " PATH=\(node.run.path)/bin:\(Self.defaultPath)") + "\n"
        try sshd.write(toFile: node.etc + "/ssh/sshd_config", atomically: true, encoding: .utf8)
        let socket = node.run.appendingPathComponent("charon.vici").path
        // strongswan.d/ relative to this file: the node's /etc/strongswan.d, where the role puts vpnprov.conf.
        let settings = Charon.settings(
            build: build, socketPath: socket, logPath: node.run.path + "/charon.log", extraPlugins: plugins)
        try (settings + "include strongswan.d/*.conf\n").write(
            toFile: node.etc + "/strongswan.conf", atomically: true, encoding: .utf8)
        if build.root != nil {
            try settings.write(toFile: node.run.path + "/strongswan.conf", atomically: true, encoding: .utf8)
        }
    }

    /// The node's root gets a home of its own, empty as on a fresh server, through an `/etc/passwd` overlay
    /// (the host's, with root's home changed). sshd runs every command through root's login shell, and bash
    /// started by sshd reads `~/.bashrc`: with the host's home that is whatever this machine's root keeps
    /// there (here a `pyenv init`, about 0.1 s of CPU), paid on every module run (hundreds per test), and a
    /// lab node must not depend on the test machine's shell setup anyway.
    private func writeRootHome(_ node: Node) throws {
        let home = node.run.appendingPathComponent("root-home").path
        try FileManager.default.createDirectory(
            atPath: home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        var lines = passwd.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let index = lines.firstIndex(where: { $0.hasPrefix("root:") }) else {
            throw HarnessError("/etc/passwd has no root entry")
        }
        // name:password:uid:gid:gecos:home:shell
        var fields = lines[index].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 7 else { throw HarnessError("unexpected root entry in /etc/passwd") }
        fields[5] = home
        lines[index] = fields.joined(separator: ":")
        try lines.joined(separator: "\n").write(toFile: node.etc + "/passwd", atomically: true, encoding: .utf8)
    }

    private func startDaemon(
        _ key: String, _ command: (String, [String]), log: URL, settings: String? = nil
    ) throws -> Daemon {
        // `ip netns exec` (and the tree's `sh -c '…; exec chroot …'`) exec in place: the pid is the daemon's.
        let daemon = try Daemon.start(
            command.0, command.1, environment: settings.map { ["STRONGSWAN_CONF": $0] } ?? [:], outputPath: log.path)
        daemons[key] = daemon
        return daemon
    }

    /// Waits (bounded) until `condition` holds or the process dies.
    private func waitFor(_ what: String, _ process: Daemon, timeout: Duration = .seconds(20), _ condition: () -> Bool)
        throws
    {
        try Poll.wait(what, timeout: timeout, while: { process.isRunning }, until: condition)
    }

    /// sshd daemonizes itself (`-D` would keep it our child, but sshd closes every inherited descriptor,
    /// which Foundation's Process takes for the child's exit and then waits for it forever); it is stopped
    /// by the pid it writes.
    private func startSSHD(_ node: Node) throws {
        let pidFile = node.run.path + "/sshd.pid"
        try Subprocess.check(
            StrongSwanEnvironment.ipPath,
            PrivateView.exec(
                node.namespace, AnsibleTools.sshdPath,
                ["-f", "/etc/ssh/sshd_config", "-E", node.run.path + "/sshd.log"]),
            timeout: .seconds(20))
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                sshdPIDs.append(pid)
                return
            }
            if ContinuousClock.now > deadline { throw HarnessError("sshd on \(node.name) wrote no pid file") }
            usleep(10_000)
        }
    }

    /// Starts (or restarts) the node's charon and waits for its vici socket.
    func startCharon(_ node: Node) throws {
        let socket = node.run.appendingPathComponent("charon.vici").path
        try? FileManager.default.removeItem(atPath: socket)
        let process = try startDaemon(
            "\(node.name)/charon", build.command(in: node.namespace, StrongSwanBuild.charonPath, []),
            log: node.run.appendingPathComponent("charon.stdout"),
            settings: build.root == nil ? nil : node.run.path + "/strongswan.conf")
        try waitFor("charon on \(node.name)", process) { FileManager.default.fileExists(atPath: socket) }
    }

    /// Stops the node's charon (SIGTERM, bounded wait, then SIGKILL).
    func stopCharon(_ node: Node) {
        daemons.removeValue(forKey: "\(node.name)/charon")?.stop()
    }

    func node(_ name: String) throws -> Node {
        guard let node = nodes.first(where: { $0.name == name }) else { throw HarnessError("no lab node \(name)") }
        return node
    }

    /// `swanctl ARGS` on the node, as the node sees it (its /etc/strongswan.conf, its charon).
    func swanctl(_ node: Node, _ arguments: [String]) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            PrivateView.exec(node.namespace, StrongSwanEnvironment.swanctlPath, arguments),
            environment: ["STRONGSWAN_CONF": "/etc/strongswan.conf"], timeout: .seconds(30))
    }

    /// A tool run in the node's namespace (its /etc overlay), e.g. `nft` or `sysctl`.
    func run(_ node: Node, _ arguments: [String]) throws -> ProgramResult {
        try Subprocess.run(
            StrongSwanEnvironment.ipPath, PrivateView.exec(node.namespace, arguments[0], Array(arguments.dropFirst())),
            timeout: .seconds(30))
    }

    /// The node charon's established IKE SAs.
    func securityAssociations(_ node: Node) throws -> [IKESA] {
        let result = try swanctl(node, ["--list-sas", "--raw"])
        guard result.succeeded else { throw HarnessError("list-sas on \(node.name) failed: \(result)") }
        return IKESA.parse(raw: result.stdout)
    }

    /// The node charon's log so far.
    func log(_ node: Node) -> String {
        (try? String(contentsOfFile: node.run.path + "/charon.log", encoding: .utf8)) ?? ""
    }

    /// A client namespace on the bridge with its own charon (`label` names it in errors).
    func addClient(_ label: String) throws -> Charon {
        let n = clients.count + 1
        let ns = "\(base)-c\(n)"
        try attach(ns, address: "192.0.2.\(100 + n)", port: "c\(n)")
        let charon = try Charon.start(in: ns, label: "client-\(label)")
        clients[label] = (ns, charon)
        return charon
    }

    /// The namespace of the client `label` (`addClient`).
    func clientNamespace(_ label: String) -> String? { clients[label]?.namespace }

    /// A namespace on the bridge for a server the nodes use (e.g. an ACME server), at `192.0.2.(200+n)`, with
    /// a view of `/etc` whose entries `ownEtc` are its own (files for the caller to write before starting
    /// anything there with `PrivateView.exec`). Stopping what runs there is the caller's; the namespace and
    /// view go at teardown.
    func addServerHost(_ label: String, ownEtc: [String]) throws -> (namespace: String, address: String, etc: String) {
        serverHosts += 1
        let ns = "\(base)-s\(serverHosts)"
        let address = "192.0.2.\(200 + serverHosts)"
        try attach(ns, address: address, port: "s\(serverHosts)")
        let etc = try PrivateView.create(of: "/etc", for: ns, own: ownEtc)
        return (ns, address, etc)
    }

    /// A host behind `node`: a namespace of its own on a link to the node (`lan0` in the node at
    /// `203.0.113.1/24`, the host at `203.0.113.2`, routing everything through the node). An address no
    /// client reaches but through the node's tunnel and its forwarding (and that its generated nftables table
    /// lets clients reach: no private range). Returns the host's address; it answers pings (its kernel).
    func addHostBehind(_ node: Node) throws -> String {
        let ns = node.namespace + "-lan"
        try addNamespace(ns)
        try ip(["link", "add", "lan0", "netns", node.namespace, "type", "veth", "peer", "name", "eth0", "netns", ns])
        try ip(["-n", node.namespace, "addr", "add", "203.0.113.1/24", "dev", "lan0"])
        try ip(["-n", node.namespace, "link", "set", "lan0", "up"])
        try ip(["-n", ns, "addr", "add", "203.0.113.2/24", "dev", "eth0"])
        try ip(["-n", ns, "link", "set", "eth0", "up"])
        try ip(["-n", ns, "route", "add", "default", "via", "203.0.113.1"])
        return "203.0.113.2"
    }

    /// Pings `destination` from a client namespace, from `source`, until one echo is answered: an echo a second
    /// for up to 10 s (`-w`). Every caller expects an answer, and on a loaded machine the first echo through a
    /// fresh kernel-libipsec tunnel could go unanswered within a single echo's 3 s (seen in the ACME lab).
    func ping(fromClient label: String, source: String, to destination: String) throws -> ProgramResult {
        guard let client = clients[label] else { throw HarnessError("no client \(label)") }
        return try Subprocess.run(
            StrongSwanEnvironment.ipPath,
            [
                "netns", "exec", client.namespace, StrongSwanEnvironment.pingPath, "-n", "-c", "1", "-w", "10", "-I",
                source, destination,
            ],
            timeout: .seconds(20))
    }

    /// Runs `ansible-playbook ARGS` in the hub namespace (the controller), with the lab's SSH key (`environment`:
    /// more variables for it, e.g. a callback plugin's).
    func playbook(
        _ arguments: [String], environment more: [String: String] = [:], timeout: Duration = .seconds(900)
    ) async throws -> ProgramResult {
        try await controller(AnsibleTools.playbook, arguments, environment: more, timeout: timeout)
    }

    /// Runs `program ARGS` in the hub namespace (the controller) with the environment ansible-playbook gets
    /// there (the lab's SSH key, ansible-core's directory first on PATH): a command that runs Ansible itself.
    func controller(
        _ program: String, _ arguments: [String], environment extra: [String: String] = [:],
        timeout: Duration = .seconds(900)
    ) async throws -> ProgramResult {
        let environment = [
            "PATH": AnsibleTools.binDirectory + ":/usr/sbin:/usr/bin:/sbin:/bin",
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_PRIVATE_KEY_FILE": keyFile,
            // One SSH connection per node for the whole run (closed with the hub namespace at teardown).
            "ANSIBLE_SSH_ARGS": "-o UserKnownHostsFile=/dev/null -o ControlMaster=auto -o ControlPersist=300s",
            "ANSIBLE_SSH_CONTROL_PATH_DIR": scratch.appendingPathComponent("cp").path,
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCAL_TEMP": scratch.appendingPathComponent("ansible-local").path,
            "ANSIBLE_REMOTE_TEMP": scratch.appendingPathComponent("ansible-remote").path,
            "ANSIBLE_CONFIG": configFile,
            "HOME": scratch.path,
            // Module payloads built once per test run (ModuleCodeCache).
            "PYTHONPATH": try ModuleCodeCache.directory(),
        ].merging(extra) { $1 }
        return try await Subprocess.runAwaiting(
            StrongSwanEnvironment.ipPath,
            ["netns", "exec", hub, "env"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                + [program] + arguments,
            timeout: timeout)
    }

    /// Stops every daemon, deletes every namespace and /etc overlay. Safe to call twice.
    func teardown() {
        if tornDown { return }
        tornDown = true
        for (_, client) in clients { client.charon.stop() }
        for key in daemons.keys.sorted() { daemons[key]?.stop() }
        daemons = [:]
        for pid in sshdPIDs {
            kill(pid, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(5)
            while Scratch.processExists(pid) && ContinuousClock.now < deadline { usleep(10_000) }
            if Scratch.processExists(pid) { kill(pid, SIGKILL) }
        }
        for ns in namespaces.reversed() {
            if let pids = try? Subprocess.run(
                StrongSwanEnvironment.ipPath, ["netns", "pids", ns], timeout: .seconds(10))
            {
                for pid in pids.stdout.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) {
                    kill(pid, SIGKILL)
                }
            }
            _ = try? Subprocess.run(StrongSwanEnvironment.ipPath, ["netns", "delete", ns], timeout: .seconds(10))
            PrivateView.remove(for: ns)
        }
        try? FileManager.default.removeItem(at: scratch)
    }

    deinit { teardown() }

    @discardableResult
    private func ip(_ args: [String]) throws -> ProgramResult {
        try Subprocess.check(StrongSwanEnvironment.ipPath, args, timeout: .seconds(10))
    }
}

/// A play recap line per host: `n1 : ok=13 changed=0 unreachable=0 failed=0 skipped=4 ...`.
struct PlayRecap: Equatable {
    var ok = 0, changed = 0, unreachable = 0, failed = 0, skipped = 0

    static func parse(_ output: String) -> [String: PlayRecap] {
        var result: [String: PlayRecap] = [:]
        var inRecap = false
        for line in output.split(separator: "\n") {
            if line.hasPrefix("PLAY RECAP") {
                inRecap = true
                continue
            }
            guard inRecap, let colon = line.firstIndex(of: ":") else { continue }
            let host = line[..<colon].trimmingCharacters(in: .whitespaces)
            var recap = PlayRecap()
            for field in line[line.index(after: colon)...].split(separator: " ") {
                let kv = field.split(separator: "=")
                guard kv.count == 2, let n = Int(kv[1]) else { continue }
                switch kv[0] {
                case "ok": recap.ok = n
                case "changed": recap.changed = n
                case "unreachable": recap.unreachable = n
                case "failed": recap.failed = n
                case "skipped": recap.skipped = n
                default: break
                }
            }
            result[host] = recap
        }
        return result
    }
}

/// What ansible-playbook printed for one task: the text after its first `TASK [<task>]` header up to the next
/// task's, nil when no such task ran. `task` is the name as the header shows it, with its role
/// (`vpnprov_node : Install ...`).
func playbookOutput(ofTask task: String, in output: String) -> String? {
    guard let start = output.range(of: "TASK [\(task)]") else { return nil }
    let rest = output[start.upperBound...]
    return String(rest[..<(rest.range(of: "\nTASK [")?.lowerBound ?? rest.endIndex)])
}
