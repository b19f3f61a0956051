import Foundation
import Testing
import VPNProvModel
import VPNProvPKI
import VPNProvTestFixtures

@testable import VPNProvCLI
@testable import VPNProvTestSupport

/// One test per crash found by fuzzing or by MutationTests: the input that crashed, which
/// must now end in diagnostics.
@Suite(.temporaries) struct FuzzRegressionTests {
    static func decodeAndValidate(_ text: String) -> [Diagnostic] {
        let result = InventoryLoader.decode(bytes: Array(text.utf8), file: "crash.yaml")
        guard let inventory = result.inventory else { return result.diagnostics }
        return result.diagnostics + Validator.validate(inventory)
    }

    /// SecretPolicy.estimate looped over `1...(n / 2)`, a trap for a one-character secret.
    @Test(arguments: ["x", "7"])
    func oneCharacterLiteralSecretIsWeakNotACrash(_ secret: String) {
        let diagnostics = Self.decodeAndValidate(
            """
            vpnprov: 1
            name: acme
            nodes:
              fra-1:
                address: 192.0.2.1
                services: [ikev2-psk]
                psk: "\(secret)"
            """)
        #expect(diagnostics.contains { $0.location?.line == 7 && $0.severity == .error })
        #expect(!diagnostics.contains { $0.message.contains("\"\(secret)\"") })
    }

    /// The excerpt of a diagnostic on a 15 MiB line decoded the whole line (and lowercased it to look
    /// for secret keys): 10+ s and 300 MB for `vpnprov validate` on a huge scalar. Only the start is read.
    @Test func excerptReadsOnlyTheStartOfAHugeLine() {
        let bytes = Array("a: 1\nb: ".utf8) + Array(repeating: UInt8(ascii: "x"), count: 15 << 20) + [0x0A]
        let line = DiagnosticPrinter.sourceLine(bytes, 2)
        #expect(line?.hasPrefix("b: xxx") == true)
        #expect((line?.utf8.count ?? .max) <= DiagnosticPrinter.maxExcerptBytes)
        #expect(DiagnosticPrinter.sourceLine(bytes, 1) == "a: 1")
        #expect(DiagnosticPrinter.sourceLine(bytes, 3) == "")
    }

    // MARK: State files (vpnprov-fuzz's state readers)

    /// index.json with one revoked client certificate whose serial is `serial`, and CRL `crlNumber`.
    static func index(revokedSerial serial: String, crlNumber: Int = 1, generation: Int? = nil) -> [UInt8] {
        let generationField = generation.map { #","generation":\#($0)"# } ?? ""
        return Array(
            """
            {"version":1,"nodes":{},"users":{},
             "ca":{"serial":"01","commonName":"acme VPN Root CA","keyType":"ecdsa-p256","fingerprint":"00",\
            "notAfter":"2036-11-27T17:56:17Z"\(generationField)},
             "crl":{"number":\(crlNumber),"thisUpdate":"2026-11-30T00:00:00Z","nextUpdate":"2027-11-30T00:00:00Z","revokedSerials":[]},
             "certificates":{"\(serial)":{"serial":"\(serial)","kind":"client","holder":"carol","subject":"CN=carol",\
            "subjectAltNames":[],"keyType":"ecdsa-p256","days":365,"notBefore":"2026-11-30T00:00:00Z",\
            "notAfter":"2027-11-30T00:00:00Z","status":"revoked"}}}
            """.utf8)
    }

    static func stateError(_ body: () throws -> some Any) -> StateError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? StateError
        }
    }

    /// Found by vpnprov-fuzz: a revoked certificate in index.json whose serial is not hexadecimal
    /// trapped on a force unwrap when the CRL was built (generate, revoke and every lifecycle
    /// command), instead of saying what is wrong with the state.
    @Test(arguments: ["ZZ", "", "2D1", "0x2D", "../../etc/passwd"])
    func revokedSerialThatIsNotHexIsAnErrorNotACrash(_ serial: String) throws {
        let now = Date(timeIntervalSince1970: 1_795_996_800)
        let error = try #require(
            Self.stateError { try StateInputs.readIndex(Self.index(revokedSerial: serial), now: now) })
        #expect(error.code == .stateInconsistent)
        #expect(
            error.message.contains(
                "index.json lists the revoked certificate '\(serial)', whose serial is not hexadecimal"))
        #expect(error.message.hasSuffix("nothing was changed"))
        // A hex serial of either case is listed.
        #expect(try StateInputs.readIndex(Self.index(revokedSerial: "2d11"), now: now).nextCRLNumbers == [2])
    }

    /// The next CRL number and the next CA generation come from index.json too: at Int.max they
    /// overflowed (a trap) where they are now an error.
    @Test func crlNumberAndCAGenerationWithoutSuccessorAreErrors() throws {
        let now = Date(timeIntervalSince1970: 1_795_996_800)
        for number in [Int.max, -1, Int.min] {
            let error = try #require(
                Self.stateError {
                    try StateInputs.readIndex(Self.index(revokedSerial: "2D", crlNumber: number), now: now)
                })
            #expect(
                error.code == .stateInconsistent
                    && error.message.contains("gives the CRL number \(number), which has no next number"))
        }
        let error = try #require(
            Self.stateError {
                try StateInputs.readIndex(Self.index(revokedSerial: "2D", generation: Int.max), now: now)
            })
        #expect(
            error.code == .stateInconsistent
                && error.message.contains("gives the CA generation \(Int.max), which has no next generation"))
        #expect(
            try StateInputs.readIndex(Self.index(revokedSerial: "2D", crlNumber: Int.max - 1, generation: 7), now: now)
                == StateInputs.IndexContents(
                    certificates: 1, revoked: 1, nodes: 0, users: 0, heldUsers: 0, nextCRLNumbers: [Int.max],
                    nextCAGeneration: 8))
    }

    /// A generated deployment of one node and one certificate user, to break the state of.
    static func generatedWorkspace() throws -> String {
        let dir = try temporaryDirectory()
        try """
        vpnprov: 1
        name: acme
        nodes:
          fra-1: {address: fra-1.vpn.example.com, pool: 10.10.0.0/24, services: [ikev2-cert]}
        users:
          bob: {cert: true}
        """.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["generate"], in: dir).code == 0)
        return dir
    }

    /// Key ids, serials and p12 file names of index.json become state file paths: one that is not a
    /// name vpnprov writes (`../`) is refused before any file is read or written.
    @Test func indexNamesThatWouldLeaveTheStateDirectoryAreRefused() throws {
        let dir = try Self.generatedWorkspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Edited by hand, as an earlier vpnprov wrote it (a sealed state refuses any edit).
        try StateDamage.unseal(dir + "/state")
        let indexPath = dir + "/state/index.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        for (field, value) in [("key", "../../../etc/hostname"), ("serial", "../x"), ("p12", "../../escape.p12")] {
            var json = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
            var users = json["users"] as! [String: Any]
            var bob = users["bob"] as! [String: Any]
            if field == "p12" {
                var p12 = bob["p12"] as! [String: Any]
                p12["file"] = value
                bob["p12"] = p12
            } else {
                bob[field] = value
            }
            users["bob"] = bob
            json["users"] = users
            let broken = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
            try broken.write(to: URL(fileURLWithPath: indexPath))
            for command in [["generate"], ["status"]] {
                let run = vpnprov(command, in: dir)
                #expect(run.code == ExitCode.environment, "\(command) \(field): \(run.err)")
                #expect(
                    run.err.contains("names a state file '\(value)' that is not a name vpnprov writes"), "\(run.err)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: indexPath)) == broken)
        }
        try original.write(to: URL(fileURLWithPath: indexPath))
        #expect(vpnprov(["generate"], in: dir).code == 0)
    }

    /// The same state through the commands: `generate` on a state whose index.json lists a revoked
    /// certificate with a serial that is not hex ends with exit 3 and the reason, and changes nothing;
    /// `rotate-ca` on a CA of generation Int.max likewise.
    @Test func commandsOnAnIndexThatCannotMakeACRLFailCleanly() throws {
        let dir = try Self.generatedWorkspace()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Edited by hand, as an earlier vpnprov wrote it (a sealed state refuses any edit).
        try StateDamage.unseal(dir + "/state")
        let indexPath = dir + "/state/index.json"
        func edit(_ change: (inout [String: Any]) -> Void) throws -> Data {
            var json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: indexPath)))
                    as? [String: Any])
            change(&json)
            let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
            try data.write(to: URL(fileURLWithPath: indexPath))
            return data
        }

        let original = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        let broken = try edit { json in
            var certificates = json["certificates"] as! [String: Any]
            var record = certificates.values.compactMap { $0 as? [String: Any] }.first {
                $0["holder"] as? String == "bob"
            }!
            record["serial"] = "ZZ"
            record["status"] = "revoked"
            certificates["ZZ"] = record
            json["certificates"] = certificates
        }
        let run = vpnprov(["generate"], in: dir)
        #expect(run.code == ExitCode.environment)
        #expect(
            run.err.contains("index.json lists the revoked certificate 'ZZ', whose serial is not hexadecimal"),
            "\(run.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: indexPath)) == broken)

        // rotate-ca: a CA of generation Int.max (stored by serial, as generations above 1 are).
        try original.write(to: URL(fileURLWithPath: indexPath))
        var serial = ""
        var crlNumber = 0
        _ = try edit { json in
            var ca = json["ca"] as! [String: Any]
            serial = ca["serial"] as! String
            ca["generation"] = Int.max
            json["ca"] = ca
            crlNumber = (json["crl"] as! [String: Any])["number"] as! Int
        }
        let fm = FileManager.default
        try fm.moveItem(atPath: dir + "/state/ca/ca.pem", toPath: dir + "/state/ca/\(serial).pem")
        try fm.moveItem(atPath: dir + "/state/ca/ca.key", toPath: dir + "/state/ca/\(serial).key")
        try fm.moveItem(
            atPath: dir + "/state/crl/\(crlNumber).pem", toPath: dir + "/state/crl/\(serial)-\(crlNumber).pem")
        let before = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        let rotate = vpnprov(["rotate-ca"], in: dir)
        #expect(rotate.code == ExitCode.environment)
        #expect(
            rotate.err.contains("gives the CA generation \(Int.max), which has no next generation"), "\(rotate.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: indexPath)) == before)
    }
}
