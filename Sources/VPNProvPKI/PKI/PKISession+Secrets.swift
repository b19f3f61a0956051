import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvSupport

/// Generated secrets (`gen` PSKs and passwords): created once and kept in the state.
extension PKISession {
    func generateSecrets() throws {
        try generatePSKs()
        try generateUserPasswords()
        try generateRadiusSecrets()
        try generatePPKs()
    }

    /// A PSK for each node whose `psk: gen` a service uses; the PSKs of other nodes are discarded.
    private func generatePSKs() throws {
        var keepPSK = Set<String>()
        for node in inventory.nodes where node.psk == .generate && node.services.contains(where: \.needsPSK) {
            keepPSK.insert(node.name)
            if store.secrets.psks[node.name] == nil {
                store.secrets.psks[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
                changes.append(PKIChange(.secretGenerated, .node(node.name), reason: "psk"))
            }
        }
        // Generated secrets nobody uses any more are discarded, so a returning name gets fresh ones.
        store.secrets.psks = store.secrets.psks.filter { keepPSK.contains($0.key) }
    }

    /// A password for each active user with `password: gen`, a PKCS#12 password for each with `cert: true`.
    private func generateUserPasswords() throws {
        var keepPassword = Set<String>()
        var keepP12 = Set<String>()
        for user in inventory.users where !user.revoked {
            if user.password == .generate {
                keepPassword.insert(user.name)
                if store.secrets.passwords[user.name] == nil {
                    store.secrets.passwords[user.name] = try SecretResolver.generate(
                        length: SecretResolver.passwordLength)
                    changes.append(PKIChange(.secretGenerated, .user(user.name), reason: "password"))
                }
            }
            if user.cert {
                keepP12.insert(user.name)
                if store.secrets.p12Passwords[user.name] == nil {
                    store.secrets.p12Passwords[user.name] = try SecretResolver.generate(
                        length: SecretResolver.passwordLength)
                }
            }
        }
        store.secrets.passwords = store.secrets.passwords.filter { keepPassword.contains($0.key) }
        store.secrets.p12Passwords = store.secrets.p12Passwords.filter { keepP12.contains($0.key) }
    }

    /// The RADIUS, Disconnect-Request, relay and (with `protection: ipsec`) IPsec secrets of each RADIUS node.
    private func generateRadiusSecrets() throws {
        var radius = store.secrets.radiusSecrets ?? [:]
        var dae = store.secrets.daeSecrets ?? [:]
        var ipsec = store.secrets.radiusIPsecSecrets ?? [:]
        var relay = store.secrets.radiusRelaySecrets ?? [:]
        let protected = inventory.accounts?.protection == .ipsec
        for node in inventory.nodes where node.usesRadius {
            if radius[node.name] == nil {
                radius[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
                changes.append(PKIChange(.secretGenerated, .node(node.name), reason: "RADIUS secret"))
            }
            if dae[node.name] == nil {
                dae[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
            }
            if protected && ipsec[node.name] == nil {
                ipsec[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
            }
            if relay[node.name] == nil {
                relay[node.name] = try SecretResolver.generate(length: SecretResolver.pskLength)
            }
        }
        let radiusNodes = Set(inventory.nodes.filter(\.usesRadius).map(\.name))
        radius = radius.filter { radiusNodes.contains($0.key) }
        dae = dae.filter { radiusNodes.contains($0.key) }
        ipsec = protected ? ipsec.filter { radiusNodes.contains($0.key) } : [:]
        relay = relay.filter { radiusNodes.contains($0.key) }
        store.secrets.radiusSecrets = radius.isEmpty && store.secrets.radiusSecrets == nil ? nil : radius
        store.secrets.daeSecrets = dae.isEmpty && store.secrets.daeSecrets == nil ? nil : dae
        store.secrets.radiusIPsecSecrets =
            ipsec.isEmpty && store.secrets.radiusIPsecSecrets == nil ? nil : ipsec
        store.secrets.radiusRelaySecrets =
            relay.isEmpty && store.secrets.radiusRelaySecrets == nil ? nil : relay
    }

    private func generatePPKs() throws {
        // A post-quantum preshared key for every user who reaches a node that asks for PPKs.
        let ppkNodes = inventory.nodes.filter { $0.quantumSafe?.ppk != nil }.map(\.name)
        var ppks = store.secrets.ppks ?? [:]
        var keepPPK = Set<String>()
        for user in inventory.users where !user.revoked && ppkNodes.contains(where: user.nodes.contains) {
            keepPPK.insert(user.name)
            if ppks[user.name] == nil {
                ppks[user.name] = try SecretResolver.generate(length: SecretResolver.ppkLength)
                changes.append(PKIChange(.secretGenerated, .user(user.name), reason: "PPK"))
            }
        }
        ppks = ppks.filter { keepPPK.contains($0.key) }
        store.secrets.ppks = ppks.isEmpty && store.secrets.ppks == nil ? nil : ppks
    }

    /// Replaces a node's generated PSK (the caller checked that the inventory says `psk: gen`).
    func rotatePSK(node: String) throws {
        guard let old = store.secrets.psks[node] else {
            throw PKIError(
                .secretNotGenerated,
                "node '\(node)' has no generated PSK in the state (it needs 'psk: gen' and a PSK service)")
        }
        store.secrets.psks[node] = try SecretResolver.generate(length: SecretResolver.pskLength, replacing: old)
        changes.append(PKIChange(.secretRotated, .node(node), reason: "psk"))
    }

    /// Replaces a RADIUS node's generated RADIUS, Disconnect-Request, IPsec and relay secrets (the caller checked
    /// that the node says `accounts: radius`).
    func rotateRadiusSecret(node: String) throws {
        guard let old = store.secrets.radiusSecrets?[node], let oldDAE = store.secrets.daeSecrets?[node] else {
            throw PKIError(
                .secretNotGenerated, "node '\(node)' has no RADIUS secret in the state (it needs 'accounts: radius')")
        }
        store.secrets.radiusSecrets?[node] = try SecretResolver.generate(
            length: SecretResolver.pskLength, replacing: old)
        store.secrets.daeSecrets?[node] = try SecretResolver.generate(
            length: SecretResolver.pskLength, replacing: oldDAE)
        if let oldIPsec = store.secrets.radiusIPsecSecrets?[node] {
            store.secrets.radiusIPsecSecrets?[node] = try SecretResolver.generate(
                length: SecretResolver.pskLength, replacing: oldIPsec)
        }
        if let oldRelay = store.secrets.radiusRelaySecrets?[node] {
            store.secrets.radiusRelaySecrets?[node] = try SecretResolver.generate(
                length: SecretResolver.pskLength, replacing: oldRelay)
        }
        changes.append(PKIChange(.secretRotated, .node(node), reason: "RADIUS secret"))
    }

    /// Replaces a user's post-quantum preshared key (the caller checked that the user reaches a node with PPKs).
    func rotatePPK(user: String) throws {
        guard let old = store.secrets.ppks?[user] else {
            throw PKIError(
                .secretNotGenerated,
                "user '\(user)' has no PPK in the state (revoked, or reaching no node with 'quantum_safe.ppk')")
        }
        store.secrets.ppks?[user] = try SecretResolver.generate(length: SecretResolver.ppkLength, replacing: old)
        changes.append(PKIChange(.secretRotated, .user(user), reason: "PPK"))
    }

    /// Replaces a user's generated password (the caller checked that the inventory says `password: gen`).
    func rotatePassword(user: String) throws {
        guard let old = store.secrets.passwords[user] else {
            throw PKIError(
                .secretNotGenerated,
                "user '\(user)' has no generated password in the state (revoked, or not 'password: gen')")
        }
        store.secrets.passwords[user] = try SecretResolver.generate(
            length: SecretResolver.passwordLength, replacing: old)
        changes.append(PKIChange(.secretRotated, .user(user), reason: "password"))
    }
}
