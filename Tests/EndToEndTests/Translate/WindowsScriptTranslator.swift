import Foundation
import VPNProvCrypto
import VPNProvTestHarness

/// Reads a generated `<user>-windows.ps1` the way PowerShell would run it (PowerShellTokenizer + a statement
/// interpreter for the commands it contains) and turns each VPN connection it creates into the strongSwan client
/// Windows' built-in IKEv2 client amounts to. Nothing is taken from the inventory: only the script.
///
/// How Windows behaves, and so this client (sources: Microsoft's VpnClient cmdlet reference,
/// https://learn.microsoft.com/powershell/module/vpnclient/ ; strongSwan's Windows pages,
/// https://docs.strongswan.org/docs/latest/interop/windowsClients.html , windowsCertRequirements.html,
/// windowsEapServerStatus.html, windowsMachineServerStatus.html):
/// - it sends exactly the IKE and ESP proposal `Set-VpnConnectionIPsecConfiguration` set; without that call its
///   offer ends in MODP1024 (`default` is refused here: the script must set it);
/// - its identity (IDi) is its IP address with EAP and the certificate's subject DN with a machine certificate; it
///   sends no IDr;
/// - EAP is EAP-MSCHAPv2 (New-EapConfiguration's default) with the user name and password the person types;
/// - it requests an IPv4 and an IPv6 address (CPRQ ADDR, ADDR6);
/// - it trusts the server certificate only if it chains to a CA in LocalMachine\Root, carries the serverAuth EKU
///   and has the address it dialled as a dNSName subjectAltName (also for an IP address), else error 13801. The
///   chain is checked by charon (`cacerts`); EKU and dNSName by `checkServerCertificate` on the certificate the
///   server sent, which `WindowsClient` reads from the client daemon's certificate cache after IKE_AUTH.
enum WindowsScriptTranslator {
    struct IPsec: Equatable {
        var encryptionMethod, integrityCheckMethod, dhGroup, cipherTransformConstants, authenticationTransformConstants,
            pfsGroup: String
    }

    /// One connection the script creates.
    struct Connection {
        var name: String
        var serverAddress: String
        var authenticationMethod: String
        var ipsec: IPsec?
        var routes: [String] = []
        var splitTunneling: Bool
    }

    /// What running the script leaves on the machine.
    struct Result {
        var connections: [Connection]
        /// DER of the certificates imported into LocalMachine\Root.
        var rootCertificates: [Data]
        /// PKCS#12 bundles imported into LocalMachine\My, with their passwords.
        var machineBundles: [(p12: Data, password: String)]
        /// The user name the script tells the person to type at the first connect.
        var userName: String?
    }

    typealias Token = PowerShellTokenizer.Token

    enum Value {
        case string(String)
        case bool(Bool)
        case array([Value])
        case variable(String, member: String?)
        case secure(String)
        case eapMsChapV2
        case certificate(Data)
        case hashtable([String: Value])
    }

    static func interpret(script: String) throws -> Result {
        let statements = try PowerShellStatements.split(try PowerShellTokenizer.tokenize(script))
        var vars: [String: Value] = [:]
        var functions: [String: [Token]] = [:]
        var result = Result(connections: [], rootCertificates: [], machineBundles: [], userName: nil)
        var sawPreamble = (binding: false, strict: false, stop: false)

        for statement in statements {
            var s = statement[...]
            func describe() -> String { "line \(statement.first?.line ?? 0)" }
            switch s.first?.kind {
            case .generic("function"):
                guard case .generic(let name)? = s.dropFirst().first?.kind else {
                    throw TranslationError("\(describe()): function without name")
                }
                functions[name] = Array(s)
                continue
            case .punctuator("["):
                // [CmdletBinding()] then param() on the next line.
                guard statement.contains(where: { $0.kind == .generic("CmdletBinding") }) else {
                    throw TranslationError("\(describe()): unexpected attribute")
                }
                sawPreamble.binding = true
                continue
            case .generic("param"):
                continue
            case .generic("Set-StrictMode"):
                sawPreamble.strict = true
                continue
            case .generic("Write-Host"):
                continue
            case .variable("ErrorActionPreference"):
                guard case .verbatimString("Stop")? = statement.last?.kind else {
                    throw TranslationError("\(describe()): ErrorActionPreference must be Stop")
                }
                sawPreamble.stop = true
                continue
            default: break
            }
            // `$name = <expression>` or a command (`Name -P v … [| Out-Null]`).
            if case .variable(let target)? = s.first?.kind, s.dropFirst().first?.kind == .punctuator("=") {
                s = s.dropFirst(2)
                vars[target] = try evaluate(
                    Array(s), vars: vars, result: &result, functions: functions, line: describe())
            } else {
                _ = try evaluate(Array(s), vars: vars, result: &result, functions: functions, line: describe())
            }
        }
        guard sawPreamble.binding, sawPreamble.strict, sawPreamble.stop else {
            throw TranslationError(
                "the script lacks [CmdletBinding()], Set-StrictMode or $ErrorActionPreference = 'Stop'")
        }
        guard script.hasPrefix("#Requires -Version 5.1\n#Requires -RunAsAdministrator\n") else {
            throw TranslationError("the script does not start with #Requires -Version / -RunAsAdministrator")
        }
        if case .string(let user)? = vars["UserName"] { result.userName = user }
        return result
    }

    /// Evaluates an expression or a command invocation.
    private static func evaluate(
        _ tokens: [Token], vars: [String: Value], result: inout Result, functions: [String: [Token]], line: String
    ) throws -> Value? {
        guard let first = tokens.first else { throw TranslationError("\(line): empty statement") }
        switch first.kind {
        case .verbatimString(let s) where tokens.count == 1: return .string(s)
        case .punctuator("@{"): return .hashtable(try hashtable(tokens, vars: vars, line: line))
        case .generic(let command):
            var tokens = tokens
            // `… | Out-Null` discards the output.
            if let bar = tokens.firstIndex(where: { $0.kind == .punctuator("|") }) {
                guard tokens[(bar + 1)...].map(\.kind) == [.generic("Out-Null")] else {
                    throw TranslationError("\(line): unexpected pipeline")
                }
                tokens = Array(tokens[..<bar])
            }
            let (named, splat) = try arguments(Array(tokens.dropFirst()), vars: vars, line: line)
            var args = named
            if let splat {
                guard case .hashtable(let table)? = vars[splat] else {
                    throw TranslationError("\(line): @\(splat) is not a hashtable")
                }
                for (k, v) in table { args[k] = v }
            }
            return try run(command, args, vars: vars, result: &result, functions: functions, line: line)
        default:
            throw TranslationError(
                "\(line): statement not understood: \(tokens.map { "\($0.kind)" }.joined(separator: " "))")
        }
    }

    /// `-Name value` / `-Switch` pairs and an optional `@splat`.
    private static func arguments(_ tokens: [Token], vars: [String: Value], line: String) throws -> (
        [String: Value], String?
    ) {
        var out: [String: Value] = [:]
        var splat: String?
        var i = 0
        while i < tokens.count {
            switch tokens[i].kind {
            case .splat(let name):
                splat = name
                i += 1
            case .parameter(let p):
                let name = p.hasSuffix(":") ? String(p.dropLast()) : p
                if i + 1 < tokens.count, case .parameter = tokens[i + 1].kind {
                    out[name] = .bool(true)
                    i += 1
                } else if i + 1 < tokens.count {
                    out[name] = try value(tokens[i + 1], vars: vars, line: line)
                    i += 2
                } else {
                    out[name] = .bool(true)
                    i += 1
                }
            default: throw TranslationError("\(line): positional argument \(tokens[i].kind) not understood")
            }
        }
        return (out, splat)
    }

    private static func value(_ t: Token, vars: [String: Value], line: String) throws -> Value {
        switch t.kind {
        case .verbatimString(let s): return .string(s)
        case .variable("true"): return .bool(true)
        case .variable("false"): return .bool(false)
        case .variable(let v):
            guard let known = vars[v] else { throw TranslationError("\(line): $\(v) is not set") }
            return known
        default: throw TranslationError("\(line): value \(t.kind) not understood")
        }
    }

    /// `@{ Key = value … }` with values: verbatim strings, $true/$false, $var, $var.Member, @('…', …).
    private static func hashtable(_ tokens: [Token], vars: [String: Value], line: String) throws -> [String: Value] {
        guard tokens.first?.kind == .punctuator("@{"), tokens.last?.kind == .punctuator("}") else {
            throw TranslationError("\(line): not a hashtable literal")
        }
        let body = tokens.dropFirst().dropLast().filter { $0.kind != .newline && $0.kind != .comment }
        var out: [String: Value] = [:]
        var i = body.startIndex
        while i < body.endIndex {
            guard case .generic(let key) = body[i].kind, body[i + 1].kind == .punctuator("=") else {
                throw TranslationError("\(line): hashtable entry not understood at \(body[i].kind)")
            }
            guard out[key] == nil else { throw TranslationError("\(line): duplicate key \(key)") }
            i += 2
            switch body[i].kind {
            case .punctuator("@("):
                var items: [Value] = []
                i += 1
                while body[i].kind != .punctuator(")") {
                    if body[i].kind != .punctuator(",") { items.append(try value(body[i], vars: vars, line: line)) }
                    i += 1
                }
                out[key] = .array(items)
                i += 1
            case .variable(let v)
            where i + 1 < body.endIndex
                && {
                    if case .generic(let m) = body[i + 1].kind, m.hasPrefix(".") { return true }
                    return false
                }():
                guard case .generic(let member) = body[i + 1].kind, vars[v] != nil else {
                    throw TranslationError("\(line): $\(v) is not set")
                }
                out[key] = .variable(v, member: String(member.dropFirst()))
                i += 2
            default:
                out[key] = try value(body[i], vars: vars, line: line)
                i += 1
            }
        }
        return out
    }

    private static func string(_ args: [String: Value], _ key: String, _ line: String) throws -> String {
        guard case .string(let s)? = args[key] else {
            throw TranslationError("\(line): -\(key) missing or not a string")
        }
        return s
    }

    private static func isTrue(_ args: [String: Value], _ key: String) -> Bool {
        if case .bool(true)? = args[key] { return true }
        return false
    }

    /// What each command does on Windows (documented in the cmdlet reference), for the commands the script uses.
    private static func run(
        _ command: String, _ args: [String: Value], vars: [String: Value], result: inout Result,
        functions: [String: [Token]],
        line: String
    ) throws -> Value? {
        func only(_ allowed: Set<String>) throws {
            let unknown = Set(args.keys).subtracting(allowed)
            guard unknown.isEmpty else {
                throw TranslationError("\(line): \(command) with parameters not translated: \(unknown.sorted())")
            }
        }
        switch command {
        case "ConvertTo-SecureString":
            try only(["String", "AsPlainText", "Force"])
            guard isTrue(args, "AsPlainText"), isTrue(args, "Force") else {
                throw TranslationError("\(line): ConvertTo-SecureString without -AsPlainText -Force")
            }
            return .secure(try string(args, "String", line))
        case "New-EapConfiguration":
            // No parameters: the EapMsChapv2Auth parameter set, EAP-MSCHAPv2.
            try only([])
            return .eapMsChapV2
        case "Import-VpnprovCertificate":
            // The script's own helper: its body must import with the cmdlets into the named store.
            guard let body = functions[command] else { throw TranslationError("\(line): \(command) is not defined") }
            let kinds = body.map(\.kind)
            for required in [
                PowerShellTokenizer.Kind.generic("Import-PfxCertificate"), .generic("Import-Certificate"),
                .parameter("CertStoreLocation"), .variable("StoreLocation"),
            ] {
                guard kinds.contains(required) else { throw TranslationError("\(command) does not use \(required)") }
            }
            try only(["Base64", "StoreLocation", "Password"])
            guard case .string(let b64)? = args["Base64"], let bytes = Data(base64Encoded: b64) else {
                throw TranslationError("\(line): -Base64 is not base64")
            }
            let store = try string(args, "StoreLocation", line)
            switch (store, args["Password"]) {
            case ("Cert:\\LocalMachine\\Root", nil):
                result.rootCertificates.append(bytes)
                return .certificate(bytes)
            case ("Cert:\\LocalMachine\\My", .secure(let password)?):
                result.machineBundles.append((bytes, password))
                return nil
            default:
                throw TranslationError("\(line): certificate import into \(store) not translated")
            }
        case "Remove-VpnprovConnection":
            guard functions[command] != nil else { throw TranslationError("\(line): \(command) is not defined") }
            try only(["Name"])
            let name = try string(args, "Name", line)
            result.connections.removeAll { $0.name == name }
            return nil
        case "Add-VpnConnection":
            try only([
                "Name", "ServerAddress", "TunnelType", "AuthenticationMethod", "EapConfigXmlStream",
                "RememberCredential",
                "MachineCertificateIssuerFilter", "MachineCertificateEKUFilter", "EncryptionLevel", "SplitTunneling",
                "AllUserConnection", "Force",
            ])
            let name = try string(args, "Name", line)
            guard !result.connections.contains(where: { $0.name == name }) else {
                throw TranslationError(
                    "\(line): a VPN connection named \(name) already exists (Add-VpnConnection fails)")
            }
            guard try string(args, "TunnelType", line) == "Ikev2" else {
                throw TranslationError("\(line): not an IKEv2 connection")
            }
            let auth = try string(args, "AuthenticationMethod", line)
            switch auth {
            case "Eap":
                guard case .variable(let v, "EapConfigXmlStream")? = args["EapConfigXmlStream"],
                    case .eapMsChapV2? = vars[v]
                else {
                    throw TranslationError("\(line): EAP without New-EapConfiguration's EapConfigXmlStream")
                }
            case "MachineCertificate":
                guard case .certificate? = args["MachineCertificateIssuerFilter"] else {
                    throw TranslationError("\(line): MachineCertificate without the CA as issuer filter")
                }
            default: throw TranslationError("\(line): AuthenticationMethod \(auth) not translated")
            }
            if case .array(let ekus)? = args["MachineCertificateEKUFilter"] {
                guard ekus.count == 1, case .string("1.3.6.1.5.5.7.3.2") = ekus[0] else {
                    throw TranslationError("\(line): EKU filter not clientAuth")
                }
            }
            guard case .bool(let split)? = args["SplitTunneling"] else {
                throw TranslationError("\(line): SplitTunneling not set")
            }
            result.connections.append(
                Connection(
                    name: name, serverAddress: try string(args, "ServerAddress", line), authenticationMethod: auth,
                    ipsec: nil,
                    splitTunneling: split))
            return nil
        case "Set-VpnConnectionIPsecConfiguration":
            try only([
                "ConnectionName", "EncryptionMethod", "IntegrityCheckMethod", "DHGroup", "CipherTransformConstants",
                "AuthenticationTransformConstants", "PfsGroup", "AllUserConnection", "Force",
            ])
            let name = try string(args, "ConnectionName", line)
            guard let index = result.connections.firstIndex(where: { $0.name == name }) else {
                throw TranslationError("\(line): no VPN connection \(name)")
            }
            result.connections[index].ipsec = IPsec(
                encryptionMethod: try string(args, "EncryptionMethod", line),
                integrityCheckMethod: try string(args, "IntegrityCheckMethod", line),
                dhGroup: try string(args, "DHGroup", line),
                cipherTransformConstants: try string(args, "CipherTransformConstants", line),
                authenticationTransformConstants: try string(args, "AuthenticationTransformConstants", line),
                pfsGroup: try string(args, "PfsGroup", line))
            return nil
        case "Add-VpnConnectionRoute":
            try only(["ConnectionName", "DestinationPrefix", "AllUserConnection"])
            let name = try string(args, "ConnectionName", line)
            guard let index = result.connections.firstIndex(where: { $0.name == name }) else {
                throw TranslationError("\(line): no VPN connection \(name)")
            }
            result.connections[index].routes.append(try string(args, "DestinationPrefix", line))
            return nil
        default:
            throw TranslationError("\(line): command \(command) not translated")
        }
    }

    // MARK: - cmdlet values -> strongSwan proposals (Microsoft's value lists; strongSwan keyword names)

    static func ikeProposal(_ p: IPsec) throws -> String {
        let enc: [String: (String, aead: Bool)] = [
            "DES": ("des", false), "DES3": ("3des", false), "AES128": ("aes128", false), "AES192": ("aes192", false),
            "AES256": ("aes256", false), "GCMAES128": ("aes128gcm16", true), "GCMAES256": ("aes256gcm16", true),
        ]
        let hash = ["MD5": "md5", "SHA1": "sha1", "SHA256": "sha256", "SHA384": "sha384"]
        let dh = [
            "Group1": "modp768", "Group2": "modp1024", "Group14": "modp2048", "ECP256": "ecp256", "ECP384": "ecp384",
            "Group24": "modp2048s256",
        ]
        guard let e = enc[p.encryptionMethod], let h = hash[p.integrityCheckMethod], let g = dh[p.dhGroup] else {
            throw TranslationError("IPsec values not accepted by the cmdlet: \(p)")
        }
        return e.aead ? "\(e.0)-prf\(h)-\(g)" : "\(e.0)-\(h)-\(g)"
    }

    static func espProposal(_ p: IPsec) throws -> String {
        let cipher = [
            "DES": "des", "DES3": "3des", "AES128": "aes128", "AES192": "aes192", "AES256": "aes256",
            "GCMAES128": "aes128gcm16", "GCMAES192": "aes192gcm16", "GCMAES256": "aes256gcm16",
        ]
        let integ = ["MD596": "md5", "SHA196": "sha1", "SHA256128": "sha256"]
        let pfs =
            [
                "None": nil, "PFS1": "modp768", "PFS2": "modp1024", "PFS2048": "modp2048", "ECP256": "ecp256",
                "ECP384": "ecp384", "PFS24": "modp2048s256",
            ] as [String: String?]
        guard let c = cipher[p.cipherTransformConstants], let group = pfs[p.pfsGroup] else {
            throw TranslationError("ESP values not translated: \(p)")
        }
        var out = c
        if p.cipherTransformConstants.hasPrefix("GCM") {
            // AES-GCM ESP: the same GCMAESxxx in both transforms.
            guard p.authenticationTransformConstants == p.cipherTransformConstants else {
                throw TranslationError("GCM cipher with authentication transform \(p.authenticationTransformConstants)")
            }
        } else {
            guard let i = integ[p.authenticationTransformConstants] else {
                throw TranslationError("ESP integrity \(p.authenticationTransformConstants) not translated")
            }
            out += "-\(i)"
        }
        if let group { out += "-\(group)" }
        return out
    }

    // MARK: - the strongSwan client

    /// What Windows 7-11 offer for IKEv2 when no custom IPsec policy is set (strongSwan's Windows Clients page).
    static let windowsDefaultIKE = "3des-aes128-aes192-aes256-sha1-sha256-sha384-modp1024"
    static let windowsDefaultESP = "aes256-aes128-3des-des-null-sha1"

    /// The strongSwan client of one connection. `password`: what the person types at the first connect.
    static func setup(
        _ c: Connection, of script: Result, password: String?, remoteAddress: String? = nil,
        machineRoots: [Data] = []
    ) throws -> ClientSetup {
        // Without Set-VpnConnectionIPsecConfiguration Windows offers its built-in set, whose only DH group is MODP1024.
        let ike = try c.ipsec.map(ikeProposal) ?? windowsDefaultIKE
        let esp = try c.ipsec.map(espProposal) ?? windowsDefaultESP
        guard c.splitTunneling == false else { throw TranslationError("\(c.name): split tunneling not translated") }
        var files: [String: Data] = [:]
        for (index, der) in script.rootCertificates.enumerated() { files["x509ca/root-\(index).der"] = der }
        // What LocalMachine\Root held before the script ran (the public CAs Windows ships).
        for (index, root) in machineRoots.enumerated() { files["x509ca/machine-\(index).pem"] = root }
        var secrets: [(String, [(String, String)])] = []
        var w = SwanctlWriter()
        try w.section("connections") { w in
            try w.section("windows") { w in
                w.raw("version", "2")
                try w.set("remote_addrs", remoteAddress ?? c.serverAddress)
                w.raw("vips", "0.0.0.0, ::")
                try w.set("proposals", ike)
                try w.section("local") { w in
                    switch c.authenticationMethod {
                    case "Eap":
                        guard let user = script.userName, let password else {
                            throw TranslationError("\(c.name): EAP needs user name and password")
                        }
                        // No `id`: strongSwan then uses its IP address, as Windows does.
                        w.raw("auth", "eap-mschapv2")
                        try w.set("eap_id", user)
                        secrets.append(("eap-windows", [("id", user), ("secret", password)]))
                    default:
                        guard let bundle = script.machineBundles.first else {
                            throw TranslationError("\(c.name): no machine certificate imported")
                        }
                        let (certificatePEM, subject) = try machineCertificate(bundle.p12, password: bundle.password)
                        w.raw("auth", "pubkey")
                        w.raw("certs", "machine.pem")
                        // Windows sends the certificate's subject DN.
                        try w.set("id", subject)
                        files["x509/machine.pem"] = Data(certificatePEM.utf8)
                        files["pkcs12/machine.p12"] = bundle.p12
                        secrets.append(("pkcs12-machine", [("file", "machine.p12"), ("secret", bundle.password)]))
                    }
                }
                w.section("remote") { w in
                    w.raw("auth", "pubkey")
                    w.raw("id", "%any")  // Windows sends no IDr and checks the certificate itself
                }
                try w.section("children") { w in
                    try w.section("windows") { w in
                        try w.set("remote_ts", "0.0.0.0/0, ::/0")
                        try w.set("esp_proposals", esp)
                    }
                }
            }
        }
        try AppleProfileTranslator.writeSecrets(secrets, into: &w)
        return ClientSetup(connectionName: "windows", childName: "windows", swanctlConf: w.text, files: files)
    }

    /// The end-entity certificate of a PKCS#12 bundle (via the openssl CLI, an independent reader) and its subject
    /// in strongSwan's DN syntax.
    static func machineCertificate(_ p12: Data, password: String) throws -> (pem: String, subject: String) {
        let dir = try Scratch.makeDirectory("windows-p12")
        let file = dir.appendingPathComponent("machine.p12")
        try p12.write(to: file)
        let passFile = dir.appendingPathComponent("pass")
        try Data(password.utf8).write(to: passFile)
        var result = try Subprocess.run(
            "/usr/bin/openssl", ["pkcs12", "-in", file.path, "-nokeys", "-clcerts", "-passin", "file:\(passFile.path)"])
        if !result.succeeded {
            result = try Subprocess.run(
                "/usr/bin/openssl",
                ["pkcs12", "-legacy", "-in", file.path, "-nokeys", "-clcerts", "-passin", "file:\(passFile.path)"])
        }
        guard result.succeeded, let begin = result.stdout.range(of: "-----BEGIN CERTIFICATE-----") else {
            throw TranslationError("the machine certificate bundle does not open with its password: \(result.stderr)")
        }
        let pem = String(result.stdout[begin.lowerBound...])
        let cert = try X509Certificate(pem: pem)
        return (pem, cert.subject.description)
    }

    /// The checks Windows makes on the server certificate beyond the chain: serverAuth EKU and the dialled
    /// address as a dNSName subjectAltName (for an IP address too). nil when Windows accepts it, else why not.
    static func checkServerCertificate(pem: String, dialled: String) throws -> String? {
        let cert = try X509Certificate(pem: pem)
        guard cert.extendedKeyUsageOIDs.contains("1.3.6.1.5.5.7.3.1") else {
            return "13801: '\(cert.subject.description)' has no serverAuth EKU (it has \(cert.extendedKeyUsageOIDs))"
        }
        let dnsNames = cert.subjectAlternativeNames.compactMap { name -> String? in
            if case .dnsName(let n) = name { return n.lowercased() }
            return nil
        }
        guard dnsNames.contains(dialled.lowercased()) else {
            return "13801: the server certificate has no dNSName '\(dialled)' (it has \(dnsNames))"
        }
        return nil
    }
}
