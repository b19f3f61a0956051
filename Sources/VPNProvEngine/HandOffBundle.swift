import Foundation
import Glibc
import VPNProvCrypto
import VPNProvOutputTree
import VPNProvPKI
import VPNProvPlanning
import VPNProvQR
import VPNProvSupport

/// `<out>/handoff/`: what a publish takes to the hand-off site (docs/handoff.md). Not vpnprov's rendered
/// output (the tree's manifest does not list it and `check` leaves it alone, like `rollout/`): the links
/// `vpnprov handoff` made, each sealed under its own token, which vpnprov does not keep.
///
///     handoff/links/<id>.json   a live link (PublishedLink), 0600
///     handoff/index.json        the links to serve and those vpnprov ended (PublishedIndex), written last
///     handoff/qr/<user>.png     the QR code of the user's live link, and .svg (0600: they carry the link)
///
/// Every file is written to a temporary name and renamed; a link's file goes when its link ends, and its
/// QR codes with it.
enum HandOffBundle {
    static let directory = "handoff"

    static func root(_ out: String) -> String { out + "/" + directory }
    static func linkPath(_ out: String, id: String) -> String { root(out) + "/links/\(id).json" }
    static func indexPath(_ out: String) -> String { root(out) + "/index.json" }
    static func qrPath(_ out: String, user: String, ext: String) -> String { root(out) + "/qr/\(user).\(ext)" }

    /// Creates the directories (0700) below `out`, which must exist.
    static func prepare(_ out: String) throws {
        for path in [root(out), root(out) + "/links", root(out) + "/qr"] {
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw OutputError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func write(_ link: PublishedLink, out: String) throws {
        try prepare(out)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(link)), to: linkPath(out, id: link.id))
    }

    /// The QR code of `url` as PNG and SVG files; returns their paths and the terminal drawing.
    static func writeQR(_ url: String, user: String, out: String) throws -> (png: String, svg: String, text: String) {
        try prepare(out)
        let code = try QRCode(text: url)
        let png = qrPath(out, user: user, ext: "png")
        let svg = qrPath(out, user: user, ext: "svg")
        try AtomicFile.write(try code.png(), to: png)
        try AtomicFile.write(Array(code.svg().utf8), to: svg)
        return (png, svg, code.terminalText)
    }

    /// The ids of the link files present.
    static func linkIDs(_ out: String) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root(out) + "/links")) ?? []
        return Set(names.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) })
    }

    /// Makes the bundle say what the ledger says: the live links that were shown (or are `fresh`, about to
    /// be published) and have their file are served; the links vpnprov ended before their expiry are listed
    /// as ended; every other link file and the QR codes of users without a served link are removed. The
    /// index is written last. Returns it.
    @discardableResult
    static func refresh(_ ledger: [HandOffLink], fresh: Set<String> = [], now: Int, out: String) throws
        -> PublishedIndex
    {
        try prepare(out)
        let present = linkIDs(out)
        let served = ledger.filter {
            $0.isLive(at: now) && ($0.shown || fresh.contains($0.id)) && present.contains($0.id)
        }
        var ended: [String: String] = [:]
        for link in ledger where now < link.expires {
            if let end = link.ended { ended[link.id] = end.reason.rawValue }
        }
        let index = PublishedIndex(links: served.map(\.id).sorted(), ended: ended)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(Array(try encoder.encode(index)) + [UInt8(ascii: "\n")], to: indexPath(out))
        let keep = Set(index.links)
        for id in present where !keep.contains(id) { unlink(linkPath(out, id: id)) }
        let users = Set(served.map(\.user))
        let codes = (try? FileManager.default.contentsOfDirectory(atPath: root(out) + "/qr")) ?? []
        for name in codes {
            let user = (name as NSString).deletingPathExtension
            if !users.contains(user) { unlink(root(out) + "/qr/" + name) }
        }
        return index
    }
}
