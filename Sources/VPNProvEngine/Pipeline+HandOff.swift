import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport

/// Publishes `<out>/handoff/` to the hand-off site and fetches its audit journal: the command line runs the
/// generated `deploy/handoff.yml` with ansible-playbook. Throws what failed, never a secret.
package protocol HandOffPublisher: Sendable {
    func publish(outDirectory: String) throws(HandOffPublishError)
}

package struct HandOffPublishError: Error, Sendable, CustomStringConvertible {
    package var message: String
    /// The last lines the publishing program printed: shown a note a line under the error.
    package var output: [String]
    package var description: String { message }
    package init(_ message: String, output: [String] = []) {
        self.message = message
        self.output = output
    }

    /// The output's lines of a failed publish as notes, so each is printed as a line of its own.
    static func notes(of failure: any Error) -> [Diagnostic.Note] {
        ((failure as? HandOffPublishError)?.output ?? []).map { .init(location: nil, message: $0) }
    }
}

/// `vpnprov handoff`'s options: the tree, the users (none: those whose profiles changed since they were
/// last handed off), a lifetime and downloads per file other than the site's, whether to publish.
package struct HandOffOptions: Sendable {
    package var tree: GenerateOptions
    package var users: [String]
    package var all: Bool
    package var lifetime: Int?
    package var downloads: Int?
    package var publish: Bool
    package var terminalQR: Bool

    package init(
        tree: GenerateOptions, users: [String], all: Bool, lifetime: Int?, downloads: Int?, publish: Bool,
        terminalQR: Bool
    ) {
        self.tree = tree
        self.users = users
        self.all = all
        self.lifetime = lifetime
        self.downloads = downloads
        self.publish = publish
        self.terminalQR = terminalQR
    }
}

/// `vpnprov handoff`, `handoff-revoke` and `handoff-list` (docs/handoff.md), and what `generate`, `revoke` and
/// the lifecycle commands do to the links of users whose profiles they changed.
extension Pipeline {
    /// `"handoff"` of the hand-off commands' `--format json` (the links' URLs only where they were made).
    struct HandOffReport: KeyedResult {
        static var key: DocumentKey { .handoff }

        struct Link: Encodable {
            var user: String
            var url: String
            var id: String
            var expires: String
            var downloads: Int
            var files: [String]
            var qr: [String: String]
        }

        struct Ended: Encodable {
            var user: String
            var id: String
            var reason: String
        }

        var site: String
        var links: [Link] = []
        var ended: [Ended] = []
        var published: Bool
    }

    package static func handOff(
        _ options: HandOffOptions, publisher: (any HandOffPublisher)?, output: any RunReporter
    ) throws(EngineError) -> Outcome {
        try run(output) { () throws -> Outcome in
            if let code = checkOutputLocation(options.tree, output: output) { return code }
            // Without a site, or before any generate, nothing is locked: no state directory is made.
            var site: HandOffPlan?
            let built = try build(options.tree, output: output, persist: false) { inventory in
                site = handOffSite(inventory, options.tree, output: output)
                return site != nil && hasState(options.tree, output: output)
            }
            guard let built, let site else { return .failure }
            defer { built.lock.release() }
            let inventory = built.prepared.inventory
            if built.prepared.changes.contains(where: { $0.kind == .caCreated }) {
                _ = hasState(options.tree, output: output, empty: true)
                return .failure
            }
            guard stateIsCurrent(built.prepared.changes, output: output) else { return .failure }
            let now = Int(options.tree.now.timeIntervalSince1970)
            let directory = built.lock.stateDirectory
            let out = options.tree.outDirectory
            var ledger = try HandOffLedger.read(directory)
            var report = HandOffReport(site: site.address, published: false)
            let folders = try userFolders(built)
            report.ended += reconcile(&ledger, inventory: inventory, folders: folders, now: now)

            guard
                let users = try chooseUsers(
                    options, inventory: inventory, folders: folders, ledger: ledger, output: output)
            else { return .failure }
            if users.isEmpty {
                output.info("vpnprov: every user's profiles are handed off already (name users with --users, or --all)")
            }
            let made = try makeLinks(
                for: users, folders: folders, ledger: &ledger, ended: &report.ended, site: site,
                deployment: inventory.name, options: options, now: now)
            // Recorded before anything leaves: a run that dies later leaves links never shown, which the
            // next hand-off ends.
            try HandOffLedger.write(ledger, now: now, in: directory)
            try HandOffBundle.refresh(ledger, fresh: Set(made.map(\.link.id)), now: now, out: out)
            if options.publish, let publisher {
                guard
                    try publish(
                        with: publisher, made: made, ledger: &ledger, site: site, directory: directory, out: out,
                        now: now, output: output)
                else { return .environment }
                report.published = true
            }
            for i in ledger.indices where made.contains(where: { $0.link.id == ledger[i].id }) {
                ledger[i].shown = true
            }
            try HandOffLedger.write(ledger, now: now, in: directory)
            let text = try present(made, in: &report, options: options)
            output.record(report)
            if !text.isEmpty { output.secretResult(text) }
            reportEnded(report.ended, site: site.address, output: output, publishedNow: report.published)
            if report.published && !made.isEmpty {
                output.info(
                    "vpnprov: \(Plural.count(made.count, "link")) published on \(site.address); send each user theirs")
            } else if report.published {
                output.info("vpnprov: \(site.address) is up to date (no new link)")
            } else if !made.isEmpty || !report.ended.isEmpty {
                output.info(
                    "vpnprov: next: publish with\n  \(publishCommand(options.tree))\n(or roll deploy/site.yml out), "
                        + "then send each user their link")
            }
            return .success
        }
    }

    /// Whether the state is what the last `generate` left: a hand-off of anything else would hand out files the
    /// nodes do not expect. Reports the first few pending changes (a large fleet's edit has thousands).
    static func stateIsCurrent(_ changes: [PKIChange], output: any RunReporter) -> Bool {
        guard !changes.isEmpty else { return true }
        let shown = changes.prefix(3).map(\.pendingDescription).joined(separator: "; ")
        let more = changes.count > 3 ? "; and \(changes.count - 3) more" : ""
        output.error(
            .handOffStale,
            "the state would change (\(shown)\(more)): run 'vpnprov generate' first, so the links hand out "
                + "what the nodes expect")
        return false
    }

    /// A new link for each user (its sealed files under OUT/handoff/), each user's live link ended as replaced;
    /// the links recorded in `ledger`, not yet shown.
    static func makeLinks(
        for users: [String], folders: [String: UserFolder], ledger: inout [HandOffLink],
        ended: inout [HandOffReport.Ended],
        site: HandOffPlan, deployment: String, options: HandOffOptions, now: Int
    ) throws -> [(link: HandOffLink, url: String)] {
        let lifetime = options.lifetime ?? site.lifetime
        let downloads = options.downloads ?? site.downloads
        let out = options.tree.outDirectory
        var made: [(link: HandOffLink, url: String)] = []
        for user in users {
            guard let folder = folders[user] else { continue }
            for i in ledger.indices where ledger[i].user == user && ledger[i].isLive(at: now) {
                ledger[i].ended = .init(reason: .replaced, at: now)
                ended.append(.init(user: user, id: ledger[i].id, reason: "replaced"))
            }
            let sources = try readFolder(user: user, folder: folder, out: out)
            let token = try HandOffToken.make()
            let (link, names) = try HandOffPackage.link(
                user: user, deployment: deployment, site: site.address, sources: sources, token: token,
                created: now, expires: now + lifetime, downloads: downloads)
            try HandOffBundle.write(link, out: out)
            let record = HandOffLink(
                id: token.id, user: user, created: now, expires: now + lifetime, downloads: downloads,
                folder: folder.digest, files: names)
            ledger.append(record)
            made.append((record, site.link(token: token.text)))
        }
        return made
    }

    /// Publishes the site's part of OUT; on failure withdraws the links this run made, reports it and returns
    /// false.
    static func publish(
        with publisher: any HandOffPublisher, made: [(link: HandOffLink, url: String)], ledger: inout [HandOffLink],
        site: HandOffPlan, directory: StateDirectory, out: String, now: Int, output: any RunReporter
    ) throws -> Bool {
        do {
            try publisher.publish(outDirectory: out)
            return true
        } catch let failure {
            for i in ledger.indices where made.contains(where: { $0.link.id == ledger[i].id }) {
                ledger[i].ended = .init(reason: .revoked, at: now)
            }
            try HandOffLedger.write(ledger, now: now, in: directory)
            try HandOffBundle.refresh(ledger, now: now, out: out)
            output.diagnostics([
                .error(
                    .handOffPublish,
                    "publishing to \(site.address) failed, so no link was made (the ones this run prepared "
                        + "are withdrawn, and the earlier links of \(listed(made.map(\.link.user))) end at the "
                        + "next publish; the next 'vpnprov handoff' hands them off again): \(failure)",
                    at: nil, notes: HandOffPublishError.notes(of: failure))
            ])
            return false
        }
    }

    /// Each link's QR code written, the link added to the report, and the text that shows them (secret: the
    /// links themselves).
    static func present(
        _ made: [(link: HandOffLink, url: String)], in report: inout HandOffReport, options: HandOffOptions
    ) throws -> String {
        var text = ""
        for (link, url) in made {
            let qr = try HandOffBundle.writeQR(url, user: link.user, out: options.tree.outDirectory)
            report.links.append(
                .init(
                    user: link.user, url: url, id: link.id, expires: Self.isoTime(link.expires),
                    downloads: link.downloads, files: link.files,
                    qr: ["png": display(qr.png, options.tree), "svg": display(qr.svg, options.tree)]))
            text += "\(link.user): \(url)\n"
            text += "  until \(Self.humanTime(link.expires)), \(Self.downloadsText(link.downloads)): "
            text += link.files.joined(separator: ", ") + "\n"
            text += "  QR code: \(display(qr.png, options.tree)), \(display(qr.svg, options.tree))\n"
            if options.terminalQR { text += qr.text }
        }
        return text
    }

    /// Whether the state directory exists (and, with `empty`, reports that it holds no CA yet): before any
    /// `generate` there is nothing to hand off.
    static func hasState(_ tree: GenerateOptions, output: any RunReporter, empty: Bool = false) -> Bool {
        guard empty || !FileManager.default.fileExists(atPath: tree.stateDirectory) else { return true }
        output.error(
            .handOffStale,
            "no state yet in \(display(tree.stateDirectory, tree)): run 'vpnprov generate' first, then hand the "
                + "profiles off")
        return false
    }

    /// The site of the inventory, or nil (reported) without `handoff:`.
    static func handOffSite(_ inventory: Inventory, _ tree: GenerateOptions, output: any RunReporter) -> HandOffPlan? {
        guard let site = HandOffPlan.make(inventory, acmeCABundlePEM: nil) else {
            output.error(
                .handOffSiteMissing,
                "\(tree.inventory) names no hand-off site: add 'handoff: {address: ...}' (docs/handoff.md), run "
                    + "'vpnprov generate' and roll deploy/site.yml out, then hand the profiles off")
            return nil
        }
        return site
    }

    /// A user's folder as `generate` last wrote it: the files of its render-cache entry with their digests.
    struct UserFolder {
        var files: [(path: String, sha256: String)]
        var digest: String
    }

    /// The folders of the active users that are what `generate` would write now (the fresh entries); a user
    /// missing here has no folder or one that changed since.
    static func userFolders(_ built: Built) throws -> [String: UserFolder] {
        var out: [String: UserFolder] = [:]
        for user in built.prepared.inventory.users where !user.revoked {
            guard let entry = built.fresh[user.name] else { continue }
            let prefix = ClientRenderer.folder(user: user.name) + "/"
            let files = entry.files.map { (path: String($0.path.dropFirst(prefix.count)), sha256: $0.sha256Hex) }
            guard !files.isEmpty else { continue }
            out[user.name] = UserFolder(files: files, digest: HandOffLedger.folderDigest(files))
        }
        return out
    }

    /// Ends the live links whose user is gone or revoked, whose profiles changed, or that were never shown.
    static func reconcile(
        _ ledger: inout [HandOffLink], inventory: Inventory, folders: [String: UserFolder], now: Int
    ) -> [HandOffReport.Ended] {
        var ended: [HandOffReport.Ended] = []
        for i in ledger.indices where ledger[i].isLive(at: now) {
            let link = ledger[i]
            let active = inventory.user(named: link.user).map { !$0.revoked } ?? false
            let reason: HandOffLink.EndReason
            if !active || !link.shown {
                reason = .revoked
            } else if let folder = folders[link.user], folder.digest != link.folder {
                reason = .replaced
            } else {
                continue
            }
            ledger[i].ended = .init(reason: reason, at: now)
            ended.append(.init(user: link.user, id: link.id, reason: reason.rawValue))
        }
        return ended
    }

    /// The users to hand off: those named, every active user with --all, else those whose folder changed since
    /// their last link was shown, who never had one, or whose last shown link a run ended for a newer one that
    /// was never shown. Nil (reported) for a name that is no active user or
    /// whose folder is not what `generate` would write now.
    static func chooseUsers(
        _ options: HandOffOptions, inventory: Inventory, folders: [String: UserFolder], ledger: [HandOffLink],
        output: any RunReporter
    ) throws -> [String]? {
        let active = inventory.users.filter { !$0.revoked }.map(\.name)
        if !options.users.isEmpty {
            for name in options.users where !active.contains(name) {
                let hint = Spelling.closest(to: name, among: active).map { "; did you mean '\($0)'?" } ?? ""
                let why = inventory.user(named: name) == nil ? "is not in \(options.tree.inventory)" : "is revoked"
                output.error(.noSuchUser, "user '\(name)' \(why)\(hint)")
                return nil
            }
            for name in options.users where folders[name] == nil {
                output.error(
                    .handOffStale,
                    "\(display(options.tree.outDirectory, options.tree))/clients/\(name)/ is missing or not what "
                        + "'vpnprov generate' would write now: run it first")
                return nil
            }
            return active.filter(options.users.contains)
        }
        if options.all { return active.filter { folders[$0] != nil } }
        var handedOff: [String: HandOffLink] = [:]
        for link in ledger where link.shown {
            if let previous = handedOff[link.user], previous.created > link.created { continue }
            handedOff[link.user] = link
        }
        let stale = active.filter { folders[$0] == nil && inventory.user(named: $0) != nil }
        if !stale.isEmpty && folders.isEmpty {
            output.error(
                .handOffStale,
                "\(display(options.tree.outDirectory, options.tree))/clients/ is not what 'vpnprov generate' would "
                    + "write now: run it first")
            return nil
        }
        return active.filter { name in
            guard let folder = folders[name] else { return false }
            guard let last = handedOff[name] else { return true }
            // Ended as replaced while it is still the newest link shown: the link that replaced it was never
            // shown (its publish failed), so the user has none.
            return last.folder != folder.digest || last.ended?.reason == .replaced
        }
    }

    /// The files of a user's folder as `generate` wrote them, each checked against the digest it recorded.
    static func readFolder(user: String, folder: UserFolder, out: String) throws -> [HandOffPackage.Source] {
        let base = out + "/" + ClientRenderer.folder(user: user) + "/"
        return try folder.files.map { file in
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(
                    base + file.path, limit: BoundedFile.outputFileLimit, followSymlinks: false)
            } catch {
                throw OutputError("cannot read \(base + file.path): \(error)")
            }
            guard hexString(Digest.sha256(bytes)).lowercased() == file.sha256 else {
                throw OutputError("\(base + file.path) changed since 'vpnprov generate' wrote it: run it again")
            }
            var st = stat()
            let isPrivate = lstat(base + file.path, &st) == 0 && st.st_mode & 0o077 == 0
            return (file.path, bytes, isPrivate)
        }
    }

    /// The run-level lines about links that ended.
    static func reportEnded(
        _ ended: [HandOffReport.Ended], site: String, output: any RunReporter, publishedNow: Bool
    ) {
        guard !ended.isEmpty else { return }
        let what = ended.map { "\($0.user) (\($0.reason == "replaced" ? "profiles changed" : "revoked"))" }
        let when = publishedNow ? "they are gone from \(site)" : "\(site) serves them until the next publish"
        output.info("vpnprov: hand-off links ended: \(listed(what)); \(when)")
    }

    /// The playbook that publishes the bundle, for an operator to run.
    static func publishCommand(_ tree: GenerateOptions) -> String {
        let dir = ShellWord.quote(display(tree.outDirectory, tree))
        return "ansible-playbook -i \(dir)/deploy/inventory.yml \(dir)/deploy/handoff.yml"
    }

    static func isoTime(_ seconds: Int) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// "2026-12-10 09:00 UTC".
    static func humanTime(_ seconds: Int) -> String {
        let iso = isoTime(seconds)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(5)) + " UTC"
    }

    static func downloadsText(_ downloads: Int) -> String {
        switch downloads {
        case 0: "no download limit"
        case 1: "each file once"
        default: "each file \(downloads) times"
        }
    }
}
