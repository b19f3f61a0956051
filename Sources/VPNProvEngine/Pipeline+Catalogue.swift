import VPNProvModel
import VPNProvRendering

extension Pipeline {
    /// The live app catalogue (`vpnprov accounts catalogue`, docs/formats.md "The live catalogue"): the catalogue
    /// `generate` writes, with each RADIUS node's load and state from the accounts database.
    package static func liveCatalogue(inventory: Inventory, activity: [String: NodeActivity]) -> [UInt8] {
        CatalogRenderer.live(inventory: inventory, activity: activity)
    }
}
