import Foundation
import VPNProvCrypto
import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `README` at the top of the output tree: which part goes to whom (servers, users, the operator's
/// Ansible run, the app's backend, the CRL's web server). From `README.tmpl`; it depends on the
/// deployment's name and on whether a CRL is published, so it is rendered with the servers' files.
package enum TreeReadmeRenderer: TreeRenderer {
    package static let template = "README.tmpl"
    package static let path = "README"

    package static func part(of plan: DeploymentPlan) -> TreeReadmePlan { plan.readme }

    package static func render(_ plan: TreeReadmePlan, _ shared: RenderShared, each: ([OutputFile]) throws -> Void)
        throws
    {
        let text = try shared.templates.template(template).render([
            "deployment": .string(plan.deployment),
            "publishes_crl": .bool(plan.crlURL != nil),
            "radius": .bool(plan.radius),
            "crl_url": .string(plan.crlURL ?? ""),
            "monitoring": .bool(plan.monitoring),
            "handoff": .string(plan.handOff),
        ])
        try each([OutputFile(path: path, text: text)])
    }
}
