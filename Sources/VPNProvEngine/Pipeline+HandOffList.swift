import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvSupport

/// `vpnprov handoff-revoke`'s and `handoff-list`'s options.
package struct HandOffListOptions: Sendable {
    package var tree: GenerateOptions
    /// `handoff-revoke`: whose links end.
    package var users: [String]
    /// Publish (and so fetch the audit journal) before anything else.
    package var publish: Bool

    package init(tree: GenerateOptions, users: [String] = [], publish: Bool) {
        self.tree = tree
        self.users = users
        self.publish = publish
    }
}

extension Pipeline {
    /// Where each publish leaves the site's audit journal (`rollout/`: what a rollout reports back).
    static func auditPath(_ out: String) -> String { out + "/rollout/handoff/audit.jsonl" }
    /// Largest journal read (about 200,000 events).
    static let auditLimit = 64 << 20

    /// Ends the live links of `options.users` and publishes.
    package static func handOffRevoke(
        _ options: HandOffListOptions, publisher: (any HandOffPublisher)?, output: any RunReporter
    ) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            guard let (inventory, site) = try handOffInventory(options.tree, output: output) else { return .failure }
            // Before any generate no link was made: nothing to end, and no state directory to make.
            guard FileManager.default.fileExists(atPath: options.tree.stateDirectory) else {
                let names = inventory.users.map(\.name)
                for name in options.users where !names.contains(name) {
                    let hint = Spelling.closest(to: name, among: names).map { "; did you mean '\($0)'?" } ?? ""
                    output.error(.noSuchUser, "user '\(name)' is not in \(options.tree.inventory)\(hint)")
                    return .failure
                }
                output.info("vpnprov: \(listed(options.users)) had no live link (no state yet: nothing was handed off)")
                output.record(HandOffReport(site: site.address, published: false))
                return .success
            }
            let lock = try StateLock(stateDirectory: options.tree.stateDirectory)
            defer { lock.release() }
            let now = Int(options.tree.now.timeIntervalSince1970)
            var ledger = try HandOffLedger.read(lock.stateDirectory)
            let known = Set(ledger.map(\.user) + inventory.users.map(\.name))
            for name in options.users where !known.contains(name) {
                let hint = Spelling.closest(to: name, among: known.sorted()).map { "; did you mean '\($0)'?" } ?? ""
                output.error(.noSuchUser, "user '\(name)' is not in \(options.tree.inventory) and has no link\(hint)")
                return .failure
            }
            var report = HandOffReport(site: site.address, published: false)
            for i in ledger.indices where options.users.contains(ledger[i].user) && ledger[i].isLive(at: now) {
                ledger[i].ended = .init(reason: .revoked, at: now)
                report.ended.append(.init(user: ledger[i].user, id: ledger[i].id, reason: "revoked"))
            }
            // Nothing ended, nothing to write or publish (the state may not even have an output tree yet).
            if !report.ended.isEmpty {
                try HandOffLedger.write(ledger, now: now, in: lock.stateDirectory)
                try HandOffBundle.refresh(ledger, now: now, out: options.tree.outDirectory)
            }
            if options.publish, let publisher, !report.ended.isEmpty {
                do {
                    try publisher.publish(outDirectory: options.tree.outDirectory)
                } catch let failure {
                    output.diagnostics([
                        .error(
                            .handOffPublish,
                            "the links are withdrawn here but publishing to \(site.address) failed, so the site "
                                + "still serves them until a publish succeeds: \(failure)", at: nil,
                            notes: HandOffPublishError.notes(of: failure))
                    ])
                    return .environment
                }
                report.published = true
            }
            output.record(report)
            if report.ended.isEmpty {
                output.info("vpnprov: \(listed(options.users)) had no live link")
            }
            reportEnded(report.ended, site: site.address, output: output, publishedNow: report.published)
            if !report.published && !report.ended.isEmpty {
                output.info("vpnprov: next: publish with\n  \(publishCommand(options.tree))")
            }
            return .success
        }
    }

    /// `"handoff"` of `handoff-list --format json`.
    /// `handoffEnded` of `generate`, `revoke` and the lifecycle commands: the links the run ended.
    struct EndedLinks: CommandResult {
        var ended: [HandOffReport.Ended]

        func write(to document: inout KeyedEncodingContainer<DocumentKey>) throws {
            try document.encode(ended, forKey: .handoffEnded)
        }
    }

    struct HandOffListing: KeyedResult {
        static var key: DocumentKey { .handoff }

        struct Event: Encodable {
            var time: String
            var event: String
            var file: String?
            var reason: String?
            var address: String?
            var agent: String?
        }

        struct Link: Encodable {
            var user: String
            var id: String
            var created: String
            var expires: String
            var downloads: Int
            var files: [String]
            /// live, used, expired, revoked or replaced.
            var status: String
            var events: [Event]
        }

        var site: String
        /// The copy of the site's journal read, and whether this run fetched it.
        var audit: String
        var fetched: Bool
        var links: [Link]
    }

    /// What is out, what was fetched, when and from where: the links of the state with the site's journal.
    package static func handOffList(
        _ options: HandOffListOptions, publisher: (any HandOffPublisher)?, output: any RunReporter
    ) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            guard let (_, site) = try handOffInventory(options.tree, output: output) else { return .failure }
            let out = options.tree.outDirectory
            let ledger: [HandOffLink]
            do {
                let lock = try StateLock(stateDirectory: options.tree.stateDirectory)
                defer { lock.release() }
                ledger = try HandOffLedger.read(lock.stateDirectory)
                if options.publish, let publisher, !ledger.isEmpty {
                    do {
                        try publisher.publish(outDirectory: out)
                    } catch let failure {
                        output.diagnostics([
                            .warning(
                                .handOffPublish,
                                "could not fetch the audit journal from \(site.address) (\(failure)); listing the "
                                    + "copy of the last publish", at: nil, notes: HandOffPublishError.notes(of: failure)
                            )
                        ])
                    }
                }
            }
            let (events, unreadable) = try readAudit(out)
            if unreadable > 0 {
                output.warning(
                    .handOffRecord,
                    "\(Plural.count(unreadable, "line")) of \(display(auditPath(out), options.tree)) could not be read")
            }
            let now = Int(options.tree.now.timeIntervalSince1970)
            let listing = HandOffListing(
                site: site.address, audit: display(auditPath(out), options.tree), fetched: options.publish,
                links: ledger.filter(\.shown).reversed().map { link in
                    let mine = events[link.id] ?? []
                    let endedBySite = mine.last { $0.event == "ended" }?.reason
                    let status =
                        link.ended?.reason.rawValue ?? endedBySite ?? (now >= link.expires ? "expired" : "live")
                    return HandOffListing.Link(
                        user: link.user, id: link.id, created: isoTime(link.created), expires: isoTime(link.expires),
                        downloads: link.downloads, files: link.files, status: status,
                        events: mine.filter { $0.event != "published" && $0.event != "ended" })
                })
            output.record(listing)
            var text = "\(site.address): \(Plural.count(listing.links.count, "link"))\n"
            for link in listing.links {
                let downloads = link.events.filter { $0.event == "download" }.count
                text += "\(link.user)  \(link.id.prefix(12))  made \(humanTime(isoSeconds(link.created)))  until "
                text +=
                    "\(humanTime(isoSeconds(link.expires)))  \(link.status), \(Plural.count(downloads, "download"))\n"
                for event in link.events {
                    let what = [event.event, event.file, event.reason].compactMap { $0 }.joined(separator: " ")
                    text += "  \(event.time)  \(what)  \(event.address ?? "")  \(event.agent ?? "")\n"
                }
            }
            output.result(text)
            return .success
        }
    }

    /// The inventory of a hand-off command and its site, or nil (reported).
    static func handOffInventory(_ tree: GenerateOptions, output: any RunReporter) throws -> (Inventory, HandOffPlan)? {
        let (loaded, _) = try inventoryForStateCommand(tree, output: output)
        guard let inventory = loaded, let site = handOffSite(inventory, tree, output: output) else { return nil }
        return (inventory, site)
    }

    /// The site's journal as last fetched, by link id, in order; and how many lines were not events.
    static func readAudit(_ out: String) throws -> ([String: [HandOffListing.Event]], Int) {
        let path = auditPath(out)
        guard FileManager.default.fileExists(atPath: path) else { return ([:], 0) }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: auditLimit, followSymlinks: false)
        } catch {
            throw OutputError("cannot read \(path): \(error)")
        }
        var events: [String: [HandOffListing.Event]] = [:]
        var unreadable = 0
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let link = object["link"] as? String, let time = object["time"] as? String,
                let event = object["event"] as? String
            else {
                unreadable += 1
                continue
            }
            events[link, default: []].append(
                HandOffListing.Event(
                    time: time, event: event, file: object["file"] as? String, reason: object["reason"] as? String,
                    address: object["address"] as? String, agent: object["agent"] as? String))
        }
        return (events, unreadable)
    }

    static func isoSeconds(_ iso: String) -> Int {
        Int(ISO8601DateFormatter().date(from: iso)?.timeIntervalSince1970 ?? 0)
    }

    /// After `generate`, `revoke` or a lifecycle command: the live links of users whose profiles changed are
    /// ended as replaced, those of users who were revoked or left the inventory as revoked, in the record and
    /// in `<out>/handoff/`, which the next publish or rollout takes to the site. Nothing without a record.
    static func endHandOffLinks(
        changed: [String], removed: [String], inventory: Inventory, lock: StateLock, options: GenerateOptions,
        output: any RunReporter
    ) {
        do {
            var ledger = try HandOffLedger.read(lock.stateDirectory)
            guard !ledger.isEmpty else { return }
            let now = Int(options.now.timeIntervalSince1970)
            var ended: [HandOffReport.Ended] = []
            for i in ledger.indices where ledger[i].isLive(at: now) {
                let user = ledger[i].user
                let reason: HandOffLink.EndReason
                if removed.contains(user) {
                    reason = .revoked
                } else if changed.contains(user) {
                    reason = .replaced
                } else {
                    continue
                }
                ledger[i].ended = .init(reason: reason, at: now)
                ended.append(.init(user: user, id: ledger[i].id, reason: reason.rawValue))
            }
            guard !ended.isEmpty else { return }
            try HandOffLedger.write(ledger, now: now, in: lock.stateDirectory)
            try HandOffBundle.refresh(ledger, now: now, out: options.outDirectory)
            output.record(EndedLinks(ended: ended))
            let site = inventory.handOff?.address ?? "the hand-off site"
            reportEnded(ended, site: site, output: output, publishedNow: false)
            // The playbook that only publishes: `vpnprov handoff` would also hand out new links.
            output.info(
                "vpnprov: next: take them off \(site) with\n  \(publishCommand(options))\n(a rollout of "
                    + "deploy/site.yml that reaches \(site) does it too)")
        } catch {
            output.warning(
                .handOffRecord,
                "the hand-off links of \(listed(removed + changed)) could not be ended (\(error)); run "
                    + "'vpnprov handoff-revoke' for them")
        }
    }
}
