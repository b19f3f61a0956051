/// The keys of each inventory section, one enum per section (docs/inventory.md). The raw value is the key as
/// written; the order of the cases is the order of the section's allowed list, so the "did you mean" hints
/// and every message that lists keys come out the same. Each decoder's `switch` over a section's keys is
/// exhaustive: a key added here without a case of its own is a compile error.
extension InventoryDecoder {
    /// Keys of the inventory's top level.
    package enum TopLevelKey: String, Sendable, Hashable, CaseIterable {
        case vpnprov, name, pki, secrets, accounts, acme, monitoring, handoff, defaults, nodes, users, acknowledge
    }

    /// Keys of an `acknowledge:` entry.
    package enum AcknowledgementKey: String, Sendable, Hashable, CaseIterable {
        case rule, node, user, service, reason
    }

    /// Keys of `secrets:`.
    package enum SecretsKey: String, Sendable, Hashable, CaseIterable {
        case envPrefix = "env_prefix"
        case fileDirectory = "file_dir"
    }

    /// Keys of `pki:`.
    package enum PKIKey: String, Sendable, Hashable, CaseIterable {
        case ca
        case serverDays = "server_days"
        case clientDays = "client_days"
        case serverKey = "server_key"
        case clientKey = "client_key"
        case profileSigning = "profile_signing"
        case crlURL = "crl_url"
    }

    /// Keys of `pki.profile_signing:`.
    package enum ProfileSigningKey: String, Sendable, Hashable, CaseIterable {
        case cert, key, chain
    }

    /// Keys of `pki.ca:`.
    package enum CAKey: String, Sendable, Hashable, CaseIterable {
        case name, key, days
    }

    /// Keys of a node (and of `defaults:`).
    package enum NodeKey: String, Sendable, Hashable, CaseIterable {
        case address, id, region, country, tier, pool, pool6, services, psk, group, proposals, dns, apple, deploy
        case network, accounts
        case radiusAddress = "radius_address"
        case certificate
        case quantumSafe = "quantum_safe"
        case state
    }

    /// Keys of a node's `quantum_safe:` (docs/quantum-safe.md).
    package enum QuantumSafeKey: String, Sendable, Hashable, CaseIterable {
        case mlKEM = "ml_kem"
        case classicalFallback = "classical_fallback"
        case ppk
    }

    /// Keys of a node's `network:` (forwarding, NAT, firewall).
    package enum NetworkKey: String, Sendable, Hashable, CaseIterable {
        case uplink, mss
        case isolateClients = "isolate_clients"
        case ipsec, ipv6
        case allowPrivate = "allow_private"
    }

    /// Keys of a node's (and `defaults:`) `apple:` mapping.
    package enum AppleKey: String, Sendable, Hashable, CaseIterable {
        case onDemand = "on_demand"
        case trustedSSIDs = "trusted_ssids"
        case includeAllNetworks = "include_all_networks"
        case excludeLocalNetworks = "exclude_local_networks"
        case pfs
        case crlCheck = "crl_check"
        case dpd
        case disconnectOnIdle = "disconnect_on_idle"
    }

    /// Keys of a user's `apple:` mapping (what concerns the device, not the server): a part of a node's.
    package enum UserAppleKey: String, Sendable, Hashable, CaseIterable {
        case onDemand = "on_demand"
        case trustedSSIDs = "trusted_ssids"
        case includeAllNetworks = "include_all_networks"
        case excludeLocalNetworks = "exclude_local_networks"
        case disconnectOnIdle = "disconnect_on_idle"

        /// The same key of a node's `apple:`, which the one `apple:` decoder reads.
        package var appleKey: AppleKey {
            switch self {
            case .onDemand: .onDemand
            case .trustedSSIDs: .trustedSSIDs
            case .includeAllNetworks: .includeAllNetworks
            case .excludeLocalNetworks: .excludeLocalNetworks
            case .disconnectOnIdle: .disconnectOnIdle
            }
        }
    }

    /// Keys of a node's `proposals:`.
    package enum ProposalKey: String, Sendable, Hashable, CaseIterable {
        case ike, esp
    }

    /// Keys of a node's `deploy:` (how Ansible reaches it).
    package enum DeployKey: String, Sendable, Hashable, CaseIterable {
        case host, port, user, become
    }

    /// Keys of a user.
    package enum UserKey: String, Sendable, Hashable, CaseIterable {
        case password, cert, id, nodes, devices, revoked, apple
    }

    /// Keys of `accounts:`.
    package enum AccountsKey: String, Sendable, Hashable, CaseIterable {
        case database
        case radiusDatabase = "radius_database"
        case secret
        case accountingInterval = "accounting_interval"
        case deviceLimit = "device_limit"
        case disconnectFrom = "disconnect_from"
        case protection, servers, quotas, cluster
    }

    /// Keys of one server under `accounts.servers`.
    package enum RadiusServerKey: String, Sendable, Hashable, CaseIterable {
        case address
        case authPort = "auth_port"
        case acctPort = "acct_port"
        case region
    }

    /// Keys of `accounts.cluster` (the accounts database as a pg_auto_failover cluster).
    package enum DatabaseClusterKey: String, Sendable, Hashable, CaseIterable {
        case hosts, port, dbname
        case tlsDir = "tls_dir"
    }

    /// Keys of one host under `accounts.cluster.hosts`.
    package enum DatabaseHostKey: String, Sendable, Hashable, CaseIterable {
        case address, region, role
    }

    /// Keys of `acme:`.
    package enum ACMEKey: String, Sendable, Hashable, CaseIterable {
        case directory, email, challenge, key
        case caBundle = "ca_bundle"
        case renewDays = "renew_days"
        case roots
    }

    /// Keys of `monitoring:`.
    package enum MonitoringKey: String, Sendable, Hashable, CaseIterable {
        case from, port
        case userLabels = "user_labels"
    }

    /// Keys of `handoff:`.
    package enum HandOffKey: String, Sendable, Hashable, CaseIterable {
        case address, deploy, expires, downloads
    }
}

/// Where a node's value was written (`Node.fieldLocations`): one of its keys, or a key of one of its
/// mappings. `path` is the field's dotted name as docs and messages spell it (`network.allow_private`).
package enum NodeField: Sendable, Hashable {
    case key(InventoryDecoder.NodeKey)
    case proposals(InventoryDecoder.ProposalKey)
    case apple(InventoryDecoder.AppleKey)
    case deploy(InventoryDecoder.DeployKey)
    case network(InventoryDecoder.NetworkKey)
    /// One entry of `network.allow_private` (0-based, among the entries that decoded).
    case allowPrivate(Int)
    case quantumSafe(InventoryDecoder.QuantumSafeKey)

    package var path: String {
        switch self {
        case .key(let key): key.rawValue
        case .proposals(let key): "proposals.\(key.rawValue)"
        case .apple(let key): "apple.\(key.rawValue)"
        case .deploy(let key): "deploy.\(key.rawValue)"
        case .network(let key): "network.\(key.rawValue)"
        case .allowPrivate(let index): "network.allow_private.\(index)"
        case .quantumSafe(let key): "quantum_safe.\(key.rawValue)"
        }
    }

    /// The field whose mapping or list holds this one (`proposals` for `proposals.ike`); nil for a key
    /// of the node itself.
    package var parent: NodeField? {
        switch self {
        case .key: nil
        case .proposals: .key(.proposals)
        case .apple: .key(.apple)
        case .deploy: .key(.deploy)
        case .network: .key(.network)
        case .allowPrivate: .network(.allowPrivate)
        case .quantumSafe: .key(.quantumSafe)
        }
    }

    /// Every field but the entries of a list (`allowPrivate`), in the order of the section enums.
    package static var named: [NodeField] {
        InventoryDecoder.NodeKey.allCases.map(NodeField.key) + InventoryDecoder.ProposalKey.allCases.map(proposals)
            + InventoryDecoder.AppleKey.allCases.map(apple) + InventoryDecoder.DeployKey.allCases.map(deploy)
            + InventoryDecoder.NetworkKey.allCases.map(network)
            + InventoryDecoder.QuantumSafeKey.allCases.map(quantumSafe)
    }
}

/// Where a user's value was written (`User.fieldLocations`).
package enum UserField: Sendable, Hashable {
    case key(InventoryDecoder.UserKey)
    case apple(InventoryDecoder.AppleKey)

    package var path: String {
        switch self {
        case .key(let key): key.rawValue
        case .apple(let key): "apple.\(key.rawValue)"
        }
    }

    /// Every field, in the order of the section enums.
    package static var named: [UserField] {
        InventoryDecoder.UserKey.allCases.map(UserField.key)
            + InventoryDecoder.UserAppleKey.allCases.map { UserField.apple($0.appleKey) }
    }
}

/// Where a top-level value was written (`Inventory.fieldLocations`): `name:`, the `pki:` and `secrets:`
/// mappings and the keys inside them.
package enum InventoryField: Sendable, Hashable {
    case name
    /// The `pki:` mapping itself.
    case pkiSection
    case pki(InventoryDecoder.PKIKey)
    case ca(InventoryDecoder.CAKey)
    /// The `secrets:` mapping itself.
    case secretsSection
    case secrets(InventoryDecoder.SecretsKey)

    package var path: String {
        switch self {
        case .name: "name"
        case .pkiSection: "pki"
        case .pki(let key): "pki.\(key.rawValue)"
        case .ca(let key): "pki.ca.\(key.rawValue)"
        case .secretsSection: "secrets"
        case .secrets(let key): "secrets.\(key.rawValue)"
        }
    }

    /// The field whose mapping holds this one (`pki.ca` for `pki.ca.days`); nil at the top level.
    package var parent: InventoryField? {
        switch self {
        case .name, .pkiSection, .secretsSection: nil
        case .pki: .pkiSection
        case .ca: .pki(.ca)
        case .secrets: .secretsSection
        }
    }

    /// Every field, in the order of the section enums.
    package static var named: [InventoryField] {
        [.name, .pkiSection] + InventoryDecoder.PKIKey.allCases.map(pki) + InventoryDecoder.CAKey.allCases.map(ca)
            + [.secretsSection] + InventoryDecoder.SecretsKey.allCases.map(secrets)
    }
}
