import CPNG
import CQREncode

/// Why a QR code could not be made or drawn.
package struct QRCodeError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }
    init(_ message: String) { self.message = message }
}

/// A QR code symbol (ISO/IEC 18004) of a text, encoded by libqrencode, and its three drawings: the
/// terminal's (the characters `qrencode -t UTF8` prints), a PNG (written by libpng) and an SVG.
///
/// The symbol is libqrencode's: the smallest version that holds the text at error-correction level M
/// (15 % of the symbol may be unreadable: a printed sheet folded, a phone screen photographed at an
/// angle), in 8-bit mode, as the `qrencode` command makes it with `-l M`. Nothing about QR codes is
/// computed here; this type only draws the modules libqrencode set.
package struct QRCode: Sendable, Hashable {
    /// Modules per side (21 for version 1, four more per version).
    package let size: Int
    /// Row by row, `true` for a dark module.
    package let modules: [Bool]

    /// The light border every drawing leaves around the symbol, in modules: the four the standard asks
    /// for, and what `qrencode` draws by default.
    package static let margin = 4

    /// The symbol of `text`; throws when the text is empty or longer than the largest symbol holds.
    package init(text: String) throws(QRCodeError) {
        guard !text.isEmpty else { throw QRCodeError("nothing to encode") }
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            throw QRCodeError("libqrencode could not encode \(text.utf8.count) bytes in one QR code")
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // Bit 0 of each of libqrencode's bytes is the module's colour; the other bits say how it was set.
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.size = width
        self.modules = data.map { $0 & 1 == 1 }
    }

    /// Whether the module at (`x`, `y`) is dark; outside the symbol (the margin) it is light.
    package func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }

    /// Modules per side with the margin on both sides.
    var drawnSize: Int { size + 2 * Self.margin }

    // MARK: - Terminal

    /// The symbol in a terminal, two rows of modules per line, as `qrencode -t UTF8` prints it: a light
    /// module is the character's foreground (a terminal's light text on its dark background), so a dark
    /// module pair is a space, a light pair a full block, and a mixed pair the upper or lower half block.
    package var terminalText: String {
        let full = "\u{2588}"
        let upper = "\u{2580}"
        let lower = "\u{2584}"
        var lines: [String] = []
        let border = String(repeating: full, count: drawnSize)
        for _ in 0..<(Self.margin / 2) { lines.append(border) }
        let side = String(repeating: full, count: Self.margin)
        for y in stride(from: 0, to: size, by: 2) {
            var line = side
            for x in 0..<size {
                // The lower row of the last pair of an odd-sized symbol is the light margin.
                switch (isDark(x: x, y: y), isDark(x: x, y: y + 1)) {
                case (true, true): line += " "
                case (true, false): line += lower
                case (false, true): line += upper
                case (false, false): line += full
                }
            }
            lines.append(line + side)
        }
        for _ in 0..<(Self.margin / 2) { lines.append(border) }
        return lines.map { $0 + "\n" }.joined()
    }

    // MARK: - PNG

    /// The symbol as an 8-bit grey PNG, `pixelsPerModule` pixels to a module side, written by libpng
    /// (its simplified API, which reports errors in the image structure instead of jumping out of the
    /// caller). The same symbol gives the same bytes: libpng writes no time.
    package func png(pixelsPerModule: Int = 8) throws(QRCodeError) -> [UInt8] {
        precondition((1...64).contains(pixelsPerModule), "pixels per module out of range")
        let side = drawnSize * pixelsPerModule
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                let top = (y + Self.margin) * pixelsPerModule
                let left = (x + Self.margin) * pixelsPerModule
                for row in top..<(top + pixelsPerModule) {
                    let start = row * side + left
                    pixels.replaceSubrange(
                        start..<(start + pixelsPerModule), with: repeatElement(0, count: pixelsPerModule))
                }
            }
        }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(side)
        image.height = png_uint_32(side)
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        defer { png_image_free(&image) }
        var length = png_alloc_size_t(0)
        // First the size (no memory given), then the image into a buffer of that size.
        guard png_image_write_to_memory(&image, nil, &length, 0, pixels, 0, nil) != 0, length > 0 else {
            throw QRCodeError("libpng: \(Self.message(of: &image))")
        }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBytes { buffer in
            png_image_write_to_memory(&image, buffer.baseAddress, &length, 0, pixels, 0, nil)
        }
        guard written != 0 else { throw QRCodeError("libpng: \(Self.message(of: &image))") }
        return Array(bytes.prefix(Int(length)))
    }

    /// libpng's message in the image structure (a fixed-size C string).
    private static func message(of image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    // MARK: - SVG

    /// The symbol as an SVG document: a white square and one path of the dark modules, a rectangle for each
    /// run of dark modules in a row, in module units (the viewBox), `pixelsPerModule` to a module when the
    /// document is shown at its own size. `crispEdges` keeps a scaled drawing from blurring module edges.
    package func svg(pixelsPerModule: Int = 8) -> String {
        let side = drawnSize
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard isDark(x: x, y: y) else {
                    x += 1
                    continue
                }
                var run = 1
                while isDark(x: x + run, y: y) { run += 1 }
                path += "M\(x + Self.margin) \(y + Self.margin)h\(run)v1h-\(run)z"
                x += run
            }
        }
        let pixels = side * pixelsPerModule
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(pixels)" height="\(pixels)" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">
            <rect width="\(side)" height="\(side)" fill="#ffffff"/>
            <path fill="#000000" d="\(path)"/>
            </svg>

            """
    }
}
