import Foundation

/// A stand-in for systemd's `systemctl` on a lab node (`AnsibleLab.start(services:)`), where no systemd runs: the
/// first `systemctl` on the PATH of the node's SSH sessions, so the role's `ansible.builtin.systemd_service` tasks
/// (which run `systemctl show|is-enabled|enable|start|stop|restart|daemon-reload …`) start, stop and restart the
/// node's real daemons (charon, the RADIUS relay's FreeRADIUS, the node exporter) as systemd would, each by the
/// pid it was started with.
///
/// What it keeps, below `state` (the node's run directory), is what the tests look at:
/// - `pids/<unit>`: the pid of the unit's running process (charon's is the harness's charon at first);
/// - `loaded/<unit>`: the unit file as "systemd" last read it. Like systemd, it reads a unit file the first
///   time the unit is named and then only on `daemon-reload` (and on `enable`/`disable`, which reload):
///   a unit file changed on disk without a reload is started as it was read before;
/// - `enabled/<unit>`, `active/<unit>` (a unit without a process: a timer, a oneshot), `logs/<unit>.log`
///   (the daemon's stdout and stderr), and `calls` (one line per invocation).
/// Units the distribution's packages would ship (`strongswan.service`, `freeradius.service`,
/// `prometheus-node-exporter.service`) are given by the lab with their command; the others are the files
/// in `/etc/systemd/system`, whose `ExecStart=` is run with the unit's `Environment=` and `WorkingDirectory=`
/// (as root, unless the lab asks for `User=`: `install(users: true)` runs it as that user with its groups, a
/// fresh environment and its home, as systemd does; sandboxing and `ExecStartPre=` are not emulated;
/// `RuntimeDirectory=`, `LogsDirectory=` and `StateDirectory=` are created).
enum StandInSystemctl {
    /// A unit the distribution would ship: its command (nil: never started here) and a path whose existence
    /// says it is ready (charon's vici socket), removed before it starts.
    struct VendorUnit: Codable {
        var exec: [String]?
        var ready: String?
    }

    /// Writes `<bin>/systemctl` and its settings. `users`: units run as their `User=` (off: as root, which the
    /// labs whose roles name users that cannot read the lab's files rely on).
    static func install(bin: String, state: String, vendor: [String: VendorUnit], users: Bool = false) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for sub in ["pids", "loaded", "enabled", "active", "logs"] {
            try fm.createDirectory(atPath: state + "/" + sub, withIntermediateDirectories: true)
        }
        let settings: [String: Any] = [
            "state": state, "unit_dir": "/etc/systemd/system", "users": users,
            "vendor": try JSONSerialization.jsonObject(with: JSONEncoder().encode(vendor)),
        ]
        try JSONSerialization.data(withJSONObject: settings, options: [.sortedKeys]).write(
            to: URL(fileURLWithPath: bin + "/systemctl.json"))
        let script = bin + "/systemctl"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
    }

    /// The pid `unit`'s process was started with (0: none).
    static func pid(_ unit: String, state: String) -> Int32 {
        let text = (try? String(contentsOfFile: state + "/pids/" + unit, encoding: .utf8)) ?? ""
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// The unit file as the stand-in last read it (nil: never read).
    static func loaded(_ unit: String, state: String) -> Data? {
        FileManager.default.contents(atPath: state + "/loaded/" + unit)
    }

    static let script = #"""
        #!/usr/bin/python3 -IS
        # Written by vpnprov's end-to-end tests (Tests/EndToEndTests/Harness/StandInSystemctl.swift): a stand-in
        # for systemctl on a lab node without systemd. Not for use elsewhere.
        import json, os, pwd, re, shlex, shutil, signal, subprocess, sys, time

        here = os.path.dirname(os.path.abspath(__file__))
        settings = json.load(open(os.path.join(here, "systemctl.json")))
        state, unit_dir, vendor = settings["state"], settings["unit_dir"], settings["vendor"]
        with open(os.path.join(state, "calls"), "a") as calls:
            calls.write(" ".join(sys.argv[1:]) + "\n")

        def unit_name(name):
            return name if re.search(r"\.(service|timer|socket|target)$", name) else name + ".service"

        def path(kind, unit):
            return os.path.join(state, kind, unit)

        def read(file):
            try:
                with open(file) as f:
                    return f.read()
            except OSError:
                return None

        def load(unit):
            """The unit's definition as read (read now the first time it is named), or None."""
            if unit in vendor:
                return ""
            text = read(path("loaded", unit))
            if text is None and os.path.isfile(os.path.join(unit_dir, unit)):
                shutil.copyfile(os.path.join(unit_dir, unit), path("loaded", unit))
                text = read(path("loaded", unit))
            return text

        def daemon_reload():
            for name in os.listdir(path("loaded", "")):
                os.unlink(path("loaded", name))
            if os.path.isdir(unit_dir):
                for name in os.listdir(unit_dir):
                    if os.path.isfile(os.path.join(unit_dir, name)):
                        shutil.copyfile(os.path.join(unit_dir, name), path("loaded", name))

        def setting(text, key):
            values = [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith(key + "=")]
            return values[-1] if values else None

        def process_settings(text):
            """Popen's keywords for a unit of /etc/systemd/system: Environment=, WorkingDirectory=, User= (when
            the lab emulates it: that user, its groups, systemd's fresh environment with its home)."""
            environment, keywords = dict(os.environ), {}
            user = setting(text, "User") if settings.get("users") else None
            if user:
                account = pwd.getpwnam(user)
                environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                               "HOME": account.pw_dir, "USER": user, "LOGNAME": user, "SHELL": account.pw_shell,
                               "LANG": "C.UTF-8"}
                keywords = {"user": account.pw_uid, "group": account.pw_gid,
                            "extra_groups": os.getgrouplist(user, account.pw_gid)}
                keywords["cwd"] = "/"
            for line in text.splitlines():
                if line.startswith("Environment="):
                    for assignment in shlex.split(line.split("=", 1)[1]):
                        name, _, value = assignment.partition("=")
                        environment[name] = value
            if setting(text, "WorkingDirectory"):
                keywords["cwd"] = setting(text, "WorkingDirectory")
            keywords["env"] = environment
            return keywords

        def alive(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
            except (OSError, IndexError):
                return False

        def main_pid(unit):
            text = read(path("pids", unit))
            pid = int(text) if text and text.strip().isdigit() else 0
            return pid if pid and alive(pid) else 0

        def is_active(unit):
            return bool(main_pid(unit)) or os.path.exists(path("active", unit))

        def fail(message, code=1):
            sys.stderr.write(message + "\n")
            sys.exit(code)

        def start(unit):
            text = load(unit)
            if text is None:
                fail("Failed to start %s: Unit %s not found." % (unit, unit), 5)
            if is_active(unit):
                return
            if unit in vendor:
                command, ready = vendor[unit].get("exec"), vendor[unit].get("ready")
            elif unit.endswith(".service"):
                line = setting(text, "ExecStart")
                command, ready = (["/bin/sh", "-c", "exec " + line] if line else None), None
            else:
                open(path("active", unit), "w").close()
                return
            if not command:
                fail("Failed to start %s: the lab runs no process for it" % unit)
            if unit not in vendor and setting(text, "Type") == "oneshot":
                subprocess.run(command, check=True)
                open(path("active", unit), "w").close()
                return
            for key, base in (("RuntimeDirectory", "/run"), ("LogsDirectory", "/var/log"),
                              ("StateDirectory", "/var/lib")):
                if unit not in vendor and setting(text, key):
                    os.makedirs(os.path.join(base, setting(text, key)), exist_ok=True)
            if ready and os.path.exists(ready):
                os.unlink(ready)
            keywords = {} if unit in vendor else process_settings(text)
            with open(path("logs", unit + ".log"), "a") as log:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                           start_new_session=True, **keywords)
            with open(path("pids", unit), "w") as f:
                f.write("%d\n" % process.pid)
            deadline = time.monotonic() + 20
            while ready and not os.path.exists(ready):
                if process.poll() is not None or time.monotonic() > deadline:
                    fail("Job for %s failed: it exited or did not become ready" % unit)
                time.sleep(0.01)
            time.sleep(0.05)
            if process.poll() is not None:
                fail("Job for %s failed: it exited with %s" % (unit, process.returncode))

        def stop(unit):
            if load(unit) is None:
                fail("Failed to stop %s: Unit %s not loaded." % (unit, unit), 5)
            pid = main_pid(unit)
            if pid:
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    while alive(pid) and time.monotonic() < deadline + 5:
                        time.sleep(0.01)
            for kind in ("pids", "active"):
                if os.path.exists(path(kind, unit)):
                    os.unlink(path(kind, unit))

        def show(unit):
            text = load(unit)
            on_disk = read(os.path.join(unit_dir, unit))
            active = is_active(unit)
            print("Id=%s" % unit)
            print("LoadState=%s" % ("not-found" if text is None else "loaded"))
            print("ActiveState=%s" % ("active" if active else "inactive"))
            print("SubState=%s" % ("running" if active else "dead"))
            print("MainPID=%d" % main_pid(unit))
            print("UnitFileState=%s" % ("enabled" if os.path.exists(path("enabled", unit)) else "disabled"))
            print("NeedDaemonReload=%s" % ("yes" if unit not in vendor and text is not None and on_disk != text else "no"))

        arguments = [a for a in sys.argv[1:] if not a.startswith("-")]
        if not arguments:
            fail("systemctl (lab stand-in): no command")
        command, units = arguments[0], [unit_name(u) for u in arguments[1:]]
        if command == "daemon-reload":
            daemon_reload()
        elif command == "show":
            for unit in units:
                show(unit)
        elif command == "is-enabled":
            unit = units[0]
            if load(unit) is None:
                fail("Failed to get unit file state for %s: No such file or directory" % unit)
            enabled = os.path.exists(path("enabled", unit))
            print("enabled" if enabled else "disabled")
            sys.exit(0 if enabled else 1)
        elif command == "is-active":
            active = is_active(units[0])
            print("active" if active else "inactive")
            sys.exit(0 if active else 3)
        elif command in ("enable", "disable"):
            for unit in units:
                if load(unit) is None:
                    fail("Failed to %s unit: Unit file %s does not exist." % (command, unit))
                if command == "enable":
                    open(path("enabled", unit), "w").close()
                elif os.path.exists(path("enabled", unit)):
                    os.unlink(path("enabled", unit))
            daemon_reload()  # as systemctl enable/disable do
        elif command == "start":
            for unit in units:
                start(unit)
        elif command == "stop":
            for unit in units:
                stop(unit)
        elif command in ("restart", "reload", "try-restart"):
            for unit in units:
                stop(unit)
                start(unit)
        elif command == "list-unit-files":
            names = set(vendor) | set(os.listdir(unit_dir) if os.path.isdir(unit_dir) else [])
            pattern = (arguments[1] if len(arguments) > 1 else "*").replace("*", ".*")
            found = sorted(n for n in names if re.fullmatch(pattern, n))
            for name in found:
                print(name, "enabled" if os.path.exists(path("enabled", name)) else "disabled")
            sys.exit(0 if found else 1)
        else:
            fail("systemctl (lab stand-in): %s is not emulated" % command)

        """#
}
