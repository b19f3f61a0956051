import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTestFixtures

@testable import VPNProvPKI

@Suite(.temporaries) struct PKITests {
    @Test func caCertificateHasTheRequiredExtensions() throws {
        let state = try temporaryDirectory("pki")
        let result = try prepare(standardInventory(), state: state)
        let ca = try X509Certificate(pem: result.materials.caCertificatePEM)
        #expect(ca.isCA)
        #expect(ca.subject.commonName == "acme VPN Root CA")
        #expect(result.materials.caCommonName == "acme VPN Root CA")
        #expect(ca.keyUsage == [.keyCertSign, .cRLSign])
        let critical = Dictionary(uniqueKeysWithValues: ca.extensions.map { ($0.oid, $0.critical) })
        #expect(critical["2.5.29.19"] == true)  // basicConstraints
        #expect(critical["2.5.29.15"] == true)  // keyUsage
        #expect(critical["2.5.29.14"] == false)  // subjectKeyIdentifier
        #expect(critical["2.5.29.35"] == false)  // authorityKeyIdentifier
        #expect(critical["2.5.29.30"] == nil)  // no nameConstraints
        #expect(ca.extensions.filter(\.critical).map(\.oid).sorted() == ["2.5.29.15", "2.5.29.19"])
        #expect(ca.subjectKeyIdentifier != nil && ca.subjectKeyIdentifier == ca.authorityKeyIdentifier)
        #expect(ca.signatureAlgorithm == "ecdsa-with-SHA256")
        #expect(ca.notAfter.timeIntervalSince(testNow) == 3650 * 86400)
        #expect(ca.isSigned(by: ca))
    }

    @Test func serverCertificatesCarryIdentityAndAddress() throws {
        let state = try temporaryDirectory("pki")
        let materials = try prepare(standardInventory(), state: state).materials
        let ca = try X509Certificate(pem: materials.caCertificatePEM)

        let fra = try X509Certificate(pem: materials.nodes["fra-1"]!.certificatePEM)
        #expect(fra.subjectAlternativeNames == [.dnsName("fra-1.vpn.example.com")])
        #expect(fra.subject == DistinguishedName([NameAttribute("O", "acme"), NameAttribute("CN", "fra-1")]))
        #expect(fra.extendedKeyUsageOIDs == [ExtendedKeyUsage.serverAuth.oid, ExtendedKeyUsage.ikeIntermediate.oid])
        #expect(fra.keyUsage == [.digitalSignature])
        #expect(!fra.isCA)
        #expect(fra.isSigned(by: ca))
        #expect(fra.authorityKeyIdentifier == ca.subjectKeyIdentifier)
        #expect(fra.notAfter.timeIntervalSince(testNow) == 825 * 86400)
        #expect(try PrivateKey(pem: materials.nodes["fra-1"]!.privateKeyPEM).matches(fra))

        let ams = try X509Certificate(pem: materials.nodes["ams-1"]!.certificatePEM)
        #expect(ams.subjectAlternativeNames == [.ipAddress([203, 0, 113, 10]), .dnsName("203.0.113.10")])

        let dn = try X509Certificate(pem: materials.nodes["dn-1"]!.certificatePEM)
        #expect(dn.subject.description == "C=DE, O=acme, CN=dn-1.vpn.example.com")
        #expect(dn.subjectAlternativeNames == [.dnsName("dn-1.vpn.example.com")])
    }

    @Test func clientCertificatesCarryTheUserIdentity() throws {
        let state = try temporaryDirectory("pki")
        let materials = try prepare(standardInventory(), state: state).materials
        let alice = try X509Certificate(pem: materials.users["alice"]!.certificatePEM!)
        #expect(alice.subjectAlternativeNames == [.rfc822Name("alice@example.com")])
        #expect(alice.subject.commonName == "alice@example.com")
        #expect(alice.extendedKeyUsageOIDs == [ExtendedKeyUsage.clientAuth.oid])
        #expect(alice.keyUsage == [.digitalSignature])
        #expect(alice.notAfter.timeIntervalSince(testNow) == 365 * 86400)
        #expect(materials.users["alice"]!.keyType == .ecdsaP256)
        let carol = try X509Certificate(pem: materials.users["carol"]!.certificatePEM!)
        #expect(carol.subjectAlternativeNames == [.dnsName("carol.example.com")])
        // bob: password only; dave: revoked -> absent.
        #expect(materials.users["bob"]!.certificatePEM == nil && materials.users["bob"]!.p12 == nil)
        #expect(materials.users["bob"]!.password?.count == 24)
        #expect(materials.users["dave"] == nil)
        #expect(Set(materials.users.keys) == ["alice", "bob", "carol"])
        #expect(alice.serial != carol.serial)
    }

    @Test func rsaAndP384Profiles() throws {
        let state = try temporaryDirectory("pki")
        let inventory = makeInventory(
            nodes: [makeNode("fra-1", address: "fra-1.example.com")], users: [makeUser("alice")], caKey: .ecdsaP384,
            serverKey: .rsa2048, clientKey: .ecdsaP384)
        let materials = try prepare(inventory, state: state).materials
        let ca = try X509Certificate(pem: materials.caCertificatePEM)
        #expect(ca.signatureAlgorithm == "ecdsa-with-SHA384")
        #expect(materials.caKeyType == .ecdsaP384)
        let server = try X509Certificate(pem: materials.nodes["fra-1"]!.certificatePEM)
        #expect(server.publicKeyAlgorithm == .rsa(bits: 2048))
        #expect(server.keyUsage == [.digitalSignature, .keyEncipherment])
        #expect(server.signatureAlgorithm == "ecdsa-with-SHA384")
        #expect(materials.users["alice"]!.keyType == .ecdsaP384)
        // The certificate's SubjectPublicKeyInfo (the state's key ID) is the key's own, for RSA and EC.
        let serverKey = try PrivateKey(pem: materials.nodes["fra-1"]!.privateKeyPEM)
        #expect(try server.publicKeyDER() == serverKey.publicKeyDER())
        let alice = try X509Certificate(pem: materials.users["alice"]!.certificatePEM!)
        #expect(try alice.publicKeyDER() == PrivateKey(pem: materials.users["alice"]!.privateKeyPEM!).publicKeyDER())
        #expect(try alice.publicKeyDER() != serverKey.publicKeyDER())
    }

    /// A leaf certificate's EC key is set from its encoded point, without OpenSSL's encoder: the
    /// SubjectPublicKeyInfo must be exactly what `i2d_PUBKEY` makes of the key, and the certificate as
    /// issued (key held only encoded) and as read back must both match the key and verify.
    @Test(arguments: [KeyAlgorithm.ecdsaP256, .ecdsaP384, .rsa(bits: 2048)])
    func anIssuedCertificateCarriesTheKeysOwnPublicKeyInfo(algorithm: KeyAlgorithm) throws {
        let key = try PrivateKey.generate(algorithm)
        let template = CertificateTemplate(
            serial: GoldenPKI.serial("spki"),
            subject: DistinguishedName([NameAttribute("O", "acme"), NameAttribute("CN", "spki")]),
            notBefore: GoldenPKI.epoch, notAfter: GoldenPKI.epoch + 86400, keyUsage: [.digitalSignature])
        let issued = try CertificateIssuer.issue(
            template, subjectKey: key, issuer: GoldenPKI.ca, issuerKey: GoldenPKI.key("ca"))
        #expect(try issued.publicKeyDER() == key.publicKeyDER())
        let read = try X509Certificate(pem: issued.pem)
        #expect(try read.publicKeyDER() == key.publicKeyDER())
        for certificate in [issued, read] {
            #expect(key.matches(certificate))
            #expect(certificate.publicKeyAlgorithm == algorithm)
            #expect(certificate.isSigned(by: GoldenPKI.ca))
            #expect(!GoldenPKI.key("server").matches(certificate))
        }
    }

    @Test(.needs(.openssl, .pki)) func opensslAndStrongSwanAcceptTheCertificates() throws {
        let state = try temporaryDirectory("pki")
        let materials = try prepare(standardInventory(), state: state).materials
        let dir = try temporaryDirectory("pki")
        write(materials.caCertificatePEM, to: "\(dir)/ca.pem")
        let certs = [
            ("fra-1", materials.nodes["fra-1"]!.certificatePEM, "sslserver"),
            ("ams-1", materials.nodes["ams-1"]!.certificatePEM, "sslserver"),
            ("alice", materials.users["alice"]!.certificatePEM!, "sslclient"),
        ]
        for (name, pem, purpose) in certs {
            write(pem, to: "\(dir)/\(name).pem")
            let verify = try runTool([
                "openssl", "verify", "-purpose", purpose, "-CAfile", "\(dir)/ca.pem", "\(dir)/\(name).pem",
            ])
            #expect(verify.status == 0, "openssl verify \(name): \(verify.output)")
            let pkiVerify = try runTool(["pki", "--verify", "--in", "\(dir)/\(name).pem", "--cacert", "\(dir)/ca.pem"])
            #expect(pkiVerify.status == 0, "pki --verify \(name): \(pkiVerify.output)")
            let print = try runTool(["pki", "--print", "--in", "\(dir)/\(name).pem"])
            #expect(print.status == 0 && print.output.contains("issuer:"), "pki --print \(name): \(print.output)")
        }
        let server = try runTool(["pki", "--print", "--in", "\(dir)/fra-1.pem"])
        #expect(server.output.contains("serverAuth") && server.output.contains("fra-1.vpn.example.com"))
        let ca = try runTool(["pki", "--print", "--in", "\(dir)/ca.pem"])
        #expect(ca.status == 0 && ca.output.contains("CA"))
    }

    @Test(.needs(.openssl, .pki)) func distinguishedNamesAreEncodedLikeStrongSwan() throws {
        let dnText = "C=DE, O=acme, CN=dn-1.vpn.example.com, E=ops@example.com, OU=\u{00DC}nits"
        let state = try temporaryDirectory("pki")
        let inventory = makeInventory(nodes: [makeNode("dn-1", address: "dn-1.vpn.example.com", id: dnText)], users: [])
        let ours = try prepare(inventory, state: state).materials.nodes["dn-1"]!.certificatePEM
        let dir = try temporaryDirectory("pki")
        write(ours, to: "\(dir)/ours.pem")
        let key = try runTool(["pki", "--gen", "--type", "ecdsa", "--size", "256", "--outform", "pem"])
        write(
            key.output.components(separatedBy: "\n").filter { !$0.hasPrefix("plugin") }.joined(separator: "\n"),
            to: "\(dir)/k.pem")
        let theirs = try runTool([
            "pki", "--self", "--in", "\(dir)/k.pem", "--type", "ecdsa", "--dn", dnText, "--outform", "pem",
        ])
        write(
            theirs.output.components(separatedBy: "\n").filter { !$0.hasPrefix("plugin") }.joined(separator: "\n"),
            to: "\(dir)/theirs.pem")
        func subject(_ file: String) throws -> String {
            try runTool([
                "openssl", "x509", "-in", file, "-noout", "-subject", "-nameopt", "show_type,sep_comma_plus_space,utf8",
            ]).output
        }
        let expected = try subject("\(dir)/theirs.pem")
        #expect(expected.contains("C=PRINTABLESTRING:DE"))
        #expect(try subject("\(dir)/ours.pem") == expected)
    }

    @Test(.needs(.openssl)) func pkcs12UsesLegacy3DESAndOpensWithItsPassword() throws {
        let state = try temporaryDirectory("pki")
        let materials = try prepare(standardInventory(), state: state).materials
        let alice = materials.users["alice"]!
        let password = try #require(alice.p12Password)
        #expect(password.count == 24)
        let p12 = try #require(alice.p12)
        let opened = try PKCS12.parse(p12, password: password)
        #expect(opened.certificate.der == (try X509Certificate(pem: alice.certificatePEM!)).der)
        #expect(opened.key.matches(opened.certificate))
        #expect(opened.caCertificates.map(\.der) == [try X509Certificate(pem: materials.caCertificatePEM).der])
        #expect(throws: CryptoError.self) { try PKCS12.parse(p12, password: password + "x") }

        let dir = try temporaryDirectory("pki")
        _ = FileManager.default.createFile(atPath: "\(dir)/alice.p12", contents: Data(p12))
        let info = try runTool(
            ["openssl", "pkcs12", "-info", "-noout", "-in", "\(dir)/alice.p12", "-passin", "env:VPNPROV_TEST_P12"],
            environment: ["VPNPROV_TEST_P12": password])
        #expect(info.status == 0, "\(info.output)")
        #expect(info.output.contains("MAC: sha1"))
        #expect(info.output.contains("Shrouded Keybag: pbeWithSHA1And3-KeyTripleDES-CBC"))
        #expect(info.output.contains("PKCS7 Encrypted data: pbeWithSHA1And3-KeyTripleDES-CBC"))
        #expect(!info.output.contains("AES") && !info.output.contains("RC2"))
        let certs = try runTool(
            ["openssl", "pkcs12", "-nokeys", "-in", "\(dir)/alice.p12", "-passin", "env:VPNPROV_TEST_P12"],
            environment: ["VPNPROV_TEST_P12": password])
        #expect(certs.output.contains("friendlyName: alice"))
        #expect(certs.output.components(separatedBy: "BEGIN CERTIFICATE").count == 3)  // client + CA
        let wrong = try runTool(
            ["openssl", "pkcs12", "-info", "-noout", "-in", "\(dir)/alice.p12", "-passin", "env:VPNPROV_TEST_P12"],
            environment: ["VPNPROV_TEST_P12": "wrong"])
        #expect(wrong.status != 0)
    }

    /// The containers are built from their parts (the key encoded once for both and for its PEM): they
    /// must have, element for element and length for length, the layout of what OpenSSL's own
    /// `PKCS12_create` makes of the same key, certificate, CA and name (`openssl pkcs12 -export`).
    @Test(.needs(.openssl)) func containersBuiltFromPartsHaveTheLayoutOfOpenSSLsExport() throws {
        let state = try temporaryDirectory("pki")
        let alice = try prepare(standardInventory(), state: state).materials.users["alice"]!
        let opened = try PKCS12.parse(try #require(alice.p12), password: try #require(alice.p12Password))
        // As the state holds them (PEM): a certificate read from a PKCS#12 carries its bag's name.
        let contents = try PKCS12Contents(
            key: opened.key, certificate: X509Certificate(pem: opened.certificate.pem),
            caCertificates: opened.caCertificates.map { try X509Certificate(pem: $0.pem) }, friendlyName: "alice")
        #expect(try contents.keyPEM() == opened.key.pkcs8PEM())
        let dir = try temporaryDirectory("pki")
        try contents.keyPEM().write(toFile: "\(dir)/key.pem", atomically: true, encoding: .utf8)
        try opened.certificate.pem.write(toFile: "\(dir)/cert.pem", atomically: true, encoding: .utf8)
        try opened.caCertificates.map(\.pem).joined().write(
            toFile: "\(dir)/ca.pem", atomically: true, encoding: .utf8)
        /// The ASN.1 outline: each element's depth, header and length, without offsets and contents
        /// (salts and ciphertexts are random).
        func outline(_ der: [UInt8], _ name: String) throws -> String {
            _ = FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: Data(der))
            let parsed = try runTool(["openssl", "asn1parse", "-inform", "DER", "-in", "\(dir)/\(name)"])
            #expect(parsed.status == 0, "\(parsed.output)")
            return parsed.output.split(separator: "\n").map {
                String($0.drop { $0 != ":" }).replacingOccurrences(
                    of: #"\[HEX DUMP\]:.*"#, with: "", options: .regularExpression)
            }.joined(separator: "\n")
        }
        for (password, iterations) in [("export-password", "2048"), ("", "1")] {
            var arguments = [
                "openssl", "pkcs12", "-export", "-legacy", "-inkey", "\(dir)/key.pem", "-in", "\(dir)/cert.pem",
                "-certfile", "\(dir)/ca.pem", "-name", "alice", "-certpbe", "PBE-SHA1-3DES", "-keypbe",
                "PBE-SHA1-3DES", "-macalg", "sha1", "-out", "\(dir)/cli.p12", "-passout", "env:VPNPROV_TEST_P12",
            ]
            if iterations == "1" { arguments += ["-noiter", "-nomaciter"] }
            let exported = try runTool(arguments, environment: ["VPNPROV_TEST_P12": password])
            try #require(exported.status == 0, "\(exported.output)")
            let cli = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(dir)/cli.p12")))
            let ours =
                try password.isEmpty ? contents.containerWithEmptyPassword() : contents.container(password: password)
            #expect(try outline(ours, "ours.p12") == outline(cli, "cli-copy.p12"), "iterations \(iterations)")
            let reopened = try PKCS12.parse(ours, password: password)
            #expect(reopened.certificate.der == opened.certificate.der && reopened.key.matches(reopened.certificate))
        }
    }

    @Test(.needs(.openssl)) func sswanContainerHasTheEmptyPasswordAndTheSameLegacyAlgorithms() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state).materials.users["alice"]!
        let open = try #require(first.openP12)
        #expect(open != first.p12)
        let opened = try PKCS12.parse(open, password: "")
        #expect(opened.certificate.der == (try X509Certificate(pem: first.certificatePEM!)).der)
        #expect(opened.key.matches(opened.certificate))
        let dir = try temporaryDirectory("pki")
        _ = FileManager.default.createFile(atPath: "\(dir)/open.p12", contents: Data(open))
        let info = try runTool(["openssl", "pkcs12", "-info", "-noout", "-in", "\(dir)/open.p12", "-passin", "pass:"])
        #expect(info.status == 0, "\(info.output)")
        // One iteration: the password is known, so a count would only cost time (openssl -noiter -nomaciter).
        #expect(info.output.contains("MAC: sha1, Iteration 1\n"))
        #expect(info.output.contains("Shrouded Keybag: pbeWithSHA1And3-KeyTripleDES-CBC, Iteration 1\n"))
        #expect(info.output.contains("PKCS7 Encrypted data: pbeWithSHA1And3-KeyTripleDES-CBC, Iteration 1\n"))
        #expect(!info.output.contains("AES") && !info.output.contains("RC2"))
        // The password-protected container keeps 2048.
        let protected = try PKCS12.parse(first.p12!, password: first.p12Password!)
        #expect(protected.certificate.der == opened.certificate.der)
        _ = FileManager.default.createFile(atPath: "\(dir)/protected.p12", contents: Data(first.p12!))
        let protectedInfo = try runTool(
            ["openssl", "pkcs12", "-info", "-noout", "-in", "\(dir)/protected.p12", "-passin", "env:VPNPROV_TEST_P12"],
            environment: ["VPNPROV_TEST_P12": first.p12Password!])
        #expect(protectedInfo.output.contains("MAC: sha1, Iteration 2048\n"))
        #expect(protectedInfo.output.contains("Shrouded Keybag: pbeWithSHA1And3-KeyTripleDES-CBC, Iteration 2048\n"))
        // Stored in the state: the next run hands out the same bytes.
        let again = try prepare(standardInventory(), state: state).materials.users["alice"]!
        #expect(again.openP12 == open && again.p12 == first.p12)
    }

    @Test(.needs(.openssl)) func crlListsRevokedCertificatesAndVerifies() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        let aliceSerial = try X509Certificate(pem: first.materials.users["alice"]!.certificatePEM!).serialHex
        let initialCRL = try CertificateRevocationList(pem: first.materials.crlPEM)
        #expect(initialCRL.revoked.isEmpty)
        #expect(initialCRL.number == 1)

        var inventory = standardInventory()
        inventory.users[0].revoked = true
        let second = try prepare(inventory, state: state, now: testNow + 86400)
        #expect(second.materials.users["alice"] == nil)
        #expect(
            second.changes.contains(
                PKIChange(.revoked, .user("alice"), serial: aliceSerial, reason: "revoked in the inventory")))
        let crl = try CertificateRevocationList(pem: second.materials.crlPEM)
        #expect(crl.number == 2)
        #expect(
            crl.revoked == [RevokedCertificate(serial: bytesFromHex(aliceSerial)!, revocationDate: testNow + 86400)])
        #expect(crl.isSigned(by: try X509Certificate(pem: second.materials.caCertificatePEM)))

        let dir = try temporaryDirectory("pki")
        write(second.materials.caCertificatePEM, to: "\(dir)/ca.pem")
        write(second.materials.crlPEM, to: "\(dir)/crl.pem")
        let verify = try runTool([
            "openssl", "crl", "-in", "\(dir)/crl.pem", "-CAfile", "\(dir)/ca.pem", "-noout", "-verify", "-text",
        ])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("verify OK"))
        #expect(verify.output.contains("Serial Number: \(aliceSerial)"))
        #expect(verify.output.contains("X509v3 CRL Number"))
        #expect(verify.output.contains("X509v3 Authority Key Identifier"))
        write(first.materials.users["alice"]!.certificatePEM!, to: "\(dir)/alice.pem")
        let revoked = try runTool([
            "openssl", "verify", "-crl_check", "-CAfile", "\(dir)/ca.pem", "-CRLfile", "\(dir)/crl.pem",
            "\(dir)/alice.pem",
        ])
        #expect(revoked.status != 0 && revoked.output.contains("revoked"))

        // Re-adding the name issues a fresh certificate with a new serial and key; the CRL keeps the old one.
        let third = try prepare(standardInventory(), state: state, now: testNow + 2 * 86400)
        let fresh = try X509Certificate(pem: third.materials.users["alice"]!.certificatePEM!)
        #expect(fresh.serialHex != aliceSerial)
        #expect(third.materials.users["alice"]!.privateKeyPEM != first.materials.users["alice"]!.privateKeyPEM)
        #expect(third.materials.users["alice"]!.password != first.materials.users["alice"]!.password)
        #expect(
            try CertificateRevocationList(pem: third.materials.crlPEM).revoked.map { hexString($0.serial) } == [
                aliceSerial
            ])
    }

    @Test func revokeCommandRevokesAndTheNextRunReissues() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        let carolSerial = try X509Certificate(pem: first.materials.users["carol"]!.certificatePEM!).serialHex
        let result = try PKIManager.revoke(user: "carol", stateDirectory: state, environment: [:], now: testNow + 60)
        #expect(result.serial == carolSerial)
        #expect(result.changes.map(\.kind) == [.revoked, .crlUpdated])
        #expect(throws: PKIError.self) {
            try PKIManager.revoke(user: "carol", stateDirectory: state, environment: [:], now: testNow + 60)
        }
        #expect(throws: PKIError.self) {
            try PKIManager.revoke(user: "bob", stateDirectory: state, environment: [:], now: testNow + 60)
        }
        let second = try prepare(standardInventory(), state: state, now: testNow + 120)
        let crl = try CertificateRevocationList(pem: second.materials.crlPEM)
        #expect(crl.revoked.map { hexString($0.serial) } == [carolSerial])
        let carol = try X509Certificate(pem: second.materials.users["carol"]!.certificatePEM!)
        #expect(carol.serialHex != carolSerial)
        #expect(second.changes.contains { $0.kind == .issued && $0.holder == .user("carol") })
    }

    @Test func unchangedInventoryReissuesNothingAndStateIsByteIdentical() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        let before = snapshot(state)
        let second = try prepare(standardInventory(), state: state, now: testNow + 3600)
        #expect(second.changes.isEmpty)
        #expect(second.materials == first.materials)
        #expect(snapshot(state) == before)
    }

    @Test func changingOneNodeIdentityReissuesOnlyThatNode() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.nodes[1].id = .fqdn("ams-1.vpn.example.com")
        let second = try prepare(inventory, state: state, now: testNow + 60)
        #expect(second.changes.map(\.kind) == [.reissued])
        #expect(second.changes.first?.holder == .node("ams-1"))
        #expect(second.changes.first?.reason == "identity changed")
        for name in ["fra-1", "dn-1"] {
            #expect(second.materials.nodes[name] == first.materials.nodes[name])
        }
        #expect(second.materials.users == first.materials.users)
        let ams = try X509Certificate(pem: second.materials.nodes["ams-1"]!.certificatePEM)
        #expect(
            ams.subjectAlternativeNames == [
                .dnsName("ams-1.vpn.example.com"), .ipAddress([203, 0, 113, 10]), .dnsName("203.0.113.10"),
            ])
        // Same key type: the key is kept.
        #expect(second.materials.nodes["ams-1"]!.privateKeyPEM == first.materials.nodes["ams-1"]!.privateKeyPEM)
    }

    @Test func keyTypeChangeGeneratesANewKey() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.pki.clientKey = .ecdsaP384
        let second = try prepare(inventory, state: state, now: testNow + 60)
        #expect(Set(second.changes.filter { $0.kind == .reissued }.map(\.holder)) == [.user("alice"), .user("carol")])
        #expect(second.materials.users["alice"]!.privateKeyPEM != first.materials.users["alice"]!.privateKeyPEM)
        #expect(second.materials.users["alice"]!.keyType == .ecdsaP384)
        #expect(second.materials.users["alice"]!.p12 != first.materials.users["alice"]!.p12)
        #expect(second.materials.nodes == first.materials.nodes)
    }

    @Test func certificatesAreRenewedNearExpiryWithTheSameKey() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        // 340 days later client certificates (365 days) are within 30 days of expiry; servers are not.
        let later = testNow + 340 * 86400
        let second = try prepare(standardInventory(), state: state, now: later)
        #expect(Set(second.changes.filter { $0.kind == .reissued }.map(\.holder)) == [.user("alice"), .user("carol")])
        #expect(second.changes.first { $0.holder == .user("alice") }?.reason == "expires in 25 days")
        #expect(second.materials.users["alice"]!.privateKeyPEM == first.materials.users["alice"]!.privateKeyPEM)
        #expect(second.materials.nodes == first.materials.nodes)
        let renewed = try X509Certificate(pem: second.materials.users["alice"]!.certificatePEM!)
        #expect(renewed.notAfter == later + 365 * 86400)
        // The superseded certificate is not revoked.
        #expect(try CertificateRevocationList(pem: second.materials.crlPEM).revoked.isEmpty)
    }

    @Test func lifetimeSettingChangeReissues() throws {
        let state = try temporaryDirectory("pki")
        try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.pki.serverDays = 400
        let second = try prepare(inventory, state: state, now: testNow + 60)
        #expect(second.changes.filter { $0.kind == .reissued }.count == 3)
        #expect(second.changes.allSatisfy { $0.reason == "lifetime changed" })
    }

    @Test(.needs(.openssl)) func crlURLPutsADistributionPointInServerCertificatesOnly() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.pki.crlURL = "http://crl.example.com/vpn.crl"
        let second = try prepare(inventory, state: state, now: testNow + 60)
        // Only the servers are re-issued, with their keys; users keep their certificates.
        #expect(
            Set(second.changes.filter { $0.kind == .reissued }.map(\.holder))
                == Set(inventory.nodes.map { .node($0.name) }))
        #expect(
            second.changes.filter { $0.kind == .reissued }.allSatisfy { $0.reason == "CRL distribution point changed" })
        #expect(second.materials.users == first.materials.users)
        #expect(second.materials.nodes["fra-1"]!.privateKeyPEM == first.materials.nodes["fra-1"]!.privateKeyPEM)
        // openssl reads the extension back from the certificate as issued; a user certificate has none.
        let dir = try temporaryDirectory("pki")
        write(second.materials.nodes["fra-1"]!.certificatePEM, to: "\(dir)/fra-1.pem")
        write(second.materials.users["alice"]!.certificatePEM!, to: "\(dir)/alice.pem")
        let server = try runTool([
            "openssl", "x509", "-in", "\(dir)/fra-1.pem", "-noout", "-ext", "crlDistributionPoints",
        ])
        #expect(server.status == 0 && server.output.contains("URI:http://crl.example.com/vpn.crl"), "\(server.output)")
        let user = try runTool([
            "openssl", "x509", "-in", "\(dir)/alice.pem", "-noout", "-ext", "crlDistributionPoints",
        ])
        #expect(!user.output.contains("URI:"), "\(user.output)")
        // Stable: the same setting re-issues nothing; removing it re-issues the servers again.
        let third = try prepare(inventory, state: state, now: testNow + 120)
        #expect(third.changes.filter { $0.kind == .reissued }.isEmpty)
        let fourth = try prepare(standardInventory(), state: state, now: testNow + 180)
        #expect(fourth.changes.filter { $0.kind == .reissued }.count == inventory.nodes.count)
    }

    @Test func removedUsersAndNodesAreRevoked() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        var inventory = standardInventory()
        inventory.users.removeAll { $0.name == "carol" }
        inventory.nodes.removeAll { $0.name == "dn-1" }
        let second = try prepare(inventory, state: state, now: testNow + 60)
        #expect(Set(second.changes.filter { $0.kind == .revoked }.map(\.holder)) == [.user("carol"), .node("dn-1")])
        let revoked = Set(
            try CertificateRevocationList(pem: second.materials.crlPEM).revoked.map { hexString($0.serial) })
        #expect(revoked.contains(try X509Certificate(pem: first.materials.users["carol"]!.certificatePEM!).serialHex))
        #expect(revoked.count == 2)
    }

    @Test func generatedSecretsAreStrongAndStable() throws {
        let state = try temporaryDirectory("pki")
        let first = try prepare(standardInventory(), state: state)
        let psk = try #require(first.materials.nodes["fra-1"]!.psk)
        #expect(psk.count == 32)
        #expect(first.materials.nodes["ams-1"]!.psk == nil)  // no PSK service
        let allowed = Set(SecretResolver.alphabet)
        for secret in [psk, first.materials.users["alice"]!.password!, first.materials.users["alice"]!.p12Password!] {
            #expect(secret.allSatisfy { allowed.contains($0) })
            #expect(!secret.lowercased().hasPrefix("0x") && !secret.lowercased().hasPrefix("0s"))
        }
        #expect(first.materials.users["alice"]!.password != first.materials.users["bob"]!.password)
        let second = try prepare(standardInventory(), state: state)
        #expect(second.materials.nodes["fra-1"]!.psk == psk)
    }

    @Test func secretReferencesResolveFromEnvironmentFilesAndLiterals() throws {
        let state = try temporaryDirectory("pki")
        let inventoryDir = try temporaryDirectory("pki")
        try FileManager.default.createDirectory(atPath: "\(inventoryDir)/secrets", withIntermediateDirectories: true)
        write("file-password-value\n", to: "\(inventoryDir)/secrets/bob")
        let inventory = makeInventory(
            nodes: [makeNode("fra-1", address: "fra-1.example.com", services: [.ikev2PSK], psk: .env("VPN_FRA_PSK"))],
            users: [
                makeUser("alice", cert: false, password: .literal("literal-password-value")),
                makeUser("bob", cert: false, password: .file("secrets/bob")),
            ])
        let result = try PKIManager.prepare(
            inventory: inventory, stateDirectory: state, inventoryDirectory: inventoryDir,
            environment: ["VPN_FRA_PSK": "env-psk-value-0123456789"], now: testNow)
        #expect(result.materials.nodes["fra-1"]!.psk == "env-psk-value-0123456789")
        #expect(result.materials.users["alice"]!.password == "literal-password-value")
        #expect(result.materials.users["bob"]!.password == "file-password-value")
    }

    @Test func missingSecretReferencesAreInventoryErrorsWithoutValues() throws {
        let state = try temporaryDirectory("pki")
        let inventory = makeInventory(
            nodes: [makeNode("fra-1", address: "fra-1.example.com", services: [.ikev2PSK], psk: .env("VPN_FRA_PSK"))],
            users: [makeUser("bob", cert: false, password: .file("does/not/exist"))])
        do {
            _ = try prepare(inventory, state: state, env: ["OTHER": "s3cr3t-value-xyz"])
            Issue.record("expected an error")
        } catch let error as PKIError {
            #expect(error.isInventory && !error.isEnvironment)
            #expect(error.code == .secretUnavailable)
            #expect(error.message.contains("env:VPN_FRA_PSK"))
            #expect(!error.message.contains("s3cr3t"))
        }
        do {
            _ = try prepare(
                makeInventory(nodes: [], users: [makeUser("bob", cert: false, password: .file("does/not/exist"))]),
                state: state)
            Issue.record("expected an error")
        } catch let error as PKIError {
            #expect(error.isInventory)
            #expect(error.message.contains("file:does/not/exist"))
        }
        // Nothing was written for a run that failed on its inventory.
        #expect(!FileManager.default.fileExists(atPath: "\(state)/index.json"))
    }

    @Test func noSecretValueReachesMessages() throws {
        let state = try temporaryDirectory("pki")
        let inventory = makeInventory(
            nodes: [
                makeNode(
                    "fra-1", address: "fra-1.example.com", services: [.ikev2PSK, .ikev2Cert],
                    psk: .literal("literal-psk-value-123"))
            ],
            users: [makeUser("alice", password: .generate)])
        let result = try prepare(inventory, state: state)
        let secrets = [
            "literal-psk-value-123", result.materials.users["alice"]!.password!,
            result.materials.users["alice"]!.p12Password!,
        ]
        let texts = result.changes.map(\.description) + result.warnings
        for text in texts {
            for secret in secrets { #expect(!text.contains(secret)) }
        }
        // An error of a later run names references only.
        var broken = inventory
        broken.users[0].password = .env("VPN_ALICE_PW")
        do {
            _ = try prepare(broken, state: state, env: ["VPN_ALICE_PWX": secrets[1]])
            Issue.record("expected an error")
        } catch let error as PKIError {
            for secret in secrets { #expect(!error.description.contains(secret)) }
        }
    }

    @Test func prepareScalesToManyCertificateUsers() throws {
        // Functional check of the parallel path (not timed): 60 users in one run, all distinct serials.
        let state = try temporaryDirectory("pki")
        let users = (0..<60).map { makeUser("user\($0)") }
        let inventory = makeInventory(nodes: [makeNode("fra-1", address: "fra-1.example.com")], users: users)
        let counter = ProgressCounter()
        let result = try PKIManager.prepare(
            inventory: inventory, stateDirectory: state, inventoryDirectory: state, environment: [:], now: testNow,
            progress: { done, total in counter.record(done, total) })
        let serials = Set(
            try result.materials.users.values.map { try X509Certificate(pem: $0.certificatePEM!).serialHex })
        #expect(serials.count == 60)
        #expect(counter.maximum == 61 && counter.total == 61)
    }
}

/// The highest progress count a run reported, and the total it gave.
final class ProgressCounter: Sendable {
    private let seen = Locked((maximum: 0, total: 0))
    var maximum: Int { seen.value.maximum }
    var total: Int { seen.value.total }
    func record(_ done: Int, _ total: Int) {
        seen.withLock { $0 = (max($0.maximum, done), total) }
    }
}
