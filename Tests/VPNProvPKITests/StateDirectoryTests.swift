import Foundation
import Testing
import VPNProvTestFixtures

@testable import VPNProvPKI

/// The state directory is opened once and every file in it is reached from that descriptor (and its
/// subdirectories' descriptors, opened with O_NOFOLLOW): a path component swapped after the open, for a
/// link or another directory, does not redirect a write.
@Suite(.temporaries) struct StateDirectoryTests {
    /// A state written by a run, and a directory elsewhere that nothing may reach.
    func state() throws -> (state: String, elsewhere: String) {
        let base = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: base + "/state")
        try FileManager.default.createDirectory(atPath: base + "/elsewhere", withIntermediateDirectories: false)
        return (base + "/state", base + "/elsewhere")
    }

    func names(_ path: String) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] }

    @Test func aSubdirectorySwappedForALinkAfterTheOpenIsNotWrittenThrough() throws {
        let (state, elsewhere) = try state()
        let directory = try #require(try StateDirectory.open(state, create: false))
        try directory.refuseSymlinks()
        try FileManager.default.moveItem(atPath: state + "/certs", toPath: state + "/certs-moved")
        try FileManager.default.createSymbolicLink(atPath: state + "/certs", withDestinationPath: elsewhere)
        try directory.write(Array("x".utf8), to: directory.paths.certificate("0A"))
        #expect(names(elsewhere).isEmpty)
        #expect(names(state + "/certs-moved").contains("0A.pem"))
    }

    @Test func aStateDirectorySwappedAfterTheOpenIsNotWrittenThrough() throws {
        let (state, elsewhere) = try state()
        let directory = try #require(try StateDirectory.open(state, create: false))
        try FileManager.default.moveItem(atPath: state, toPath: state + "-moved")
        try FileManager.default.createSymbolicLink(atPath: state, withDestinationPath: elsewhere)
        try directory.write(Array("{}".utf8), to: state + "/probe")
        try directory.write(Array("x".utf8), to: directory.paths.key("0B"))
        #expect(names(elsewhere).isEmpty)
        #expect(names(state + "-moved").contains("probe"))
        #expect(names(state + "-moved/keys").contains("0B.pem"))
    }

    /// A commit re-checks the entries it writes to: a subdirectory replaced by a link between the load and
    /// the commit is refused, and nothing reaches the link's target.
    @Test func aCommitRefusesASubdirectorySwappedSinceTheLoad() throws {
        let (state, elsewhere) = try state()
        let lock = try StateLock(stateDirectory: state)
        defer { lock.release() }
        let store = try StateStore.load(lock.stateDirectory, caPassphrase: nil)
        try FileManager.default.moveItem(atPath: state + "/p12", toPath: state + "/p12-moved")
        try FileManager.default.createSymbolicLink(atPath: state + "/p12", withDestinationPath: elsewhere)
        store.stage(store.paths.p12("probe.p12"), Array("x".utf8))
        #expect(throws: StateError.self) { try store.commit() }
        #expect(names(elsewhere).isEmpty)
    }
}
