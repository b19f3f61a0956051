import Foundation
import Testing
import VPNProvCrypto
import VPNProvTestFixtures

/// status, unrevoke, rotate-psk, rotate-password and rotate-ca through the command line (in-process),
/// checked against the state files and, for the CA rotation, against `openssl verify`.
@Suite(.temporaries) struct LifecycleTests {
    static func inventory(users: String, nodes: String? = nil) -> String {
        """
        vpnprov: 1
        name: acme
        nodes:
        \(nodes ?? """
          fra-1:
            address: fra-1.vpn.example.com
            pool: 10.10.0.0/24
            services: [ikev2-eap, ikev2-cert, ikev2-psk]
            psk: gen
          nyc-1:
            address: 203.0.113.10
            pool: 10.20.0.0/24
            services: [ikev2-eap, ikev2-cert, ikev2-psk]
            psk: env:VPN_NYC_PSK
        """)
        users:
        \(users)
        """
    }

    static let fleetUsers = """
          ann:
            cert: true
            password: gen
          ben:
            cert: true
          cat:
            cert: true
          dan:
            password: gen
          eve:
            password: file:eve.password
        """

    /// A directory with inventory.yaml (and eve's password file), generated once.
    static func site(_ text: String = inventory(users: fleetUsers)) throws -> String {
        let dir = try temporaryDirectory()
        try text.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try "Zq8#vLw2!pR7xT4m&Kd9".write(toFile: dir + "/eve.password", atomically: true, encoding: .utf8)
        let first = vpnprov(["generate"], in: dir)
        #expect(first.code == 0, "\(first.err)")
        return dir
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// nyc-1's PSK (`env:VPN_NYC_PSK`), the environment of every run.
    static let nycPSK = "Hq7#Lm2@Vx9!Rt4$Kp8&Zw3"
    static let environment = ["VPN_NYC_PSK": nycPSK]

    /// A fresh directory holding the fleet's inventory and eve's password file.
    static func fleetDirectory() throws -> String {
        let dir = try temporaryDirectory()
        try inventory(users: fleetUsers).write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        try "Zq8#vLw2!pR7xT4m&Kd9".write(toFile: dir + "/eve.password", atomically: true, encoding: .utf8)
        return dir
    }

    static func secrets(_ dir: String) -> [String: [String: String]] {
        json((try? String(contentsOfFile: dir + "/state/secrets.json", encoding: .utf8)) ?? "")
            .compactMapValues { $0 as? [String: String] }
    }

    @Test func theFirstRunTellsOnceThatTheStateHoldsTheCAKey() throws {
        let dir = try Self.fleetDirectory()
        let first = vpnprov(["generate"], in: dir, environment: Self.environment)
        #expect(first.code == 0, "\(first.err)")
        #expect(first.err.contains("holds the CA key: back the whole directory up"))
        let second = vpnprov(["generate"], in: dir, environment: Self.environment)
        #expect(second.code == 0)
        #expect(!second.err.contains("holds the CA key"))
    }

    @Test func statusCountsActiveRenewedRevokedAndHeldCertificates() throws {
        let env = Self.environment
        let dir = try Self.fleetDirectory()
        #expect(vpnprov(["generate"], in: dir, environment: env).code == 0)
        // ann renewed (new identity), ben removed (revoked), cat revoked by command (held), nyc-1 removed.
        let changed = Self.inventory(
            users: Self.fleetUsers.replacingOccurrences(
                of: "  ann:\n    cert: true", with: "  ann:\n    cert: true\n    id: ann@example.org"
            )
            .replacingOccurrences(of: "  ben:\n    cert: true\n", with: ""),
            nodes: """
                  fra-1:
                    address: fra-1.vpn.example.com
                    pool: 10.10.0.0/24
                    services: [ikev2-eap, ikev2-cert, ikev2-psk]
                    psk: gen
                """)
        try changed.write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let regenerated = vpnprov(["generate"], in: dir)
        #expect(regenerated.code == 0, "\(regenerated.err)")
        #expect(
            regenerated.err.contains("revoked node 'nyc-1'") && regenerated.err.contains("removed from the inventory"))
        #expect(vpnprov(["revoke", "cat"], in: dir).code == 0)

        let before = snapshot(dir + "/state")
        let status = vpnprov(["status", "--format", "json"], in: dir)
        #expect(status.code == 0, "\(status.err)")
        #expect(snapshot(dir + "/state") == before, "status changed the state")
        let document = Self.json(status.out)
        #expect(
            document["vpnprov"] as? Int == 1 && document["command"] as? String == "status"
                && document["ok"] as? Bool == true)
        #expect(document["diagnostics"] is [Any])
        let report = try #require(document["status"] as? [String: Any])
        let counts = report["counts"] as? [String: Int] ?? [:]
        // active: fra-1, ann (new); superseded: ann (old); revoked: ben, nyc-1; held: cat.
        #expect(counts == ["active": 2, "superseded": 1, "revoked": 2, "held": 1], "\(counts)")
        let certificates = report["certificates"] as? [[String: Any]] ?? []
        func statuses(_ holder: String) -> [String] {
            certificates.filter { $0["holder"] as? String == holder }.compactMap { $0["status"] as? String }
        }
        #expect(statuses("nyc-1") == ["revoked"])
        #expect(Set(statuses("ann")) == ["active", "superseded"])
        #expect(statuses("cat") == ["held"])
        #expect(
            certificates.contains {
                $0["holder"] as? String == "ann" && $0["identity"] as? String == "email:ann@example.org"
            })
        #expect((report["heldUsers"] as? [String]) == ["cat"])
        #expect((report["usersWithoutCertificates"] as? [String]) == ["dan", "eve"])
        let secrets = report["secrets"] as? [String: [String]] ?? [:]
        #expect(
            secrets["psks"] == ["fra-1"] && secrets["passwords"] == ["ann", "dan"] && secrets["p12Passwords"] == ["ann"]
        )
        #expect((report["crls"] as? [[String: Any]])?.first?["revoked"] as? Int == 3)
        #expect((report["rotation"] as? [String: Any])?["phase"] as? String == "none")

        // The text form says the same; an inventory without 'ann' shows what the state holds for her.
        let text = vpnprov(["status"], in: dir)
        #expect(
            text.code == 0 && text.out.contains("certificates: 2 active, 1 superseded, 2 revoked, 1 held"),
            "\(text.out)")
        try changed.replacingOccurrences(
            of: "  ann:\n    cert: true\n    id: ann@example.org\n    password: gen\n", with: ""
        )
        .write(toFile: dir + "/other.yaml", atomically: true, encoding: .utf8)
        let other = vpnprov(["status", "other.yaml", "--state", "state"], in: dir)
        #expect(other.out.contains("in the state, not in the inventory: user ann"), "\(other.out)")

        // A fleet's index is megabytes (about 1 KB a certificate): status reads it within the same bound
        // as generate. Whitespace makes this one 2 MiB without changing what it says (in a state an
        // earlier vpnprov wrote: a sealed one refuses any change).
        try StateDamage.unseal(dir + "/state")
        let indexPath = dir + "/state/index.json"
        let index = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        try (index + Data(repeating: 0x20, count: 2 << 20)).write(to: URL(fileURLWithPath: indexPath))
        let large = vpnprov(["status"], in: dir)
        #expect(
            large.code == 0 && large.out.contains("certificates: 2 active, 1 superseded, 2 revoked, 1 held"),
            "\(large.err)")
    }

    @Test func expiringExitsOneWithinTheWindowAndZeroOutsideIt() throws {
        let dir = try Self.site(
            Self.inventory(
                users: "  ann:\n    cert: true\n",
                nodes: """
                      fra-1:
                        address: fra-1.vpn.example.com
                        pool: 10.10.0.0/24
                        services: [ikev2-cert]
                    """))
        let now = Date()
        // Client certificate and CRL run 365 days, the node's 825, the CA's 3650.
        let later = now + 340 * 86400
        let inside = vpnprov(["status", "--expiring", "30"], in: dir, now: later)
        #expect(inside.code == 1, "\(inside.out)\(inside.err)")
        #expect(inside.out.contains("expiring: user ann certificate"))
        #expect(inside.out.contains("expiring: CRL 1"))
        #expect(!inside.out.contains("expiring: node"))
        let outside = vpnprov(["status", "--expiring", "20"], in: dir, now: later)
        #expect(outside.code == 0, "\(outside.out)")
        #expect(outside.out.contains("nothing expires within the asked window"))
        #expect(vpnprov(["status", "--expiring", "20"], in: dir).code == 0)
        // Already expired counts too, and the JSON lists it.
        let gone = vpnprov(
            ["status", "--expiring", "0", "--format", "json"], in: dir,
            now: now + 900 * 86400)
        #expect(gone.code == 1)
        let expiring = (Self.json(gone.out)["status"] as? [String: Any])?["expiring"] as? [[String: Any]] ?? []
        #expect(
            expiring.contains {
                ($0["what"] as? String ?? "").hasPrefix("node fra-1") && ($0["daysLeft"] as? Int ?? 0) < 0
            })
        #expect(Self.json(gone.out)["ok"] as? Bool == false)
        #expect(vpnprov(["status", "--expiring", "soon"], in: dir).code == 2)
        let empty = try temporaryDirectory()
        try Self.inventory(users: "  ann:\n    cert: true\n").write(
            toFile: empty + "/inventory.yaml", atomically: true, encoding: .utf8)
        #expect(vpnprov(["status"], in: empty).code == 3)
    }

    @Test func rotatePSKAndPasswordReplaceOnlyGeneratedSecrets() throws {
        let env = Self.environment
        let dir = try Self.fleetDirectory()
        #expect(vpnprov(["generate"], in: dir, environment: env).code == 0)
        let before = Self.secrets(dir)

        let psk = vpnprov(["rotate-psk", "fra-1"], in: dir, environment: env)
        #expect(psk.code == 0, "\(psk.err)")
        // The first generate's nodes were never recorded as rolled out: they still wait, with fra-1.
        #expect(psk.err.contains("changed nodes: fra-1\n"), "\(psk.err)")
        #expect(psk.err.contains("--limit fra-1,nyc-1\n"), "\(psk.err)")
        #expect(psk.err.contains("hand new profiles to ann, ben, cat, dan, eve "))
        let afterPSK = Self.secrets(dir)
        #expect(afterPSK["psks"]?["fra-1"] != before["psks"]?["fra-1"] && afterPSK["passwords"] == before["passwords"])
        let fraSecrets = try String(
            contentsOfFile: dir + "/out/servers/fra-1/swanctl/conf.d/secrets.conf", encoding: .utf8)
        #expect(!fraSecrets.contains(Data(before["psks"]!["fra-1"]!.utf8).base64EncodedString()))
        #expect(fraSecrets.contains(Data(afterPSK["psks"]!["fra-1"]!.utf8).base64EncodedString()))

        let password = vpnprov(["rotate-password", "dan", "--format", "json"], in: dir, environment: env)
        #expect(password.code == 0, "\(password.err)")
        let summary = Self.json(password.out)["lifecycle"] as? [String: Any] ?? [:]
        #expect(summary["nodesToRollOut"] as? [String] == ["fra-1", "nyc-1"])
        #expect(summary["usersNeedingNewProfiles"] as? [String] == ["dan"])
        #expect(Self.json(password.out)["command"] as? String == "rotate-password")
        #expect(Self.secrets(dir)["passwords"]?["dan"] != before["passwords"]?["dan"])
        #expect(Self.secrets(dir)["passwords"]?["ann"] == before["passwords"]?["ann"])

        // The operator's secrets, unknown names, a node without PSK: clear errors, nothing changes.
        let state = snapshot(dir + "/state")
        for (arguments, message) in [
            (["rotate-psk", "nyc-1"], "comes from env:VPN_NYC_PSK, which is yours to change"),
            (["rotate-password", "eve"], "comes from file:eve.password, which is yours to change"),
            (["rotate-password", "ben"], "user 'ben' has no password"),
            (["rotate-psk", "fra-2"], "node 'fra-2' is not in inventory.yaml; did you mean 'fra-1'?"),
            (["rotate-password", "dna"], "did you mean 'dan'?"),
        ] {
            let r = vpnprov(arguments, in: dir, environment: env)
            #expect(r.code == 1, "\(arguments)")
            #expect(r.err.contains(message), "\(arguments): \(r.err)")
        }
        #expect(vpnprov(["rotate-psk"], in: dir).code == 2)
        // JSON: one document, the refusal inside it with its rule code and inventory line.
        let json = vpnprov(["rotate-psk", "nyc-1", "--format", "json"], in: dir, environment: env)
        let document = Self.json(json.out)
        #expect(json.code == 1 && document["ok"] as? Bool == false && document["command"] as? String == "rotate-psk")
        let found = (document["diagnostics"] as? [[String: Any]] ?? []).first {
            $0["code"] as? String == "secret-not-generated"
        }
        #expect(found?["line"] as? Int == 13, "\(json.out)")
        #expect(snapshot(dir + "/state") == state)
    }

    @Test func unrevokeIssuesAFreshCertificateAndKeepsTheOldSerialOnTheCRL() throws {
        let env = Self.environment
        let dir = try Self.fleetDirectory()
        #expect(vpnprov(["generate"], in: dir, environment: env).code == 0)
        let index = { Self.json((try? String(contentsOfFile: dir + "/state/index.json", encoding: .utf8)) ?? "") }
        let oldSerial = try #require(
            ((index()["users"] as? [String: Any])?["ann"] as? [String: Any])?["serial"] as? String)
        #expect(vpnprov(["unrevoke", "ann"], in: dir, environment: env).code == 1)
        #expect(vpnprov(["revoke", "ann"], in: dir, environment: env).code == 0)
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/clients/ann"))
        let r = vpnprov(["unrevoke", "ann"], in: dir, environment: env)
        #expect(r.code == 0, "\(r.err)")
        #expect(r.err.contains("unrevoked user 'ann'") && r.err.contains("issued user 'ann'"))
        #expect(r.err.contains("hand new profiles to ann "), "\(r.err)")
        let newSerial = try #require(
            ((index()["users"] as? [String: Any])?["ann"] as? [String: Any])?["serial"] as? String)
        #expect(newSerial != oldSerial)
        #expect(((index()["crl"] as? [String: Any])?["revokedSerials"] as? [String]) == [oldSerial])
        #expect(index()["revokedByCommand"] == nil)
        #expect(FileManager.default.fileExists(atPath: dir + "/out/clients/ann/ann.mobileconfig"))
        // Revoked in the inventory: that is where it is undone.
        try Self.inventory(
            users: Self.fleetUsers.replacingOccurrences(
                of: "  ben:\n    cert: true", with: "  ben:\n    cert: true\n    revoked: true")
        )
        .write(toFile: dir + "/inventory.yaml", atomically: true, encoding: .utf8)
        let inInventory = vpnprov(["unrevoke", "ben"], in: dir, environment: env)
        #expect(inInventory.code == 1 && inInventory.err.contains("set it to false instead"), "\(inInventory.err)")
    }

    @Test(.needs(.openssl)) func rotateCAOverlapsThenFinishes() throws {
        let env = Self.environment
        let dir = try Self.fleetDirectory()
        #expect(vpnprov(["generate"], in: dir, environment: env).code == 0)
        let server = dir + "/out/servers/fra-1/swanctl"
        let oldCA = try String(contentsOfFile: server + "/x509ca/ca.pem", encoding: .utf8)
        try oldCA.write(toFile: dir + "/old-ca.pem", atomically: true, encoding: .utf8)
        let oldClient = try String(contentsOfFile: dir + "/out/clients/ann/linux/swanctl/x509/ann.pem", encoding: .utf8)
        try oldClient.write(toFile: dir + "/old-client.pem", atomically: true, encoding: .utf8)
        let caFiles = snapshot(dir + "/state/ca")

        #expect(vpnprov(["rotate-ca", "--finish"], in: dir, environment: env).code == 1)
        // Nothing to rotate before the first generate: an error, and no state is created.
        let fresh = try temporaryDirectory()
        try Self.inventory(users: "  ann:\n    cert: true\n").write(
            toFile: fresh + "/inventory.yaml", atomically: true, encoding: .utf8)
        let early = vpnprov(["rotate-ca"], in: fresh, environment: env)
        #expect(early.code == 1 && early.err.contains("run 'vpnprov generate' first"), "\(early.err)")
        #expect(!FileManager.default.fileExists(atPath: fresh + "/state/index.json"))
        let start = vpnprov(["rotate-ca", "--format", "json"], in: dir, environment: env)
        #expect(start.code == 0, "\(start.err)")
        #expect(start.err.contains("changed nodes: fra-1, nyc-1\n"), "\(start.err)")
        #expect(start.err.contains("hand new profiles to ann, ben, cat, dan, eve "))
        // The first CA's files are untouched; the new CA is added beside them.
        let afterFiles = snapshot(dir + "/state/ca")
        #expect(afterFiles.filter { caFiles[$0.key] != nil } == caFiles && afterFiles.count == caFiles.count + 2)
        // Servers keep the old root, add the cross certificate and both CRLs.
        #expect(try String(contentsOfFile: server + "/x509ca/ca.pem", encoding: .utf8) == oldCA)
        let newCA = try String(contentsOfFile: dir + "/out/clients/ann/linux/swanctl/x509ca/ca.pem", encoding: .utf8)
        try newCA.write(toFile: dir + "/new-ca.pem", atomically: true, encoding: .utf8)
        #expect(newCA != oldCA)
        let cross = try X509Certificate(
            pem: try String(contentsOfFile: server + "/x509ca/ca-next.pem", encoding: .utf8))
        let newCACert = try X509Certificate(pem: newCA)
        let oldCACert = try X509Certificate(pem: oldCA)
        #expect(cross.subject == newCACert.subject && cross.isSigned(by: oldCACert))
        #expect(newCACert.subject.commonName == "acme VPN Root CA" && newCACert.subject != oldCACert.subject)
        // The rotation's new CA is a certificate the run issued, as a created CA is.
        let certificates = (Self.json(start.out)["summary"] as? [String: Any])?["certificates"] as? [String: Any]
        let issued = certificates?["issued"] as? [[String: String]] ?? []
        #expect(issued.contains { $0["holder"] == "ca" && $0["serial"] == newCACert.serialHex }, "\(issued)")
        let node = server + "/x509/fra-1.pem"
        let newClient = dir + "/out/clients/ann/linux/swanctl/x509/ann.pem"
        func verify(_ args: [String]) throws -> Bool { try runTool(["openssl", "verify"] + args).status == 0 }
        // An old device (old CA only) verifies the node through the cross certificate the node sends; a new one
        // directly.
        #expect(try verify(["-CAfile", dir + "/old-ca.pem", "-untrusted", server + "/x509ca/ca-next.pem", node]))
        #expect(try !verify(["-CAfile", dir + "/old-ca.pem", node]))
        #expect(try verify(["-CAfile", dir + "/new-ca.pem", node]))
        // The node accepts client certificates of both CAs.
        #expect(try verify(["-CAfile", server + "/x509ca/ca.pem", dir + "/old-client.pem"]))
        #expect(
            try verify(["-CAfile", server + "/x509ca/ca.pem", "-untrusted", server + "/x509ca/ca-next.pem", newClient]))
        let crl = try CertificateRevocationList(
            pem: try String(contentsOfFile: server + "/x509crl/crl.pem", encoding: .utf8))
        let crlNext = try CertificateRevocationList(
            pem: try String(contentsOfFile: server + "/x509crl/crl-next.pem", encoding: .utf8))
        #expect(crl.isSigned(by: try X509Certificate(pem: oldCA)) && crlNext.isSigned(by: newCACert))

        // Twice is an error; the state says overlap; a second generate changes nothing; check is clean.
        let again = vpnprov(["rotate-ca"], in: dir, environment: env)
        #expect(
            again.code == 1 && again.err.contains("a CA rotation is already in progress")
                && again.err.contains("[ca-rotation]"))
        #expect(vpnprov(["status"], in: dir).out.contains("CA rotation: overlap since"))
        let rerun = vpnprov(["generate"], in: dir, environment: env)
        #expect(rerun.err.contains("0 files written"), "\(rerun.err)")
        #expect(vpnprov(["check"], in: dir, environment: env).code == 0)

        // Revoking during the overlap lists the user's certificates of both CAs on the matching CRLs.
        let oldSerial = try X509Certificate(pem: oldClient).serialHex
        let newSerial = try X509Certificate(pem: try String(contentsOfFile: newClient, encoding: .utf8)).serialHex
        #expect(vpnprov(["revoke", "ann"], in: dir, environment: env).code == 0)
        let crlAfter = try CertificateRevocationList(
            pem: try String(contentsOfFile: server + "/x509crl/crl.pem", encoding: .utf8))
        let crlNextAfter = try CertificateRevocationList(
            pem: try String(contentsOfFile: server + "/x509crl/crl-next.pem", encoding: .utf8))
        #expect(crlAfter.revoked.map { hexString($0.serial) } == [oldSerial])
        #expect(crlNextAfter.revoked.map { hexString($0.serial) } == [newSerial])
        #expect(vpnprov(["unrevoke", "ann"], in: dir, environment: env).code == 0)

        // --finish: only the new CA on the servers; old client certificates no longer verify there.
        let finish = vpnprov(["rotate-ca", "--finish", "--format", "json"], in: dir, environment: env)
        #expect(finish.code == 0, "\(finish.err)")
        let summary = Self.json(finish.out)["lifecycle"] as? [String: Any] ?? [:]
        #expect(
            summary["nodesToRollOut"] as? [String] == ["fra-1", "nyc-1"] && summary["caRotation"] as? String == "none")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: server + "/x509ca")) == ["ca.pem"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: server + "/x509crl")) == ["crl.pem"])
        #expect(try String(contentsOfFile: server + "/x509ca/ca.pem", encoding: .utf8) == newCA)
        #expect(try !verify(["-CAfile", server + "/x509ca/ca.pem", dir + "/old-client.pem"]))
        #expect(try verify(["-CAfile", server + "/x509ca/ca.pem", node]))
        #expect(vpnprov(["status"], in: dir).out.contains("CA rotation: none"))
        #expect(vpnprov(["rotate-ca", "--finish"], in: dir, environment: env).code == 1)
        #expect(vpnprov(["check"], in: dir, environment: env).code == 0)
        // A second rotation works the same way from the rotated CA.
        #expect(vpnprov(["rotate-ca"], in: dir, environment: env).code == 0)
        #expect(try String(contentsOfFile: server + "/x509ca/ca.pem", encoding: .utf8) == newCA)
        #expect(vpnprov(["status"], in: dir).out.contains("generation 3"))
    }

    @Test func rotateCAWithAnEncryptedCAKeyNeedsThePassphrase() throws {
        let env = [
            "VPN_NYC_PSK": Self.nycPSK, "VPNPROV_CA_PASSPHRASE": "correct horse battery staple 42",
        ]
        let dir = try Self.fleetDirectory()
        #expect(vpnprov(["generate"], in: dir, environment: env).code == 0)
        let without = vpnprov(["rotate-ca"], in: dir, environment: ["VPN_NYC_PSK": env["VPN_NYC_PSK"]!])
        #expect(without.code == 3 && without.err.contains("VPNPROV_CA_PASSPHRASE"), "\(without.err)")
        #expect(vpnprov(["rotate-ca"], in: dir, environment: env).code == 0)
        let keys = try FileManager.default.contentsOfDirectory(atPath: dir + "/state/ca").filter {
            $0.hasSuffix(".key")
        }
        #expect(keys.count == 2)
        for key in keys {
            let pem = try String(contentsOfFile: dir + "/state/ca/" + key, encoding: .utf8)
            #expect(pem.contains("ENCRYPTED PRIVATE KEY"), "\(key) is stored in the clear")
        }
    }

    @Test(arguments: ["status", "rotate-ca", "rotate-psk", "rotate-password", "unrevoke"])
    func lifecycleCommandsHaveHelp(_ command: String) {
        let r = vpnprov([command, "--help"])
        #expect(r.code == 0)
        for section in ["OVERVIEW:", "USAGE: vpnprov \(command)", "OPTIONS:", "--format"] {
            #expect(r.out.contains(section))
        }
        #expect(vpnprov(["--help"]).out.contains("  \(command) "))
    }
}
