import Foundation
import Testing
import VPNProvModel
import VPNProvPlanning
import VPNProvTestFixtures

@testable import VPNProvEngine

/// The render cache trusts a user's files only while the fingerprint of everything they are rendered
/// from is unchanged: the user's fingerprint must change with every field that can change a file.
@Suite(.temporaries) struct FingerprintTests {
    static let here = SourceLocation(file: "a.yaml", line: 3, column: 5)

    static func user() -> User {
        User(
            name: "alice", password: .generate, cert: true, id: .userFQDN("alice@example.com"), nodes: ["n1", "n2"],
            devices: [.apple, .linux], revoked: false, location: here, fieldLocations: ["password": here])
    }

    static func materials() -> UserMaterials {
        UserMaterials(
            password: "pw", certificatePEM: "CERT", privateKeyPEM: "KEY", p12: [1, 2, 3], p12Password: "p12pw",
            keyType: .ecdsaP256,
            openP12: [4, 5])
    }

    /// A new stored property in User or UserMaterials fails here until `Fingerprint.userInputs`
    /// covers it (or, for a source location, skips it on purpose).
    @Test func everyStoredPropertyIsCovered() {
        let userLabels = Mirror(reflecting: Self.user()).children.compactMap(\.label)
        #expect(userLabels.sorted() == (Fingerprint.coveredUserFields + Fingerprint.skippedUserFields).sorted())
        let materialLabels = Mirror(reflecting: Self.materials()).children.compactMap(\.label)
        #expect(materialLabels.sorted() == Fingerprint.coveredMaterialFields.sorted())
        let appleLabels = Mirror(reflecting: AppleOptions()).children.compactMap(\.label)
        #expect(appleLabels.sorted() == Fingerprint.coveredAppleFields.sorted())
    }

    @Test func everyAppleOptionChangesTheFingerprint() {
        let base = Fingerprint.userInputs(Self.user(), nil)
        var seen = Set([base])
        for change in 0..<9 {
            var u = Self.user()
            switch change {
            case 0: u.apple.onDemand = false
            case 1: u.apple.trustedSSIDs = []
            case 2: u.apple.trustedSSIDs = ["a", "b"]
            case 3: u.apple.includeAllNetworks = true
            case 4: u.apple.excludeLocalNetworks = true
            case 5: u.apple.pfs = true
            case 6: u.apple.crlCheck = false
            case 7: u.apple.dpd = .high
            default: u.apple.disconnectOnIdle = 0
            }
            #expect(seen.insert(Fingerprint.userInputs(u, nil)).inserted, "\(u.apple)")
        }
    }

    @Test func everyCoveredFieldChangesTheFingerprint() {
        let base = Fingerprint.userInputs(Self.user(), Self.materials())
        var users: [User] = []
        for change in 0..<9 {
            var u = Self.user()
            switch change {
            case 0: u.name = "alicia"
            case 1: u.password = .env("PW")
            case 2: u.cert = false
            case 3: u.id = .fqdn("alice@example.com")
            case 4: u.nodes = ["n1"]
            case 5: u.nodes = ["n2", "n1"]
            case 6: u.devices = [.apple]
            case 7: u.apple.onDemand = true
            default: u.revoked = true
            }
            users.append(u)
        }
        for u in users { #expect(Fingerprint.userInputs(u, Self.materials()) != base, "\(u)") }
        var materials: [UserMaterials?] = [nil]
        for change in 0..<7 {
            var m = Self.materials()
            switch change {
            case 0: m.password = "pw2"
            case 1: m.certificatePEM = nil
            case 2: m.privateKeyPEM = "KEY2"
            case 3: m.p12 = [1, 2]
            case 4: m.p12Password = "x"
            case 5: m.openP12 = [4]
            default: m.keyType = .rsa2048
            }
            materials.append(m)
        }
        for m in materials { #expect(Fingerprint.userInputs(Self.user(), m) != base) }
        // Field boundaries are unambiguous.
        var a = Self.user()
        var b = Self.user()
        a.nodes = ["ab", "c"]
        b.nodes = ["a", "bc"]
        #expect(Fingerprint.userInputs(a, nil) != Fingerprint.userInputs(b, nil))
    }

    @Test func sourceLocationsDoNotChangeTheFingerprint() {
        var moved = Self.user()
        moved.location = SourceLocation(file: "a.yaml", line: 40, column: 1)
        moved.fieldLocations = [:]
        #expect(
            Fingerprint.userInputs(moved, Self.materials()) == Fingerprint.userInputs(Self.user(), Self.materials()))
    }
}
