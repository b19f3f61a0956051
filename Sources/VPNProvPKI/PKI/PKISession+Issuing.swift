import Foundation
import Synchronization
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Issuing: which certificates are due (new, changed, near expiry), and signing them on all cores.
extension PKISession {
    struct Job {
        var isNode: Bool
        var name: String
        var profile: CertificateProfile
        var serial: String
        var reuse: HeldCertificate?
        package var reason: String?
        var p12Password: String?
        /// Only the p12 needs building (certificate and key unchanged).
        var p12Only: Bool
        /// With `p12Only`: the password-protected p12 exists and is kept (only the open one is built).
        var keepP12 = false
    }

    struct JobOutput: Sendable {
        var held: HeldCertificate
        var keyID: String
        var newKey: Bool
        var p12: [UInt8]?
        /// The empty-password p12 for `.sswan` profiles (user certificates only).
        var openP12: [UInt8]?
    }

    /// Completes the records of current certificates issued before the index recorded their extended key
    /// usages, from the certificates themselves, so `renewalReason` can tell one Windows would refuse (no
    /// serverAuth / clientAuth). Once per state: the completed records are committed with the index.
    func recordExtendedKeyUsages() throws {
        for (isNode, holders) in [(true, index.nodes), (false, index.users)] {
            for (name, holder) in holders where index.certificates[holder.serial]?.extendedKeyUsages == nil {
                guard let held = isNode ? store.nodes[name] : store.users[name],
                    index.certificates[holder.serial] != nil
                else { continue }
                let certificate: X509Certificate
                do { certificate = try held.certificate() } catch {
                    throw Self.cryptoFailure("cannot read the certificate of '\(name)'", error)
                }
                index.certificates[holder.serial]!.extendedKeyUsages = certificate.extendedKeyUsageOIDs
            }
        }
    }

    /// A certificate with policies `had`, replaced by one with `kept`, opened a node that is still in
    /// the inventory and that the new one does not. (A node that left the inventory does not count:
    /// its own certificate is revoked, so removing a node re-issues and revokes nobody.)
    func losesNode(_ had: [String], keeping kept: [String]) -> Bool {
        let lost = Set(had).subtracting(kept)
        return !lost.isEmpty && !lost.isDisjoint(with: inventory.nodes.map { NodeAccessPolicy.oid(forNode: $0.name) })
    }

    /// Why the current certificate must be replaced, or nil to keep it.
    func renewalReason(_ profile: CertificateProfile, holder: HolderRecord?, notAfter: Date) -> (
        String, reuseKey: Bool
    )? {
        guard let holder, let record = index.certificates[holder.serial] else { return nil }
        let keyOK = record.keyType == profile.keyType
        if record.kind != profile.kind || record.subject != profile.subject.description
            || record.subjectAltNames != profile.subjectAltNames.map(\.description)
        {
            // Certificates from before vpnprov added an IP address as dNSName too: say that Windows needs it.
            let wanted = profile.subjectAltNames.map(\.description)
            let missing = wanted.filter { !record.subjectAltNames.contains($0) }
            if record.kind == profile.kind && record.subject == profile.subject.description
                && record.subjectAltNames.allSatisfy(wanted.contains) && !missing.isEmpty
                && missing.allSatisfy({ $0.hasPrefix("DNS:") && IPAddressText.parse(String($0.dropFirst(4))) != nil })
            {
                return (
                    "no dNSName for its IP address (\(missing.map { String($0.dropFirst(4)) }.joined(separator: ", "))), which Windows requires",
                    keyOK
                )
            }
            return ("identity changed", keyOK)
        }
        if !keyOK { return ("key type changed", false) }
        if let issuer = record.issuer, issuer != index.ca?.serial { return ("CA rotated", true) }
        if let have = record.extendedKeyUsages {
            let lacking = profile.extendedKeyUsages.filter { !have.contains($0.oid) }
            if !lacking.isEmpty {
                let names = lacking.map { "\($0)" }.joined(separator: " and ")
                return (
                    "lacks the \(names) extended key usage\(lacking.count > 1 ? "s" : "")\(lacking.contains(.ikeIntermediate) && lacking.count == 1 ? "" : " Windows requires")",
                    true
                )
            }
        }
        if record.days != profile.days { return ("lifetime changed", true) }
        if (record.crlDistributionPoints ?? []) != profile.crlDistributionPoints {
            return ("CRL distribution point changed", true)
        }
        if let had = record.policies {
            // A node added to the user's nodes needs a new certificate; so does one taken away while it
            // is still in the inventory. A node that left the inventory needs nothing (its own
            // certificate is revoked), so removing a node does not re-issue every user.
            let have = Set(had)
            let want = Set(profile.policies)
            if !want.isSubset(of: have) { return ("nodes added", true) }
            if losesNode(had, keeping: profile.policies) { return ("nodes removed", true) }
        } else if !profile.policies.isEmpty {
            return ("not yet scoped to the user's nodes", true)
        }
        if record.notAfter.timeIntervalSince(now) < PKIManager.renewalWindow && notAfter > record.notAfter {
            let days = Int(max(0, record.notAfter.timeIntervalSince(now)) / 86400)
            return ("expires in \(Plural.count(days, "day"))", true)
        }
        return nil
    }

    /// Issues every certificate that is due (new holders, changed profiles, near expiry) and builds the
    /// p12 files that are missing, on all cores, then records and stages the results in inventory order.
    func issue(
        profiles: (nodes: [CertificateProfile], users: [CertificateProfile]), progress: (@Sendable (Int, Int) -> Void)?
    ) throws {
        guard let ca = store.caCertificate else { throw StateError(.stateInconsistent, "the state has no CA") }
        try recordExtendedKeyUsages()
        let jobs = try dueJobs(profiles: profiles, ca: ca)
        guard !jobs.isEmpty else { return }
        let caKey = try store.caKey(passphrase: passphrase)
        let issueTime = self.now
        let issued = Atomic<Int>(0)
        let outputs = try parallelMap(jobs.count) { i -> JobOutput in
            let output = try Self.perform(jobs[i], ca: ca, caKey: caKey, issueTime: issueTime)
            if let progress {
                let done = issued.wrappingAdd(1, ordering: .relaxed).newValue
                progress(done, jobs.count)
            }
            return output
        }
        for (job, output) in zip(jobs, outputs) { try record(job, output) }
    }

    /// The jobs of this run, in inventory order (nodes, then users), each with a fresh serial unless it
    /// only builds a p12.
    func dueJobs(profiles: (nodes: [CertificateProfile], users: [CertificateProfile]), ca: X509Certificate) throws
        -> [Job]
    {
        var jobs: [Job] = []
        var plannedSerials = Set<String>()
        func serial() throws -> String {
            var s = try newSerial()
            while plannedSerials.contains(s) { s = try newSerial() }
            plannedSerials.insert(s)
            return s
        }
        func notAfter(_ profile: CertificateProfile) -> Date {
            min(now + TimeInterval(profile.days) * 86400, ca.notAfter)
        }
        for (node, profile) in zip(inventory.nodes, profiles.nodes) {
            let holder = index.nodes[node.name]
            if holder == nil {
                jobs.append(Job(isNode: true, name: node.name, profile: profile, serial: try serial(), p12Only: false))
            } else if let (reason, reuseKey) = renewalReason(profile, holder: holder, notAfter: notAfter(profile)) {
                jobs.append(
                    Job(
                        isNode: true, name: node.name, profile: profile, serial: try serial(),
                        reuse: reuseKey ? store.nodes[node.name] : nil,
                        reason: reason, p12Only: false))
            }
        }
        for (user, profile) in zip(inventory.users, profiles.users) where user.cert && !user.revoked {
            let holder = index.users[user.name]
            let password = store.secrets.p12Passwords[user.name]
            if holder == nil {
                jobs.append(
                    Job(
                        isNode: false, name: user.name, profile: profile, serial: try serial(), p12Password: password,
                        p12Only: false))
            } else if let (reason, reuseKey) = renewalReason(profile, holder: holder, notAfter: notAfter(profile)) {
                jobs.append(
                    Job(
                        isNode: false, name: user.name, profile: profile, serial: try serial(),
                        reuse: reuseKey ? store.users[user.name] : nil,
                        reason: reason, p12Password: password, p12Only: false))
            } else if holder?.p12 == nil || holder?.openP12 == nil {
                jobs.append(
                    Job(
                        isNode: false, name: user.name, profile: profile, serial: holder!.serial,
                        reuse: store.users[user.name],
                        reason: nil, p12Password: password, p12Only: true, keepP12: holder?.p12 != nil))
            }
        }
        return jobs
    }

    /// One job's work, on a worker thread: the key (reused or new), the certificate signed by `ca`, and
    /// the p12 files of a user.
    static func perform(_ job: Job, ca: X509Certificate, caKey: PrivateKey, issueTime: Date) throws -> JobOutput {
        do {
            var held: HeldCertificate
            var newKey = false
            // The PKCS#12 contents (the key's PKCS#8 form) also give a new key its PEM.
            var contents: PKCS12Contents?
            if job.p12Only, let reuse = job.reuse {
                held = reuse
            } else {
                let key: PrivateKey
                var keyPEM: String?
                if let reuse = job.reuse {
                    (key, keyPEM) = (try reuse.privateKey(), reuse.keyPEM)
                } else {
                    key = try PrivateKey.generate(job.profile.keyType.algorithm)
                    newKey = true
                }
                let cert = try sign(job.profile, serial: job.serial, key: key, ca: ca, caKey: caKey, at: issueTime)
                if job.p12Password != nil {
                    contents = try PKCS12Contents(
                        key: key, certificate: cert, caCertificates: [ca], friendlyName: job.name)
                }
                held = HeldCertificate(
                    parsedCertificate: cert, certificatePEM: cert.pem, key: key,
                    keyPEM: try keyPEM ?? contents?.keyPEM() ?? key.pkcs8PEM())
            }
            let certificate = try held.certificate()
            let keyID = hexString(Array(Digest.sha256(try certificate.publicKeyDER()).prefix(20)))
            var p12: [UInt8]? = nil
            var openP12: [UInt8]? = nil
            if let password = job.p12Password {
                let made =
                    try contents
                    ?? PKCS12Contents(
                        key: try held.privateKey(), certificate: certificate, caCertificates: [ca],
                        friendlyName: job.name)
                if !job.keepP12 { p12 = try made.container(password: password) }
                openP12 = try made.containerWithEmptyPassword()
            }
            return JobOutput(held: held, keyID: keyID, newKey: newKey, p12: p12, openP12: openP12)
        } catch {
            let what = job.isNode ? "node '\(job.name)'" : "user '\(job.name)'"
            throw Self.cryptoFailure("cannot issue the certificate of \(what)", error)
        }
    }

    /// The certificate of `profile` for `key`, numbered `serial`, signed by `ca` as of `issueTime`.
    static func sign(
        _ profile: CertificateProfile, serial: String, key: PrivateKey, ca: X509Certificate, caKey: PrivateKey,
        at issueTime: Date
    ) throws -> X509Certificate {
        var template = CertificateTemplate(
            serial: bytesFromHex(serial)!, subject: profile.subject,
            notBefore: issueTime - PKIManager.backdate,
            notAfter: min(issueTime + TimeInterval(profile.days) * 86400, ca.notAfter),
            subjectAlternativeNames: profile.subjectAltNames,
            extendedKeyUsages: profile.extendedKeyUsages,
            keyUsage: profile.keyUsage)
        template.crlDistributionPoints = profile.crlDistributionPoints
        template.policies = profile.policies
        return try CertificateIssuer.issue(template, subjectKey: key, issuer: ca, issuerKey: caKey)
    }

    /// Records a finished job: its certificate in the index (the one it replaces superseded, or revoked
    /// when it opened a node the new one does not), its files staged, its holder current.
    func record(_ job: Job, _ output: JobOutput) throws {
        var holder = HolderRecord(
            serial: job.serial, key: output.keyID, p12: job.keepP12 ? index.users[job.name]?.p12 : nil,
            keySHA256: hexString(Digest.sha256(Array(output.held.keyPEM.utf8))),
            certificateSHA256: hexString(Digest.sha256(Array(output.held.certificatePEM.utf8))))
        if !job.p12Only { try recordCertificate(job, output) }
        if let p12 = output.p12 { holder.p12 = stageP12(p12, serial: job.serial, suffix: "") }
        if let p12 = output.openP12 { holder.openP12 = stageP12(p12, serial: job.serial, suffix: "-open") }
        if job.isNode {
            index.nodes[job.name] = holder
            store.nodes[job.name] = output.held
        } else {
            index.users[job.name] = holder
            store.users[job.name] = output.held
        }
    }

    /// A newly signed certificate (and a new key): staged, recorded in the index, and the holder's
    /// previous certificate superseded (or revoked).
    func recordCertificate(_ job: Job, _ output: JobOutput) throws {
        let paths = store.paths
        let cert = try output.held.certificate()
        if output.newKey { store.stage(paths.key(output.keyID), Array(output.held.keyPEM.utf8)) }
        store.stage(paths.certificate(job.serial), Array(output.held.certificatePEM.utf8))
        let previous = job.isNode ? index.nodes[job.name] : index.users[job.name]
        if let previous, var old = index.certificates[previous.serial], old.status == .valid {
            old.status = .superseded
            // A certificate that opened a node its holder no longer may use must stop working
            // at the next rollout, not when it expires: it goes onto the CRL.
            if let had = old.policies, losesNode(had, keeping: job.profile.policies) {
                old.status = .revoked
                old.revokedAt = now
                old.revocationReason = "no longer allowed on every node it names"
                changes.append(
                    PKIChange(.revoked, .user(job.name), serial: previous.serial, reason: "nodes narrowed"))
            }
            index.certificates[previous.serial] = old
        }
        index.certificates[job.serial] = CertificateRecord(
            serial: job.serial, kind: job.profile.kind, holder: job.name,
            subject: job.profile.subject.description,
            subjectAltNames: job.profile.subjectAltNames.map(\.description), keyType: job.profile.keyType,
            days: job.profile.days,
            notBefore: cert.notBefore, notAfter: cert.notAfter, status: .valid,
            extendedKeyUsages: cert.extendedKeyUsageOIDs, issuer: index.ca?.serial,
            crlDistributionPoints: job.profile.crlDistributionPoints.isEmpty
                ? nil : job.profile.crlDistributionPoints,
            policies: job.profile.policies.isEmpty ? nil : job.profile.policies)
        changes.append(
            PKIChange(
                previous == nil ? .issued : .reissued, job.isNode ? .node(job.name) : .user(job.name),
                serial: job.serial,
                reason: job.reason))
    }

    /// Stages a p12 of the certificate `serial` under its content-addressed name (`suffix` "-open" for
    /// the passwordless one) and returns its record.
    func stageP12(_ p12: [UInt8], serial: String, suffix: String) -> P12Record {
        let file = "\(serial)-\(hexString(Array(Digest.sha256(p12).prefix(8))))\(suffix).p12"
        store.stage(store.paths.p12(file), p12)
        store.p12s[file] = p12
        return P12Record(file: file, sha256: hexString(Digest.sha256(p12)))
    }
}
