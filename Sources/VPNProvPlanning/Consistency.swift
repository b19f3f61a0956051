import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

// Client/server consistency (docs/architecture.md): before anything is written, every client connection of the
// ClientPlan is checked against its node's server configuration by simulating how strongSwan's
// responder picks a connection, then comparing identities, auth rounds, proposals, certificates and
// secrets. Every finding points at the inventory field responsible.
//
// The server side comes in as a ServerView (the subset of the server plan the check needs), so the
// client plan and the server plan stay two independent derivations of the same inventory.

package enum Consistency {
    /// Parses a PEM certificate into the facts the check needs; nil when it cannot.
    package typealias CertificateInspector = @Sendable (String) -> CertificateFacts?

    /// Checks every client connection of `plan` against the server view of its node. Returns the
    /// plan's own diagnostics plus every mismatch (errors), without duplicates, in plan order.
    /// `inspect` reads certificates for the SAN checks; without it those checks rely on the identity
    /// the connection uses (the PKI issues node and user certificates for exactly those identities).
    package static func check(
        plan: ClientPlan, servers: [ServerView], inventory: Inventory, materials: Materials,
        inspect: CertificateInspector? = nil
    ) -> [Diagnostic] {
        check(
            plan: plan, against: Servers(servers, materials: materials, inspect: inspect), inventory: inventory,
            materials: materials)
    }

    /// The same check against server facts prepared once (`Servers`), for checking a fleet's plan
    /// slice by slice on several threads.
    package static func check(plan: ClientPlan, against servers: Servers, inventory: Inventory, materials: Materials)
        -> [Diagnostic]
    {
        var out: [Diagnostic] = plan.diagnostics
        var seen = Set(out)
        func add(_ d: Diagnostic) { if seen.insert(d).inserted { out.append(d) } }
        // Lookups by name are computed once per call: a slice has a connection per user, node and service.
        let nodes = Dictionary(inventory.nodes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let users = Dictionary(inventory.users.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        servers.withContext { context in
            for c in plan.connections {
                guard let node = nodes[c.node], let user = users[c.user] else { continue }
                guard let view = servers.views[c.node] else {
                    add(.error(.noServerConnection, "node '\(c.node)' has no server configuration", at: node.location))
                    continue
                }
                for d in check(
                    connection: c, view: view, node: node, user: user, materials: materials, context: context)
                {
                    add(d)
                }
            }
        }
        return out
    }

    /// What the per-connection check would otherwise recompute for every user: the server views by
    /// node, password users as sets, whether each node ships the clients' CA, the node certificates'
    /// contents. Immutable: one instance serves every thread.
    package final class Servers: Sendable {
        let views: [String: ServerView]
        let passwordUsers: [String: Set<String>]
        let shipsOtherCA: [String: Bool]
        let inspect: CertificateInspector?
        /// Facts of the node certificates, by node name (not by PEM, which a lookup would hash whole).
        let nodeFacts: [String: CertificateFacts?]
        /// Check contexts between checks: their proposal comparisons stay known from one slice of users to
        /// the next (a slice has only a few users).
        private let idle = Mutex<[[CheckContext.IntersectionKey: Bool]]>([])

        package init(_ servers: [ServerView], materials: Materials, inspect: CertificateInspector?) {
            var views: [String: ServerView] = [:]
            var passwordUsers: [String: Set<String>] = [:]
            var shipsOtherCA: [String: Bool] = [:]
            let clientCA = Consistency.normalized(materials.caCertificatePEM)
            // The sets on all cores: a fleet's nodes list 20,000 password users each.
            let sets = parallelMap(servers.count) { Set(servers[$0].passwordUsers) }
            for (view, users) in zip(servers, sets) where views[view.node] == nil {
                views[view.node] = view
                passwordUsers[view.node] = users
                shipsOtherCA[view.node] = view.caCertificatePEM.map { Consistency.normalized($0) != clientCA } ?? false
            }
            var nodeFacts: [String: CertificateFacts?] = [:]
            if let inspect {
                var byPEM: [String: CertificateFacts?] = [:]
                for (name, node) in materials.nodes {
                    if byPEM[node.certificatePEM] == nil {
                        byPEM[node.certificatePEM] = .some(inspect(node.certificatePEM))
                    }
                    nodeFacts[name] = byPEM[node.certificatePEM]!
                }
            }
            self.views = views
            self.passwordUsers = passwordUsers
            self.shipsOtherCA = shipsOtherCA
            self.inspect = inspect
            self.nodeFacts = nodeFacts
        }

        /// `body` with a check context of its own, which starts from the proposal comparisons of an earlier
        /// check (those between checks are kept here) and gives them back when done.
        func withContext<T>(_ body: (CheckContext) -> T) -> T {
            let context = CheckContext(self, intersections: idle.withLock { $0.popLast() } ?? [:])
            defer {
                let learnt = context.intersections
                idle.withLock { $0.append(learnt) }
            }
            return body(context)
        }
    }

    /// One check's caches (certificates and proposal comparisons) over the shared server facts, made for one
    /// check on one thread by `Servers.withContext`; only its proposal comparisons outlive it.
    final class CheckContext {
        let servers: Servers
        private var facts: [String: CertificateFacts?] = [:]
        private var userFacts: [String: CertificateFacts?] = [:]
        fileprivate(set) var intersections: [IntersectionKey: Bool]

        struct IntersectionKey: Hashable {
            var client: [String]
            var server: [String]
            var purpose: Proposal.Purpose
            var withGroups: Bool

            /// The lists' lengths and first proposals only: a fleet has a few dozen distinct lists and
            /// checks them 80,000 times, and hashing every proposal of both was 2 % of a run from
            /// scratch. Equal keys still hash equally; `==` compares the lists whole (a list shared
            /// by every user of a node compares as one buffer).
            func hash(into hasher: inout Hasher) {
                hasher.combine(client.count)
                hasher.combine(server.count)
                hasher.combine(client.first)
                hasher.combine(server.first)
                hasher.combine(purpose)
                hasher.combine(withGroups)
            }
        }

        init(_ servers: Servers, intersections: [IntersectionKey: Bool]) {
            self.servers = servers
            self.intersections = intersections
        }

        func knowsPassword(_ view: ServerView, _ user: String) -> Bool {
            servers.passwordUsers[view.node]?.contains(user) ?? view.passwordUsers.contains(user)
        }

        func shipsOtherCA(_ view: ServerView, materials: Materials) -> Bool {
            if let known = servers.shipsOtherCA[view.node] { return known }
            guard let serverCA = view.caCertificatePEM else { return false }
            return Consistency.normalized(serverCA) != Consistency.normalized(materials.caCertificatePEM)
        }

        func facts(_ pem: String) -> CertificateFacts? {
            guard let inspect = servers.inspect else { return nil }
            if let known = facts[pem] { return known }
            let value = inspect(pem)
            facts[pem] = value
            return value
        }

        /// The facts of node `name`'s certificate; nil without one (or without an inspector).
        func nodeFacts(_ name: String, materials: Materials) -> CertificateFacts? {
            if let known = servers.nodeFacts[name] { return known }
            return materials.nodes[name].flatMap { facts($0.certificatePEM) }
        }

        /// The facts of user `name`'s certificate; nil without one (or without an inspector).
        func userFacts(_ name: String, materials: Materials) -> CertificateFacts? {
            if let known = userFacts[name] { return known }
            let value = materials.users[name]?.certificatePEM.flatMap { facts($0) }
            userFacts[name] = .some(value)
            return value
        }

        private var names: [String: DistinguishedName?] = [:]

        /// `facts.contains(id)`, with each DN text parsed once per check (a user's identity is checked
        /// against its certificate once per node and service).
        func certificate(_ facts: CertificateFacts, contains id: IKEIdentity) -> Bool {
            facts.contains(id) { text in
                if let known = names[text] { return known }
                let value = DistinguishedName.parse(text)
                names[text] = value
                return value
            }
        }

        func intersects(_ client: [String], _ server: [String], purpose: Proposal.Purpose, withGroups: Bool) -> Bool {
            let key = IntersectionKey(client: client, server: server, purpose: purpose, withGroups: withGroups)
            if let known = intersections[key] { return known }
            let value = Proposal.intersects(client, server, purpose: purpose, withGroups: withGroups)
            intersections[key] = value
            return value
        }
    }
}

extension Consistency {
    /// The whole check as `validate`/`generate` run it: the client plan and the server plan of every
    /// node, both derived from the inventory, compared. Errors mean: write nothing.
    package static func check(inventory: Inventory, materials: Materials, inspect: CertificateInspector? = nil)
        -> [Diagnostic]
    {
        let servers = inventory.nodes.map {
            ServerView(
                ServerPlan.make(for: $0, in: inventory, nodeScoping: materials.nodeScoping),
                caCertificatePEM: materials.caCertificatePEM)
        }
        return check(
            plan: ClientPlan.build(inventory: inventory, materials: materials), servers: servers, inventory: inventory,
            materials: materials, inspect: inspect)
    }
}
