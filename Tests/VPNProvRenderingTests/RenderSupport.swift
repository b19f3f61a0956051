import VPNProvModel
import VPNProvPlanning
import VPNProvRendering
import VPNProvSupport
import VPNProvTemplates

/// Renders a test inventory the way a run does: the deployment plan made once, each renderer given its part.
enum Render {
    /// Materials for renderers that read none (the catalogue, deploy/, monitoring/, the README).
    static let noMaterials = Materials(
        caCertificatePEM: "", caCommonName: "", caKeyType: .ecdsaP256, crlPEM: "", nodes: [:], users: [:])

    /// The deployment plan of `inventory` with `materials`.
    static func plan(_ inventory: Inventory, _ materials: Materials = noMaterials) throws -> DeploymentPlan {
        DeploymentPlan.make(inventory, certificates: try CertificatePlan.make(inventory), materials: materials)
    }

    /// Every file `renderer` makes of `inventory`'s plan.
    static func files(
        _ renderer: any TreeRenderer.Type, _ inventory: Inventory, _ materials: Materials = noMaterials,
        templates: TemplateSet? = nil
    ) throws -> [OutputFile] {
        let shared = RenderShared(materials: materials, templates: try templates ?? TemplateSet.builtin())
        var out: [OutputFile] = []
        try renderer.render(try plan(inventory, materials), shared) { out += $0 }
        return out
    }

    /// Every active user's files under `clients/`, users in inventory order.
    static func clients(_ inventory: Inventory, _ materials: Materials, templates: TemplateSet? = nil) throws
        -> [OutputFile]
    {
        let plan = try plan(inventory, materials)
        let templates = try templates ?? TemplateSet.builtin()
        let byUser = plan.clientPlan(for: inventory.users[...]).connectionsByUser()
        var files: [OutputFile] = []
        for user in inventory.users where !user.revoked {
            files += try ClientRenderer.render(
                user: user.name, connections: byUser[user.name] ?? [], deployment: plan.deployment,
                materials: materials, templates: templates)
        }
        return files
    }

    /// The catalogue of `inventory`.
    static func catalog(_ inventory: Inventory) throws -> CatalogRenderer.Catalog {
        CatalogRenderer.catalog(try plan(inventory).catalogue)
    }

    /// Node `name`'s parts of the plan.
    static func node(_ name: String, of inventory: Inventory, _ materials: Materials = noMaterials) throws
        -> NodeParts?
    {
        try plan(inventory, materials).nodes.first { $0.server.node == name }
    }
}
