/// One file of the output tree, produced by a renderer and written by the OutputWriter.
public struct OutputFile: Sendable, Hashable {
    /// Path relative to the output directory, `/`-separated, never absolute, never with `..`.
    public var path: String
    public var contents: [UInt8]
    /// Secrets or private keys inside: written 0600 (others 0644).
    public var isPrivate: Bool

    public init(path: String, contents: [UInt8], isPrivate: Bool = false) {
        self.path = path
        self.contents = contents
        self.isPrivate = isPrivate
    }

    public init(path: String, text: String, isPrivate: Bool = false) {
        self.init(path: path, contents: Array(text.utf8), isPrivate: isPrivate)
    }
}
