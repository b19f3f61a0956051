#if canImport(Glibc)
@_exported import Glibc
#endif
import Foundation

/// Entry point of the `vpnprov` command (placeholder until the CLI lands).
public enum CommandLineTool {
    public static let version = "0.1.0"

    public static func main(arguments: [String]) -> Int32 {
        FileHandle.standardError.write(Data("vpnprov: not yet\n".utf8))
        return 2
    }
}
