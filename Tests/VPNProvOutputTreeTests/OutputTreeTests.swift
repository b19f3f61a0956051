import Foundation
import Testing
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvOutputTree

@Suite(.temporaries) struct OutputTreeTests {
    let fm = FileManager.default

    func mode(_ path: String) throws -> Int {
        (try fm.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
    }

    @Test func writesFilesWithModesAndRewritesNothingTheSecondTime() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let files = [
            OutputFile(path: "servers/a/swanctl/swanctl.conf", text: "connections {}\n"),
            OutputFile(path: "servers/a/swanctl/conf.d/secrets.conf", text: "secrets {}\n", isPrivate: true),
        ]
        let first = try OutputTree.write(files, to: dir)
        #expect(first.written == ["servers/a/swanctl/conf.d/secrets.conf", "servers/a/swanctl/swanctl.conf"])
        #expect(try mode(dir + "/servers/a/swanctl/conf.d/secrets.conf") == 0o600)
        #expect(try mode(dir + "/servers/a/swanctl/swanctl.conf") == 0o644)
        let before =
            try fm.attributesOfItem(atPath: dir + "/servers/a/swanctl/swanctl.conf")[.modificationDate] as! Date
        let second = try OutputTree.write(files, to: dir)
        #expect(second.written.isEmpty)
        #expect(second.unchangedCount == 2)
        let after = try fm.attributesOfItem(atPath: dir + "/servers/a/swanctl/swanctl.conf")[.modificationDate] as! Date
        #expect(before == after)
        #expect(try OutputTree.compare(files, with: dir).isClean)
    }

    /// Modes are exact whatever the umask: a restrictive one must not hide public files, a permissive
    /// one must not expose private ones (the binary runs under `sh -c 'umask …'`).
    @Test(arguments: ["077", "000", "022"]) func modesDoNotDependOnTheUmask(umask: String) throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let inventory = try String(contentsOfFile: Repository.example, encoding: .utf8)
        try inventory.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let generated = try Subprocess.run(
            "/bin/sh", ["-c", "umask \(umask) && exec \"$0\" generate", VPNProvBinary.path], directory: dir,
            timeout: .seconds(300))
        #expect(generated.succeeded, "\(generated)")
        #expect(try mode(dir + "/out/clients/alice/README") == 0o644)
        #expect(try mode(dir + "/out/clients/alice/alice.mobileconfig") == 0o600)
        #expect(try mode(dir + "/out/servers/fra-1/swanctl/swanctl.conf") == 0o644)
        #expect(try mode(dir + "/out/servers/fra-1/swanctl/conf.d/secrets.conf") == 0o600)
    }

    @Test func aChangedModeIsRepaired() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let files = [OutputFile(path: "k.key", text: "KEY", isPrivate: true)]
        _ = try OutputTree.write(files, to: dir)
        chmod(dir + "/k.key", 0o644)
        #expect(try OutputTree.compare(files, with: dir).stale == ["k.key"])
        #expect(try OutputTree.write(files, to: dir).written == ["k.key"])
        #expect(try mode(dir + "/k.key") == 0o600)
    }

    @Test func removesOnlyWhatItWroteBefore() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        _ = try OutputTree.write(
            [OutputFile(path: "clients/bob/bob.sswan", text: "{}"), OutputFile(path: "keep.txt", text: "x")], to: dir)
        try "operator's".write(toFile: dir + "/notes.txt", atomically: true, encoding: .utf8)
        let summary = try OutputTree.write([OutputFile(path: "keep.txt", text: "x")], to: dir)
        #expect(summary.removed == ["clients/bob/bob.sswan"])
        #expect(fm.fileExists(atPath: dir + "/notes.txt"))
        #expect(!fm.fileExists(atPath: dir + "/clients/bob/bob.sswan"))
    }

    /// Two outputs for one path, in one batch or in two: refused before anything is visible, with no
    /// temporary file left, when writing and when comparing.
    @Test func twoOutputsForOnePathAreRefused() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        _ = try OutputTree.write([OutputFile(path: "a/x.txt", text: "old")], to: dir)
        let before = try fm.subpathsOfDirectory(atPath: dir).sorted()
        func refused(_ body: () throws -> Void) -> Bool {
            do { try body() } catch { return "\(error)".contains("two outputs want the path 'a/x.txt'") }
            return false
        }
        #expect(
            refused {
                _ = try OutputTree.write(
                    [OutputFile(path: "a/x.txt", text: "1"), OutputFile(path: "a/x.txt", text: "2")], to: dir)
            })
        #expect(
            refused {
                let session = try OutputTree.Session(directory: dir, mode: .write)
                do {
                    session.add(
                        try session.prepare([
                            OutputFile(path: "a/x.txt", text: "1"), OutputFile(path: "b.txt", text: "b"),
                        ]))
                    session.add(try session.prepare([OutputFile(path: "a/x.txt", text: "2")]))
                    _ = try session.publish()
                } catch {
                    session.abort()
                    throw error
                }
            })
        #expect(try fm.subpathsOfDirectory(atPath: dir).sorted() == before)
        #expect(try String(contentsOfFile: dir + "/a/x.txt", encoding: .utf8) == "old")
        #expect(
            refused {
                _ = try OutputTree.compare(
                    [OutputFile(path: "a/x.txt", text: "1"), OutputFile(path: "a/x.txt", text: "1")], with: dir)
            })
    }

    /// A folder that does not exist yet is written whole under a temporary name and renamed once at
    /// publish: nothing of it is visible before, everything (modes included) after.
    @Test func aNewFolderIsStagedWholeAndRenamedIntoPlace() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let files = [
            OutputFile(path: "clients/u/u.sswan", text: "{}", isPrivate: true),
            OutputFile(path: "clients/u/linux/swanctl/swanctl.conf", text: "connections {}\n"),
            OutputFile(path: "servers/a.conf", text: "a"),
        ]
        let session = try OutputTree.Session(directory: dir, mode: .write)
        session.add(try session.prepare(files, folders: ["clients/u"]))
        let staged = "clients/.u.tmp-\(getpid())"
        #expect(!fm.fileExists(atPath: dir + "/clients/u"))
        #expect(
            try fm.subpathsOfDirectory(atPath: dir + "/" + staged).sorted() == [
                "linux", "linux/swanctl", "linux/swanctl/swanctl.conf", "u.sswan",
            ])
        let summary = try session.publish()
        #expect(
            Array(summary.written) == ["clients/u/linux/swanctl/swanctl.conf", "clients/u/u.sswan", "servers/a.conf"])
        #expect(!fm.fileExists(atPath: dir + "/" + staged))
        #expect(try String(contentsOfFile: dir + "/clients/u/u.sswan", encoding: .utf8) == "{}")
        #expect(try mode(dir + "/clients/u/u.sswan") == 0o600)
        #expect(try mode(dir + "/clients/u/linux/swanctl/swanctl.conf") == 0o644)
        #expect(try OutputTree.compare(files, with: dir).isClean)
        // Once it exists, its files are compared one by one: only a changed one is written.
        var changed = files
        changed[0] = OutputFile(path: "clients/u/u.sswan", text: "{\"v\":2}", isPrivate: true)
        let again = try OutputTree.Session(directory: dir, mode: .write)
        again.add(try again.prepare(changed, folders: ["clients/u"]))
        #expect(Array(try again.publish().written) == ["clients/u/u.sswan"])
        #expect(try OutputTree.compare(changed, with: dir).isClean)
    }

    /// A staged folder's files need not come together: the folder is opened again for the later ones.
    @Test func aStagedFolderTakesFilesThatComeApart() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let files = [
            OutputFile(path: "clients/u/a.txt", text: "a"), OutputFile(path: "clients/v/b.txt", text: "b"),
            OutputFile(path: "clients/u/sub/c.txt", text: "c"),
        ]
        let session = try OutputTree.Session(directory: dir, mode: .write)
        session.add(try session.prepare(files, folders: ["clients/u", "clients/v"]))
        #expect(Array(try session.publish().written) == ["clients/u/a.txt", "clients/u/sub/c.txt", "clients/v/b.txt"])
        #expect(try OutputTree.compare(files, with: dir).isClean)
        #expect(try fm.contentsOfDirectory(atPath: dir + "/clients").sorted() == ["u", "v"])
    }

    /// A failed run removes its staged folders and the directories it made for them: nothing changed.
    @Test func anAbortedRunLeavesNoStagedFolder() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        _ = try OutputTree.write([OutputFile(path: "keep.txt", text: "x")], to: dir)
        let before = try fm.subpathsOfDirectory(atPath: dir).sorted()
        let session = try OutputTree.Session(directory: dir, mode: .write)
        session.add(
            try session.prepare(
                [OutputFile(path: "clients/u/a/b.txt", text: "b"), OutputFile(path: "clients/u/c.txt", text: "c")],
                folders: ["clients/u"]))
        #expect(fm.fileExists(atPath: dir + "/clients/.u.tmp-\(getpid())/a/b.txt"))
        session.abort()
        #expect(try fm.subpathsOfDirectory(atPath: dir).sorted() == before)
        // A batch discarded before it is added goes the same way.
        let other = try OutputTree.Session(directory: dir, mode: .write)
        other.discard(try other.prepare([OutputFile(path: "clients/v/x.txt", text: "x")], folders: ["clients/v"]))
        other.abort()
        #expect(try fm.subpathsOfDirectory(atPath: dir).sorted() == before)
    }

    /// A run killed between staging and publish leaves a staged folder (and the marker): the next run
    /// removes it whole, with the directory it was in when that is left empty.
    @Test func aKilledRunsStagedFolderIsRemovedByTheNextRun() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let left = dir + "/clients/.w.tmp-999999"
        try fm.createDirectory(atPath: left + "/linux", withIntermediateDirectories: true)
        try "secret".write(toFile: left + "/linux/w.conf", atomically: false, encoding: .utf8)
        try "secret".write(toFile: left + "/w.sswan", atomically: false, encoding: .utf8)
        try fm.createDirectory(atPath: dir + "/servers", withIntermediateDirectories: true)
        try "half".write(toFile: dir + "/servers/.a.conf.tmp-999999", atomically: false, encoding: .utf8)
        #expect(fm.createFile(atPath: dir + "/.vpnprov-writing", contents: Data()))
        _ = try OutputTree.write([OutputFile(path: "servers/a.conf", text: "a")], to: dir)
        #expect(!fm.fileExists(atPath: dir + "/clients"))
        #expect(
            try fm.subpathsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".vpnprov-") }.sorted() == [
                "servers", "servers/a.conf",
            ])
    }

    /// The shortcut for files in the directory of the file before keeps `checkRelativePath`'s rules.
    @Test func parentOfAPathFollowsThePathRules() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        try fm.createDirectory(atPath: dir + "/a/b", withIntermediateDirectories: true)
        let root = open(dir, O_RDONLY | O_DIRECTORY)
        defer { close(root) }
        let cache = OutputTree.DirectoryCache(root: root, create: false)
        defer { cache.closeAll() }
        for bad in ["../x", "a/../x", "a/.x", "a//x", "a/b/", "", ".x", "a/b/..", "/a/x"] {
            #expect(throws: OutputError.self, "\(bad)") { _ = try cache.parent(of: bad) }
        }
        let first = try #require(try cache.parent(of: "a/b/one"))
        let second = try #require(try cache.parent(of: "a/b/two"))
        #expect(first.name == "one" && second.name == "two" && first.dir == second.dir)
        #expect(try cache.parent(of: "top")?.dir == root)
        #expect(try cache.parent(of: "a/x")?.name == "x")
        #expect(try cache.parent(of: "missing/x") == nil)
        #expect(throws: OutputError.self) { _ = try cache.parent(of: "a/b/../../x") }
    }

    @Test func driftListsMissingStaleAndUnexpected() throws {
        let dir = try temporaryDirectory("out")
        defer { try? fm.removeItem(atPath: dir) }
        let files = [OutputFile(path: "a", text: "1"), OutputFile(path: "b/c", text: "2")]
        _ = try OutputTree.write(files, to: dir)
        try "changed".write(toFile: dir + "/a", atomically: false, encoding: .utf8)
        try "extra".write(toFile: dir + "/b/extra", atomically: false, encoding: .utf8)
        let report = try OutputTree.compare(files + [OutputFile(path: "d", text: "3")], with: dir)
        #expect(report.missing == ["d"])
        #expect(report.stale == ["a"])
        #expect(report.unexpected.isEmpty)
        #expect(report.untracked == ["b/extra"])
        // A file the manifest lists (an earlier run wrote it) and no longer generated: generate removes it.
        let dropped = try OutputTree.compare(
            [OutputFile(path: "a", text: "changed"), OutputFile(path: "d", text: "3")], with: dir)
        #expect(dropped.unexpected == ["b/c"])
        #expect(dropped.untracked == ["b/extra"])
        let absent = try OutputTree.compare(files, with: dir + "/nope")
        #expect(absent.missing == ["a", "b/c"])
        // Deeper down (the folders below the second level are listed on all cores): files and links,
        // which are listed, not followed.
        try fm.createDirectory(atPath: dir + "/b/x/y", withIntermediateDirectories: true)
        try "deep".write(toFile: dir + "/b/x/y/deep", atomically: false, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir + "/b/x/link", withDestinationPath: dir + "/b/x/y")
        let deeper = try OutputTree.compare(files, with: dir)
        #expect(deeper.untracked == ["b/extra", "b/x/link", "b/x/y/deep"])
    }

    @Test func neverFollowsASymlinkOutOfTheTree() throws {
        let dir = try temporaryDirectory("out")
        let outside = try temporaryDirectory("out")
        defer {
            try? fm.removeItem(atPath: dir)
            try? fm.removeItem(atPath: outside)
        }
        try fm.createSymbolicLink(atPath: dir + "/servers", withDestinationPath: outside)
        #expect(throws: OutputError.self) {
            try OutputTree.write([OutputFile(path: "servers/x/swanctl.conf", text: "x")], to: dir)
        }
        #expect(try fm.contentsOfDirectory(atPath: outside).isEmpty)
        // A staged folder is made below its parent opened without following links too.
        try fm.createSymbolicLink(atPath: dir + "/clients", withDestinationPath: outside)
        let session = try OutputTree.Session(directory: dir, mode: .write)
        #expect(throws: OutputError.self) {
            _ = try session.prepare([OutputFile(path: "clients/u/x.txt", text: "x")], folders: ["clients/u"])
        }
        session.abort()
        #expect(try fm.contentsOfDirectory(atPath: outside).isEmpty)
        // A symlinked file is replaced by a regular file, its target left untouched.
        try "target".write(toFile: outside + "/t", atomically: false, encoding: .utf8)
        try fm.createSymbolicLink(atPath: dir + "/f", withDestinationPath: outside + "/t")
        _ = try OutputTree.write([OutputFile(path: "f", text: "mine")], to: dir)
        #expect(try String(contentsOfFile: outside + "/t", encoding: .utf8) == "target")
        #expect((try fm.attributesOfItem(atPath: dir + "/f")[.type] as? FileAttributeType) == .typeRegular)
    }

    @Test(arguments: ["../x", "/etc/passwd", "a//b", "a/../b", ".hidden", "a/.b", "", "a/\u{0}"])
    func rejectsPathsThatCouldEscape(path: String) {
        #expect(throws: OutputError.self) { try OutputTree.checkRelativePath(path) }
    }
}
