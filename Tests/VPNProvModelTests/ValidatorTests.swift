import Glibc
import Testing
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvModel

// Field lines of the fixture nodes (key at 20, 40, 60) and users (key at 100, 110, 120, 130).
// node: address +1, id +2, pool +3, pool6 +4, services +5, psk +6, group +7, proposals +8, dns +9, country +10
// user: password +1, cert +2, id +3, nodes +4, devices +5

@Suite(.temporaries) struct ValidatorTests {
    typealias F = Found

    @Test func goodInventoryHasOnlyTheWeakByDesignWarnings() {
        let all = Validator.validate(Fixture.good())
        #expect(!all.hasErrors)
        #expect(
            all.map { F($0.code, $0.location!.line, $0.location!.column, $0.severity) } == [
                F(.ikev1Aggressive, 25, 14, .warning), F(.ikev1Build, 25, 14, .warning),
                F(.weakPSKService, 25, 14, .warning),
                F(.weakPSKService, 25, 14, .warning),
                F(.ipv6Leak, 43, 14, .warning),
            ])
        #expect(
            all.filter { $0.code == .weakPSKService }.map(\.message).allSatisfy {
                $0.hasPrefix("node 'fra-1': ikev2-psk")
            })
    }

    // MARK: identities

    @Test(arguments: [
        "vpn..example.com", "-vpn.example.com", "vpn.example.com.", "alice smith@example.com",
        "a@b@example.com", "C=DE, XX=foo", "C=DE, CN=", "C=DE,, CN=x", "keyid:#abc",
        "keyid:a b", "vpn.exa\"mple.com", "vpn_1.example.com", "10.0.0.999", " vpn.example.com",
        "vpn.example.com\n", String(repeating: "a", count: 64) + ".example.com",
    ])
    func invalidServerIdentity(_ text: String) {
        let inventory = Fixture.good().with { $0.nodes[1].id = IKEIdentity.classify(text) }
        #expect(Fixture.found(inventory) == [F(.invalidIdentity, 42, 14)], "\(text)")
    }

    @Test(arguments: [
        "C=DE, O=acme, CN=fra-1", "/C=DE/O=acme/CN=fra-1", "emailAddress=a@b.c, cn=x", "2001:db8::1", "keyid:acme",
        "u@v", "ams-1.vpn.example.com",
    ])
    func validServerIdentity(_ text: String) {
        let inventory = Fixture.good().with { $0.nodes[1].id = IKEIdentity.classify(text) }
        #expect(Fixture.found(inventory) == [], "\(text)")
    }

    @Test func singleLabelIdentityWarns() {
        let inventory = Fixture.good().with { $0.nodes[1].id = .fqdn("vpn") }
        #expect(Fixture.found(inventory) == [F(.identitySingleLabel, 42, 14, .warning)])
    }

    @Test func defaultedIdentityPointsAtTheAddress() {
        let inventory = Fixture.good().with {
            $0.nodes[1].fieldLocations["id"] = nil
            $0.nodes[1].id = .fqdn("bad_name.example.com")
        }
        #expect(Fixture.found(inventory) == [F(.invalidIdentity, 41, 14)])
    }

    @Test func invalidUserIdentity() {
        let inventory = Fixture.good().with { $0.users[0].id = .userFQDN("alice,x@example.com") }
        #expect(Fixture.found(inventory) == [F(.invalidIdentity, 103, 14)])
    }

    @Test func usersSharingAnIdentityCaseInsensitively() {
        let inventory = Fixture.good().with { $0.users[2].id = .userFQDN("ALICE@example.com") }
        let all = Validator.validate(inventory).filter { $0.code == .duplicateIdentity }
        #expect(all.count == 1)
        #expect(all.first?.location == Fixture.at(123, 14))
        #expect(all.first?.notes.first?.location == Fixture.at(103, 14))
        #expect(
            all.first?.message
                == "user 'carol': identity 'ALICE@example.com' is also used by user 'alice'; the server could not tell them apart"
        )
        // A revoked user's identity may be taken by a new user.
        let revoked = inventory.with { $0.users[0].revoked = true }
        #expect(Validator.validate(revoked).filter { $0.code == .duplicateIdentity }.isEmpty)
    }

    // MARK: names

    @Test(arguments: [
        "", "a/b", "..", ".hidden", "-x", "a b", "a:b", String(repeating: "a", count: 65), "a\u{0}b", "zürich", "a..b",
        "x\\y",
    ])
    func unsafeNodeName(_ name: String) {
        let inventory = Fixture.good().with { $0.nodes[2].name = name }
        // nyc-1 is referenced by alice: an unusable name also makes her reference unknown.
        #expect(
            Fixture.found(inventory) == [F(.invalidName, 60, 3), F(.unknownNode, 104, 14)], "\(name.debugDescription)")
    }

    @Test func unsafeUserAndDeploymentNames() {
        let inventory = Fixture.good().with {
            $0.users[1].name = "bob/../../etc"
            $0.name = "acme corp"
        }
        #expect(Fixture.found(inventory) == [F(.invalidName, 2, 7), F(.invalidName, 110, 3)])
        #expect(
            Validator.validate(inventory).first?.message
                == "deployment name 'acme corp' contains ' '; allowed are letters A-Z a-z, digits, '.', '_' and '-'")
    }

    @Test func windowsDeviceNameWarns() {
        let inventory = Fixture.good().with { $0.users[1].name = "Aux.1" }
        #expect(Fixture.found(inventory) == [F(.reservedName, 110, 3, .warning)])
    }

    @Test func namesDifferingOnlyInCase() {
        let inventory = Fixture.good().with { $0.users[2].name = "Alice" }
        let all = Validator.validate(inventory).filter { $0.code == .nameCaseCollision }
        #expect(all.map(\.location) == [Fixture.at(120, 3)])
        #expect(all.first?.notes.first?.location == Fixture.at(100, 3))
        #expect(all.first?.severity == .error)
    }

    @Test func duplicateNodeName() {
        let inventory = Fixture.good().with {
            $0.nodes[2].name = "fra-1"
            $0.users[0].nodes = ["fra-1", "ams-1"]
        }
        #expect(Fixture.found(inventory).filter { $0.code == .duplicateName } == [F(.duplicateName, 60, 3)])
    }

    // MARK: secrets

    @Test func literalWeakPSK() {
        let secret = "hunter2-acme"
        let inventory = Fixture.good().with { $0.nodes[0].psk = .literal(secret) }
        #expect(
            Fixture.found(inventory) == [F(.literalSecret, 26, 14, .warning), F(.weakPSK, 26, 14), F(.weakPSK, 26, 14)])
        for d in Validator.validate(inventory) {
            #expect(!d.message.contains(secret) && !d.message.contains("hunter"))
        }
    }

    @Test func literalStrongPSKOnlyWarnsAboutBeingLiteral() {
        let inventory = Fixture.good().with { $0.nodes[0].psk = .literal("Xq7#vR2pLk9@wT4mZs8!bN3c") }
        #expect(Fixture.found(inventory) == [F(.literalSecret, 26, 14, .warning)])
    }

    @Test func literalWeakPassword() {
        let inventory = Fixture.good().with { $0.users[0].password = .literal("Alice2024!") }
        let found = Fixture.found(inventory)
        #expect(found.first == F(.literalSecret, 101, 14, .warning))
        #expect(Set(found.dropFirst()) == [F(.weakPassword, 101, 14)])
    }

    @Test func unrepresentableSecret() {
        let inventory = Fixture.good().with { $0.nodes[0].psk = .literal("Xq7#vR2pLk9@wT4m\u{7}Zs8!bN3c") }
        #expect(Fixture.found(inventory) == [F(.literalSecret, 26, 14, .warning), F(.unrepresentableSecret, 26, 14)])
    }

    @Test func invalidSecretReferences() {
        let inventory = Fixture.good().with {
            $0.nodes[0].psk = .env("1PSK")
            $0.users[0].password = .file("")
        }
        #expect(Fixture.found(inventory) == [F(.invalidSecretReference, 26, 14), F(.invalidSecretReference, 101, 14)])
    }

    @Test func pskReusedAcrossNodes() {
        let inventory = Fixture.good().with {
            $0.nodes[0].psk = .env("VPN_PSK")
            $0.nodes[2].services = [.ikev2EAP, .ikev2PSK]
            $0.nodes[2].psk = .env("VPN_PSK")
        }
        let reuse = Validator.validate(inventory).filter { $0.code == .pskReused }
        #expect(reuse.map(\.location) == [Fixture.at(66, 14)])
        #expect(reuse.first?.notes.map(\.location) == [Fixture.at(26, 14)])
        #expect(reuse.first?.severity == .warning)
        #expect(reuse.first?.message.contains("node 'nyc-1' uses the PSK env:VPN_PSK as node 'fra-1'") == true)
    }

    @Test func pskReusedAsSameLiteralDoesNotShowIt() {
        let secret = "Xq7#vR2pLk9@wT4mZs8!bN3c"
        let inventory = Fixture.good().with {
            $0.nodes[0].psk = .literal(secret)
            $0.nodes[2].services = [.ikev2PSK]
            $0.nodes[2].psk = .literal(secret)
        }
        let reuse = Validator.validate(inventory).filter { $0.code == .pskReused }
        #expect(reuse.count == 1)
        #expect(reuse.first?.message.contains("the same literal PSK") == true)
        #expect(!Validator.validate(inventory).contains { $0.message.contains(secret) })
    }

    // MARK: SecretPolicy

    @Test(arguments: [
        ("password1234", SecretPolicy.Kind.password), ("aaaaaaaaaaaaaaaa", .password), ("qwertyuiopasdfgh", .password),
        ("abcabcabcabcabcabc", .password), ("Tr0ub4dor&3", .password), ("alicealicealice1", .password),
        ("P@ssw0rdP@ssw0rd!Vpn", .password), ("correcthorsebatter", .psk), ("0123456789abcdefghij", .psk),
    ])
    func weakSecrets(_ secret: String, kind: SecretPolicy.Kind) {
        let problems = SecretPolicy.problems(secret: secret, kind: kind, names: ["alice", "acme"])
        #expect(!problems.isEmpty, "\(secret)")
        #expect(problems.allSatisfy { !$0.contains(secret) })
    }

    @Test(arguments: [
        ("k7Qm#x2Lp9Vr", SecretPolicy.Kind.password), ("Xq7#vR2pLk9@wT4mZs8!bN3c", .psk),
        ("8f3kq2m9x7w1v5b6n4z0", .psk), ("Blue-Anvil-Orbit-Mango-42", .password),
    ])
    func strongSecrets(_ secret: String, kind: SecretPolicy.Kind) {
        #expect(SecretPolicy.problems(secret: secret, kind: kind, names: ["alice", "acme"]) == [], "\(secret)")
    }

    @Test func nameInsideASecretCountsForNothing() {
        let without = SecretPolicy.estimatedBits(secret: "k7qmx2lpalice")
        let with = SecretPolicy.estimatedBits(secret: "k7qmx2lpalice", names: ["alice"])
        #expect(with < without)
        #expect(
            SecretPolicy.check(secret: "k7Qm x2Lp9Vr\u{0}", kind: .password).contains {
                $0.category == .unrepresentable
            })
        #expect(SecretPolicy.check(secret: " k7Qm#x2Lp9Vr", kind: .password).map(\.category) == [.unrepresentable])
    }

    // MARK: proposals

    @Test func invalidAndWeakProposals() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(
                ike: ["aes256gcm16-prfsha256-ecp256", "aes999-sha256-ecp256", "3des-sha1-modp1024"],
                esp: ["aes256gcm16", "aes256gcm16"])
        }
        #expect(
            Fixture.found(inventory) == [
                F(.duplicateEntry, 48, 14, .warning), F(.invalidProposal, 48, 14), F(.weakProposal, 48, 14),
            ])
        let weak = Validator.validate(inventory).first { $0.code == .weakProposal }
        #expect(
            weak?.message
                == "node 'ams-1': IKE proposal '3des-sha1-modp1024' uses weak algorithms (3des, sha1, modp1024); remove them or set proposals.allow_weak: true"
        )
    }

    @Test func postQuantumKeyExchangeIsAnInvalidProposal() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(ike: ["aes256gcm16-prfsha256-ecp256-ke1_mlkem768"], esp: ["aes256gcm16"])
        }
        #expect(Fixture.found(inventory) == [F(.invalidProposal, 48, 14)])
        let message = Validator.validate(inventory).first { $0.code == .invalidProposal }?.message ?? ""
        #expect(message.contains("'ke1_mlkem768'") && message.contains("not supported"), "\(message)")
    }

    @Test func weakProposalsAllowedAreWarnings() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(ike: ["aes128-sha1-modp2048"], esp: ["aes128-sha1"], allowWeak: true)
        }
        #expect(Fixture.found(inventory) == [F(.weakProposal, 48, 14, .warning), F(.weakProposal, 48, 14, .warning)])
    }

    @Test func nestedProposalLocationsWinWhenGiven() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(ike: [], esp: ["aes256gcm16"])
            $0.nodes[1].fieldLocations["proposals.ike"] = Fixture.at(49, 12)
        }
        #expect(Fixture.found(inventory) == [F(.missingProposal, 49, 12)])
    }

    @Test func noProposalAppleCanExpress() {
        let inventory = Fixture.good().with {
            $0.nodes[1].proposals = Proposals(
                ike: ["aes256-sha256-ecp256bp", "camellia256-sha256-ecp256"], esp: ["aes256gcm16"])
        }
        // Windows' IKEv2 client cannot be set to it either (the fixture's users have every device).
        #expect(Fixture.found(inventory) == [F(.noAppleProposal, 48, 14), F(.noWindowsProposal, 48, 14)])
    }

    @Test func hybridNeedsAnRSAServerKeyWarnsIKEv1AndNamedNodesLoseApple() {
        // fra-1 (identity = its DNS name) adds ipsec-xauth-hybrid; the fixture's server key is ECDSA.
        let ecdsa = Fixture.good().with { $0.nodes[0].services.append(.ipsecXauthHybrid) }
        #expect(
            Fixture.found(ecdsa, keeping: [.ikev1Hybrid]) == [
                F(.hybridAppleIdentity, 22, 14, .warning), F(.hybridServerKey, 25, 14),
                F(.ikev1Hybrid, 25, 14, .warning),
            ])
        // With an RSA server key the error goes; on a node whose identity is its IP address, so does the Apple warning.
        let rsa = ecdsa.with {
            $0.pki.serverKey = .rsa3072
            $0.nodes[0].id = .ipv4("192.0.2.20")
            $0.nodes[0].address = "192.0.2.20"
        }
        #expect(Fixture.found(rsa, keeping: [.ikev1Hybrid]) == [F(.ikev1Hybrid, 25, 14, .warning)])
        // The Apple profile leaves the named node's hybrid connection out, Linux keeps it.
        let plan = ClientPlan.build(inventory: ecdsa)
        let hybrid = plan.connections.filter { $0.service == .ipsecXauthHybrid }
        #expect(!hybrid.isEmpty && hybrid.allSatisfy { !$0.devices.contains(.apple) && $0.devices.contains(.linux) })
    }

    @Test func ikev1NeedsANonAEADProposal() {
        let inventory = Fixture.good().with {
            $0.nodes[0].proposals = Proposals(ike: ["aes256gcm16-prfsha256-ecp256"], esp: ["aes256gcm16"])
        }
        #expect(Fixture.found(inventory) == [F(.noIKEv1Proposal, 28, 14, .warning)])
    }

    // MARK: pools

    @Test func missingPool() {
        let inventory = Fixture.good().with { $0.nodes[1].pool = nil }
        #expect(Fixture.found(inventory) == [F(.missingPool, 40, 3)])
    }

    @Test func poolOverlapReportedOnceAtTheLaterNode() {
        let inventory = Fixture.good().with {
            $0.nodes[0].pool = Fixture.cidr("10.10.0.0/23")
            $0.nodes[1].pool = Fixture.cidr("10.10.1.0/24")
            $0.nodes[2].pool6 = Fixture.cidr("fd00:10::/48")
        }
        let all = Validator.validate(inventory).filter { !Fixture.byDesign.contains($0.code) }
        #expect(
            all.map { F($0.code, $0.location!.line, $0.location!.column) } == [
                F(.poolOverlap, 43, 14), F(.poolOverlap, 64, 14),
            ])
        #expect(all[0].message == "node 'ams-1': pool 10.10.1.0/24 overlaps node 'fra-1' (10.10.0.0/23)")
        #expect(all[0].notes.map(\.location) == [Fixture.at(23, 14)])
        #expect(all[1].message == "node 'nyc-1': pool6 fd00:10::/48 overlaps node 'fra-1' (fd00:10::/64)")
    }

    @Test func poolShapes() {
        let inventory = Fixture.good().with {
            $0.nodes[0].pool = Fixture.cidr("fd00:99::/64")  // wrong family
            $0.nodes[1].pool = Fixture.cidr("10.11.0.0/31")  // too small
            $0.nodes[2].pool = Fixture.cidr("10.0.0.0/8")  // large
            $0.nodes[2].pool6 = Fixture.cidr("fe80::/64")  // reserved
        }
        #expect(
            Fixture.found(inventory) == [
                F(.poolFamily, 23, 14), F(.poolTooSmall, 43, 14), F(.poolLarge, 63, 14, .warning),
                F(.poolOverlap, 63, 14), F(.poolReserved, 64, 14),
            ])
    }

    @Test(arguments: ["0.0.0.0/24", "127.0.0.0/16", "224.1.0.0/16", "240.0.0.0/24", "169.254.0.0/24"])
    func reservedIPv4Pools(_ pool: String) {
        let inventory = Fixture.good().with { $0.nodes[1].pool = Fixture.cidr(pool) }
        #expect(Fixture.found(inventory).filter { $0.code != .poolLarge } == [F(.poolReserved, 43, 14)], "\(pool)")
    }

    @Test func poolContainingAddresses() {
        let inventory = Fixture.good().with {
            $0.nodes[1].pool = Fixture.cidr("192.0.2.0/24")  // contains its own address 192.0.2.10
            $0.nodes[2].pool6 = Fixture.cidr("2001:db8::/64")  // contains its own address 2001:db8::10
            $0.nodes[0].dns = ["10.10.0.1"]
        }
        #expect(
            Fixture.found(inventory) == [
                F(.poolContainsDNS, 23, 14, .warning), F(.poolContainsAddress, 43, 14), F(.poolContainsAddress, 64, 14),
            ])
    }

    // MARK: addresses and DNS

    @Test(arguments: [
        "", "vpn..example.com", "224.0.0.1", "0.0.0.0", "::", "ff02::1", "2001:db8::zz", "bad_host.example.com",
        "fra-1.example.com.",
    ])
    func invalidAddress(_ address: String) {
        let inventory = Fixture.good().with { $0.nodes[1].address = address }
        #expect(Fixture.found(inventory) == [F(.invalidAddress, 41, 14)], "\(address)")
    }

    @Test(arguments: ["127.0.0.1", "::1", "fe80::1", "169.254.1.1", "localhost"])
    func unreachableAddress(_ address: String) {
        let inventory = Fixture.good().with { $0.nodes[1].address = address }
        #expect(Fixture.found(inventory) == [F(.unreachableAddress, 41, 14, .warning)], "\(address)")
    }

    @Test func duplicateAddressComparesCanonicalForms() {
        let inventory = Fixture.good().with {
            $0.nodes[1].address = "FRA-1.vpn.example.com"
            $0.nodes[2].address = "2001:DB8:0::10"
            $0.nodes.append(
                Fixture.node(
                    "nyc-2", line: 80, address: "2001:db8::10", pool6: "fd00:13::/64", services: [.ikev2EAP],
                    country: "US"))
        }
        let dup = Validator.validate(inventory).filter { $0.code == .duplicateAddress }
        #expect(dup.map(\.location) == [Fixture.at(41, 14), Fixture.at(81, 14)])
        #expect(dup.map { $0.notes.first?.location } == [Fixture.at(21, 14), Fixture.at(61, 14)])
    }

    @Test func invalidAndDuplicateDNSServers() {
        let inventory = Fixture.good().with {
            $0.nodes[1].dns = ["1.1.1.1", "dns.example.com", "1.1.1.1", "224.0.0.1"]
        }
        #expect(
            Fixture.found(inventory) == [
                F(.duplicateEntry, 49, 14, .warning), F(.invalidDNS, 49, 14), F(.invalidDNS, 49, 14),
            ])
    }

    // MARK: references

    @Test func unknownNodeWithHint() {
        let inventory = Fixture.good().with { $0.users[1].nodes = ["fra-1", "fra1", "fra-1"] }
        #expect(Fixture.found(inventory) == [F(.duplicateEntry, 114, 14, .warning), F(.unknownNode, 114, 14)])
        #expect(
            Validator.validate(inventory).contains {
                $0.message == "user 'bob': unknown node 'fra1'; did you mean 'fra-1'?"
            })
    }

    /// Users with the same list of nodes share what those nodes offer once the list had no finding; a list
    /// with a finding is read again for each user, so each is told.
    @Test func unknownNodeOfEachUserWithTheSameList() {
        let inventory = Fixture.good().with {
            $0.users[1].nodes = ["ams-1"]
            $0.users[2].nodes = ["ams-1", "nowhere"]
            $0.users[3].nodes = ["ams-1", "nowhere"]
        }
        let unknown = Validator.validate(inventory).filter { $0.code == .unknownNode }.map(\.message)
        #expect(
            unknown == [
                "user 'carol': unknown node 'nowhere'", "user 'dave': unknown node 'nowhere'",
            ])
        // bob's list is carol's clean part: bob (android) is still checked against ams-1's services alone.
        let alone = Fixture.good().with { $0.users[1].nodes = ["ams-1"] }
        #expect(Fixture.found(inventory).filter { $0.code != .unknownNode } == Fixture.found(alone))
    }

    // MARK: country

    @Test(arguments: [
        ("de", "must be upper case: 'DE'"), ("UK", "did you mean 'GB'?"), ("ZZ", "not an assigned"),
        ("DEU", "not an assigned"),
    ])
    func invalidCountry(_ country: String, hint: String) {
        let inventory = Fixture.good().with { $0.nodes[1].country = country }
        #expect(Fixture.found(inventory) == [F(.invalidCountry, 50, 14)])
        #expect(Validator.validate(inventory).contains { $0.code == .invalidCountry && $0.message.contains(hint) })
    }

    @Test func countryListIsTheAssignedSet() {
        #expect(CountryCodes.assigned.count == 250)  // 249 assigned + XK
        #expect(CountryCodes.assigned.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isUppercase) })
        #expect(
            CountryCodes.problem("NO") == nil && CountryCodes.problem("XK") == nil && CountryCodes.problem("EU") != nil)
    }

    // MARK: PKI

    @Test func pkiLifetimes() {
        let inventory = Fixture.good().with {
            $0.pki.serverDays = 3650
            $0.pki.clientDays = 0
        }
        #expect(Fixture.found(inventory) == [F(.serverDaysApple, 5, 16, .warning), F(.invalidDays, 6, 16)])
        let shortCA = Fixture.good().with {
            $0.pki.ca.days = 365
            $0.pki.clientDays = 730
        }
        let found = Validator.validate(shortCA).filter { $0.code == .caDaysShort }
        #expect(found.map(\.location) == [Fixture.at(4, 52), Fixture.at(4, 52)])
        #expect(Set(found.flatMap { $0.notes.map(\.location) }) == [Fixture.at(5, 16), Fixture.at(6, 16)])
    }

    @Test func caName() {
        let inventory = Fixture.good().with { $0.pki.ca.name = String(repeating: "n", count: 65) }
        #expect(Fixture.found(inventory) == [F(.invalidCAName, 4, 15)])
        let unlocated = inventory.with { $0.fieldLocations = [:] }
        #expect(Fixture.found(unlocated) == [F(.invalidCAName, 1, 1)])
    }

    // MARK: order and scale

    @Test func collectsEverythingInSourceOrder() {
        let inventory = Fixture.good().with {
            $0.users[3].revoked = false
            $0.users[3].password = nil
            $0.users[3].nodes = ["nyc-1"]
            $0.nodes[2].country = "us"
            $0.nodes[0].pool = nil
            $0.nodes[0].pool6 = nil
        }
        let all = Validator.validate(inventory)
        let lines = all.compactMap { $0.location.map { [$0.line, $0.column] } }
        #expect(lines == lines.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) })
        #expect(
            Set(all.filter { $0.severity == .error }.map(\.code)) == [.missingPool, .invalidCountry, .missingPassword])
    }

    /// Not a timed test: prints how long 10,000 users take so the figure can be reported.
    @Test func tenThousandUsers() {
        let good = Fixture.good()
        var users: [User] = []
        for i in 0..<10_000 {
            users.append(
                Fixture.user(
                    "user\(i)", line: 1000 + i * 7,
                    password: i % 2 == 0 ? .generate : .literal("Xq7#vR2pLk9@wT4m-\(i)"),
                    cert: i % 3 == 0, id: .userFQDN("user\(i)@example.com"), nodes: ["fra-1", "ams-1", "nyc-1"]))
        }
        let inventory = good.with { $0.users = users }
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let all = Validator.validate(inventory)
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &end)
        let ms = Double(end.tv_sec - start.tv_sec) * 1000 + Double(end.tv_nsec - start.tv_nsec) / 1e6
        print("validate: 10000 users, \(all.count) diagnostics in \(Int(ms)) ms")
        var s2 = timespec()
        clock_gettime(CLOCK_MONOTONIC, &s2)
        var n = 0
        for u in users {
            if case .literal(let v) = u.password {
                n += SecretPolicy.problems(secret: v, kind: .password, names: [u.name]).count
            }
        }
        var e2 = timespec()
        clock_gettime(CLOCK_MONOTONIC, &e2)
        print(
            "secret policy: 5000 passwords in \(Int(Double(e2.tv_sec - s2.tv_sec) * 1000 + Double(e2.tv_nsec - s2.tv_nsec) / 1e6)) ms (\(n))"
        )
        let sortInput = all.shuffled()
        clock_gettime(CLOCK_MONOTONIC, &s2)
        _ = Validator.sorted(sortInput)
        clock_gettime(CLOCK_MONOTONIC, &e2)
        print("sort: \(Int(Double(e2.tv_sec - s2.tv_sec) * 1000 + Double(e2.tv_nsec - s2.tv_nsec) / 1e6)) ms")
        #expect(all.filter { $0.code == .literalSecret }.count == 5000)
        #expect(!all.hasErrors)
    }
}
