import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `README` at the top of the output tree: which part goes to whom (servers, users, the operator's
/// Ansible run, the app's backend, the CRL's web server). From `README.tmpl`; it depends on the
/// deployment's name and on whether a CRL is published, so it is rendered with the servers' files.
package enum TreeReadmeRenderer {
    package static let template = "README.tmpl"
    package static let path = "README"

    package static func render(inventory: Inventory, templates: TemplateSet) throws -> OutputFile {
        let text = try templates.template(template).render([
            "deployment": .string(inventory.name),
            "publishes_crl": .bool(inventory.pki.crlURL != nil),
            "radius": .bool(inventory.accounts != nil && inventory.nodes.contains(where: \.usesRadius)),
            "crl_url": .string(inventory.pki.crlURL ?? ""),
            "monitoring": .bool(inventory.monitoring != nil),
            "handoff": .string(inventory.handOff?.address ?? ""),
        ])
        return OutputFile(path: path, text: text)
    }
}
