import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Consistency: what Windows' built-in client can be set to, and the secrets each side holds.

extension Consistency {
    static let serverAuthOID = "1.3.6.1.5.5.7.3.1"
    static let clientAuthOID = "1.3.6.1.5.5.7.3.2"

    /// What Windows does differently from the other clients: it sends its IP address (EAP) or its
    /// certificate's subject DN (machine certificate) as identity, and it refuses a server certificate
    /// without the serverAuth EKU or without the address it dialled as a dNSName subjectAltName (also
    /// for an IP address: error 13801), and a client certificate without clientAuth (error 13806).
    /// Sources: https://docs.strongswan.org/docs/latest/interop/windowsCertRequirements.html and the
    /// strongSwan Windows EAP / machine-certificate status pages.
    static func checkWindows(
        _ c: ClientConnection, _ windows: WindowsConnection, selected: ServerConnectionView, view: ServerView,
        node: Node,
        user: User, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        switch select(c, in: view.connections, localID: windows.localID) {
        case .selected(let w) where w.name != selected.name:
            out.append(
                .error(
                    .authMismatch,
                    "windows \(c.service.rawValue) client of node '\(c.node)': strongSwan selects connection '\(w.name)' for the identity Windows sends, not '\(selected.name)'",
                    at: node.location(of: .services)))
        case .none(let code, _, let reason):
            out.append(
                .error(
                    code,
                    "user '\(c.user)': no connection of node '\(c.node)' accepts its windows \(c.service.rawValue) client: \(reason)",
                    at: node.location(of: .services)))
        default: break
        }
        if node.certificate == .acme {
            if !CertificateFacts.sameIgnoringCase(node.id.value, c.remoteAddress) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its ACME certificate names only '\(node.id.value)', not '\(c.remoteAddress)', the address Windows dials (Windows refuses it with error 13801); set the node's address to \(node.id.value)",
                        at: node.location(of: .address)))
            }
        } else if let facts = context.nodeFacts(c.node, materials: materials) {
            if !facts.dnsNames.contains(where: { CertificateFacts.sameIgnoringCase($0, c.remoteAddress) }) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its certificate has no dNSName subjectAltName '\(c.remoteAddress)', the address Windows dials (Windows refuses it with error 13801)",
                        at: node.location(of: .address)))
            }
            if let ekus = facts.extendedKeyUsages, !ekus.contains(serverAuthOID) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "node '\(c.node)': its certificate lacks the serverAuth extended key usage Windows requires (error 13801)",
                        at: node.location))
            }
        }
        if windows.authenticationMethod == .machineCertificate,
            let facts = context.userFacts(c.user, materials: materials)
        {
            if let ekus = facts.extendedKeyUsages, !ekus.contains(clientAuthOID) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "user '\(c.user)': the client certificate lacks the clientAuth extended key usage Windows requires (error 13806)",
                        at: user.location(of: .cert)))
            }
            if let id = windows.localID, facts.subject != nil, !context.certificate(facts, contains: id) {
                out.append(
                    .error(
                        .windowsCertificate,
                        "user '\(c.user)': Windows sends the certificate subject '\(id.value)' as identity, but the certificate's subject differs",
                        at: user.location(of: .id)))
            }
        }
        return out
    }

    static func checkSecrets(
        _ c: ClientConnection, view: ServerView, node: Node, user: User, materials: Materials, context: CheckContext
    ) -> [Diagnostic] {
        var out: [Diagnostic] = []
        let um = materials.users[c.user]
        if c.credentials.contains(.password) {
            if (um?.password ?? "").isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "user '\(c.user)': \(c.service.rawValue) on node '\(c.node)' needs a password, and the user has none",
                        at: user.location(of: .password)))
            } else if !context.knowsPassword(view, c.user) {
                out.append(
                    .error(
                        .missingSecret, "user '\(c.user)': node '\(c.node)' does not know the user's password",
                        at: user.location(of: .password)))
            }
        }
        if c.credentials.contains(.psk) {
            if (materials.nodes[c.node]?.psk ?? "").isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "node '\(c.node)': \(c.service.rawValue) needs a pre-shared key, and the node has none",
                        at: node.location(of: .psk)))
            } else if view.pskIdentities.isEmpty {
                out.append(
                    .error(
                        .missingSecret,
                        "node '\(c.node)': its secrets hold no pre-shared key for \(c.service.rawValue)",
                        at: node.location(of: .psk)))
            }
        }
        if c.credentials.contains(.clientCertificate) {
            // The forms the connection's kinds read the certificate in (ClientKind.certificate).
            let forms = c.devices.map { $0.kind.certificate }
            let needsP12 = forms.contains { $0.p12 }
            let needsPEM = forms.contains { $0.pem }
            let missingP12 =
                needsP12 && (um?.p12 == nil || (um?.p12Password ?? "").isEmpty)
                || forms.contains { $0.openP12 } && um?.openP12 == nil
            let missingPEM = needsPEM && (um?.certificatePEM == nil || um?.privateKeyPEM == nil)
            if missingP12 || missingPEM {
                out.append(
                    .error(
                        .missingSecret,
                        "user '\(c.user)': \(c.service.rawValue) needs a client certificate, and none was issued",
                        at: user.location(of: .cert)))
            }
        }
        if c.credentials.contains(.caCertificate) && materials.caCertificatePEM.isEmpty {
            out.append(.error(.missingSecret, "no CA certificate for the client profiles", at: node.location))
        }
        return out
    }
}
