import VPNProvModel
import VPNProvSupport

// The accounts database as a pg_auto_failover cluster (`accounts.cluster`, docs/accounts.md "A replicated
// accounts database"): who connects where, with what, and the timeouts that make a failover finish within
// 30 s. The RADIUS servers' sql module, `vpnprov accounts` and the database hosts' Ansible role are all
// rendered from this one plan, so they agree on hosts, ports, names and the TLS files' paths.

/// The cluster: its monitor, its data nodes, and the connection strings of everything that follows the primary.
package struct AccountsDatabasePlan: Sendable, Hashable {
    package struct Host: Sendable, Hashable {
        package var name: String
        package var address: String
        package var region: String?
    }

    package var monitor: Host
    /// In the order written.
    package var dataNodes: [Host]
    package var port: Int
    package var databaseName: String
    /// The operator's TLS directory on the machine that runs Ansible and `vpnprov accounts`.
    package var operatorTLSDirectory: String
    /// Where the RADIUS servers connect from (their addresses; pg_hba.conf's address field, so a DNS name too).
    package var radiusClients: [String]
    /// Where `vpnprov accounts` connects from: the networks that may send Disconnect-Requests, which is where it
    /// runs (`accounts.disconnect_from`, by default the RADIUS servers).
    package var operatorNetworks: [String]

    /// Where every database host and RADIUS server keeps its TLS files: one path on every host, because
    /// pg_auto_failover writes the paths into postgresql-auto-failover.conf and pg_rewind copies that file
    /// from the new primary to the old one (a per-host path would make the old primary serve the other
    /// host's certificate after its first failover).
    package static let tlsDirectory = "/etc/vpnprov/postgresql"
    /// The database roles of certificate logins (the certificate's CN is the role: pg_hba.conf's `cert`).
    package static let radiusRole = "radius"
    package static let operatorRole = "vpnprov"
    /// pg_auto_failover's own roles: the keepers log in to the monitor as autoctl_node, the standbys to the
    /// primary as pgautofailover_replicator (pg_ident.conf maps the hosts' certificates to them).
    package static let monitorRole = "autoctl_node"
    package static let replicationRole = "pgautofailover_replicator"
    package static let monitorDatabase = "pg_auto_failover"

    /// libpq: a host that does not answer costs this long (seconds, libpq's least is 2) before the next is
    /// tried; a broken connection is noticed after `tcpUserTimeout` ms of unacknowledged data, or after
    /// `keepalivesIdle` + `keepalivesCount` × `keepalivesInterval` s of silence while idle.
    package static let connectTimeout = 2
    package static let tcpUserTimeout = 5000
    package static let keepalivesIdle = 5
    package static let keepalivesInterval = 2
    package static let keepalivesCount = 2

    /// The monitor's health checks and failover timers (pg_auto_failover's GUCs, src/monitor/pg_auto_failover.c;
    /// defaults 5000, 5000, 2000, 2, 20000, 30000 ms give about 50 s from a primary's loss to a new primary).
    /// Rule: unhealthy + demote timeout stays well above the primary's own `walSenderTimeout` +
    /// `networkPartitionTimeout` + a keeper loop, so that an isolated primary has demoted itself before a standby
    /// is promoted.
    package static let monitorSettings: [(name: String, value: String)] = [
        ("pgautofailover.health_check_period", "1000"),
        ("pgautofailover.health_check_timeout", "2000"),
        ("pgautofailover.health_check_retry_delay", "500"),
        ("pgautofailover.health_check_max_retries", "2"),
        ("pgautofailover.node_considered_unhealthy_timeout", "5000"),
        ("pgautofailover.primary_demote_timeout", "12000"),
    ]
    /// The keeper's `timeout.network_partition_timeout` (s, default 20): a primary that reaches neither the
    /// monitor nor a standby for this long demotes itself.
    package static let networkPartitionTimeout = 5
    /// A data node's `wal_sender_timeout` (pg_auto_failover sets 30 s): a cut standby leaves the primary's
    /// replication list after this long, and only then does the partition timeout start.
    package static let walSenderTimeout = "5s"

    /// nil without `accounts.cluster` (or when validation refused it).
    package static func make(_ inventory: Inventory) -> AccountsDatabasePlan? {
        guard let cluster = inventory.accounts?.cluster, let monitor = cluster.monitors.first,
            cluster.dataNodes.count >= 2
        else { return nil }
        func host(_ h: DatabaseHost) -> Host { Host(name: h.name, address: h.address, region: h.region) }
        let accounts = inventory.accounts!
        return AccountsDatabasePlan(
            monitor: host(monitor), dataNodes: cluster.dataNodes.map(host), port: cluster.port,
            databaseName: cluster.databaseName, operatorTLSDirectory: cluster.tlsDirectory,
            radiusClients: accounts.servers.map { hbaAddress($0.address) },
            operatorNetworks: accounts.effectiveDisconnectFrom.map(\.description))
    }

    /// An address as pg_hba.conf's address field takes it: an IP address as a one-address network, a DNS name
    /// as written (PostgreSQL resolves it and checks the reverse lookup).
    package static func hbaAddress(_ address: String) -> String {
        guard let bytes = IPAddressText.parse(address) else { return address }
        return "\(IPAddressText.format(bytes))/\(bytes.count * 8)"
    }

    /// Every host of the cluster, the monitor first.
    package var hosts: [Host] { [monitor] + dataNodes }

    /// A data node's pg_hba.conf records: the keeper and pg_autoctl on the host (peer), the other data nodes'
    /// replication and pg_rewind (pg_autoctl connects as the replicator to the database itself too), the RADIUS
    /// servers and the operator; every remote login over TLS with a certificate of the operator's CA.
    package var dataNodeHBA: [String] {
        var lines = ["local all postgres peer", "local replication postgres peer"]
        for node in dataNodes {
            let address = Self.hbaAddress(node.address)
            lines.append("hostssl replication \(Self.replicationRole) \(address) cert map=vpnprov")
            lines.append("hostssl all \(Self.replicationRole) \(address) cert map=vpnprov")
        }
        for client in radiusClients { lines.append("hostssl \(databaseName) \(Self.radiusRole) \(client) cert") }
        for network in operatorNetworks {
            lines.append("hostssl \(databaseName) \(Self.operatorRole) \(network) cert")
        }
        return lines
    }

    /// The monitor's pg_hba.conf records: its own pg_autoctl on the socket, the data nodes' keepers.
    package var monitorHBA: [String] {
        // The monitor's own pg_autoctl connects over the socket as autoctl_node, as the OS user postgres.
        ["local all postgres peer", "local \(Self.monitorDatabase) \(Self.monitorRole) peer map=vpnprov"]
            + dataNodes.map {
                "hostssl \(Self.monitorDatabase) \(Self.monitorRole) \(Self.hbaAddress($0.address)) cert map=vpnprov"
            }
    }

    /// pg_ident.conf's map `vpnprov`: the monitor's own pg_autoctl (OS user postgres) and a data node's certificate
    /// (CN its name) log in as pg_auto_failover's roles.
    package var identMap: [String] {
        ["vpnprov postgres \(Self.monitorRole)"]
            + dataNodes.flatMap {
                ["vpnprov \($0.name) \(Self.monitorRole)", "vpnprov \($0.name) \(Self.replicationRole)"]
            }
    }

    /// The data nodes, those of `region` first, each group in the order written. libpq tries the hosts in this
    /// order and keeps the first that takes writes: a standby in front answers "read-only" at once, so the
    /// order decides only which primary is found first, never which one is used.
    package func dataNodes(preferring region: String?) -> [Host] {
        guard let region else { return dataNodes }
        return dataNodes.filter { $0.region == region } + dataNodes.filter { $0.region != region }
    }

    /// A libpq connection string in keyword/value form (FreeRADIUS appends `application_name=` to what it is
    /// given, which a URI with a query string cannot take): every data node, the primary only
    /// (`target_session_attrs=read-write`), the server's certificate checked against its address
    /// (`verify-full`), a certificate login.
    package func conninfo(
        user: String, preferring region: String?, certificate: String, key: String, rootCertificate: String
    )
        -> String
    {
        let hosts = dataNodes(preferring: region)
        return [
            "host=" + hosts.map(\.address).joined(separator: ","),
            "port=" + hosts.map { _ in String(port) }.joined(separator: ","),
            "dbname=\(databaseName)", "user=\(user)",
            "sslmode=verify-full", "sslrootcert=\(rootCertificate)", "sslcert=\(certificate)", "sslkey=\(key)",
            "target_session_attrs=read-write", "connect_timeout=\(Self.connectTimeout)",
            "tcp_user_timeout=\(Self.tcpUserTimeout)", "keepalives_idle=\(Self.keepalivesIdle)",
            "keepalives_interval=\(Self.keepalivesInterval)", "keepalives_count=\(Self.keepalivesCount)",
        ].joined(separator: " ")
    }

    /// What a RADIUS server of `region` connects with: the files the radius role installs.
    package func radiusConninfo(region: String?) -> String {
        conninfo(
            user: Self.radiusRole, preferring: region, certificate: "\(Self.tlsDirectory)/radius.crt",
            key: "\(Self.tlsDirectory)/radius.key", rootCertificate: "\(Self.tlsDirectory)/ca.crt")
    }

    /// What `vpnprov accounts` connects with when `accounts.database` is not written: the operator's files.
    package var operatorConninfo: String {
        conninfo(
            user: Self.operatorRole, preferring: nil, certificate: "\(operatorTLSDirectory)/vpnprov.crt",
            key: "\(operatorTLSDirectory)/vpnprov.key", rootCertificate: "\(operatorTLSDirectory)/ca.crt")
    }

    /// The keepers' monitor URI (`pg_autoctl create postgres --monitor`, `pg_autoctl.monitor` in the keeper's
    /// configuration): pg_auto_failover takes a URI here and hands it to libpq as it is; the client certificate
    /// comes from PGSSLCERT/PGSSLKEY in the keeper's environment. The TCP timeouts are the clients' own: without
    /// them a keeper whose report was in flight when its host's network went away waits in the kernel's
    /// retransmission backoff (pg_autoctl sets no timeout on a query to the monitor), and reports again only at
    /// the next retransmission, tens of seconds after the network is back, holding its node's rejoin that long.
    package var monitorURI: String {
        let host = monitor.address.contains(":") ? "[\(monitor.address)]" : monitor.address
        return "postgres://\(Self.monitorRole)@\(host):\(port)/\(Self.monitorDatabase)"
            + "?sslmode=verify-full&sslrootcert=\(Self.tlsDirectory)/ca.crt&tcp_user_timeout=\(Self.tcpUserTimeout)"
            + "&keepalives_idle=\(Self.keepalivesIdle)&keepalives_interval=\(Self.keepalivesInterval)"
            + "&keepalives_count=\(Self.keepalivesCount)"
    }
}
