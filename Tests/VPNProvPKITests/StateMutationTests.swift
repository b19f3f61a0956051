import Foundation
import Testing
import VPNProvCrypto
import VPNProvEngine
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvPKI
@testable import VPNProvTestSupport

/// The state directory's files through the readers the fuzzer drives (StateInputs: index.json as the
/// lifecycle commands load it, secrets.json, `status`, output-location, PEM certificates and CRLs).
/// The seeds (fuzz/corpus/state-*, from `vpnprov generate`, `revoke` and `rotate-ca` on the example
/// inventory, secrets replaced by placeholders) decode to what the state holds; thousands of seeded
/// mutants of them each end in a value or in a state-unreadable (or, for records that cannot make a
/// CRL, state-inconsistent) error that names the state directory, never a trap (a trap ends the
/// whole test run).
@Suite(.temporaries) struct StateMutationTests {
    /// The fuzzer's clock (`StateInputs.seedClock`).
    static let now = StateInputs.seedClock
    static let inputCount = 3_000
    static let caSerial = "052BB389D3FD54DBA7425FC86D2746EF"
    static let carolSerial = "2D112E8EA09974E1062746A0B798B60F"
    /// The value every secret of the secrets.json seed holds; it must never be printed.
    static let placeholder = "placeholder-not-a-secret"

    static func seed(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: InventoryFixtures.repository.appendingPathComponent("fuzz/corpus/\(name)")))
    }

    static func stateSeedNames() throws -> [String] {
        let directory = InventoryFixtures.repository.appendingPathComponent("fuzz/corpus").path
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("state-") }.sorted()
    }

    /// The inventory `status` reports against, the fuzzer's (`StateInputs.statusInventory`).
    static let inventory = StateInputs.statusInventory

    // MARK: The seeds decode to their values

    /// issuing.json: the seed names one certificate; a serial that is no serial vpnprov writes, or a
    /// key that differs from the record's serial, is refused (the loader stops rather than guess).
    @Test func issuingJournalSeedDecodesAndBadSerialsAreRefused() throws {
        let bytes = try Self.seed("journal-issuing.json")
        #expect(try StateInputs.readIssuingJournal(bytes, now: Self.now) == 1)
        let text = String(decoding: bytes, as: UTF8.self)
        for bad in [
            text.replacingOccurrences(of: "\"5A17E0C0FFEE0000000000000000BEEF\": {", with: "\"../../x\": {"),
            text.replacingOccurrences(
                of: "\"serial\": \"5A17E0C0FFEE0000000000000000BEEF\"", with: "\"serial\": \"AB\""),
            text.replacingOccurrences(of: "\"version\": 1", with: "\"version\": 2"), "{}",
        ] {
            #expect(throws: StateError.self) { try StateInputs.readIssuingJournal(Array(bad.utf8), now: Self.now) }
        }
    }

    /// manifest.sha256 (a generated state's, in the corpus outside the `state-*` mix): it lists four
    /// records, and every single-bit flip of every byte is refused, naming the file: its lines are
    /// sealed by its last one, which seals nothing but them.
    @Test func manifestSeedDecodesAndEveryBitFlipIsRefused() throws {
        let bytes = try Self.seed("manifest-state.sha256")
        #expect(try StateInputs.readManifest(bytes) == 4)
        var refused = 0
        for i in bytes.indices {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[i] ^= UInt8(1 << bit)
                #expect(throws: StateError.self, "byte \(i) bit \(bit)") { try StateInputs.readManifest(flipped) }
                refused += 1
            }
        }
        for cut in [0, 1, bytes.count / 2, bytes.count - 1] {
            #expect(throws: StateError.self) { try StateInputs.readManifest(Array(bytes.prefix(cut))) }
        }
        #expect(refused == 8 * bytes.count)
        do {
            try StateInputs.readManifest(Array(bytes.dropLast()))
        } catch let error as StateError {
            #expect(error.message.contains(StateInputs.stateDirectory + "/manifest.sha256"))
        }
    }

    /// rollout-pending: the sorted names vpnprov writes, one a line; anything else is refused (a name
    /// lost would be a node that silently stops waiting for its rollout).
    @Test func rolloutLedgerSeedDecodesAndOtherListsAreRefused() throws {
        #expect(
            try StateInputs.readRolloutPending(try Self.seed("ledger-rollout-pending")) == ["fra-1", "nyc-1", "sgp-1"])
        for bad in [
            "", "\n", "nyc-1\nfra-1\n", "fra-1\n\nnyc-1\n", "fra-1", " fra-1\n", "fra-1\nfra-1\n", "../x\n",
            "fr\u{1}a\n",
        ] {
            #expect(throws: StateError.self, "\(bad.debugDescription)") {
                try StateInputs.readRolloutPending(Array(bad.utf8))
            }
        }
    }

    @Test func revokedIndexSeedDecodesToItsRecords() throws {
        let bytes = try Self.seed("state-index-revoked.json")
        let index = try StateStore.decodeIndex(bytes, path: "index.json")
        #expect(index.ca?.serial == Self.caSerial)
        #expect(index.ca?.keyType == .ecdsaP256)
        #expect(index.certificates.count == 7)
        let carol = try #require(index.certificates[Self.carolSerial])
        #expect(carol.holder == "carol" && carol.kind == .client && carol.status == .revoked)
        #expect(carol.subjectAltNames == ["email:carol@acme"])
        #expect(index.revokedByCommand == ["carol": Self.carolSerial])
        #expect(index.crl?.number == 2 && index.crl?.revokedSerials == [Self.carolSerial])
        #expect(Set(index.nodes.keys) == ["fra-1", "nyc-1", "sgp-1"])
        #expect(Set(index.users.keys) == ["bob", "erin"])
        #expect(index.rotation == nil && index.retiredCAs == nil)

        let contents = try StateInputs.readIndex(bytes, now: Self.now)
        #expect(
            contents
                == StateInputs.IndexContents(
                    certificates: 7, revoked: 1, nodes: 3, users: 2, heldUsers: 1, nextCRLNumbers: [nil],
                    nextCAGeneration: 2))
        // Within 30 days of the CRL's next update (2027-11-30) a new CRL is due, with the next number.
        let lateNow = Self.now + 345 * 86400
        #expect(try StateInputs.readIndex(bytes, now: lateNow).nextCRLNumbers == [3])
        let entries = try #require(
            try PKISession.crlContents(
                PKISession.revokedByCA(index, current: index.ca!).current, previous: index.crl, hasPEM: false,
                now: Self.now,
                stateDirectory: StateInputs.stateDirectory))
        #expect(entries.number == 3 && entries.serials == [Self.carolSerial])
        #expect(entries.entries.map { hexString($0.serial) } == [Self.carolSerial])
    }

    @Test func rotationAndRetiredIndexSeedsDecode() throws {
        let rotation = try StateStore.decodeIndex(try Self.seed("state-index-rotation.json"), path: "index.json")
        #expect(rotation.rotation?.previous.serial == Self.caSerial)
        #expect(rotation.rotation?.crossSerial == "1B406422AC746C6EC2F1940278DFCEBF")
        #expect(rotation.rotation?.previousCRL?.revokedSerials == [Self.carolSerial])
        #expect(rotation.ca?.generation == 2)
        let (current, previous) = PKISession.revokedByCA(rotation, current: rotation.ca!)
        #expect(current.isEmpty && previous.map(\.serial) == [Self.carolSerial])
        #expect(
            try StateInputs.readIndex(try Self.seed("state-index-rotation.json"), now: Self.now)
                == StateInputs.IndexContents(
                    certificates: 14, revoked: 1, nodes: 3, users: 2, heldUsers: 1, nextCRLNumbers: [nil, nil],
                    nextCAGeneration: 3))
        // The compact copy is the same index.
        #expect(
            try StateStore.decodeIndex(try Self.seed("state-index-rotation-compact.json"), path: "index.json")
                == rotation)

        let retired = try StateStore.decodeIndex(try Self.seed("state-index-retired.json"), path: "index.json")
        #expect(retired.rotation == nil)
        #expect(retired.retiredCAs?.map(\.serial) == [Self.caSerial])
        #expect(
            try StateInputs.readIndex(try Self.seed("state-index-retired.json"), now: Self.now).nextCAGeneration == 3)
    }

    @Test func statusOfTheRevokedSeed() throws {
        let (report, text, json) = try StateInputs.status(
            indexJSON: try Self.seed("state-index-revoked.json"),
            secretsJSON: try Self.seed("state-secrets-placeholders.json"),
            inventory: Self.inventory, now: Self.now, expiringWithin: 30)
        #expect(report.ca?.serial == Self.caSerial && report.ca?.generation == 1)
        #expect(report.rotation.phase == "none")
        #expect(report.certificates.first { $0.holder == "carol" }?.status == "held")
        #expect(report.counts == ["active": 5, "held": 1])
        #expect(report.heldUsers == ["carol"])
        #expect(report.usersWithoutCertificates == ["alice"])
        #expect(report.notInInventory == ["node sgp-1", "user dave", "user erin"])
        #expect(report.secrets.psks == ["fra-1", "sgp-1"] && report.secrets.p12Passwords == ["bob", "erin"])
        #expect(report.crls.map(\.number) == [2] && report.crls.first?.revoked == 1)
        #expect(report.expiring == [])
        #expect(text.contains("held (revoked with 'vpnprov revoke'): carol\n"))
        #expect(text.contains("nothing expires within the asked window\n"))
        #expect(json.contains("\"heldUsers\" : [\n      \"carol\"\n    ]"))
        for output in [text, json] { #expect(!output.contains(Self.placeholder)) }

        // A year on: the client certificates and the CRL expire within 30 days.
        let later = try StateInputs.status(
            indexJSON: try Self.seed("state-index-revoked.json"), secretsJSON: nil, inventory: Self.inventory,
            now: Self.now + 340 * 86400, expiringWithin: 30)
        #expect(
            later.report.expiring?.map(\.what).sorted() == [
                "CRL 2 of CA \(Self.caSerial)", "user bob certificate 5B1B8B9B7ECDF23E1B5012A73B2DAAD1",
                "user erin certificate 0B66A1F4F794E8BDF992667B33D5C0ED",
            ])
    }

    @Test func pemSeedsParse() throws {
        func read(_ name: String) throws -> StateInputs.PEMContents {
            StateInputs.readPEM(String(decoding: try Self.seed(name), as: UTF8.self))
        }
        #expect(
            try read("state-ca-and-crl.pem")
                == StateInputs.PEMContents(
                    certificates: 1, firstIsCA: true, crlNumber: 2, crlEntries: 1, crlSignedByFirst: true,
                    privateKey: false))
        #expect(
            try read("state-crl-one-revoked.pem")
                == StateInputs.PEMContents(
                    certificates: 0, firstIsCA: false, crlNumber: 2, crlEntries: 1, crlSignedByFirst: false,
                    privateKey: false))
        #expect(try read("state-crl-empty.pem").crlNumber == 1)
        #expect(try read("state-chain.pem").certificates == 3)
        #expect(try read("state-chain.pem").firstIsCA)
        #expect(
            try read("state-cert-server-dns.pem")
                == StateInputs.PEMContents(
                    certificates: 1, firstIsCA: false, crlNumber: nil, crlEntries: 0, crlSignedByFirst: false,
                    privateKey: false))
        let facts = try #require(
            Pipeline.inspectCertificate(String(decoding: try Self.seed("state-cert-server-ip.pem"), as: UTF8.self)))
        #expect(facts.ipAddresses == [[203, 0, 113, 10]] && facts.dnsNames == ["203.0.113.10"])
    }

    @Test func outputLocationSeeds() throws {
        #expect(StateInputs.readOutputLocation(try Self.seed("state-output-location-relative")) == "/srv/vpn/out")
        #expect(StateInputs.readOutputLocation(try Self.seed("state-output-location-absolute")) == "/srv/vpn/out")
        #expect(StateInputs.readOutputLocation([]) == nil)
        #expect(StateInputs.readOutputLocation(Array("\r\n".utf8)) == nil)
        #expect(StateInputs.readOutputLocation([0x6F, 0xFF, 0x0A]) == nil)
        // Only the first 4 KiB count, as from the file.
        #expect(
            StateInputs.readOutputLocation(Array(repeating: UInt8(ascii: "a"), count: 5000))?.count == "/srv/vpn/".count
                + 4096)
    }

    // MARK: Mutants

    /// JSON values that are valid JSON but wrong for the index or secrets file: other types, extreme
    /// numbers, bad dates, non-hex serials, empty and odd strings.
    static let hostileValues = [
        #""ZZ""#, #""""#, #""2D1""#, "9223372036854775807", "-9223372036854775808", "-1", "0", "1e400", "null", "true",
        "[]", "{}",
        #""0001-01-01T00:00:00Z""#, #""9999-12-31T23:59:59Z""#, #""2026-02-30T00:00:00Z""#, #""not a date""#,
        #""revoked""#,
        #""superseded""#, #""cross""#, #""../../etc/passwd""#, #""\u0000""#, #""\ud800""#, #"["ZZ"]"#, #"{"x":"y"}"#,
    ].map { Array($0.utf8) }

    /// Replaces the value of one `"key" : value` line of pretty-printed JSON (not an object or array
    /// opening) with a hostile value, so many mutants stay valid JSON and reach the decoders' checks.
    static func replaceValue(_ input: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var lines = Mutations.lines(input)
        let candidates = lines.indices.filter { i in
            let line = lines[i]
            guard let colon = line.firstRange(of: Array(" : ".utf8)) else { return false }
            let rest = line[colon.upperBound...]
            return !rest.isEmpty && rest.first != UInt8(ascii: "{") && rest.first != UInt8(ascii: "[")
        }
        guard let i = candidates.randomElement(using: &rng), let colon = lines[i].firstRange(of: Array(" : ".utf8))
        else { return input }
        let comma = lines[i].last == UInt8(ascii: ",") ? [UInt8(ascii: ",")] : []
        lines[i] = ArraySlice(Array(lines[i][..<colon.upperBound]) + hostileValues.randomElement(using: &rng)! + comma)
        return Mutations.joined(lines)
    }

    /// Every reader on one input, as the fuzz target runs them; the outcome of each as text.
    static func readAll(_ bytes: [UInt8]) -> [String] {
        func outcome<T>(_ body: () throws -> T) -> String {
            do {
                return "ok: \(try body())"
            } catch let error as PKIError {
                return "\(error.code): \(error.message)"
            } catch let error as StateError {
                return "\(error.code): \(error.message)"
            } catch {
                return "unexpected \(type(of: error)): \(error)"
            }
        }
        return [
            outcome { try StateInputs.readIndex(bytes, now: now) },
            outcome { try StateInputs.readSecrets(bytes) },
            outcome {
                try StateInputs.status(
                    indexJSON: bytes, secretsJSON: nil, inventory: inventory, now: now, expiringWithin: 30
                ).text
            },
            outcome {
                try StateInputs.status(
                    indexJSON: StateInputs.emptyIndex,
                    secretsJSON: bytes,
                    inventory: inventory, now: now, expiringWithin: nil
                ).json
            },
            outcome { StateInputs.readOutputLocation(bytes) ?? "nil" },
            outcome { StateInputs.readPEM(String(decoding: bytes, as: UTF8.self)) },
        ]
    }

    static func mutants(count: Int, seed: UInt64) throws -> [[UInt8]] {
        let names = try stateSeedNames()
        let seeds = try names.map { try Self.seed($0) }
        let json = names.indices.filter { names[$0].hasSuffix(".json") }
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { n in
            // Three in four start from index.json or secrets.json.
            var bytes = n % 4 == 3 ? seeds[n % seeds.count] : seeds[json[n % json.count]]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                bytes =
                    Bool.random(using: &rng)
                    ? replaceValue(bytes, using: &rng) : Mutations.mutate(bytes, seeds: seeds, using: &rng)
            }
            return bytes
        }
    }

    @Test
    func mutatedStateFilesEndInAValueOrAClearError() throws {
        let watch = Deadline.start("the state-file mutants", seconds: 600)
        defer { watch.finish() }
        let inputs = try Self.mutants(count: Self.inputCount, seed: 0x73_74_61_74_65)  // "state"
        var indexAccepted = 0
        var indexRejected = 0
        var statusAccepted = 0
        var secretsAccepted = 0
        var secretsRejected = 0
        var messages = Set<String>()
        for (n, bytes) in inputs.enumerated() {
            let outcomes = Self.readAll(bytes)
            for (reader, outcome) in outcomes.enumerated() {
                #expect(!outcome.hasPrefix("unexpected"), "mutant \(n): \(outcome.prefix(300))")
                // What reads secrets.json (the loader and both status runs) never shows a value. (Read as
                // output-location or PEM the same bytes are no secret file; they may come back whole.)
                if (1...3).contains(reader) {
                    #expect(!outcome.contains(Self.placeholder), "mutant \(n): a secret value was printed")
                }
                if !outcome.hasPrefix("ok: ") {
                    // Unreadable (not the JSON or version vpnprov writes) or inconsistent (records that
                    // cannot make a CRL or a next CA): both exit 3 with the reason.
                    #expect(
                        outcome.hasPrefix("state-unreadable: ")
                            || (reader == 0 && outcome.hasPrefix("state-inconsistent: ")),
                        "mutant \(n): \(outcome.prefix(300))")
                    #expect(
                        outcome.contains(StateInputs.stateDirectory),
                        "mutant \(n): the error names no file: \(outcome.prefix(300))")
                    messages.insert(outcome)
                }
            }
            if outcomes[0].hasPrefix("ok: ") { indexAccepted += 1 } else { indexRejected += 1 }
            if outcomes[2].hasPrefix("ok: ") { statusAccepted += 1 }
            if outcomes[1].hasPrefix("ok: ") { secretsAccepted += 1 } else { secretsRejected += 1 }
        }
        // The mutants must reach both sides of every decoder, or the test tests little.
        #expect(indexAccepted > Self.inputCount / 20, "only \(indexAccepted) index mutants decoded")
        #expect(indexRejected > Self.inputCount / 10, "only \(indexRejected) index mutants were rejected")
        #expect(statusAccepted > Self.inputCount / 20, "only \(statusAccepted) status reports")
        #expect(secretsAccepted > Self.inputCount / 50, "only \(secretsAccepted) secrets mutants decoded")
        #expect(secretsRejected > Self.inputCount / 10, "only \(secretsRejected) secrets mutants were rejected")
        // ... and every kind of rejection: the index's own checks and each way JSON can be wrong.
        for reason in [
            "index.json lists the revoked certificate", "index.json has version",
            "secrets.json: it is not valid JSON of vpnprov",
            "it is not a valid vpnprov index (DecodingError.dataCorrupted", "DecodingError.keyNotFound",
            "DecodingError.typeMismatch",
            "DecodingError.valueNotFound",
        ] {
            #expect(messages.contains { $0.contains(reason) }, "no mutant was rejected for '\(reason)'")
        }
    }

    @Test func stateMutantsAreDeterministic() throws {
        let first = try Self.mutants(count: 200, seed: 7)
        #expect(first == (try Self.mutants(count: 200, seed: 7)))
        // Outcomes up to the decoder's own words: with two bad records in one JSON object, which one
        // JSONDecoder names depends on the dictionary's order, which differs from one decode to the next.
        func outcomes(_ inputs: [[UInt8]]) -> [[String]] {
            inputs.map { Self.readAll($0).map { $0.components(separatedBy: "DecodingError").first! } }
        }
        #expect(outcomes(Array(first.prefix(50))) == outcomes(try Self.mutants(count: 50, seed: 7)))
    }
}
