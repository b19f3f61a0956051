import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvPKI

@Suite(.temporaries) struct StateTests {
    @Test func stateFilesArePrivate() throws {
        let state = try temporaryDirectory("pki") + "/nested/state"
        try prepare(standardInventory(), state: state)
        var st = stat()
        #expect(stat(state, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let entries = snapshot(state)
        #expect(
            entries.keys.contains("index.json") && entries.keys.contains("secrets.json")
                && entries.keys.contains("ca/ca.key"))
        for (path, entry) in entries {
            if entry.hasSuffix(" dir") {
                #expect(entry.hasPrefix("700 "), "\(path)")
            } else {
                #expect(entry.hasPrefix("600 "), "\(path)")
            }
        }
        // No temporary files are left behind.
        #expect(!entries.keys.contains { $0.contains(".tmp-") })
    }

    @Test func indexIsSortedJSONWithoutSecrets() throws {
        let state = try temporaryDirectory("pki")
        let result = try prepare(standardInventory(), state: state)
        let text = String(decoding: FileManager.default.contents(atPath: "\(state)/index.json")!, as: UTF8.self)
        let index = try StateJSON.decode(StateIndex.self, Array(text.utf8))
        #expect(try StateJSON.encode(index) == Array(text.utf8))
        #expect(index.certificates.count == 1 + 3 + 2)  // CA, 3 nodes, alice + carol
        #expect(index.certificates.values.allSatisfy { $0.status == .valid })
        let alice = try #require(index.users["alice"])
        #expect(index.certificates[alice.serial]?.subjectAltNames == ["email:alice@example.com"])
        #expect(index.certificates[alice.serial]?.keyType == .ecdsaP256)
        #expect(!text.contains(result.materials.users["alice"]!.p12Password!))
        #expect(!text.contains(result.materials.users["alice"]!.password!))
        #expect(!text.contains("PRIVATE KEY"))
    }

    @Test func aConcurrentRunIsRefusedWhileTheLockIsHeld() throws {
        let state = try temporaryDirectory("pki")
        let lock = try StateLock(stateDirectory: state)
        // flock belongs to the open file description: a second open in this process conflicts too.
        #expect { try prepare(standardInventory(), state: state) } throws: { error in
            guard let error = error as? StateError else { return false }
            return error.code == .lockHeld && error.message.contains("locked")
        }
        // The caller's own lock can be passed in.
        _ = try PKIManager.prepare(
            inventory: standardInventory(), stateDirectory: state, inventoryDirectory: state, environment: [:],
            now: testNow, lock: lock)
        lock.release()
        try prepare(standardInventory(), state: state)
    }

    @Test func aLockHeldByAnotherProcessIsRefused() throws {
        let state = try temporaryDirectory("pki")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        // The child takes the lock, says so, and holds it until its stdin closes.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        child.arguments = ["-x", "\(state)/.lock", "/bin/sh", "-c", "echo locked; read x"]
        let input = Pipe()
        let output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        try child.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        #expect(String(decoding: line, as: UTF8.self) == "locked\n")
        #expect { try prepare(standardInventory(), state: state) } throws: { ($0 as? StateError)?.code == .lockHeld }
        try input.fileHandleForWriting.close()
        child.waitUntilExit()
        try prepare(standardInventory(), state: state)
    }

    @Test(.needs(.openssl)) func corruptIndexIsAnErrorThatChangesNothing() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        write("{ not json", to: "\(state)/index.json")
        chmod("\(state)/index.json", 0o600)
        let before = snapshot(state)
        #expect { try prepare(standardInventory(), state: state) } throws: { error in
            guard let error = error as? StateError else { return false }
            return error.message.contains("index.json")
        }
        #expect(snapshot(state) == before)
    }

    @Test func missingOrMismatchedKeysAreErrorsThatChangeNothing() throws {
        let state = try temporaryDirectory("pki")
        let result = try prepare(standardInventory(), state: state)
        let index = try StateJSON.decode(
            StateIndex.self, [UInt8](FileManager.default.contents(atPath: "\(state)/index.json")!))
        let aliceKey = "\(state)/keys/\(index.users["alice"]!.key).pem"
        let carolKey = "\(state)/keys/\(index.users["carol"]!.key).pem"

        // A key swapped for another user's key.
        let saved = FileManager.default.contents(atPath: aliceKey)!
        try FileManager.default.removeItem(atPath: aliceKey)
        try FileManager.default.copyItem(atPath: carolKey, toPath: aliceKey)
        var before = snapshot(state)
        #expect { try prepare(standardInventory(), state: state) } throws: { error in
            (error as? StateError)?.code == .stateInconsistent && "\(error)".contains("does not match")
        }
        #expect(snapshot(state) == before)

        // A deleted key.
        try FileManager.default.removeItem(atPath: aliceKey)
        before = snapshot(state)
        #expect { try prepare(standardInventory(), state: state) } throws: { error in
            (error as? StateError)?.code == .stateInconsistent && "\(error)".contains("missing")
        }
        #expect(snapshot(state) == before)

        // Restored: the run works again and changes nothing.
        _ = FileManager.default.createFile(atPath: aliceKey, contents: saved, attributes: [.posixPermissions: 0o600])
        let again = try prepare(standardInventory(), state: state)
        #expect(again.changes.isEmpty && again.materials == result.materials)
    }

    @Test func aMissingCAKeyOrTamperedP12IsAnError() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        let index = try StateJSON.decode(
            StateIndex.self, [UInt8](FileManager.default.contents(atPath: "\(state)/index.json")!))
        let p12 = "\(state)/p12/\(index.users["alice"]!.p12!.file)"
        var bytes = [UInt8](FileManager.default.contents(atPath: p12)!)
        bytes[bytes.count - 1] ^= 1
        _ = FileManager.default.createFile(atPath: p12, contents: Data(bytes))
        #expect { try prepare(standardInventory(), state: state) } throws: {
            ($0 as? StateError)?.code == .stateInconsistent
        }

        let other = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: other)
        try FileManager.default.removeItem(atPath: "\(other)/ca/ca.key")
        let before = snapshot(other)
        #expect { try prepare(standardInventory(), state: other) } throws: { error in
            (error as? StateError)?.code == .stateInconsistent && "\(error)".contains("CA key")
        }
        #expect(snapshot(other) == before)
    }

    @Test func theCAIsNeverReplaced() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        let caKey = FileManager.default.contents(atPath: "\(state)/ca/ca.key")
        var inventory = standardInventory()
        inventory.pki.ca = CASettings(name: "Other CA", key: .rsa2048, days: 100)
        let second = try prepare(inventory, state: state)
        #expect(second.materials.caCertificatePEM == first.materials.caCertificatePEM)
        #expect(second.warnings.count == 1 && second.warnings[0].contains("existing CA is kept"))
        #expect(FileManager.default.contents(atPath: "\(state)/ca/ca.key") == caKey)
        // Writing the CA key refuses to replace an existing file.
        #expect(throws: StateError.self) {
            try AtomicFile.write(Array("x".utf8), to: "\(state)/ca/ca.key", overwrite: false)
        }
        #expect(FileManager.default.contents(atPath: "\(state)/ca/ca.key") == caKey)
    }

    @Test func aCAPlacedInTheStateIsAdopted() throws {
        let source = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: source)
        let state = try temporaryDirectory("pki")
        try FileManager.default.createDirectory(atPath: "\(state)/ca", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(source)/ca/ca.key", toPath: "\(state)/ca/ca.key")
        try FileManager.default.copyItem(atPath: "\(source)/ca/ca.pem", toPath: "\(state)/ca/ca.pem")
        let result = try prepare(standardInventory(), state: state)
        #expect(result.changes.first?.kind == .caAdopted)
        #expect(
            result.materials.caCertificatePEM
                == String(decoding: FileManager.default.contents(atPath: "\(source)/ca/ca.pem")!, as: UTF8.self))
    }

    @Test(.needs(.openssl)) func encryptedCAKeyNeedsThePassphraseOnlyToSign() throws {
        let state = try temporaryDirectory("pki")
        let env = [PKIManager.caPassphraseVariable: "correct horse battery staple"]
        let first = try prepare(standardInventory(), state: state, env: env)
        let keyText = String(decoding: FileManager.default.contents(atPath: "\(state)/ca/ca.key")!, as: UTF8.self)
        #expect(keyText.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        let key = try PrivateKey(pem: keyText, passphrase: env.values.first!)
        #expect(key.matches(try X509Certificate(pem: first.materials.caCertificatePEM)))
        let dir = try temporaryDirectory("pki")
        let parsed = try runTool(
            ["openssl", "pkey", "-in", "\(state)/ca/ca.key", "-passin", "env:VPNPROV_TEST_PASS", "-noout"],
            environment: ["VPNPROV_TEST_PASS": env.values.first!])
        #expect(parsed.status == 0, "\(parsed.output) \(dir)")

        // Nothing to sign: no passphrase needed.
        let second = try prepare(standardInventory(), state: state)
        #expect(second.changes.isEmpty)
        // Something to sign without the passphrase: a clear environment error, nothing written.
        var inventory = standardInventory()
        inventory.users.append(makeUser("erin"))
        let before = snapshot(state)
        #expect { try prepare(inventory, state: state) } throws: { error in
            guard let error = error as? StateError else { return false }
            return error.code == .caPassphrase && error.message.contains("VPNPROV_CA_PASSPHRASE")
        }
        #expect { try prepare(inventory, state: state, env: [PKIManager.caPassphraseVariable: "wrong"]) } throws: {
            error in
            (error as? StateError)?.code == .caPassphrase && !"\(error)".contains("wrong\"")
        }
        #expect(snapshot(state) == before)
        let third = try prepare(inventory, state: state, env: env)
        #expect(third.changes.contains { $0.kind == .issued && $0.holder == .user("erin") })
    }

    @Test func persistFalseWritesNothing() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.users.append(makeUser("erin"))
        let before = snapshot(state)
        let dry = try prepare(inventory, state: state, persist: false)
        #expect(dry.materials.users["erin"]?.certificatePEM != nil)
        #expect(snapshot(state) == before)
    }

    @Test func atomicWriteReplacesContentAndSyncs() throws {
        let dir = try temporaryDirectory("pki")
        try AtomicFile.write(Array("one".utf8), to: "\(dir)/f")
        try AtomicFile.write(Array("two".utf8), to: "\(dir)/f")
        #expect(FileManager.default.contents(atPath: "\(dir)/f") == Data("two".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["f"])
    }
}
