import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvPKI

/// The state checks itself before anything is signed or written (docs/state.md, "What survives
/// what"): every key vpnprov signs with by its private half, the records against the manifest that
/// commits them, a state from before the manifest read key by key and sealed by its next commit.
@Suite(.temporaries) struct StateIntegrityTests {
    /// A PKCS#8 key with a damaged private scalar still carries its certificate's public key: the
    /// public comparison passes it, a signature does not.
    @Test(arguments: [KeyAlgorithm.ecdsaP256, .ecdsaP384])
    func aKeyIsCheckedByWhatItSignsNotByThePublicHalfItCarries(_ algorithm: KeyAlgorithm) throws {
        let key = try PrivateKey.generate(algorithm)
        let template = CertificateTemplate(
            serial: GoldenPKI.serial("signs for"), subject: DistinguishedName([NameAttribute("CN", "signs for")]),
            notBefore: GoldenPKI.epoch, notAfter: GoldenPKI.epoch + 86400, keyUsage: [.keyCertSign, .cRLSign],
            isCA: true)
        let certificate = try CertificateIssuer.selfSigned(template, key: key)
        #expect(key.signsFor(certificate))
        let damaged = try PrivateKey(
            pem: String(decoding: try #require(StateDamage.flipScalar(Array(try key.pkcs8PEM().utf8))), as: UTF8.self))
        #expect(damaged.matches(certificate), "the damaged file still holds the certificate's public key")
        #expect(!damaged.signsFor(certificate))
        #expect(!GoldenPKI.key("ca").signsFor(certificate))
        #expect(GoldenPKI.key("ca").signsFor(GoldenPKI.ca))
    }

    /// A state of `standardInventory()` as an earlier vpnprov wrote it: no manifest, index.json of
    /// version 1 without the digests of the CA's files and of the CRL.
    func olderState() throws -> String {
        let state = try temporaryDirectory("pki") + "/state"
        try prepare(standardInventory(), state: state)
        try StateDamage.unseal(state)
        let path = URL(fileURLWithPath: state + "/index.json")
        var index = try StateJSON.decode(StateIndex.self, [UInt8](try Data(contentsOf: path)))
        index.version = 1
        index.ca?.keySHA256 = nil
        index.ca?.certificateSHA256 = nil
        index.crl?.sha256 = nil
        try Data(try StateJSON.encode(index)).write(to: path)
        return state
    }

    /// A state from before vpnprov recorded the digest of its CA key: the key is checked by its private
    /// half when the state loads, so a damaged scalar is refused, named, before anything is signed.
    @Test func anOlderStatesDamagedCAKeyIsRefusedByItsPrivateHalf() throws {
        let state = try olderState()
        let keyPath = state + "/ca/ca.key"
        let key = [UInt8](try Data(contentsOf: URL(fileURLWithPath: keyPath)))
        try Data(try #require(StateDamage.flipScalar(key))).write(to: URL(fileURLWithPath: keyPath))
        let before = snapshot(state)
        var more = standardInventory()
        more.users.append(makeUser("erin"))
        #expect { try prepare(more, state: state) } throws: { error in
            guard let error = error as? StateError else { return false }
            return error.code == .stateInconsistent && error.message.contains("\(keyPath) does not sign for")
        }
        #expect(snapshot(state) == before)
    }

    /// A state an earlier vpnprov wrote (no manifest, index.json of version 1 without the CAs' and
    /// CRLs' digests) loads as it is, is sealed by its next commit with the digests recorded, and is
    /// then left byte for byte as it is by a run that changes nothing.
    @Test func anOlderStateLoadsAndIsSealedByItsNextCommit() throws {
        let state = try olderState()
        let older = try prepare(standardInventory(), state: state, persist: false)
        #expect(older.changes.isEmpty, "\(older.changes)")
        #expect(!FileManager.default.fileExists(atPath: state + "/manifest.sha256"))
        try prepare(standardInventory(), state: state)
        let manifest = try #require(try StateDirectory.open(state, create: false)?.readManifest())
        #expect(Set(manifest.digests.keys) == [.index, .secrets])
        let index = try StateJSON.decode(
            StateIndex.self, [UInt8](try Data(contentsOf: URL(fileURLWithPath: state + "/index.json"))))
        #expect(index.version == StateIndex.currentVersion)
        #expect(index.ca?.keySHA256 != nil && index.ca?.certificateSHA256 != nil && index.crl?.sha256 != nil)
        let sealed = snapshot(state)
        try prepare(standardInventory(), state: state)
        #expect(snapshot(state) == sealed)
    }

    /// A commit killed after its manifest was renamed into place, before the records it lists were
    /// renamed over theirs: readers take them from their pending names, and the next commit puts them in
    /// place. A pending file that no manifest lists (a commit killed before its manifest) is ignored and
    /// removed; a record the manifest does not list is refused, named.
    @Test func recordsAreTheOnesTheManifestLists() throws {
        let state = try temporaryDirectory("pki") + "/state"
        try prepare(standardInventory(), state: state)
        let directory = try #require(try StateDirectory.open(state, create: false))
        var manifest = try #require(try directory.readManifest())
        var secrets = try #require(try StateStore.readSecrets(directory))
        secrets.psks["fra-1"] = "a committed PSK of at least thirty-two characters"
        let next = try StateJSON.encode(secrets)
        let digest = StateManifest.digest(next)
        try Data(next).write(to: URL(fileURLWithPath: state + "/" + StateDirectory.pendingName(.secrets, digest)))
        let junk = StateDirectory.pendingName(.index, String(repeating: "0", count: 64))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: state + "/" + junk))
        manifest.digests[.secrets] = digest
        try Data(manifest.encoded).write(to: URL(fileURLWithPath: state + "/manifest.sha256"))

        #expect(try StateStore.readSecrets(directory)?.psks["fra-1"] == secrets.psks["fra-1"])
        let result = try prepare(standardInventory(), state: state)
        #expect(result.materials.nodes["fra-1"]?.psk == secrets.psks["fra-1"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: state + "/secrets.json")) == Data(next))
        let names = try FileManager.default.contentsOfDirectory(atPath: state)
        #expect(!names.contains { $0.contains(".next-") }, "\(names)")

        // A record the manifest does not list.
        try Data("fra-1\n".utf8).write(to: URL(fileURLWithPath: state + "/rollout-pending"))
        #expect { try prepare(standardInventory(), state: state) } throws: { error in
            "\(error)".contains("\(state)/rollout-pending is not listed in \(state)/manifest.sha256")
        }
    }
}
