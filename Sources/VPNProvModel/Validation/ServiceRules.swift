import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// What each service needs (PSK, group, passwords, certificates), user references to nodes, which
// client kinds can use what (each kind's description says which services it speaks, and its hint is
// derived from it: Capabilities/ClientKinds/), the warnings for weak-by-design services, and the
// catalogue country.
//
// Decisions: a password is required when one of the user's nodes offers a password service that one
// of the user's devices can use (Android only speaks ikev2-eap and ikev2-cert); revoked users are
// exempt from needs and usability checks. Weak-by-design services warn once per node and service:
// ikev2-psk / ikev2-psk-eap `weak-psk-service`; ipsec-xauth-psk `ikev1-aggressive` with a group
// (aggressive mode), else `ikev1-service` (main mode); `ikev1-build` once per node with an IKEv1 service
// (ipsec-xauth-psk, ipsec-xauth-hybrid: the server's charon must have been built with IKEv1, which newer
// strongSwan releases reportedly leave out by default). A group name becomes `keyid:<group>` on the
// server and Apple's LocalIdentifier: 1...64 printable ASCII characters without space, '"' or '\',
// not starting with '#' (strongSwan would read hex) or '%', and not ending in "hybrid" (Apple would
// switch to hybrid authentication).
// ipsec-xauth-hybrid: IKEv1 hybrid authentication is defined for RSA signatures only (strongSwan's
// hybrid authenticator signs with an RSA key; Apple's client calls it hybrid_rsa_client), so an
// ECDSA server key is an error (`hybrid-server-key`); the service warns `ikev1-hybrid` (IKEv1, the
// password is the only client credential); and a node whose identity is not an IP address warns
// `hybrid-apple-identity` (Apple devices match the hybrid server against the address they dial).

enum ServiceRules {
    static func groupProblem(_ group: String) -> String? {
        if group.isEmpty { return "is empty; leave group out for main mode" }
        if group.unicodeScalars.count > 64 { return "is longer than 64 characters" }
        if let bad = group.unicodeScalars.first(where: { !TextCheck.isPrintableASCII($0) || $0 == "\"" || $0 == "\\" })
        {
            return "contains \(TextCheck.quoted(String(bad))); allowed is printable ASCII without spaces, '\"' or '\\'"
        }
        if group.hasPrefix("#") { return "starts with '#', which strongSwan reads as a hex key ID" }
        if group.hasPrefix("%") { return "starts with '%', which strongSwan reads as a wildcard" }
        if group.lowercased().hasSuffix("hybrid") {
            return "ends in 'hybrid', which makes Apple devices use hybrid authentication instead of the group PSK"
        }
        return nil
    }

    static func check(_ inventory: Inventory, into d: inout [Diagnostic]) {
        var servicesByNode: [String: Set<Service>] = [:]
        for node in inventory.nodes {
            checkNode(node, into: &d)
            servicesByNode[node.name, default: []].formUnion(node.inventoryUserServices)
        }
        let rsaServerKey = [.rsa2048, .rsa3072, .rsa4096].contains(inventory.pki.serverKey)
        // An ACME node's key is RSA whenever it offers hybrid (ACMESettings.key(for:)).
        for node in inventory.nodes
        where node.services.contains(.ipsecXauthHybrid) && !rsaServerKey && node.certificate == .ca {
            d.append(
                .error(
                    .hybridServerKey,
                    "node '\(node.name)': ipsec-xauth-hybrid needs an RSA server key (IKEv1 hybrid authentication is RSA only), but pki.server_key is \(inventory.pki.serverKey.rawValue); set pki: server_key: rsa-3072",
                    at: node.location(of: .services)))
        }
        let nodeNames = inventory.nodes.map(\.name)
        // Users mostly list the same nodes (every node, by default): the services of a list that had no
        // finding serve the users after it with an equal list, compared name by name instead of hashing
        // each name again (a tenth of a no-op run's validation; docs/benchmarks.md). A list with a finding
        // (a node unknown or listed twice) is read again for each user, whose name the finding carries.
        var clean: (nodes: [String], services: Set<Service>)?
        for user in inventory.users {
            let services: Set<Service>
            if let clean, clean.nodes == user.nodes {
                services = clean.services
            } else {
                let before = d.count
                services = reachableServices(of: user, servicesByNode: servicesByNode, nodeNames: nodeNames, into: &d)
                clean = d.count == before ? (user.nodes, services) : nil
            }
            checkUser(user, services: services, into: &d)
        }
    }

    static func checkNode(_ node: Node, into d: inout [Diagnostic]) {
        let offered = offeredServices(of: node, into: &d)
        checkServiceSettings(of: node, offering: offered, into: &d)
        warnAboutWeakServices(offered, of: node, into: &d)
        if let country = node.country, let p = CountryCodes.problem(country) {
            d.append(
                .error(
                    .invalidCountry, "node '\(node.name)': country \(TextCheck.quoted(country)) \(p)",
                    at: node.location(of: .country)))
        }
    }

    /// The node's services as a set, with an error for none and a warning for each listed twice.
    private static func offeredServices(of node: Node, into d: inout [Diagnostic]) -> Set<Service> {
        let owner = "node '\(node.name)'"
        let servicesLocation = node.location(of: .services)
        if node.services.isEmpty {
            d.append(
                .error(.noServices, "\(owner): offers no service; list at least one in services", at: servicesLocation))
        }
        var seen: Set<Service> = []
        for service in node.services where !seen.insert(service).inserted {
            d.append(
                .warning(.duplicateEntry, "\(owner): service \(service.rawValue) is listed twice", at: servicesLocation)
            )
        }
        return seen
    }

    /// The settings only some services use: a PSK (needed or unused) and the IKEv1 group.
    private static func checkServiceSettings(of node: Node, offering seen: Set<Service>, into d: inout [Diagnostic]) {
        let owner = "node '\(node.name)'"
        let pskServices = Service.allCases.filter { seen.contains($0) && $0.needsPSK }
        if node.psk == nil && !pskServices.isEmpty {
            d.append(
                .error(
                    .missingPSK,
                    "\(owner): \(pskServices.map(\.rawValue).joined(separator: ", ")) \(pskServices.count == 1 ? "needs" : "need") a PSK; set psk: gen",
                    at: node.location(of: .services)))
        } else if node.psk != nil && pskServices.isEmpty {
            d.append(
                .warning(
                    .unusedPSK, "\(owner): psk is set but no service uses it", at: node.location(of: .psk),
                    about: .node(node.name)))
        }
        if let group = node.group {
            let location = node.location(of: .group)
            if let p = groupProblem(group) {
                d.append(.error(.invalidGroup, "\(owner): group \(TextCheck.quoted(group)) \(p)", at: location))
            }
            if !seen.contains(.ipsecXauthPSK) {
                d.append(
                    .warning(
                        .unusedGroup, "\(owner): group is set but only ipsec-xauth-psk uses it", at: location,
                        about: .node(node.name)))
            }
        }
    }

    /// A warning for each offered service that weakens the node: a PSK every user holds, IKEv1, hybrid mode.
    private static func warnAboutWeakServices(_ seen: Set<Service>, of node: Node, into d: inout [Diagnostic]) {
        let owner = "node '\(node.name)'"
        let servicesLocation = node.location(of: .services)
        for service in Service.allCases where seen.contains(service) {
            switch service {
            case .ikev2PSK, .ikev2PSKEAP:
                d.append(
                    .warning(
                        .weakPSKService,
                        "\(owner): \(service.rawValue) authenticates the server with a PSK every user holds; any user can impersonate this server (prefer ikev2-eap or ikev2-cert)",
                        at: servicesLocation, about: .node(node.name, services: [service])))
            case .ipsecXauthPSK:
                if node.group != nil {
                    d.append(
                        .warning(
                            .ikev1Aggressive,
                            "\(owner): ipsec-xauth-psk with a group uses IKEv1 aggressive mode, which sends a PSK hash anyone can crack offline (the server must enable aggressive-mode PSK)",
                            at: servicesLocation, about: .node(node.name, services: [service])))
                } else {
                    d.append(
                        .warning(
                            .ikev1Service,
                            "\(owner): ipsec-xauth-psk is IKEv1 with a PSK every user holds; any user can impersonate this server",
                            at: servicesLocation, about: .node(node.name, services: [service])))
                }
            case .ipsecXauthHybrid:
                d.append(
                    .warning(
                        .ikev1Hybrid,
                        "\(owner): ipsec-xauth-hybrid is IKEv1 (superseded by IKEv2) and the user's password is the only client credential; prefer ikev2-eap where clients can use it",
                        at: servicesLocation, about: .node(node.name, services: [service])))
                switch node.id {
                case .ipv4, .ipv6: break
                case .fqdn, .userFQDN, .dn, .keyID:
                    d.append(
                        .warning(
                            .hybridAppleIdentity,
                            "\(owner): id is not an IP address; Apple devices check an IPSec hybrid server against the address they dial, so Apple profiles get no ipsec-xauth-hybrid connection for this node",
                            at: node.location(of: .id), about: .node(node.name, services: [service])))
                }
            case .ikev2Cert, .ikev2EAP:
                break
            }
        }
        let ikev1 = Service.allCases.filter { seen.contains($0) && $0.rawValue.hasPrefix("ipsec-") }
        if !ikev1.isEmpty {
            let names = ikev1.map(\.rawValue).joined(separator: " and ")
            d.append(
                .warning(
                    .ikev1Build,
                    "\(owner): \(names) \(ikev1.count == 1 ? "needs" : "need") a charon built with IKEv1, which strongSwan 6.1 and later reportedly leave out of default builds (the node's README says how to check)",
                    at: servicesLocation, about: .node(node.name, services: ikev1)))
        }
    }

    /// The user's devices and credentials against `services`, what the user's nodes offer.
    static func checkUser(_ user: User, services: Set<Service>, into d: inout [Diagnostic]) {
        let devices = distinctDevices(of: user, into: &d)
        if user.revoked { return }
        checkCredentials(of: user, services: services, devices: devices, into: &d)
        warnAboutUnservedDevices(of: user, services: services, devices: devices, into: &d)
    }

    /// The services offered on the user's nodes, with a finding for each node unknown or listed twice.
    private static func reachableServices(
        of user: User, servicesByNode: [String: Set<Service>], nodeNames: [String], into d: inout [Diagnostic]
    ) -> Set<Service> {
        // Made only for a finding (a fleet checks 20,000 users, nearly all without one).
        var owner: String { "user '\(user.name)'" }
        var nodesLocation: SourceLocation { user.location(of: .nodes) }
        var services: Set<Service> = []
        var seenNodes: Set<String> = []
        for name in user.nodes {
            if !seenNodes.insert(name).inserted {
                d.append(
                    .warning(.duplicateEntry, "\(owner): node '\(name)' is listed twice in nodes", at: nodesLocation))
                continue
            }
            guard let offered = servicesByNode[name] else {
                var message = "\(owner): unknown node \(TextCheck.quoted(name))"
                if let hint = TextCheck.suggestion(for: name, in: nodeNames) { message += "; did you mean '\(hint)'?" }
                d.append(.error(.unknownNode, message, at: nodesLocation))
                continue
            }
            services.formUnion(offered)
        }
        return services
    }

    /// The user's devices in order, with a warning for each listed twice.
    private static func distinctDevices(of user: User, into d: inout [Diagnostic]) -> [Device] {
        var devices: [Device] = []
        for device in user.devices {
            if devices.contains(device) {
                d.append(
                    .warning(
                        .duplicateEntry, "user '\(user.name)': device \(device.rawValue) is listed twice",
                        at: user.location(of: .devices)))
            } else {
                devices.append(device)
            }
        }
        return devices
    }

    /// A password missing where nothing works without one, or set where nothing uses it; cert set unused.
    private static func checkCredentials(
        of user: User, services: Set<Service>, devices: [Device], into d: inout [Diagnostic]
    ) {
        var owner: String { "user '\(user.name)'" }
        let passwordUsed = services.contains { s in s.needsPassword && devices.contains { $0.speaks(s) } }
        // A user gets the services they hold credentials for: a certificate-only user on a node that
        // also offers EAP simply gets no EAP profile. A password is missing only when the user could
        // use nothing at all without one.
        let certUsable =
            user.cert && services.contains { s in s.needsClientCert && devices.contains { $0.speaks(s) } }
        if passwordUsed && user.password == nil && !certUsable {
            let which = Service.allCases.filter { services.contains($0) && $0.needsPassword }.map(\.rawValue).joined(
                separator: ", ")
            d.append(
                .error(
                    .missingPassword,
                    "\(owner): needs a password for \(which) on their nodes (or cert: true where ikev2-cert is offered); set password: gen",
                    at: user.location))
        } else if !passwordUsed && user.password != nil {
            d.append(
                .warning(
                    .unusedPassword,
                    "\(owner): password is set but none of their nodes and devices uses a password service",
                    at: user.location(of: .password), about: .user(user.name)))
        }
        if user.cert && !services.contains(.ikev2Cert) {
            d.append(
                .warning(
                    .certUnused, "\(owner): cert is true but none of their nodes offers ikev2-cert",
                    at: user.location(of: .cert), about: .user(user.name)))
        }
    }

    /// A warning for a user who can use nothing, else for each device no offered service works with.
    private static func warnAboutUnservedDevices(
        of user: User, services: Set<Service>, devices: [Device], into d: inout [Diagnostic]
    ) {
        var owner: String { "user '\(user.name)'" }
        // Which devices can use something (a certificate service only with cert: true).
        func usable(_ device: Device) -> Bool {
            services.contains { s in device.speaks(s) && (!s.needsClientCert || user.cert) }
        }
        let unserved = devices.filter { !usable($0) }
        if !devices.isEmpty && unserved.count == devices.count || devices.isEmpty {
            let reason =
                user.nodes.isEmpty ? "is allowed on no node" : "can use no service on their nodes with their devices"
            d.append(
                .warning(
                    .userWithoutService, "\(owner): \(reason); no client profile will be generated", at: user.location,
                    about: .user(user.name)))
        } else {
            for device in unserved {
                d.append(
                    .warning(
                        .deviceWithoutService,
                        "\(owner): no service on their nodes works with device \(device.rawValue)\(device.servicesHint)",
                        at: user.location(of: .devices), about: .user(user.name)))
            }
        }
    }
}
