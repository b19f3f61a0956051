import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// `vpnprov status`: what the state holds for an inventory and when it expires. Built from
/// index.json and the names in secrets.json only (no key is read, no lock is taken, nothing written).
package struct StatusReport: Sendable, Hashable, Encodable {
    package struct CA: Sendable, Hashable, Encodable {
        package var serial: String
        package var commonName: String
        package var generation: Int
        @ISODate package var notAfter: Date
        package var daysLeft: Int
    }

    package struct Rotation: Sendable, Hashable, Encodable {
        /// "none" or "overlap".
        package var phase: String
        @ISODateOptional var startedAt: Date?
        /// The CA being replaced (trusted by the servers until `rotate-ca --finish`).
        package var previous: CA?
    }

    package struct Certificate: Sendable, Hashable, Encodable {
        /// "server", "client", "ca" or "cross".
        package var kind: String
        /// Node or user name ("" for CA certificates).
        package var holder: String
        /// The certified identity: the first subjectAltName, else the subject.
        package var identity: String
        package var serial: String
        @ISODate package var notAfter: Date
        package var daysLeft: Int
        /// "active", "superseded", "revoked" or "held" (revoked with `vpnprov revoke`, still listed
        /// as active in the inventory).
        package var status: String
        /// Issuing CA serial, when recorded.
        package var issuer: String?
    }

    package struct CRL: Sendable, Hashable, Encodable {
        /// Serial of the CA that signs it.
        package var issuer: String
        package var number: Int
        @ISODate package var nextUpdate: Date
        package var daysLeft: Int
        package var revoked: Int
    }

    package struct Secrets: Sendable, Hashable, Encodable {
        /// Nodes with a generated PSK, users with a generated password, users with a p12 password.
        package var psks: [String]
        package var passwords: [String]
        package var p12Passwords: [String]
    }

    /// An ACME node's certificate as its last rollout reported it (`<out>/rollout/acme/<node>.pem`).
    package struct ACMECertificate: Sendable, Hashable, Encodable {
        package var node: String
        /// The name the certificate is for (the node's identity).
        package var domain: String
        /// false: no rollout has reported one (or the report cannot be read: `problem`).
        package var reported: Bool
        package var serial: String?
        @ISODateOptional package var notAfter: Date?
        package var daysLeft: Int?
        package var issuer: String?
        package var problem: String?
    }

    package struct Expiring: Sendable, Hashable, Encodable {
        package var what: String
        @ISODate package var notAfter: Date
        package var daysLeft: Int
    }

    package var stateDirectory: String
    @ISODate package var now: Date
    package var ca: CA?
    package var rotation: Rotation
    package var certificates: [Certificate]
    package var crls: [CRL]
    package var secrets: Secrets
    /// Active inventory users without a current certificate (EAP/PSK-only users, or not yet issued).
    package var usersWithoutCertificates: [String]
    /// Users revoked with `vpnprov revoke` while the inventory still lists them (undo: `unrevoke`).
    package var heldUsers: [String]
    /// What the state holds for names the inventory no longer has ("node fra-9", "user bob").
    package var notInInventory: [String]
    /// Filled when asked with `--expiring DAYS`: what expires within DAYS (or has expired).
    package var expiring: [Expiring]?
    /// Counts by status over node and user certificates.
    package var counts: [String: Int]
    /// Nodes and RADIUS servers whose files changed and are not yet recorded as rolled out (`vpnprov rolled-out`).
    package var rolloutPending: [String] = []
    /// Every ACME node's certificate, from what the rollout reported (empty without ACME nodes).
    package var acme: [ACMECertificate] = []

    /// A date as the report prints it: "2027-11-15" (UTC).
    static func day(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate]
        return f.string(from: date)
    }

    static func daysLeft(_ date: Date, _ now: Date) -> Int { Int((date.timeIntervalSince(now) / 86400).rounded(.down)) }

    /// A reported certificate is one PEM certificate (and its chain, if any); more than this is not one.
    static let reportLimit = 1 << 20

    /// What the rollout reported for each ACME node of `inventory`, read from `outDirectory`'s `rollout/acme/`.
    static func acmeCertificates(inventory: Inventory, outDirectory: String, now: Date) -> [ACMECertificate] {
        inventory.nodes.filter { $0.certificate == .acme }.map { node in
            var entry = ACMECertificate(node: node.name, domain: node.id.value, reported: false)
            let path = outDirectory + "/rollout/acme/\(node.name).pem"
            guard FileManager.default.fileExists(atPath: path) else { return entry }
            do {
                let bytes = try BoundedFile.read(path, limit: reportLimit)
                guard let text = String(validating: bytes, as: UTF8.self),
                    let leaf = try X509Certificate.all(pem: text).first
                else {
                    entry.problem = "\(path) holds no PEM certificate"
                    return entry
                }
                entry.reported = true
                entry.serial = leaf.serialHex
                entry.notAfter = leaf.notAfter
                entry.daysLeft = daysLeft(leaf.notAfter, now)
                entry.issuer = leaf.issuer.description
            } catch {
                entry.problem = "\(path): \(error)"
            }
            return entry
        }
    }

    /// Reads the state. Throws StateError (state-unreadable) when index.json or secrets.json cannot be read.
    /// With `outDirectory`, ACME nodes' certificates come from what the rollout reported there.
    package static func make(
        inventory: Inventory, stateDirectory: String, now: Date, expiringWithin days: Int? = nil,
        outDirectory: String? = nil
    ) throws -> StatusReport {
        // Opened once (read-only, no lock): the reads below all go through it.
        let directory = try StateDirectory.open(stateDirectory, create: false)
        let paths = StatePaths(root: stateDirectory)
        // Checked against the manifest and decoded as generate decodes them, in this order (index, then
        // secrets), so the first problem is the one reported (version and file names checked; no
        // decoder text quoted).
        guard let directory, case let records = try directory.readRecords([.index, .secrets]),
            let indexBytes = records.bytes[.index]
        else {
            throw StateError(
                .stateUnreadable,
                "\(stateDirectory) holds no vpnprov state (no index.json): run 'vpnprov generate' first")
        }
        let index = try StateStore.decodeIndex(indexBytes, path: paths.index, sealed: records.sealed)
        let secrets =
            try records.bytes[.secrets].map {
                try StateStore.decodeSecrets($0, path: paths.secrets, sealed: records.sealed)
            } ?? SecretsFile()
        // The expiry list waits for the ACME reports, which it counts.
        var report = make(
            inventory: inventory, stateDirectory: stateDirectory, index: index, secrets: secrets, now: now,
            expiringWithin: nil)
        let pending = Set(try RolloutLedger.read(directory))
        report.rolloutPending = inventory.rolloutHosts.filter(pending.contains)
        if let outDirectory {
            report.acme = acmeCertificates(inventory: inventory, outDirectory: outDirectory, now: now)
        }
        if let days { report.expiring = report.expiring(within: days) }
        return report
    }

    /// The report from the bytes of index.json and secrets.json (nil: there is none), decoded as `make`
    /// decodes the files; touches no file (the fuzzer and the mutation tests call it).
    package static func make(
        inventory: Inventory, stateDirectory: String, indexJSON: [UInt8], secretsJSON: [UInt8]?, now: Date,
        expiringWithin days: Int? = nil
    ) throws -> StatusReport {
        let paths = StatePaths(root: stateDirectory)
        let index = try StateStore.decodeIndex(indexJSON, path: paths.index)
        let secrets = try secretsJSON.map { try StateStore.decodeSecrets($0, path: paths.secrets) } ?? SecretsFile()
        return make(
            inventory: inventory, stateDirectory: stateDirectory, index: index, secrets: secrets, now: now,
            expiringWithin: days)
    }

    static func make(
        inventory: Inventory, stateDirectory: String, index: StateIndex, secrets: SecretsFile, now: Date,
        expiringWithin days: Int?
    ) -> StatusReport {
        func ca(_ r: CARecord) -> CA {
            CA(
                serial: r.serial, commonName: r.commonName, generation: r.generation ?? 1, notAfter: r.notAfter,
                daysLeft: daysLeft(r.notAfter, now))
        }
        let held = index.revokedByCommand ?? [:]
        let (certificates, counts) = certificateRows(index, held: held, now: now)
        var crls: [CRL] = []
        if let crl = index.crl, let record = index.ca {
            crls.append(
                CRL(
                    issuer: record.serial, number: crl.number, nextUpdate: crl.nextUpdate,
                    daysLeft: daysLeft(crl.nextUpdate, now),
                    revoked: crl.revokedSerials.count))
        }
        if let rotation = index.rotation, let crl = rotation.previousCRL {
            crls.append(
                CRL(
                    issuer: rotation.previous.serial, number: crl.number, nextUpdate: crl.nextUpdate,
                    daysLeft: daysLeft(crl.nextUpdate, now), revoked: crl.revokedSerials.count))
        }
        let orphans = namesNotInInventory(inventory, index: index, secrets: secrets, held: held)
        let active = inventory.users.filter { !$0.revoked && held[$0.name] == nil }
        var report = StatusReport(
            stateDirectory: stateDirectory, now: now, ca: index.ca.map(ca),
            rotation: Rotation(
                phase: index.rotation == nil ? "none" : "overlap", startedAt: index.rotation?.startedAt,
                previous: index.rotation.map { ca($0.previous) }),
            certificates: certificates, crls: crls,
            secrets: Secrets(
                psks: secrets.psks.keys.sorted(), passwords: secrets.passwords.keys.sorted(),
                p12Passwords: secrets.p12Passwords.keys.sorted()),
            usersWithoutCertificates: active.filter { index.users[$0.name] == nil }.map(\.name),
            heldUsers: held.keys.sorted(), notInInventory: orphans, expiring: nil, counts: counts)
        if let days = days { report.expiring = report.expiring(within: days) }
        return report
    }

    /// One row per certificate in the index, CA first, and how many node and client certificates have each status.
    private static func certificateRows(
        _ index: StateIndex, held: [String: String], now: Date
    ) -> ([Certificate], [String: Int]) {
        var certificates: [Certificate] = []
        var counts: [String: Int] = [:]
        for record in index.certificates.values {
            var status: String
            switch record.status {
            case .valid: status = "active"
            case .superseded: status = "superseded"
            case .revoked: status = held[record.holder] == record.serial && record.kind == .client ? "held" : "revoked"
            }
            if record.kind == .server || record.kind == .client { counts[status, default: 0] += 1 }
            certificates.append(
                Certificate(
                    kind: record.kind.rawValue, holder: record.holder,
                    identity: record.subjectAltNames.first ?? record.subject,
                    serial: record.serial, notAfter: record.notAfter, daysLeft: daysLeft(record.notAfter, now),
                    status: status,
                    issuer: record.issuer))
        }
        let kindOrder = ["ca": 0, "cross": 1, "server": 2, "client": 3]
        certificates.sort {
            (kindOrder[$0.kind] ?? 9, $0.holder, $0.notAfter, $0.serial) < (
                kindOrder[$1.kind] ?? 9, $1.holder, $1.notAfter, $1.serial
            )
        }
        return (certificates, counts)
    }

    /// The nodes and users the state holds something of but the inventory no longer names.
    private static func namesNotInInventory(
        _ inventory: Inventory, index: StateIndex, secrets: SecretsFile, held: [String: String]
    ) -> [String] {
        let nodeNames = Set(inventory.nodes.map(\.name))
        let userNames = Set(inventory.users.map(\.name))
        var orphans = Set<String>()
        for name in index.nodes.keys where !nodeNames.contains(name) { orphans.insert("node \(name)") }
        for name in secrets.psks.keys where !nodeNames.contains(name) { orphans.insert("node \(name)") }
        for name in index.users.keys where !userNames.contains(name) { orphans.insert("user \(name)") }
        for name in Array(secrets.passwords.keys) + Array(secrets.p12Passwords.keys) + Array(held.keys)
        where !userNames.contains(name) {
            orphans.insert("user \(name)")
        }
        return orphans.sorted()
    }

    /// The CA(s), active certificates and CRLs that expire within `days` days of `now` (or already have).
    func expiring(within days: Int) -> [Expiring] {
        let limit = now + TimeInterval(days) * 86400
        var out: [Expiring] = []
        if let ca, ca.notAfter <= limit {
            out.append(
                Expiring(what: "CA \(ca.serial) (\(ca.commonName))", notAfter: ca.notAfter, daysLeft: ca.daysLeft))
        }
        if let previous = rotation.previous, previous.notAfter <= limit {
            out.append(
                Expiring(
                    what: "previous CA \(previous.serial)", notAfter: previous.notAfter, daysLeft: previous.daysLeft))
        }
        // An ACME node serves the certificate its rollout obtained, not the one of the state (kept, unused).
        let acmeNodes = Set(acme.map(\.node))
        for c in certificates
        where c.status == "active" && (c.kind == "server" || c.kind == "client") && c.notAfter <= limit
            && !(c.kind == "server" && acmeNodes.contains(c.holder))
        {
            out.append(
                Expiring(
                    what: "\(c.kind == "server" ? "node" : "user") \(c.holder) certificate \(c.serial)",
                    notAfter: c.notAfter,
                    daysLeft: c.daysLeft))
        }
        for a in acme {
            guard let notAfter = a.notAfter, let daysLeft = a.daysLeft, notAfter <= limit else { continue }
            out.append(
                Expiring(
                    what: "node \(a.node) ACME certificate \(a.serial ?? "?") (as the last rollout reported it)",
                    notAfter: notAfter, daysLeft: daysLeft))
        }
        for crl in crls where crl.nextUpdate <= limit {
            out.append(
                Expiring(
                    what: "CRL \(crl.number) of CA \(crl.issuer)", notAfter: crl.nextUpdate, daysLeft: crl.daysLeft))
        }
        return out
    }

    /// The human-readable table.
    package var text: String {
        let day = Self.day
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        var out = "state: \(stateDirectory)\n"
        if let ca {
            out +=
                "CA: \(ca.commonName) (generation \(ca.generation), serial \(ca.serial)), expires \(day(ca.notAfter)) (\(Plural.count(ca.daysLeft, "day")))\n"
        }
        if let previous = rotation.previous, let started = rotation.startedAt {
            out +=
                "CA rotation: overlap since \(day(started)); servers still trust the previous CA \(previous.serial) "
                + "(expires \(day(previous.notAfter))); finish with 'vpnprov rotate-ca --finish'\n"
        } else {
            out += "CA rotation: none\n"
        }
        for crl in crls {
            out +=
                "CRL \(crl.number) of CA \(crl.issuer): \(crl.revoked) revoked, next update \(day(crl.nextUpdate)) (\(Plural.count(crl.daysLeft, "day")))\n"
        }
        let order = ["active", "superseded", "revoked", "held"]
        out += "certificates: " + order.map { "\(counts[$0] ?? 0) \($0)" }.joined(separator: ", ") + "\n\n"
        let rows =
            [["KIND", "HOLDER", "IDENTITY", "SERIAL", "NOT AFTER", "DAYS", "STATUS"]]
            + certificates.map {
                [
                    $0.kind, $0.holder.isEmpty ? "-" : $0.holder, $0.identity, $0.serial, day($0.notAfter),
                    String($0.daysLeft), $0.status,
                ]
            }
        var widths = Array(repeating: 0, count: 7)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        for row in rows {
            out +=
                row.enumerated().map { $0.offset == row.count - 1 ? $0.element : pad($0.element, widths[$0.offset]) }
                .joined(separator: "  ") + "\n"
        }
        out += "\n"
        func list(_ items: [String]) -> String { items.isEmpty ? "none" : items.joined(separator: ", ") }
        out += "generated PSKs: \(list(secrets.psks))\n"
        out += "generated passwords: \(list(secrets.passwords))\n"
        out += "p12 passwords: \(list(secrets.p12Passwords))\n"
        out += "users without certificates: \(list(usersWithoutCertificates))\n"
        out += "held (revoked with 'vpnprov revoke'): \(list(heldUsers))\n"
        out += "in the state, not in the inventory: \(list(notInInventory))\n"
        out += "waiting for a rollout: \(list(rolloutPending))\n"
        for a in acme {
            if let notAfter = a.notAfter, let daysLeft = a.daysLeft {
                out +=
                    "ACME certificate of \(a.node) (\(a.domain)): serial \(a.serial ?? "?"), expires \(day(notAfter)) "
                    + "(\(Plural.count(daysLeft, "day"))), issued by \(a.issuer ?? "?"), as the last rollout reported it\n"
            } else {
                out +=
                    "ACME certificate of \(a.node) (\(a.domain)): \(a.problem ?? "not reported yet (roll the node out)")\n"
            }
        }
        if let expiring {
            out += expiring.isEmpty ? "nothing expires within the asked window\n" : ""
            for e in expiring {
                out +=
                    "expiring: \(e.what) \(e.daysLeft < 0 ? "expired" : "expires") \(day(e.notAfter)) (\(Plural.count(e.daysLeft, "day")))\n"
            }
        }
        return out
    }
}

/// Dates in the JSON document as ISO 8601 text (UTC), like the state's index.
@propertyWrapper
package struct ISODate: Sendable, Hashable, Encodable {
    package var wrappedValue: Date
    package init(wrappedValue: Date) { self.wrappedValue = wrappedValue }
    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(ISO8601DateFormatter().string(from: wrappedValue))
    }
}

@propertyWrapper
package struct ISODateOptional: Sendable, Hashable, Encodable {
    package var wrappedValue: Date?
    package init(wrappedValue: Date?) { self.wrappedValue = wrappedValue }
    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if let date = wrappedValue {
            try container.encode(ISO8601DateFormatter().string(from: date))
        } else {
            try container.encodeNil()
        }
    }
}
