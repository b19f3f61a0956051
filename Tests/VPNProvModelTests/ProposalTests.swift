import Testing
import VPNProvTestFixtures

@testable import VPNProvModel

@Suite(.temporaries) struct ProposalTests {
    @Test func parsesAEADAndClassicIKEProposals() throws {
        let gcm = try Proposal.parse("aes256gcm16-prfsha256-ecp256", purpose: .ike)
        #expect(gcm.isAEAD)
        #expect(gcm.prf.map(\.keyword) == ["prfsha256"])
        #expect(gcm.groups.map(\.group) == [19])
        let cbc = try Proposal.parse("aes256-sha256-modp2048", purpose: .ike)
        #expect(cbc.effectivePRFs.map(\.keyword) == ["prfsha256"])
        #expect(cbc.weakKeywords.isEmpty)
    }

    @Test(arguments: [
        ("aes256-sha256", Proposal.Purpose.ike, "key exchange group"),
        ("aes256gcm16-ecp256", .ike, "needs a PRF"),
        ("aes256gcm16-aes256-prfsha256-ecp256", .ike, "mixes AEAD"),
        ("aes256", .esp, "no integrity"),
        ("aes256gcm16-sha256", .esp, "takes no integrity"),
        ("aes999-sha256-ecp256", .ike, "unknown algorithm 'aes999'"),
        ("aes256-sha256-modpnone", .ike, "only valid in ESP"),
        ("aes256--sha256", .esp, "empty algorithm"),
    ])
    func rejectsWhatStrongSwanRejects(text: String, purpose: Proposal.Purpose, message: String) {
        #expect(throws: ProposalError.self) { try Proposal.parse(text, purpose: purpose) }
        do {
            _ = try Proposal.parse(text, purpose: purpose)
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    /// Debian 13's strongSwan 6.0.1 loads `ke1_mlkem768`, selects it, then fails the exchange ("negotiated key
    /// exchange method ML_KEM_768 not supported"; measured in StrongSwanVersionTests), and 5.9 has no such keyword:
    /// no proven server computes ML-KEM, so the validator must not accept it, in any spelling or position.
    @Test(arguments: [
        ("aes256gcm16-prfsha256-ecp256-ke1_mlkem768", Proposal.Purpose.ike, "ke1_mlkem768"),
        ("aes256gcm16-prfsha256-mlkem768", .ike, "mlkem768"),
        ("aes256gcm16-prfsha256-ecp384-ke1_mlkem1024", .ike, "ke1_mlkem1024"),
        ("aes256gcm16-prfsha256-x25519-ke2_mlkem512", .ike, "ke2_mlkem512"),
        ("aes256-sha256-ecp256-ke1_ecp384", .ike, "ke1_ecp384"),
        ("aes256gcm16-ecp256-ke1_mlkem768", .esp, "ke1_mlkem768"),
    ])
    func refusesPostQuantumAndAdditionalKeyExchanges(text: String, purpose: Proposal.Purpose, token: String) {
        do {
            _ = try Proposal.parse(text, purpose: purpose)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.message.contains("'\(token)'") && error.message.contains("not supported"), "\(error.message)")
        }
    }

    /// XCBC and CMAC come from plugins a server installed with the node README's packages does not have
    /// (StrongSwanVersionTests' keyword probe: "key derivation failed" on both 5.9 and 6.0 without them).
    @Test(arguments: [
        "aes128-aesxcbc-ecp256", "aes128-aescmac-ecp256", "aes128gcm16-prfaesxcbc-ecp256",
        "aes128gcm16-prfaescmac-ecp256",
    ])
    func refusesKeywordsNoProvenServerComputes(text: String) {
        do {
            _ = try Proposal.parse(text, purpose: .ike)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.message.contains("libstrongswan-extra-plugins"), "\(error.message)")
        }
        #expect(AlgorithmTable.notOffered.keys.allSatisfy { AlgorithmTable.all[$0] == nil })
    }

    @Test func acceptedKeywordsNameNoAdditionalKeyExchange() {
        let offending = AlgorithmTable.all.keys.filter { AlgorithmTable.isAdditionalKeyExchange($0) }
        #expect(offending.isEmpty, "\(offending.sorted())")
        #expect(!AlgorithmTable.isAdditionalKeyExchange("ecp256") && !AlgorithmTable.isAdditionalKeyExchange("keyid"))
    }

    @Test func appleParametersRoundTripToTheServerProposal() throws {
        let ike = try Proposal.parse("aes256gcm16-prfsha256-ecp256", purpose: .ike)
        let params = try #require(AppleSAParameters.first(in: ike))
        #expect(
            params
                == AppleSAParameters(
                    encryptionAlgorithm: "AES-256-GCM", integrityAlgorithm: "SHA2-256", diffieHellmanGroup: 19))
        #expect(params.strongSwanProposal(purpose: .ike) == "aes256gcm16-prfsha256-ecp256")
        let cbc = try #require(AppleSAParameters.first(in: try Proposal.parse("aes256-sha384-modp2048", purpose: .ike)))
        #expect(cbc.strongSwanProposal(purpose: .ike) == "aes256-sha384-modp2048")
        let esp = try #require(
            AppleSAParameters.first(in: try Proposal.parse("aes256gcm16", purpose: .esp), fallbackGroup: 19))
        #expect(esp.strongSwanProposal(purpose: .esp) == "aes256gcm16")
        #expect(esp.strongSwanProposal(purpose: .esp, pfs: true) == "aes256gcm16-ecp256")
    }

    @Test func appleCannotExpressCamelliaOrBrainpool() throws {
        #expect(AppleSAParameters.first(in: try Proposal.parse("camellia256-sha256-ecp256", purpose: .ike)) == nil)
        #expect(AppleSAParameters.first(in: try Proposal.parse("aes256-sha256-ecp256bp", purpose: .ike)) == nil)
    }
}
