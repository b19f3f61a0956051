import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport

/// Materials: everything the renderers need from the state, read once per run.
extension PKISession {
    func materials(psks: [String: String], passwords: [String: String]) throws -> Materials {
        guard let ca = store.caCertificate, let record = index.ca, let crlPEM = store.crlPEM else {
            throw StateError(.stateInconsistent, "the state has no CA or CRL")
        }
        var nodes: [String: NodeMaterials] = [:]
        for node in inventory.nodes {
            guard let held = store.nodes[node.name] else {
                throw StateError(.stateInconsistent, "node '\(node.name)' has no certificate")
            }
            var psk: String? = nil
            if node.services.contains(where: \.needsPSK) {
                psk = node.psk == .generate ? store.secrets.psks[node.name] : psks[node.name]
            }
            nodes[node.name] = NodeMaterials(
                certificatePEM: held.certificatePEM, privateKeyPEM: held.keyPEM, psk: psk,
                radiusSecret: node.usesRadius ? store.secrets.radiusSecrets?[node.name] : nil,
                daeSecret: node.usesRadius ? store.secrets.daeSecrets?[node.name] : nil,
                radiusIPsecSecret: node.usesRadius ? store.secrets.radiusIPsecSecrets?[node.name] : nil,
                radiusRelaySecret: node.usesRadius ? store.secrets.radiusRelaySecrets?[node.name] : nil)
        }
        var users: [String: UserMaterials] = [:]
        for user in inventory.users where !user.revoked {
            let password = user.password == .generate ? store.secrets.passwords[user.name] : passwords[user.name]
            var entry = UserMaterials(password: password)
            entry.ppk = store.secrets.ppks?[user.name]
            if user.cert {
                guard let held = store.users[user.name], let holder = index.users[user.name], let p12 = holder.p12,
                    let bytes = store.p12s[p12.file]
                else { throw StateError(.stateInconsistent, "user '\(user.name)' has no certificate") }
                entry.certificatePEM = held.certificatePEM
                entry.privateKeyPEM = held.keyPEM
                entry.p12 = bytes
                entry.p12Password = store.secrets.p12Passwords[user.name]
                entry.keyType = index.certificates[holder.serial]?.keyType
                entry.openP12 = holder.openP12.flatMap { store.p12s[$0.file] }
            }
            users[user.name] = entry
        }
        var materials = Materials(
            caCertificatePEM: ca.pem, caCommonName: ca.subject.commonName ?? record.commonName,
            caKeyType: record.keyType,
            crlPEM: crlPEM, nodes: nodes, users: users)
        // The nodes' trust root: during a rotation still the previous CA.
        materials.nodeScoping = (index.rotation?.previous ?? index.ca)?.anyPolicy == true
        if index.rotation != nil {
            guard let previous = store.previousCACertificate, let cross = store.crossCertificate,
                let previousCRL = store.previousCRLPEM
            else {
                throw StateError(
                    .stateInconsistent,
                    "the CA rotation in the state lacks the previous CA, its CRL or the cross certificate")
            }
            materials.rotation = RotationMaterials(
                previousCACertificatePEM: previous.pem, crossCertificatePEM: cross.pem, previousCRLPEM: previousCRL)
        }
        return materials
    }
}

extension KeyType {
    package init?(algorithm: KeyAlgorithm) {
        switch algorithm {
        case .ecdsaP256: self = .ecdsaP256
        case .ecdsaP384: self = .ecdsaP384
        case .rsa(2048): self = .rsa2048
        case .rsa(3072): self = .rsa3072
        case .rsa(4096): self = .rsa4096
        default: return nil
        }
    }
}
