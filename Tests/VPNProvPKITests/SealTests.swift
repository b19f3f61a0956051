import Foundation
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

/// The hand-off's sealing (AES-256-GCM) and key derivation (HKDF-SHA256) against outside references: RFC
/// 5869's test vectors, and Python's `cryptography` (Debian's python3-cryptography, what the hand-off
/// host's gate opens the files with) opening what vpnprov sealed and sealing what vpnprov opens.
@Suite(.temporaries) struct SealTests {
    static func bytes(_ hex: String) -> [UInt8] { bytesFromHex(hex)! }

    /// RFC 5869, appendix A: test case 1 (salt and info) and test case 3 (neither).
    @Test func hkdfGivesRFC5869sTestVectors() throws {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let one = try HKDF.sha256(
            secret: ikm, salt: Self.bytes("000102030405060708090a0b0c"), info: Self.bytes("f0f1f2f3f4f5f6f7f8f9"),
            count: 42)
        #expect(
            hexString(one).lowercased()
                == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let three = try HKDF.sha256(secret: ikm, info: [], count: 42)
        #expect(
            hexString(three).lowercased()
                == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func aChangedByteOrAnotherKeyOrPlaceDoesNotOpen() throws {
        let key = try RandomBytes.generate(count: 32)
        let plaintext = Array("the profile".utf8)
        let sealed = try Seal.seal(plaintext, key: key, associatedData: Array("link/1".utf8))
        #expect(sealed.count == 12 + plaintext.count + 16)
        #expect(try Seal.open(sealed, key: key, associatedData: Array("link/1".utf8)) == plaintext)
        #expect(
            try Seal.seal(plaintext, key: key, associatedData: [])
                != Seal.seal(plaintext, key: key, associatedData: []),
            "every seal has a nonce of its own")
        for index in [0, 12, sealed.count - 1] {
            var changed = sealed
            changed[index] ^= 1
            #expect(throws: CryptoError.self) { try Seal.open(changed, key: key, associatedData: Array("link/1".utf8)) }
        }
        #expect(throws: CryptoError.self) { try Seal.open(sealed, key: key, associatedData: Array("link/2".utf8)) }
        let other = try RandomBytes.generate(count: 32)
        #expect(throws: CryptoError.self) { try Seal.open(sealed, key: other, associatedData: Array("link/1".utf8)) }
    }

    /// What vpnprov seals Python's AESGCM opens, and the other way round, with the same key and associated data.
    @Test(.needs(.python3)) func pythonsCryptographyOpensWhatVpnprovSealsAndBack() throws {
        try TestDependency.python3.require()
        let dir = try temporaryDirectory()
        let key = try RandomBytes.generate(count: 32)
        let plaintext = try RandomBytes.generate(count: 5000)
        let sealed = try Seal.seal(plaintext, key: key, associatedData: Array("abc/2".utf8))
        try Data(sealed).write(to: URL(fileURLWithPath: dir + "/sealed"))
        try Data(plaintext).write(to: URL(fileURLWithPath: dir + "/plain"))
        let script = """
            import sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            key = bytes.fromhex(sys.argv[1])
            data = open(sys.argv[2] + "/sealed", "rb").read()
            opened = AESGCM(key).decrypt(data[:12], data[12:], b"abc/2")
            assert opened == open(sys.argv[2] + "/plain", "rb").read(), "different plaintext"
            nonce = bytes(range(12))
            open(sys.argv[2] + "/back", "wb").write(nonce + AESGCM(key).encrypt(nonce, b"from python", b"x/0"))
            print("ok")
            """
        let result = try runTool(["python3", "-c", script, hexString(key), dir])
        #expect(result.status == 0 && result.output == "ok\n", "\(result.output)")
        let back = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/back")))
        #expect(try Seal.open(back, key: key, associatedData: Array("x/0".utf8)) == Array("from python".utf8))
    }
}
