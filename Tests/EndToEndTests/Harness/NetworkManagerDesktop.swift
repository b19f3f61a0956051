import Foundation
import Glibc
import VPNProvTestHarness

/// A Linux desktop's NetworkManager with the strongSwan plugin (Debian's `network-manager` and
/// `network-manager-strongswan`, whose backend is `charon-nm`), running in the client namespace of a
/// `NetworkPair`, so generated `.nmconnection` files are loaded and connected by the real programs.
///
/// Everything runs in one private mount namespace (`ip netns exec` makes one; the daemons share it, and
/// `nmcli` joins it with `nsenter`): a private system D-Bus (tmpfs over /run/dbus), udev (tmpfs over
/// /run/udev: without udev NetworkManager leaves every device unmanaged), and this desktop's own
/// directories bound over /etc/NetworkManager, /var/lib/NetworkManager and /run/NetworkManager. So the
/// generated files are installed where the user's README says, at the same absolute paths.
///
/// Adaptations to this machine, none of them in the generated files:
/// - the kernel here has no XFRM ESP algorithms, so charon-nm must use `kernel-libipsec` (ESP in user
///   space, a TUN device). charon-nm loads its compiled-in plugin list and ignores the `charon.plugins`
///   settings Debian's strongswan.conf includes, so binding a `load = yes` over kernel-libipsec.conf alone
///   changes nothing: the SAs then go to the kernel, which answers "Function not implemented", and
///   charon-nm deletes the CHILD_SA and the IKE_SA right after establishing them. The desktop's
///   strongswan.conf therefore gives charon-nm modular loading and loads kernel-libipsec, and a file log;
/// - NetworkManager must not touch the host's /etc/resolv.conf (`dns=none`, and a private file bound over it);
/// - the harness's link is a veth, which Debian's udev rules mark unmanaged; `nmcli device set … managed yes`.
///
/// The base connection has a default route through a gateway that does not exist (192.0.2.254): NetworkManager
/// needs a default route to activate a VPN (its "source connection"), and nothing but the tunnel can reach
/// beyond the link. Every process started here (dbus-daemon, systemd-udevd, NetworkManager, charon-nm) is
/// stopped by `stop()` by its pid; the mounts end with the mount namespace's last process.
final class NetworkManagerDesktop {
    static let networkManagerPath = "/usr/sbin/NetworkManager"
    static let nmcliPath = "/usr/bin/nmcli"
    static let nsenterPath = "/usr/bin/nsenter"
    static let dbusDaemonPath = "/usr/bin/dbus-daemon"
    static let dbusSendPath = "/usr/bin/dbus-send"
    static let udevdPath = "/lib/systemd/systemd-udevd"
    static let udevadmPath = "/usr/bin/udevadm"
    static let charonNMPath = "/usr/lib/ipsec/charon-nm"
    static let pluginName = "/usr/lib/NetworkManager/VPN/nm-strongswan-service.name"
    /// The gateway of the base connection: on the link, answered by nobody.
    static let deadGateway = "192.0.2.254"

    /// Why this machine cannot run the desktop, or nil.
    static let unavailableReason: String? = {
        for (path, what) in [
            (networkManagerPath, "NetworkManager (apt: network-manager)"), (nmcliPath, "nmcli (apt: network-manager)"),
            (charonNMPath, "charon-nm (apt: network-manager-strongswan)"),
            (pluginName, "the strongSwan VPN plugin (apt: network-manager-strongswan)"),
            (dbusDaemonPath, "dbus-daemon (apt: dbus)"), (dbusSendPath, "dbus-send (apt: dbus)"),
            (udevdPath, "systemd-udevd (apt: udev)"), (udevadmPath, "udevadm (apt: udev)"),
            (nsenterPath, "nsenter (apt: util-linux)"),
        ] where !FileManager.default.isExecutableFile(atPath: path) && !FileManager.default.fileExists(atPath: path) {
            return "\(what) not found at \(path)"
        }
        return nil
    }()

    static func require() throws {
        try StrongSwanEnvironment.require()
        if let reason = unavailableReason { throw HarnessError("NetworkManager desktop unavailable: \(reason)") }
    }

    let namespace: String
    let directory: URL
    /// Bound over /etc/NetworkManager.
    var etc: URL { directory.appendingPathComponent("etc-nm") }
    var charonLogPath: String { directory.appendingPathComponent("charon-nm.log").path }
    var networkManagerLogPath: String { directory.appendingPathComponent("NetworkManager.log").path }
    private let process: Process
    private var helperPIDs: [Int32] = []
    private var charonPIDs: Set<Int32> = []
    private var stopped = false

    var pid: Int32 { process.processIdentifier }

    private init(namespace: String, directory: URL, process: Process) {
        self.namespace = namespace
        self.directory = directory
        self.process = process
    }

    /// Starts the desktop in `pair`'s client namespace and waits (bounded) until the base connection is up.
    /// `caDirectory`: charon-nm's CA directory (`charon-nm.ca_dir`, what it trusts for a keyfile that names no
    /// certificate) instead of its default, the system's (`/etc/ssl/certs` on Debian).
    static func start(on pair: NetworkPair, caDirectory: String? = nil, timeout: Duration = .seconds(20)) throws
        -> NetworkManagerDesktop
    {
        try start(
            on: Link(
                namespace: pair.clientNamespace, interfaceName: pair.interfaceName, address: pair.clientAddress,
                ipv6: (pair.clientAddress6, pair.serverAddress6)),
            caDirectory: caDirectory, timeout: timeout)
    }

    /// Where a desktop runs: its network namespace, the interface NetworkManager manages there, and the addresses of
    /// its base connection (IPv4 with a /24, and IPv6 with a /64 and its gateway, or none).
    struct Link {
        var namespace: String
        var interfaceName: String
        var address: String
        var ipv6: (address: String, gateway: String)?
    }

    /// Starts the desktop on `link` (as `start(on:caDirectory:timeout:)` on a pair's client end).
    static func start(on link: Link, caDirectory: String? = nil, timeout: Duration = .seconds(20)) throws
        -> NetworkManagerDesktop
    {
        try require()
        let dir = try Scratch.makeDirectory("nm-desktop")
        let fm = FileManager.default
        for sub in ["etc-nm/system-connections", "etc-nm/conf.d", "var-lib-nm", "run-nm"] {
            try fm.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try "# private to the vpnprov end-to-end NetworkManager desktop\n"
            .write(to: dir.appendingPathComponent("resolv.conf"), atomically: true, encoding: .utf8)
        try """
        [main]
        plugins=keyfile
        dns=none
        rc-manager=unmanaged
        hostname-mode=none
        auth-polkit=root-only

        [logging]
        level=INFO

        """.write(to: dir.appendingPathComponent("etc-nm/NetworkManager.conf"), atomically: true, encoding: .utf8)
        // The system bus as Debian's system.conf sets it up, without service activation: nothing but the
        // processes this desktop starts itself may run (the real configuration would let the bus start
        // ModemManager, polkitd and nm-dispatcher on NetworkManager's behalf).
        let messages = ["method_call", "method_return", "error", "signal"]
        let busInterfaces = ["", ".Introspectable", ".Properties"]
        let policy =
            [
                #"<allow user="*"/>"#, #"<deny own="*"/>"#, #"<deny send_type="method_call"/>"#,
                #"<allow send_type="signal"/>"#,
            ]
            + ["method_return", "error"].map { #"<allow send_requested_reply="true" send_type="\#($0)"/>"# }
            + messages.map { #"<allow receive_type="\#($0)"/>"# }
            + busInterfaces.map {
                #"<allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus\#($0)"/>"#
            }
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <auth>EXTERNAL</auth>
          <listen>unix:path=/run/dbus/system_bus_socket</listen>
          <policy context="default">
        \(policy.map { "    " + $0 }.joined(separator: "\n"))
          </policy>
          <includedir>/usr/share/dbus-1/system.d</includedir>
          <includedir>/etc/dbus-1/system.d</includedir>
        </busconfig>

        """.write(to: dir.appendingPathComponent("dbus.conf"), atomically: true, encoding: .utf8)
        // Debian's strongswan.conf, plus charon-nm's modular plugin loading with kernel-libipsec, and a log.
        try """
        charon {
            load_modular = yes
            plugins {
                include strongswan.d/charon/*.conf
            }
        }
        include strongswan.d/*.conf
        charon-nm {
        \(caDirectory.map { "    ca_dir = \($0)\n" } ?? "")    load_modular = yes
            plugins {
                include strongswan.d/charon/*.conf
                kernel-libipsec {
                    load = yes
                }
            }
            filelog {
                e2e {
                    path = \(dir.path)/charon-nm.log
                    default = 1
                    ike = 2
                    cfg = 2
                    flush_line = yes
                }
            }
        }

        """.write(to: dir.appendingPathComponent("strongswan.conf"), atomically: true, encoding: .utf8)
        let base = dir.appendingPathComponent("etc-nm/system-connections/base.nmconnection")
        try """
        [connection]
        id=base
        type=ethernet
        interface-name=\(link.interfaceName)
        autoconnect=false

        [ipv4]
        method=manual
        address1=\(link.address)/24,\(deadGateway)

        [ipv6]
        \(link.ipv6.map { "method=manual\naddress1=\($0.address)/64,\($0.gateway)" } ?? "method=disabled")

        """.write(to: base, atomically: true, encoding: .utf8)
        try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: base.path)

        // The desktop's own /run (PrivateView): the host may have no /run/udev or /run/NetworkManager, and
        // nothing here may create them on the host. Its /etc is the client namespace's (the lab's hosts file).
        try PrivateView.create(
            of: "/run", for: link.namespace, own: [], directories: ["dbus", "udev", "NetworkManager", "mount"])
        // $1: the desktop's directory. Background helpers write their pids; NetworkManager replaces the shell.
        let script = """
            set -e; d="$1"
            mount --make-rprivate /
            \(PrivateView.mountScript(for: link.namespace))
            mount -t tmpfs -o size=1m,mode=0755 vpnprov-e2e /run/dbus
            mount -t tmpfs -o size=4m,mode=0755 vpnprov-e2e /run/udev
            mount --bind "$d/etc-nm" /etc/NetworkManager
            mount --bind "$d/var-lib-nm" /var/lib/NetworkManager
            mount --bind "$d/run-nm" /run/NetworkManager
            mount --bind "$d/strongswan.conf" /etc/strongswan.conf
            mount --bind "$d/resolv.conf" /etc/resolv.conf
            \(dbusDaemonPath) --config-file="$d/dbus.conf" --nofork --nopidfile >"$d/dbus.log" 2>&1 &
            echo $! >"$d/dbus.pid"
            \(udevdPath) >"$d/udevd.log" 2>&1 &
            echo $! >"$d/udevd.pid"
            i=0
            while [ ! -S /run/dbus/system_bus_socket ]; do
                i=$((i + 1)); [ $i -lt 400 ] || { echo "no system bus" >&2; exit 1; }
                sleep 0.025
            done
            \(udevadmPath) trigger --subsystem-match=net --action=add
            \(udevadmPath) settle --timeout=10
            exec \(networkManagerPath) --no-daemon --debug
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: StrongSwanEnvironment.ipPath)
        process.arguments = [
            "netns", "exec", link.namespace, StrongSwanBuild.shPath, "-c", script, "sh", dir.path,
        ]
        let logURL = dir.appendingPathComponent("NetworkManager.log")
        _ = fm.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        defer { try? log.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        let desktop = NetworkManagerDesktop(namespace: link.namespace, directory: dir, process: process)
        try process.run()
        do {
            try desktop.waitUntilRunning(interface: link.interfaceName, timeout: timeout)
        } catch {
            let text = "\(error)\n--- NetworkManager log (end) ---\n\(desktop.networkManagerLog.suffix(4000))"
            desktop.stop()
            throw HarnessError(text)
        }
        return desktop
    }

    /// Polls until NetworkManager answers, makes the veth managed, and brings the base connection up. Each stage
    /// has `timeout` of its own, counted from when it starts: on a loaded machine the helpers' start-up takes
    /// seconds of the time, and a stage must not inherit a deadline the one before used up.
    private func waitUntilRunning(interface: String, timeout: Duration) throws {
        func poll(_ what: String, every interval: Duration = .milliseconds(20), _ condition: () throws -> Bool) throws {
            let process = process
            try Poll.wait(
                what, timeout: timeout, interval: interval, while: { process.isRunning }, until: condition)
        }
        try poll("the helpers' pids") {
            helperPIDs = ["dbus.pid", "udevd.pid"].compactMap { name in
                (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8))
                    .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            return helperPIDs.count == 2
        }
        try poll("NetworkManager on D-Bus") {
            (try? nmcli(["-t", "-f", "RUNNING", "general"], timeout: .seconds(5)))?.stdout.hasPrefix("running") == true
        }
        try nmcliCheck(["device", "set", interface, "managed", "yes"])
        // Managed takes a moment: "unmanaged" (10), "unavailable" (20), then "disconnected" (30) or beyond.
        // NetworkManager takes a device only once udev has announced it; under load the start script's `udevadm
        // settle` can give up before udevd has (seen: the device stayed unmanaged, NetworkManager logging nothing
        // after the request), so while it waits, the interface's add event is asked for again every 2 s.
        var lastTrigger = ContinuousClock.now
        try poll("\(interface) to become available", every: .milliseconds(50)) {
            let state =
                (try? nmcli(["-g", "GENERAL.STATE", "device", "show", interface], timeout: .seconds(5)))?.stdout ?? ""
            if Int(state.prefix { $0.isNumber }).map({ $0 >= 30 }) == true { return true }
            if ContinuousClock.now - lastTrigger > .seconds(2) {
                lastTrigger = ContinuousClock.now
                _ = try? Subprocess.run(
                    Self.nsenterPath,
                    [
                        "-t", String(pid), "-m", "-n", Self.udevadmPath, "trigger", "--action=add",
                        "/sys/class/net/" + interface,
                    ],
                    timeout: .seconds(10))
            }
            return false
        }
        try nmcliCheck(["--wait", "15", "connection", "up", "id", "base"], timeout: .seconds(20))
    }

    /// `nmcli <arguments>` inside the desktop's network and mount namespace.
    func nmcli(_ arguments: [String], timeout: Duration = .seconds(30)) throws -> ProgramResult {
        try Subprocess.run(
            Self.nsenterPath, ["-t", String(pid), "-m", "-n", Self.nmcliPath] + arguments, timeout: timeout)
    }

    @discardableResult
    func nmcliCheck(_ arguments: [String], timeout: Duration = .seconds(30)) throws -> ProgramResult {
        let result = try nmcli(arguments, timeout: timeout)
        guard result.succeeded else { throw HarnessError("nmcli failed: \(result)") }
        return result
    }

    /// Runs shell `commands` (`set -e`) in `directory` on the desktop, as root, in its mount and network
    /// namespace: what a user types in a root shell there.
    func runAsRoot(_ commands: [String], in directory: URL) throws {
        let script = (["set -e", "cd \"$1\""] + commands).joined(separator: "\n")
        let result = try Subprocess.run(
            Self.nsenterPath,
            ["-t", String(pid), "-m", "-n", StrongSwanBuild.shPath, "-c", script, "sh", directory.path])
        guard result.succeeded else { throw HarnessError("commands failed on the desktop: \(result)") }
    }

    /// Installs `file` at `path` on the desktop (an absolute path below /etc/NetworkManager) as root with `mode`,
    /// the way the user's README does with `install -m <mode> -o root -g root`.
    func install(_ file: URL, at path: String, mode: Int) throws {
        let prefix = "/etc/NetworkManager/"
        guard path.hasPrefix(prefix), !path.contains("..") else { throw HarnessError("\(path) is not below \(prefix)") }
        let target = etc.appendingPathComponent(String(path.dropFirst(prefix.count)))
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: file, to: target)
        try FileManager.default.setAttributes(
            [.posixPermissions: mode, .ownerAccountID: 0, .groupOwnerAccountID: 0], ofItemAtPath: target.path)
    }

    /// Installs a keyfile into system-connections (0600, root) and `nmcli connection load`s it.
    func load(connectionFile file: URL, as name: String? = nil) throws {
        let path = "/etc/NetworkManager/system-connections/" + (name ?? file.lastPathComponent)
        try install(file, at: path, mode: 0o600)
        try nmcliCheck(["connection", "load", path])
    }

    /// `nmcli --wait <s> connection up <id>`; remembers charon-nm's pid (the plugin NetworkManager started).
    /// Waits first (bounded) until no VPN connection is active or still failing: the strongSwan plugin takes
    /// one connection at a time ("only supports a single active connection"), and NetworkManager finishes
    /// a failed activation a little after `nmcli` has reported the failure. The plugin's service can still
    /// be ending the failed one after NetworkManager no longer lists it (seen on a loaded machine): an
    /// activation it refuses for that is tried again, within the same bound.
    func up(_ id: String, timeout: Duration = .seconds(20)) throws -> ProgramResult {
        let deadline = ContinuousClock.now + .seconds(10)
        while let active = try? nmcli(["-t", "-f", "TYPE", "connection", "show", "--active"], timeout: .seconds(5)),
            active.stdout.split(separator: "\n").contains("vpn"), ContinuousClock.now < deadline
        {
            usleep(50_000)
        }
        while true {
            let result = try nmcli(
                ["--wait", String(timeout.components.seconds), "connection", "up", "id", id],
                timeout: timeout + .seconds(5))
            rememberCharon()
            if result.succeeded || !result.output.contains("only supports a single active connection")
                || ContinuousClock.now >= deadline
            {
                return result
            }
            usleep(200_000)
        }
    }

    func down(_ id: String) {
        _ = try? nmcli(["--wait", "10", "connection", "down", "id", id], timeout: .seconds(15))
    }

    /// The addresses NetworkManager shows for an active connection (`IP4.ADDRESS` or `IP6.ADDRESS`).
    func addresses(of id: String, family: Int = 4) throws -> [String] {
        // `-g` escapes the colons of IPv6 addresses as `\:`.
        try nmcliCheck(["-g", "IP\(family).ADDRESS", "connection", "show", "id", id]).stdout
            .replacingOccurrences(of: "\\:", with: ":")
            .split(whereSeparator: { $0 == "|" || $0.isNewline }).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The pid owning the plugin's bus name, if charon-nm runs.
    private func rememberCharon() {
        guard
            let result = try? Subprocess.run(
                Self.nsenterPath,
                [
                    "-t", String(pid), "-m", "-n", Self.dbusSendPath, "--system", "--print-reply",
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                    "string:org.freedesktop.NetworkManager.strongswan",
                ], timeout: .seconds(5)), result.succeeded,
            let range = result.stdout.range(of: "uint32 "),
            let value = Int32(result.stdout[range.upperBound...].prefix { $0.isNumber })
        else { return }
        charonPIDs.insert(value)
    }

    /// Processes in the desktop's network namespace other than the ones it started (NetworkManager,
    /// charon-nm, dbus-daemon, systemd-udevd and its workers), as `pid name`.
    func strangers() throws -> [String] {
        let known: Set<String> = ["NetworkManager", "charon-nm", "dbus-daemon", "systemd-udevd", "(udev-worker)"]
        let pids = try Subprocess.check(StrongSwanEnvironment.ipPath, ["netns", "pids", namespace]).stdout
            .split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        return pids.compactMap { pid in
            guard let name = Self.command(of: pid), !known.contains(name) else { return nil }
            return "\(pid) \(name)"
        }
    }

    var charonLog: String { (try? String(contentsOfFile: charonLogPath, encoding: .utf8)) ?? "" }
    var networkManagerLog: String { (try? String(contentsOfFile: networkManagerLogPath, encoding: .utf8)) ?? "" }

    /// Stops charon-nm, NetworkManager, udevd and dbus-daemon by pid (SIGTERM, then SIGKILL), then removes the
    /// desktop's directory. Safe to call twice.
    func stop() {
        if stopped { return }
        stopped = true
        if process.isRunning { rememberCharon() }
        for charon in charonPIDs where Self.command(of: charon) == "charon-nm" { Self.terminate(charon) }
        // Polled through /proc rather than waited for with Process: NetworkManager has exited once it is gone
        // or a zombie.
        if process.processIdentifier > 0 && Self.command(of: pid) != nil { Self.terminate(pid) }
        // charon-nm again: NetworkManager may have started it while stopping.
        for charon in charonPIDs where Self.command(of: charon) == "charon-nm" { Self.terminate(charon) }
        let expected = ["dbus-daemon", "systemd-udevd"]
        for (helper, name) in zip(helperPIDs, expected) where Self.command(of: helper) == name {
            Self.terminate(helper)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// `/proc/<pid>/comm`, nil when the process is gone (or a zombie: it has exited, only its parent's
    /// wait is missing).
    static func command(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"),
            stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
        else { return nil }
        return (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// SIGTERM, poll up to 5 s for the process to go, then SIGKILL.
    static func terminate(_ pid: Int32) {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(5)
        while command(of: pid) != nil {
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                return
            }
            usleep(10_000)
        }
    }
}
