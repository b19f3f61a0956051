import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Revocation: certificates of users and nodes that lost their access go onto the CRL.
extension PKISession {
    /// Revokes certificates of nodes and users no longer entitled to one.
    func retireAbsentHolders() throws {
        let nodeNames = Set(inventory.nodes.map(\.name))
        for name in index.nodes.keys.sorted() where !nodeNames.contains(name) {
            revokeHolder(node: true, name, reason: "removed from the inventory")
        }
        for name in index.users.keys.sorted() {
            if let user = inventory.user(named: name) {
                if user.revoked {
                    revokeUser(name, reason: "revoked in the inventory", dropPassword: true)
                } else if !user.cert {
                    revokeUser(name, reason: "cert: false in the inventory", dropPassword: false)
                }
            } else {
                revokeUser(name, reason: "removed from the inventory", dropPassword: true)
            }
        }
    }

    func revokeUser(_ name: String, reason: String, dropPassword: Bool) {
        revokeHolder(node: false, name, reason: reason)
        store.secrets.p12Passwords[name] = nil
        if dropPassword { store.secrets.passwords[name] = nil }
    }

    private func revokeHolder(node: Bool, _ name: String, reason: String) {
        let holder = node ? index.nodes[name] : index.users[name]
        guard let holder else { return }
        if var record = index.certificates[holder.serial] {
            record.status = .revoked
            record.revokedAt = now
            record.revocationReason = reason
            index.certificates[holder.serial] = record
        }
        // Earlier certificates of the same holder that have not expired (a renewal, a CA rotation
        // in its overlap) would still be accepted: they go onto the CRL too.
        let kind: CertificateKind = node ? .server : .client
        for (serial, var older) in index.certificates
        where older.status == .superseded && older.kind == kind && older.holder == name && older.notAfter > now {
            older.status = .revoked
            older.revokedAt = now
            older.revocationReason = reason
            index.certificates[serial] = older
        }
        if node {
            index.nodes[name] = nil
            store.nodes[name] = nil
        } else {
            index.users[name] = nil
            store.users[name] = nil
        }
        changes.append(PKIChange(.revoked, node ? .node(name) : .user(name), serial: holder.serial, reason: reason))
    }
}
