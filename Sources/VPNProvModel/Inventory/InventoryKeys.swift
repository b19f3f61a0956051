/// The keys of each inventory section, one enum per section (docs/inventory.md). The raw value is the key as
/// written; the order of the cases is the order of the section's allowed list, so the "did you mean" hints
/// and every message that lists keys come out the same. Each decoder's `switch` over a section's keys is
/// exhaustive: a key added here without a case of its own is a compile error.
extension InventoryDecoder {
    /// Keys of the inventory's top level.
    package enum TopLevelKey: String, Sendable, Hashable, CaseIterable {
        case vpnprov, name, pki, secrets, accounts, acme, defaults, nodes, users, acknowledge
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
        case network, accounts, certificate
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
        case protection, servers
    }

    /// Keys of one server under `accounts.servers`.
    package enum RadiusServerKey: String, Sendable, Hashable, CaseIterable {
        case address
        case authPort = "auth_port"
        case acctPort = "acct_port"
    }

    /// Keys of `acme:`.
    package enum ACMEKey: String, Sendable, Hashable, CaseIterable {
        case directory, email, challenge, key
        case caBundle = "ca_bundle"
        case renewDays = "renew_days"
        case roots
    }
}
