import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Consistency: one client connection against the connection strongSwan selects for it (authentication,
// proposals, certificates).

extension Consistency {
    /// One client connection against the node's configuration: its secrets, the connection strongSwan
    /// selects for it, how each side authenticates, the proposals of each client kind, the certificates.
    static func check(
        connection client: ClientConnection, view: ServerView, node: Node, user: User, materials: Materials,
        context: CheckContext
    ) -> [Diagnostic] {
        var out = checkSecrets(client, view: view, node: node, user: user, materials: materials, context: context)
        let selection = select(client, in: view.connections)
        guard case .selected(let selected) = selection else {
            if case .none(let code, let field, let reason) = selection {
                let location =
                    switch field {
                    case .node(let key): node.location(of: key)
                    case .user(let key): user.location(of: key)
                    }
                out.append(
                    .error(
                        code,
                        "user '\(client.user)': no connection of node '\(client.node)' accepts its \(client.service.rawValue) client: \(reason)",
                        at: location))
            }
            return out
        }
        out += checkAuthentication(client, selected: selected, node: node, user: user)
        out += checkProposals(client, selected: selected, node: node, context: context)
        out += checkServerCertificate(client, view: view, node: node, materials: materials, context: context)
        if client.devices.contains(.windows), let windows = client.windows {
            out += checkWindows(
                client, windows, selected: selected, view: view, node: node, user: user, materials: materials,
                context: context)
        }
        out += checkClientCertificate(client, selected: selected, user: user, materials: materials, context: context)
        return out
    }

    /// "ikev2-eap client of node 'fra-1'".
    static func describe(_ client: ClientConnection) -> String {
        "\(client.service.rawValue) client of node '\(client.node)'"
    }

    /// The server proves itself the way the client expects, and the client's rounds are the selected
    /// connection's remote rounds, in order (with the EAP identity it accepts).
    static func checkAuthentication(_ client: ClientConnection, selected: ServerConnectionView, node: Node, user: User)
        -> [Diagnostic]
    {
        var out: [Diagnostic] = []
        if selected.localAuth != client.serverAuth {
            out.append(
                .error(
                    .authMismatch,
                    "\(describe(client)): strongSwan selects connection '\(selected.name)', which proves the server with \(selected.localAuth), but the client expects \(client.serverAuth)",
                    at: node.location(of: .services)))
        }
        let clientRounds = client.localAuth.map(\.method)
        let serverRounds = selected.remote.map(\.auth)
        if clientRounds != serverRounds {
            out.append(
                .error(
                    .authMismatch,
                    "\(describe(client)): the client authenticates with \(clientRounds.map(\.rawValue).joined(separator: " + ")), connection '\(selected.name)' expects \(serverRounds.map(\.rawValue).joined(separator: " + "))",
                    at: node.location(of: .services)))
        }
        for (round, server) in zip(client.localAuth, selected.remote) {
            if case .exactly(let id)? = server.eapID, let eapID = round.eapID, id.value != eapID {
                out.append(
                    .error(
                        .localIDMismatch,
                        "user '\(client.user)': connection '\(selected.name)' of node '\(client.node)' accepts only EAP identity '\(id.value)'",
                        at: user.location))
            }
        }
        return out
    }

    /// The IKE and ESP proposals each client kind sends, against the selected connection's (and for
    /// IKEv2 with the client's PFS groups, which CHILD_SA rekeying needs).
    static func checkProposals(
        _ client: ClientConnection, selected: ServerConnectionView, node: Node, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        // Only a finding spells out the client.
        var what: String { describe(client) }
        for device in client.devices {
            guard let offer = client.offers[device] else { continue }
            if !context.intersects(offer.ike, selected.ikeProposals, purpose: .ike, withGroups: true) {
                out.append(
                    .error(
                        .ikeProposalMismatch,
                        "\(device.rawValue) \(what): none of the IKE proposals it sends (\(offer.ike.joined(separator: ", "))) is accepted by connection '\(selected.name)' (\(selected.ikeProposals.joined(separator: ", ")))",
                        at: node.location(of: .proposals)))
            }
            if !context.intersects(offer.esp, selected.espProposals, purpose: .esp, withGroups: false) {
                out.append(
                    .error(
                        .espProposalMismatch,
                        "\(device.rawValue) \(what): none of the ESP proposals it sends (\(offer.esp.joined(separator: ", "))) is accepted by connection '\(selected.name)' (\(selected.espProposals.joined(separator: ", ")))",
                        at: node.location(of: .proposals)))
            } else if client.ikeVersion == 2
                && !context.intersects(offer.esp, selected.espProposals, purpose: .esp, withGroups: true)
            {
                out.append(
                    .error(
                        .pfsMismatch,
                        "\(device.rawValue) \(what): the ESP proposals match without a DH group but not with the client's PFS groups, so CHILD_SA rekeying fails (add the group, or `modpnone`, to the node's ESP proposals)",
                        at: node.location(of: .proposals)))
            }
        }
        return out
    }

    /// The node's certificate names the identity its clients expect and comes from the CA they trust, and
    /// the node ships that CA. An ACME node serves no certificate of vpnprov's: the one its rollout obtains
    /// names exactly the node's DNS-name identity (the validator requires one), which is the identity its
    /// clients expect.
    static func checkServerCertificate(
        _ client: ClientConnection, view: ServerView, node: Node, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        guard client.serverAuth == .pubkey && node.certificate == .ca else { return [] }
        var out: [Diagnostic] = []
        if let facts = context.nodeFacts(client.node, materials: materials) {
            if !context.certificate(facts, contains: client.remoteID) {
                out.append(
                    .error(
                        .serverCertificateSAN,
                        "node '\(client.node)': its certificate's subjectAltName does not contain the identity clients expect ('\(client.remoteID.value)')",
                        at: node.location(of: .id)))
            }
            if let issuer = facts.issuerCommonName, issuer != materials.caCommonName {
                out.append(
                    .error(
                        .caMismatch,
                        "node '\(client.node)': its certificate is issued by '\(issuer)', but clients trust '\(materials.caCommonName)'",
                        at: node.location))
            }
        }
        if context.shipsOtherCA(view, materials: materials) {
            out.append(
                .error(
                    .caMismatch,
                    "node '\(client.node)': its configuration ships another CA certificate than the client profiles",
                    at: node.location))
        }
        return out
    }

    /// A client certificate names the client's identity and carries the policy of every node that
    /// requires one (NodeAccessPolicy).
    static func checkClientCertificate(
        _ client: ClientConnection, selected: ServerConnectionView, user: User, materials: Materials,
        context: CheckContext
    ) -> [Diagnostic] {
        guard client.credentials.contains(.clientCertificate), let localID = client.localID,
            let facts = context.userFacts(client.user, materials: materials)
        else { return [] }
        var out: [Diagnostic] = []
        if !context.certificate(facts, contains: localID) {
            out.append(
                .error(
                    .clientCertificateSAN,
                    "user '\(client.user)': the client certificate's subjectAltName does not contain its identity '\(localID.value)'",
                    at: user.location(of: .id)))
        }
        let required = selected.remote.flatMap(\.certPolicies)
        if let have = facts.policies, let missing = required.first(where: { !have.contains($0) }) {
            out.append(
                .error(
                    .clientCertificatePolicy,
                    "user '\(client.user)': the client certificate lacks node '\(client.node)''s policy \(missing), which the node requires",
                    at: user.location(of: .nodes)))
        }
        return out
    }

    static func normalized(_ pem: String) -> String { pem.filter { !$0.isWhitespace } }
}
