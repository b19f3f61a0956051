import Foundation

/// A stand-in for `sudo` on a lab node (this machine has none), first on the PATH of the node's SSH sessions as the
/// stand-in `systemctl` is: a role's `become_user` runs with Ansible's default become method, sudo, as on a real
/// host, and with pipelining. The sessions are root's, so it asks for no password: it runs the command as the user
/// of `-u` (root without it) with that user's groups and its home (`-H`, which Ansible always passes), and takes
/// every other option of Ansible's (`-S`, `-n`, `-p PROMPT`) without acting on it.
enum StandInSudo {
    static func install(bin: String) throws {
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let path = bin + "/sudo"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
    }

    static let script = #"""
        #!/bin/sh
        # Written by vpnprov's end-to-end tests (Tests/EndToEndTests/Harness/StandInSudo.swift): a stand-in for sudo
        # on a lab node, for root's sessions only. Not for use elsewhere.
        set -eu
        user=root
        while [ $# -gt 0 ]; do
            case "$1" in
                -u) user=$2; shift 2 ;;
                -p) shift 2 ;;
                --) shift; break ;;
                -*) shift ;;
                *) break ;;
            esac
        done
        [ "$(id -u)" = 0 ] || { echo "sudo (lab stand-in): root only" >&2; exit 1; }
        entry=$(getent passwd "$user") || { echo "sudo: unknown user $user" >&2; exit 1; }
        home=$(echo "$entry" | cut -d: -f6)
        exec /usr/bin/setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
            /usr/bin/env HOME="$home" USER="$user" LOGNAME="$user" "$@"
        """#
}
