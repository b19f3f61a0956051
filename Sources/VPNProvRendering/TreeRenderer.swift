import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// The renderers of the output tree outside `clients/`: each takes its own part of the deployment plan
// (`part(of:)`) and renders only that, with the run's materials and templates. The engine walks
// `TreeRenderers.all`; a renderer that is not listed there writes nothing.

/// What every tree renderer shares besides its part of the plan: the PKI's materials and the templates.
package struct RenderShared: Sendable {
    package var materials: Materials
    package var templates: TemplateSet

    package init(materials: Materials, templates: TemplateSet) {
        self.materials = materials
        self.templates = templates
    }
}

/// A renderer of files outside `clients/`, from its part of the deployment plan.
package protocol TreeRenderer: Sendable {
    /// What the renderer reads of the plan.
    associatedtype Part
    static func part(of plan: DeploymentPlan) -> Part
    /// The files of `part`, handed to `each` in the pieces the renderer chooses (`servers/`: a node at a
    /// time, since each node's files hold every user's secrets).
    static func render(_ part: Part, _ shared: RenderShared, each: ([OutputFile]) throws -> Void) throws
    /// `render(part(of: plan), shared, each:)`.
    static func render(_ plan: DeploymentPlan, _ shared: RenderShared, each: ([OutputFile]) throws -> Void) throws
}

extension TreeRenderer {
    package static func render(_ plan: DeploymentPlan, _ shared: RenderShared, each: ([OutputFile]) throws -> Void)
        throws
    {
        try render(part(of: plan), shared, each: each)
    }

    /// Every file of the renderer's part, in one list (tests, small trees).
    package static func files(_ plan: DeploymentPlan, _ shared: RenderShared) throws -> [OutputFile] {
        var out: [OutputFile] = []
        try render(plan, shared) { out += $0 }
        return out
    }
}

package enum TreeRenderers {
    /// Every renderer of the tree outside `clients/`, in the order their files are staged.
    package static let all: [any TreeRenderer.Type] = [
        ServerRenderer.self, TreeReadmeRenderer.self, CatalogRenderer.self, RadiusRenderer.self, DeployRenderer.self,
        HandOffSiteRenderer.self, MonitoringRenderer.self,
    ]
}
