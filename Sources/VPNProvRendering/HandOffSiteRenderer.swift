import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

/// `deploy/host_vars/<site>.yml`: what the vpnprov_handoff role sets up on the hand-off site (docs/handoff.md),
/// from the site's plan. Nothing here is secret; the CA bundle of a private ACME server is public.
package enum HandOffSiteRenderer: TreeRenderer {
    static let hostVarsTemplate = "deploy/handoff_host_vars.yml.tmpl"

    package static func part(of plan: DeploymentPlan) -> HandOffPlan? { plan.handOff }

    package static func render(_ plan: HandOffPlan?, _ shared: RenderShared, each: ([OutputFile]) throws -> Void)
        throws
    {
        let files = try render(plan: plan, templates: shared.templates)
        if !files.isEmpty { try each(files) }
    }

    /// The site's host_vars; none without a site.
    package static func render(plan: HandOffPlan?, templates: TemplateSet) throws -> [OutputFile] {
        guard let plan else { return [] }
        let bundle = (plan.acme.caBundlePEM ?? "").split(separator: "\n").map { TemplateValue.string(String($0)) }
        let text = try templates.template(hostVarsTemplate).render([
            "address": .string(plan.address),
            "directory": .string(plan.acme.directory),
            "email": .string(plan.acme.email),
            "key_type": .string(plan.acme.keyType),
            "renew_days": .int(plan.acme.renewDays),
            "ca_bundle": .list(bundle),
        ])
        return [OutputFile(path: "deploy/host_vars/\(plan.address).yml", text: text)]
    }
}
