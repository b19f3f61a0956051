import Foundation
import Glibc
import Synchronization
import VPNProvCrypto
import VPNProvSupport

/// `check`'s side of a session: what a run would change, without writing.
extension OutputTree.Session {
    /// Compare mode: what differs from the tree.
    package func drift() throws(OutputError) -> DriftReport {
        var report = DriftReport()
        try sortFiles()
        guard root >= 0 else {
            report.missing = Array(files)
            return report
        }
        // Only what is not expected is kept from the listing, and the expected paths are searched in
        // the sorted list rather than put in a set (a fleet's tree has hundreds of thousands of
        // files; docs/benchmarks.md, "Why the code is shaped this way").
        let bookkeeping = [
            OutputTree.manifestName, RenderCache.fileName, StatCache.fileName, OutputTree.Session.writingMarker,
        ].map {
            Array($0.utf8)
        }
        let expected = files
        let reports = Array((OutputTree.rolloutReportsDirectory + "/").utf8)
        let handOff = Array((OutputTree.handOffDirectory + "/").utf8)
        let extra = try OutputTree.listFilesInParallel(root) { path in
            !expected.containsSorted(utf8: path) && !bookkeeping.contains { $0.elementsEqual(path) }
                && !path.starts(with: reports) && !path.starts(with: handOff)
        }
        let directories = OutputTree.DirectoryCache(root: root, create: false)
        defer { directories.closeAll() }
        for i in files.indices where files.status(i).contains(.changed) {
            let path = files[i]
            // Listed means: reached without following a link, and not a directory.
            var st = stat()
            if let parts = try? OutputTree.checkRelativePath(path),
                let dir = try? directories.directory(parts.dropLast(), display: path),
                fstatat(dir, parts.last!, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) != S_IFDIR
            {
                report.stale.append(path)
            } else {
                report.missing.append(path)
            }
        }
        var previous = Set<String>()
        if !extra.isEmpty {
            let extraSet = Set(extra)
            OutputTree.forEachManifestPath(root) { if extraSet.contains($0) { previous.insert($0) } }
        }
        for path in extra.sorted() {
            if previous.contains(path) { report.unexpected.append(path) } else { report.untracked.append(path) }
        }
        return report
    }
}
