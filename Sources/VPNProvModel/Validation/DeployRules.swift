import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// A node's `deploy:` becomes `ansible_host`, `ansible_port`, `ansible_user` and `ansible_become` in
// deploy/inventory.yml. The port range is the decoder's job; here the host and the user.
//
// Decisions: the host must be an IP address or a host name by the same rules as `address` (a value
// with spaces, quotes or a scheme would make Ansible try a host that cannot exist). Loopback and
// single-label names are fine here: a management network or an SSH alias may use them. The user
// must be a portable login name (POSIX portable file name characters, not starting with '-', at
// most 32 characters, the limit of Linux's utmp records), so it cannot read as an ssh option.

enum DeployRules {
    static let maxUserLength = 32

    /// Why `user` is not a usable login name, or nil.
    static func userProblem(_ user: String) -> String? {
        if user.isEmpty { return "is empty" }
        if user.hasPrefix("-") { return "starts with '-' (reads as a command-line option)" }
        if user.unicodeScalars.count > maxUserLength { return "is longer than \(maxUserLength) characters" }
        if let bad = user.unicodeScalars.first(where: {
            !(TextCheck.isASCIILetterOrDigit($0) || $0 == "." || $0 == "_" || $0 == "-")
        }) {
            return "contains \(TextCheck.quoted(String(bad))); allowed are letters A-Z a-z, digits, '.', '_' and '-'"
        }
        return nil
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        for node in inventory.nodes {
            // Without deploy.host the address is used; its own problems are reported at `address` already.
            if let host = node.deploy.host, let (severity, _, text) = NetworkRules.addressProblem(host),
                severity == .error
            {
                d.append(
                    .error(
                        .invalidDeployHost, "node '\(node.name)': deploy.host \(TextCheck.quoted(host)) \(text)",
                        at: node.location(of: .deploy(.host))))
            }
            if let problem = userProblem(node.deploy.user) {
                d.append(
                    .error(
                        .invalidDeployUser,
                        "node '\(node.name)': deploy.user \(TextCheck.quoted(node.deploy.user)) \(problem)",
                        at: node.location(of: .deploy(.user))))
            }
        }
    }
}
