import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvTestFixtures

/// `pki.profile_signing`: every .mobileconfig is a CMS SignedData over the plist, checked with the
/// openssl CLI against the signing chain; without it profiles stay plain XML.
@Suite(.temporaries) struct ProfileSigningTests {
    /// root -> intermediate -> leaf (RSA, or an ECDSA P-256 leaf), made with the openssl CLI, in `dir`.
    static func makeSigningChain(in dir: String, ecdsaLeaf: Bool = false) throws {
        func run(_ args: [String]) throws {
            let r = try runTool(["openssl"] + args)
            #expect(r.status == 0, "openssl \(args.first ?? ""): \(r.output)")
        }
        write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n", to: "\(dir)/ca.ext")
        write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n", to: "\(dir)/leaf.ext")
        try run([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/root.key", "-out", "\(dir)/root.pem",
            "-subj", "/CN=Test Signing Root", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        for (name, issuer, ext) in [("int", "root", "ca.ext"), ("leaf", "int", "leaf.ext")] {
            let key =
                name == "leaf" && ecdsaLeaf
                ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] : ["-newkey", "rsa:2048"]
            try run(
                ["req"] + key + [
                    "-nodes", "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr",
                    "-subj", "/CN=Test Signing \(name)",
                ])
            try run([
                "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/\(issuer).pem", "-CAkey",
                "\(dir)/\(issuer).key",
                "-set_serial", name == "int" ? "2" : "3", "-days", "30", "-extfile", "\(dir)/\(ext)", "-out",
                "\(dir)/\(name).pem",
            ])
        }
    }

    static let inventory = """
        vpnprov: 1
        name: acme
        pki:
          profile_signing: { cert: file:sign/leaf.pem, key: file:sign/leaf.key, chain: file:sign/int.pem }
        nodes:
          fra-1:
            address: 192.0.2.1
            pool: 10.1.0.0/24
            pool6: fd00:1::/112
        users:
          alice:
            password: gen
            devices: [apple]

        """

    @Test(.needs(.openssl)) func everyProfileIsSignedAndVerifiesAgainstTheChain() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/sign", withIntermediateDirectories: true)
        try Self.makeSigningChain(in: dir + "/sign")
        write(Self.inventory, to: dir + "/inventory.yaml")
        let run = vpnprov(["generate"], in: dir)
        #expect(run.code == 0, "\(run.err)")
        let profile = dir + "/out/clients/alice/alice.mobileconfig"
        let bytes = try #require(FileManager.default.contents(atPath: profile))
        #expect(!bytes.starts(with: Array("<?xml".utf8)))  // DER, not the plain plist
        let verify = try runTool([
            "openssl", "cms", "-verify", "-inform", "DER", "-in", profile, "-CAfile", dir + "/sign/root.pem",
            "-purpose", "any", "-out", dir + "/content.plist", "-signer", dir + "/signer.pem",
        ])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("Verification successful"))
        // The signed content is the profile's plist, and the signer is the leaf sent with its intermediate.
        let content = try #require(FileManager.default.contents(atPath: dir + "/content.plist"))
        #expect(Array(content) == (try CMSSignedData.content(of: Array(bytes))))
        let plist = try PropertyListSerialization.propertyList(from: content, format: nil) as? [String: Any]
        #expect(plist?["PayloadType"] as? String == "Configuration")
        // Verified with only the root given: the intermediate travelled inside the SignedData.
        let signer = try runTool(["openssl", "x509", "-in", dir + "/signer.pem", "-noout", "-subject"])
        #expect(signer.output.contains("Test Signing leaf"), "\(signer.output)")
        // A root that did not issue the chain does not verify it.
        let other = try runTool([
            "openssl", "cms", "-verify", "-inform", "DER", "-in", profile, "-CAfile", dir + "/sign/leaf.pem",
            "-purpose", "any", "-out", "/dev/null",
        ])
        #expect(other.status != 0)
        let tampered = Array(bytes.prefix(bytes.count - 1)) + [bytes.last! ^ 0xFF]
        #expect(FileManager.default.createFile(atPath: dir + "/tampered", contents: Data(tampered)))
        let bad = try runTool([
            "openssl", "cms", "-verify", "-inform", "DER", "-in", dir + "/tampered",
            "-CAfile", dir + "/sign/root.pem", "-purpose", "any", "-out", "/dev/null",
        ])
        #expect(bad.status != 0)
        // RSA signatures without signed attributes: the same inputs give the same bytes (check finds no drift).
        let check = vpnprov(["check"], in: dir)
        #expect(check.code == 0, "\(check.err)")
        #expect(FileManager.default.contents(atPath: profile) == bytes)
    }

    @Test(.needs(.openssl)) func anECDSASignedProfileKeepsItsBytesWhileItsContentIsUnchanged() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/sign", withIntermediateDirectories: true)
        try Self.makeSigningChain(in: dir + "/sign", ecdsaLeaf: true)
        write(Self.inventory, to: dir + "/inventory.yaml")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let profile = dir + "/out/clients/alice/alice.mobileconfig"
        func verified() throws -> Bool {
            try runTool([
                "openssl", "cms", "-verify", "-inform", "DER", "-in", profile, "-CAfile", dir + "/sign/root.pem",
                "-purpose", "any", "-out", "/dev/null",
            ]).status == 0
        }
        let first = try #require(FileManager.default.contents(atPath: profile))
        #expect(try verified())
        // What makes this necessary: two ECDSA signatures over the same plist differ.
        let plist = try CMSSignedData.content(of: Array(first))
        let leaf = try X509Certificate(pem: String(contentsOfFile: dir + "/sign/leaf.pem", encoding: .utf8))
        let key = try PrivateKey(pem: String(contentsOfFile: dir + "/sign/leaf.key", encoding: .utf8))
        #expect(
            try CMSSignedData.sign(content: plist, certificate: leaf, key: key, chain: [])
                != CMSSignedData.sign(content: plist, certificate: leaf, key: key, chain: []))

        // Without the render cache every profile is rendered and signed again: the tree's profile is kept,
        // so check finds no drift and generate writes nothing.
        try FileManager.default.removeItem(atPath: dir + "/out/.vpnprov-cache")
        let check = vpnprov(["check"], in: dir)
        #expect(check.code == 0, "\(check.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/.vpnprov-cache"))  // check writes nothing
        let again = vpnprov(["generate"], in: dir)
        #expect(again.err.contains("0 files written"), "\(again.err)")
        #expect(FileManager.default.contents(atPath: profile) == first)

        // A changed profile is signed anew, and verifies.
        write(
            Self.inventory.replacingOccurrences(
                of: "    devices: [apple]\n", with: "    devices: [apple]\n    apple: { disconnect_on_idle: 300 }\n"),
            to: dir + "/inventory.yaml")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let changed = try #require(FileManager.default.contents(atPath: profile))
        #expect(changed != first)
        #expect(try verified())
        // An old signature over other content is not kept in its place.
        try first.write(to: URL(fileURLWithPath: profile))
        try FileManager.default.removeItem(atPath: dir + "/out/.vpnprov-cache")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let rewritten = try #require(FileManager.default.contents(atPath: profile))
        #expect(rewritten != first)
        let rewrittenPlist = try CMSSignedData.content(of: Array(rewritten))
        #expect(rewrittenPlist == (try CMSSignedData.content(of: Array(changed))))
        #expect(try verified())
    }

    @Test func withoutSigningProfilesStayPlainXML() throws {
        let dir = try temporaryDirectory()
        write(
            Self.inventory.replacingOccurrences(
                of:
                    "pki:\n  profile_signing: { cert: file:sign/leaf.pem, key: file:sign/leaf.key, chain: file:sign/int.pem }\n",
                with: ""),
            to: dir + "/inventory.yaml")
        #expect(vpnprov(["generate"], in: dir).code == 0)
        let bytes = try #require(FileManager.default.contents(atPath: dir + "/out/clients/alice/alice.mobileconfig"))
        #expect(bytes.starts(with: Array("<?xml".utf8)))
    }

    @Test(.needs(.openssl)) func aKeyThatIsNotTheCertificatesIsRefusedWithoutEchoingIt() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/sign", withIntermediateDirectories: true)
        try Self.makeSigningChain(in: dir + "/sign")
        write(
            Self.inventory.replacingOccurrences(of: "key: file:sign/leaf.key", with: "key: file:sign/int.key"),
            to: dir + "/inventory.yaml")
        let run = vpnprov(["generate"], in: dir)
        #expect(run.code == 3)
        #expect(run.err.contains("does not sign for the certificate"))
        let key = try String(contentsOfFile: dir + "/sign/int.key", encoding: .utf8)
        for line in SecretLeaks.keyLines(key) { #expect(!run.err.contains(line)) }
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/alice/alice.mobileconfig"))
    }

    /// A signing key whose private scalar is damaged still carries the certificate's public key: it is
    /// refused by what it signs, before any profile is signed with it.
    @Test(.needs(.openssl)) func aSigningKeyWithADamagedPrivateHalfIsRefused() throws {
        let dir = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/sign", withIntermediateDirectories: true)
        try Self.makeSigningChain(in: dir + "/sign", ecdsaLeaf: true)
        let keyPath = dir + "/sign/leaf.key"
        let key = [UInt8](try Data(contentsOf: URL(fileURLWithPath: keyPath)))
        try Data(try #require(StateDamage.flipScalar(key))).write(to: URL(fileURLWithPath: keyPath))
        write(Self.inventory, to: dir + "/inventory.yaml")
        let run = vpnprov(["generate"], in: dir)
        #expect(run.code == 3, "\(run.err)")
        #expect(run.err.contains("does not sign for the certificate"), "\(run.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/alice/alice.mobileconfig"))
    }

    @Test func profileSigningReferencesAreValidated() {
        let bad = decode(
            """
            vpnprov: 1
            name: x
            pki:
              profile_signing: { cert: gen, key: "-----BEGIN", chian: file:c.pem }
            """)
        let messages = bad.diagnostics.map(\.message)
        #expect(messages.contains { $0.contains("'pki.profile_signing.cert' must be env:VAR or file:PATH") })
        #expect(messages.contains { $0.contains("'pki.profile_signing.key' must be env:VAR or file:PATH") })
        #expect(messages.contains { $0.contains("did you mean 'chain'?") })
        // The literal key text is never shown.
        #expect(!messages.contains { $0.contains("-----BEGIN") })
    }
}
