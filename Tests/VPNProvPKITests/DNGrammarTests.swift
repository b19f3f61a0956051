import Foundation
import Testing
import VPNProvCrypto
import VPNProvModel
import VPNProvPKI
import VPNProvPlanning
import VPNProvTestFixtures

/// One DN grammar for validation and issuing (VPNProvCrypto's DistinguishedNameGrammar.swift): a DN
/// identity validates exactly when `generate` can issue it, and the certificate's subject is what
/// strongSwan's own parser makes of the same text.
@Suite(.temporaries) struct DNGrammarTests {
    typealias F = Found

    /// DNs the two parsers would read differently, and OpenSSL's or strongSwan's names the other does not share.
    static let refused = [
        "2.5.4.3=srv",  // a dotted OID: strongSwan's atodn reads it as a key ID
        "CN=srv, TCGID=x", "CN=srv, ND=x", "CN=srv, EN=1", "CN=srv, employeeNumber=1",  // OpenSSL knows no such object
        // OpenSSL's names, not strongSwan's:
        "CN=srv, S=x", "CN=srv, GN=x", "CN=srv, title=x", "CN=srv, name=x", "CN=srv, initials=x",
        "CN=srv, ID=x", "CN=srv, postalAddress=x",  // not a string in X.520
        "CN=srv, organizationIdentifier=x",  // strongSwan 6 only
        "CN==srv", "CN= =srv",  // atodn drops the '='
        (1...21).map { "OU=u\($0)" }.joined(separator: ", "),  // more than RDN_MAX
    ]

    static let accepted = [
        "CN=srv, UN=x", "CN=srv, D=desc",
        "c=DE, st=Bayern, l=M, street=Main 1, postalcode=80331, o=acme, ou=vpn, cn=srv",
        "CN=srv, SN=Doe, G=Ann, I=AD, N=Ann Doe, T=Boss, serialNumber=7, dnQualifier=q, dmdName=d, pseudonym=p",
        "UID=u, DC=example, E=a@b.example, Email=c@d.example, emailAddress=e@f.example, unstructuredName=un, UA=ua, CN=srv",
        "/C=DE/O=acme, inc./CN=srv", "CN=zürich",
    ]

    @Test(arguments: refused)
    func refusedByValidationAndByIssuing(_ dn: String) {
        let inventory = Fixture.good().with { $0.nodes[1].id = .dn(dn) }
        #expect(Fixture.found(inventory) == [F(.invalidIdentity, 42, 14)], "\(dn)")
        #expect((try? CertificateProfile.server(inventory.nodes[1], inventory: inventory)) == nil, "\(dn)")
    }

    @Test(arguments: accepted)
    func acceptedByValidationAndByIssuing(_ dn: String) throws {
        let inventory = Fixture.good().with { $0.nodes[1].id = .dn(dn) }
        #expect(Fixture.found(inventory) == [], "\(dn)")
        #expect(
            try CertificateProfile.server(inventory.nodes[1], inventory: inventory).subject.attributes.count
                == dn.split(separator: dn.hasPrefix("/") ? "/" : ",").count, "\(dn)")
    }

    @Test func everyAttributeTypeIsTheOIDOpenSSLHasForIt() {
        for type in DistinguishedName.attributeTypes {
            #expect(DistinguishedName.openSSLObjectID(type.openSSLName) == type.oid, "\(type.keywords)")
        }
    }

    /// The subject as `openssl x509 -subject` prints it with numeric OIDs and string types.
    static func subject(_ pem: String, in dir: String) throws -> String {
        let path = dir + "/\(UUID().uuidString).pem"
        try pem.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try runTool([
            "openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt",
            "oid,show_type,sep_comma_plus,utf8,esc_ctrl",
        ])
        #expect(r.status == 0, "\(r.output)")
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.needs(.openssl, .pki)) func issuedSubjectIsWhatStrongSwanMakesOfTheText() throws {
        try TestDependency.pki.require()
        let dir = try temporaryDirectory("pki")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = try runTool(["pki", "--gen", "--type", "ecdsa", "--size", "256", "--outform", "pem"])
        try #require(key.status == 0)
        let keyPath = dir + "/key.pem"
        // pki may print plugin warnings before the key: keep the PEM block.
        let pemStart = try #require(key.output.range(of: "-----BEGIN"))
        try String(key.output[pemStart.lowerBound...]).write(toFile: keyPath, atomically: true, encoding: .utf8)

        for dn in Self.accepted {
            let inventory = Fixture.good().with {
                $0.nodes[1].id = .dn(dn)
                $0.users = []  // no secrets to resolve
            }
            let state = dir + "/state-\(UUID().uuidString)"
            let ours = try #require(try prepare(inventory, state: state).materials.nodes["ams-1"]?.certificatePEM)
            // strongSwan's own DN parser (atodn) on the same text, in a self-signed certificate.
            let theirs = try runTool(["pki", "--self", "--in", keyPath, "--dn", dn, "--outform", "pem"])
            let start = try #require(theirs.output.range(of: "-----BEGIN"), "pki refused '\(dn)': \(theirs.output)")
            // DC is an IA5String as RFC 4519 has it; strongSwan writes a PrintableString and compares
            // the bytes, which are the same.
            let issued = try Self.subject(ours, in: dir)
                .replacingOccurrences(
                    of: "0.9.2342.19200300.100.1.25=IA5STRING:", with: "0.9.2342.19200300.100.1.25=PRINTABLESTRING:")
            #expect(issued == (try Self.subject(String(theirs.output[start.lowerBound...]), in: dir)), "\(dn)")
        }
    }
}
