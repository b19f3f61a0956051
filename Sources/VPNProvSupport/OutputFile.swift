/// One file of the output tree, produced by a renderer and written by the OutputWriter.
package struct OutputFile: Sendable, Hashable {
    /// Path relative to the output directory, `/`-separated, never absolute, never with `..`.
    package var path: String
    package var contents: [UInt8]
    /// Secrets or private keys inside: written 0600 (others 0644).
    package var isPrivate: Bool

    package init(path: String, contents: [UInt8], isPrivate: Bool = false) {
        self.path = path
        self.contents = contents
        self.isPrivate = isPrivate
    }

    package init(path: String, text: String, isPrivate: Bool = false) {
        self.init(path: path, contents: Array(text.utf8), isPrivate: isPrivate)
    }
}
