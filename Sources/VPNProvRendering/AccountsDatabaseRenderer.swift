import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// The accounts database cluster of `accounts.cluster` (docs/accounts.md, "A replicated accounts database"):
// accounts-db/<host>/ (pg_hba.conf, pg_ident.conf, vpnprov.conf: what the vpnprov_accounts_db role puts into
// the host's data directory) and deploy/host_vars/<host>.yml (what the role creates there), all rendered from
// AccountsDatabasePlan. Nothing here holds a secret: the TLS keys stay in the operator's directory.

package enum AccountsDatabaseRenderer {
    /// The output directory of the database hosts' files.
    package static let directory = "accounts-db"
    static let hostVarsTemplate = "deploy/accounts_db_host_vars.yml.tmpl"
    static let hostFiles: [(template: String, path: String)] = [
        ("accounts-db/pg_hba.conf.tmpl", "pg_hba.conf"),
        ("accounts-db/pg_ident.conf.tmpl", "pg_ident.conf"),
        ("accounts-db/vpnprov.conf.tmpl", "vpnprov.conf"),
    ]
    /// The deploy files only a cluster needs (BuiltinDeployFiles paths): left out of a tree without one.
    static func isClusterFile(_ deployPath: String) -> Bool {
        deployPath == "accounts-db.yml" || deployPath.hasPrefix("roles/vpnprov_accounts_db/")
    }

    /// Every file of the cluster; none without `accounts.cluster`.
    static func render(plan: AccountsDatabasePlan?, templates: TemplateSet) throws -> [OutputFile] {
        guard let plan else { return [] }
        var files: [OutputFile] = []
        for host in plan.hosts {
            let isMonitor = host == plan.monitor
            let settings: [(name: String, value: String)] =
                isMonitor
                ? AccountsDatabasePlan.monitorSettings
                : [("wal_sender_timeout", AccountsDatabasePlan.walSenderTimeout)]
            var context: TemplateObject = [
                "host": .string(host.name), "role": .string(isMonitor ? "monitor" : "data"),
                "address": .string(host.address), "port": .int(plan.port), "dbname": .string(plan.databaseName),
                "monitor_uri": .string(plan.monitorURI), "tls_source": .string(plan.operatorTLSDirectory),
                "network_partition_timeout": .int(AccountsDatabasePlan.networkPartitionTimeout),
                "records": .list((isMonitor ? plan.monitorHBA : plan.dataNodeHBA).map { .string($0) }),
                "settings": .list(settings.map { ["name": .string($0.name), "value": .string($0.value)] }),
            ]
            files.append(
                OutputFile(
                    path: "deploy/host_vars/\(host.name).yml",
                    text: try templates.template(hostVarsTemplate).render(.object(context))))
            for file in hostFiles {
                if file.path == "pg_ident.conf" { context["records"] = .list(plan.identMap.map { .string($0) }) }
                files.append(
                    OutputFile(
                        path: "\(directory)/\(host.name)/\(file.path)",
                        text: try templates.template(file.template).render(.object(context))))
            }
        }
        return files
    }
}
