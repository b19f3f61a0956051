import Glibc
import Testing
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvModel

/// Services, the credentials they need, what leaks IPv6 and the Apple options without effect.
extension ValidatorTests {
    // MARK: services

    @Test func nodeWithoutServices() {
        let inventory = Fixture.good().with {
            $0.nodes[2].services = []
            $0.users[0].nodes = ["fra-1", "ams-1"]
        }
        #expect(Fixture.found(inventory) == [F(.noServices, 65, 14)])
    }

    @Test func pskServicesNeedAPSK() {
        let inventory = Fixture.good().with { $0.nodes[0].psk = nil }
        #expect(Fixture.found(inventory) == [F(.missingPSK, 25, 14)])
        #expect(
            Validator.validate(inventory).first { $0.code == .missingPSK }?.message
                == "node 'fra-1': ikev2-psk, ikev2-psk-eap, ipsec-xauth-psk need a PSK; set psk: gen")
    }

    @Test func unusedPSKAndGroup() {
        let inventory = Fixture.good().with {
            $0.nodes[1].psk = .generate
            $0.nodes[1].group = "acme"
        }
        #expect(Fixture.found(inventory) == [F(.unusedPSK, 46, 14, .warning), F(.unusedGroup, 47, 14, .warning)])
    }

    @Test(arguments: ["", "acme group", "#acme", "%any", "acme-hybrid", "a\"b", String(repeating: "g", count: 65)])
    func invalidGroup(_ group: String) {
        let inventory = Fixture.good().with { $0.nodes[0].group = group }
        #expect(Fixture.found(inventory) == [F(.invalidGroup, 27, 14)], "\(group)")
    }

    @Test func weakByDesignServicesWarnOncePerNodeAndService() {
        let inventory = Fixture.good().with { $0.nodes[0].group = nil }
        let found = Fixture.found(inventory, keeping: Fixture.byDesign.subtracting([.ipv6Leak]))
        #expect(
            found == [
                F(.ikev1Build, 25, 14, .warning), F(.ikev1Service, 25, 14, .warning),
                F(.weakPSKService, 25, 14, .warning), F(.weakPSKService, 25, 14, .warning),
            ])
    }

    @Test func ipsecXauthPSKWarnsThatItNeedsACharonWithIKEv1() {
        // Once per node offering ipsec-xauth-psk, at its services, in main and aggressive mode alike.
        for group in [nil, "acme"] as [String?] {
            let inventory = Fixture.good().with { $0.nodes[0].group = group }
            #expect(Fixture.found(inventory, keeping: [.ikev1Build]) == [F(.ikev1Build, 25, 14, .warning)])
        }
        let message = Validator.validate(Fixture.good()).first { $0.code == .ikev1Build }?.message ?? ""
        #expect(
            message.contains("ipsec-xauth-psk needs a charon built with IKEv1") && message.contains("README"),
            "\(message)")
        // The hybrid service is IKEv1 too; with both, still one warning naming both.
        for (services, says) in [
            ([Service.ikev2Cert, .ipsecXauthHybrid], "ipsec-xauth-hybrid needs"),
            ([.ipsecXauthPSK, .ipsecXauthHybrid], "ipsec-xauth-psk and ipsec-xauth-hybrid need"),
        ] {
            let inventory = Fixture.good().with { $0.nodes[0].services = services }
            let found = Validator.validate(inventory).filter { $0.code == .ikev1Build }
            #expect(found.count == 1 && found[0].message.contains(says), "\(found.map(\.message))")
        }
        // A node without it: no such warning.
        let withoutIKEv1 = Fixture.good().with {
            $0.nodes[0].services = [.ikev2Cert, .ikev2EAP, .ikev2PSK, .ikev2PSKEAP]
        }
        #expect(Fixture.found(withoutIKEv1, keeping: [.ikev1Build]).filter { $0.code == .ikev1Build }.isEmpty)
    }

    // MARK: client leaks and Apple options

    @Test func ipv6LeakNamesTheClientsThatCannotBlock() throws {
        // ams-1 has no pool6; carol (Apple, Linux) uses it with a certificate. Apple IKEv2 blocks by default.
        let leaks = Validator.validate(Fixture.good()).filter { $0.code == .ipv6Leak }
        #expect(
            leaks.map { F($0.code, $0.location!.line, $0.location!.column, $0.severity) } == [
                F(.ipv6Leak, 43, 14, .warning)
            ])
        #expect(leaks.first?.message.contains("node 'ams-1'") == true)
        #expect(leaks.first?.message.contains("Linux (swanctl)") == true)
        #expect(leaks.first?.message.contains("Apple") == false)
        // The kill switch turned off for ams-1: Apple is named too.
        let off = Fixture.good().with { $0.nodes[1].apple.includeAllNetworks = false }
        let named = Validator.validate(off).filter { $0.code == .ipv6Leak }.map(\.message)
        #expect(named.count == 1 && named[0].contains("Apple IKEv2 (apple.include_all_networks is off)"))
        // Android only (bob on fra-1, which has a pool6 anyway) or a pool6 everywhere: nothing to say.
        let covered = Fixture.good().with { $0.nodes[1].pool6 = Fixture.cidr("fd00:11::/64") }
        #expect(Validator.validate(covered).filter { $0.code == .ipv6Leak }.isEmpty)
        let androidOnly = Fixture.good().with {
            $0.users[2].devices = [.android]
            $0.users[0].devices = [.apple, .android]
        }
        #expect(Validator.validate(androidOnly).filter { $0.code == .ipv6Leak }.isEmpty)
    }

    @Test func appleOptionsWithoutEffectWarn() {
        let inventory = Fixture.good().with {
            $0.nodes[1].apple = AppleOptions(
                trustedSSIDs: ["Home"], includeAllNetworks: false, excludeLocalNetworks: true)
        }
        let found = Validator.validate(inventory).filter { $0.code == .appleOptionUnused }.map(\.message)
        #expect(
            found.sorted() == [
                "node 'ams-1': apple.exclude_local_networks has no effect with apple.include_all_networks: false",
                "node 'ams-1': apple.trusted_ssids has no effect without apple.on_demand: true",
            ])
        let fine = Fixture.good().with { $0.nodes[1].apple = AppleOptions(onDemand: true, trustedSSIDs: ["Home"]) }
        #expect(Validator.validate(fine).filter { $0.code == .appleOptionUnused }.isEmpty)
    }

    @Test func passwordServicesNeedAPassword() {
        let inventory = Fixture.good().with {
            $0.users[0].password = nil
            $0.users[0].cert = false
        }
        #expect(Fixture.found(inventory) == [F(.missingPassword, 100, 3)])
        // A certificate user who can use ikev2-cert simply gets no password profiles.
        #expect(
            Fixture.found(inventory.with { $0.users[0].cert = true }).filter { $0.code == .missingPassword }.isEmpty)
        // A revoked user needs nothing.
        #expect(Fixture.found(inventory.with { $0.users[0].revoked = true }) == [])
    }

    @Test func androidOnlyUserOnXAuthNodeNeedsNoPassword() {
        let inventory = Fixture.good().with {
            $0.nodes[0].services = [.ikev2Cert, .ipsecXauthPSK]
            $0.users[1].password = nil
            $0.users[1].cert = true
        }
        #expect(Fixture.found(inventory) == [])
    }

    @Test func unusedPasswordAndCertificate() {
        let inventory = Fixture.good().with {
            $0.users[2].password = .generate
            $0.users[2].nodes = ["nyc-1"]
            $0.users[2].devices = [.linux]
        }
        // carol on nyc-1 (ikev2-eap): the password is now used; the certificate is not.
        #expect(Fixture.found(inventory) == [F(.certUnused, 122, 14, .warning)])
        let unused = Fixture.good().with { $0.users[2].password = .generate }
        #expect(Fixture.found(unused) == [F(.unusedPassword, 121, 14, .warning)])
    }

    @Test func userAndDeviceWithoutService() {
        let noNodes = Fixture.good().with { $0.users[2].nodes = [] }
        #expect(
            Fixture.found(noNodes) == [F(.userWithoutService, 120, 3, .warning), F(.certUnused, 122, 14, .warning)])
        let androidOnCertOnly = Fixture.good().with {
            $0.users[2].devices = [.android, .apple]
            $0.users[2].cert = false
            $0.users[2].password = .generate
            $0.nodes[1].services = [.ikev2Cert]
            $0.users[0].nodes = ["fra-1"]
        }
        #expect(
            Fixture.found(androidOnCertOnly) == [
                F(.userWithoutService, 120, 3, .warning), F(.unusedPassword, 121, 14, .warning),
            ])
        let androidOnPSK = Fixture.good().with {
            $0.nodes[2].services = [.ikev2PSK]
            $0.nodes[2].psk = .generate
            $0.users[0].nodes = ["nyc-1"]
            $0.users[0].cert = false
            $0.users[0].password = nil
        }
        // Android and Windows (both in the default device set) have nothing on a PSK-only node.
        #expect(
            Fixture.found(androidOnPSK) == [
                F(.deviceWithoutService, 105, 14, .warning), F(.deviceWithoutService, 105, 14, .warning),
            ])
    }
}
