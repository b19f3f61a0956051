import VPNProvModel
import VPNProvPlanning
import VPNProvRendering

extension Pipeline {
    /// The live app catalogue (`vpnprov accounts catalogue`, docs/formats.md "The live catalogue"): the catalogue
    /// `generate` writes, with each RADIUS node's load and state from the accounts database.
    /// Returns the document (for `--format json`) and its bytes as the catalogue file holds them (for text).
    package static func liveCatalogue(
        inventory: Inventory, activity: [String: NodeActivity], drains: [String: NodeDrain] = [:]
    ) -> (document: some Encodable & Sendable, bytes: [UInt8]) {
        let catalog = CatalogRenderer.liveCatalog(CataloguePlan.make(inventory), activity: activity, drains: drains)
        return (catalog, CatalogRenderer.encoded(catalog))
    }
}
