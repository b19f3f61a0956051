/// Checks an inventory against every rule of SPEC §5 that needs no certificate, collecting all problems.
/// (Rules land in Validation/; this entry point is what the CLI and `generate` call.)
public enum Validator {
    public static func validate(_ inventory: Inventory) -> [Diagnostic] {
        []
    }
}
