import VPNProvModel
import VPNProvPlanning
import VPNProvSupport
import VPNProvTemplates

// How each client kind renders, beside what the model says of it (VPNProvModel/Capabilities/ClientKinds/):
// its files in the user's folder and its part of the user's README. `Device.renderer` is the one switch
// that names the renderers, so a `Device` case without one does not compile; `ClientRenderer` calls them
// all, in `Device` order, and so do the README's parts.

/// What a kind's renderer reads: one user's connections (the plan's), what the deployment as a whole says,
/// the materials and the templates; never the inventory.
package struct ClientRenderInput {
    /// The user's name.
    package var user: String
    /// The user's own connections (`ClientPlan.connectionsByUser()`); each renderer takes those of its kind.
    package var connections: [ClientConnection]
    package var deployment: DeploymentFacts
    package var materials: Materials
    package var templates: TemplateSet

    package init(
        user: String, connections: [ClientConnection], deployment: DeploymentFacts, materials: Materials,
        templates: TemplateSet
    ) {
        self.user = user
        self.connections = connections
        self.deployment = deployment
        self.materials = materials
        self.templates = templates
    }
}

/// One client kind's renderer.
package protocol ClientKindRenderer {
    /// The kind's files below `clients/<user>/`; none when no connection of the user is of the kind.
    static func files(_ input: ClientRenderInput) throws -> [OutputFile]
    /// The kind's lines of the user's README, ending in an empty line; none when the folder holds no file
    /// of the kind. `names` are the folder's files, relative to `clients/<user>/`.
    static func readme(_ input: ClientRenderInput, names: Set<String>) -> [String]
}

extension Device {
    /// The kind's renderer: the one switch over the kinds in the rendering layer.
    package var renderer: any ClientKindRenderer.Type {
        switch self {
        case .apple: return AppleProfileRenderer.self
        case .android: return AndroidProfileRenderer.self
        case .linux: return LinuxClientRenderer.self
        case .windows: return WindowsClientRenderer.self
        case .networkmanager: return NetworkManagerClientRenderer.self
        }
    }
}
