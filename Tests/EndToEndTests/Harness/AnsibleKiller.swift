import Foundation
import VPNProvTestHarness

/// A callback plugin for ansible-playbook that kills it at a task boundary, as a lost SSH session to the
/// controller, a cancelled CI job or a closed laptop would (RolloutFaultTests, RadiusRoleTests). The plugin runs
/// in the ansible-playbook process itself; at each boundary (a task or handler about to start, as the run's
/// strategy reports it) it appends a line to the log the run is given, noting whether the task before changed
/// a host, and at the boundary it is told (by number, or the first whose task name ends with a given text) it
/// SIGKILLs that process: no handler, no later task and no cleanup of Ansible's runs.
struct AnsibleKiller {
    /// One boundary of a run, as the plugin logged it.
    struct Boundary: CustomStringConvertible {
        var number: Int
        var kind: String
        var name: String
        /// The task (or handler) before it changed a host.
        var afterChange: Bool
        var killed: Bool
        var description: String { "\(number) \(kind) \(name)\(killed ? " (killed)" : "")" }
    }

    static let plugin = """
        # Written by vpnprov's end-to-end tests (Tests/EndToEndTests/Harness/AnsibleKiller.swift): logs the
        # boundaries of a run (a task or handler about to start) and whether the task before changed a host,
        # and SIGKILLs this ansible-playbook at boundary VPNPROV_KILL_AT, or at the first whose task name ends
        # with VPNPROV_KILL_BEFORE.
        import os
        import signal

        from ansible.plugins.callback import CallbackBase


        class CallbackModule(CallbackBase):
            CALLBACK_VERSION = 2.0
            CALLBACK_TYPE = "aggregate"
            CALLBACK_NAME = "vpnprov_kill"
            CALLBACK_NEEDS_ENABLED = True

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.count = 0
                self.changed = False
                self.kill_at = int(os.environ.get("VPNPROV_KILL_AT") or "0")
                self.kill_before = os.environ.get("VPNPROV_KILL_BEFORE") or None
                self.log = os.environ["VPNPROV_BOUNDARIES"]

            def boundary(self, kind, task):
                self.count += 1
                name = task.get_name()
                killing = self.count == self.kill_at or (self.kill_before is not None and name.endswith(self.kill_before))
                with open(self.log, "a") as out:
                    out.write("%d\\t%s\\t%s\\t%s\\t%s\\n" % (
                        self.count, kind, name, "after-change" if self.changed else "", "kill" if killing else ""))
                self.changed = False
                if killing:
                    os.kill(os.getpid(), signal.SIGKILL)

            def v2_playbook_on_task_start(self, task, is_conditional):
                self.boundary("task", task)

            def v2_playbook_on_handler_task_start(self, task):
                self.boundary("handler", task)

            def v2_runner_on_ok(self, result):
                self.changed = self.changed or bool(result._result.get("changed"))

            def v2_runner_item_on_ok(self, result):
                self.changed = self.changed or bool(result._result.get("changed"))

        """

    let directory: URL

    /// Writes the plugin into `directory` (created).
    init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.plugin.write(
            to: directory.appendingPathComponent("vpnprov_kill.py"), atomically: true, encoding: .utf8)
    }

    /// ansible-playbook's environment for a run that logs its boundaries to `log` and is killed before boundary
    /// `killAt` (0: by number never) or the first task whose name ends with `killBefore`.
    func environment(log: URL, killAt: Int = 0, killBefore: String? = nil) -> [String: String] {
        [
            "ANSIBLE_CALLBACK_PLUGINS": directory.path, "ANSIBLE_CALLBACKS_ENABLED": "vpnprov_kill",
            "VPNPROV_KILL_AT": String(killAt), "VPNPROV_KILL_BEFORE": killBefore ?? "", "VPNPROV_BOUNDARIES": log.path,
        ]
    }

    /// The boundaries a run logged.
    static func boundaries(_ log: URL) -> [Boundary] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, let number = Int(fields[0]) else { return nil }
            return Boundary(
                number: number, kind: fields[1], name: fields[2], afterChange: fields[3] == "after-change",
                killed: fields[4] == "kill")
        }
    }

    /// The boundary the run was killed at, or nil: the plugin logged the kill as its last line, and the run
    /// printed no recap.
    static func killed(_ boundaries: [Boundary], _ result: ProgramResult) -> Int? {
        guard let last = boundaries.last, last.killed, !result.succeeded, !result.stdout.contains("PLAY RECAP")
        else { return nil }
        return last.number
    }
}
