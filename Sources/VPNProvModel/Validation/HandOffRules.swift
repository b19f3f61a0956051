import VPNProvSupport
import VPNProvYAML

// The hand-off site (`handoff:`, docs/handoff.md).
//
// Decisions: the site's address must be a DNS name with at least two labels, because the ACME CA of
// `acme:` certifies it (a phone opens the link without a warning only with a publicly trusted certificate,
// and Let's Encrypt's certificates for IP addresses last six days) and HTTP-01 fetches a token from it. It
// may not be a node's or a RADIUS server's name or address: it is its own Ansible host, its nginx holds
// ports 80 and 443 (where an ACME node's lego answers HTTP-01), and the host that serves every user's keys
// for a while should not also be one that terminates tunnels. `deploy:` follows a node's rules.

enum HandOffRules {
    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        guard let site = inventory.handOff else { return }
        let address = site.address
        let at = site.location(of: .address)
        if IPAddressText.parse(address) != nil {
            d.append(
                .error(
                    .handOffAddress,
                    "'handoff.address' \(TextCheck.quoted(address)) is an IP address; the site needs a DNS name, which "
                        + "the ACME CA of 'acme:' certifies so that phones open the links without a warning", at: at))
        } else if let problem = IdentityRules.domainProblem(address, allowUnderscore: false) {
            d.append(
                .error(
                    .handOffAddress, "'handoff.address' \(TextCheck.quoted(address)) is not a DNS name: it \(problem)",
                    at: at))
        } else if !address.contains(".") || address.hasSuffix(".") {
            d.append(
                .error(
                    .handOffAddress,
                    "'handoff.address' \(TextCheck.quoted(address)) must be a fully qualified name without the final "
                        + "dot (such as 'get.vpn.example.com'): the ACME CA certifies only public names", at: at))
        }
        let folded = address.lowercased()
        let taken =
            inventory.nodes.flatMap { [("node", $0.name, $0.name), ("node", $0.name, $0.address)] }
            + (inventory.accounts?.servers ?? []).flatMap {
                [("RADIUS server", $0.name, $0.name), ("RADIUS server", $0.name, $0.address)]
            }
        if let owner = taken.first(where: { $0.2.lowercased() == folded }) {
            d.append(
                .error(
                    .handOffAddress,
                    "'handoff.address' \(TextCheck.quoted(address)) is also \(owner.0) '\(owner.1)': the hand-off site "
                        + "is a host of its own (its web server holds ports 80 and 443, and it should not terminate "
                        + "tunnels while it holds every user's keys); give it a name of its own", at: at))
        }
        if let host = site.deploy.host, let (severity, _, text) = NetworkRules.addressProblem(host), severity == .error
        {
            d.append(
                .error(
                    .invalidDeployHost, "'handoff.deploy.host' \(TextCheck.quoted(host)) \(text)",
                    at: site.deployLocations[.host] ?? site.location(of: .deploy)))
        }
        if let problem = DeployRules.userProblem(site.deploy.user) {
            d.append(
                .error(
                    .invalidDeployUser, "'handoff.deploy.user' \(TextCheck.quoted(site.deploy.user)) \(problem)",
                    at: site.deployLocations[.user] ?? site.location(of: .deploy)))
        }
        guard let acme = inventory.acme else {
            d.append(
                .error(
                    .acmeSettingsMissing,
                    "'handoff:' needs the 'acme:' section (at least 'acme: {email: ...}'): the site's certificate "
                        + "comes from that ACME CA", at: site.location))
            return
        }
        // With an ACME node, ACMERules says it already.
        if acme.email == nil, acme.fieldLocations[.email] == nil,
            !inventory.nodes.contains(where: { $0.certificate == .acme })
        {
            d.append(
                .error(
                    .acmeSettingsMissing,
                    "'acme:' has no 'email': the ACME account needs a contact; needed by the hand-off site",
                    at: acme.location))
        }
    }
}
