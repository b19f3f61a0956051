import Foundation
import Testing
import VPNProvQR
import VPNProvTestFixtures

extension TestDependency {
    /// libqrencode's own command: the terminal drawing it prints is what `QRCode.terminalText` must print.
    static let qrencode = TestDependency(
        path: "/usr/bin/qrencode", installedBy: "the Debian package qrencode (scripts/install-test-deps)")
    /// ZBar's decoder: reads a QR code back out of an image, independently of libqrencode.
    static let zbarimg = TestDependency(
        path: "/usr/bin/zbarimg", installedBy: "the Debian package zbar-tools (scripts/install-test-deps)")
    /// librsvg's converter: draws an SVG as a browser would, for zbarimg to read.
    static let rsvgConvert = TestDependency(
        path: "/usr/bin/rsvg-convert", installedBy: "the Debian package librsvg2-bin (scripts/install-test-deps)")
}

/// The QR codes of hand-off links, read back by independent programs: the terminal drawing is byte for
/// byte what libqrencode's own `qrencode -t UTF8` prints, and the PNG and the SVG (drawn by librsvg) decode
/// with ZBar to the text they were made of.
@Suite(.temporaries) struct QRCodeTests {
    /// Links as long as the hand-off's (a 43-character token) and longer: versions 3 to 6 at level M.
    static let texts = [
        "https://get.vpn.example.com/h/3q2-7wEvHaFzD_s8N0hGk1xQm6yPcV4oT9jLbR5uKeA/",
        "https://handoff.a-rather-long-deployment-name.vpn.example.com/h/3q2-7wEvHaFzD_s8N0hGk1xQm6yPcV4oT9jLbR5uKeA/",
        "https://g.v/h/x",
    ]

    @Test(.needs(.qrencode), arguments: texts)
    func theTerminalDrawingIsQrencodesUTF8(text: String) throws {
        try TestDependency.qrencode.require()
        let code = try QRCode(text: text)
        let expected = try runTool(["qrencode", "-l", "M", "-m", String(QRCode.margin), "-t", "UTF8", text])
        #expect(expected.status == 0, "\(expected.output)")
        #expect(code.terminalText == expected.output)
        // The symbol's size is its version's (21 + 4 per version after the first).
        #expect((code.size - 21) % 4 == 0 && code.size >= 21)
    }

    @Test(.needs(.zbarimg, .rsvgConvert), arguments: texts)
    func thePNGAndTheSVGDecodeToTheText(text: String) throws {
        try TestDependency.zbarimg.require()
        try TestDependency.rsvgConvert.require()
        let dir = try temporaryDirectory()
        let code = try QRCode(text: text)
        let png = dir + "/code.png"
        let bytes = try code.png()
        try Data(bytes).write(to: URL(fileURLWithPath: png))
        #expect(Array(bytes.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(try code.png() == bytes, "the same symbol gives the same PNG")
        let decoded = try runTool(["zbarimg", "--nodbus", "-q", "--raw", png])
        #expect(decoded.status == 0 && decoded.output == text + "\n", "zbarimg: \(decoded.output)")

        let svg = dir + "/code.svg"
        try code.svg().write(toFile: svg, atomically: true, encoding: .utf8)
        let drawn = dir + "/svg.png"
        let converted = try runTool(["rsvg-convert", "-o", drawn, svg])
        #expect(converted.status == 0, "rsvg-convert: \(converted.output)")
        let fromSVG = try runTool(["zbarimg", "--nodbus", "-q", "--raw", drawn])
        #expect(fromSVG.status == 0 && fromSVG.output == text + "\n", "zbarimg of the SVG: \(fromSVG.output)")
    }

    @Test func nothingOrTooMuchIsRefused() {
        #expect(throws: QRCodeError.self) { try QRCode(text: "") }
        // Version 40 at level M holds 2331 bytes.
        #expect(throws: QRCodeError.self) { try QRCode(text: String(repeating: "x", count: 2400)) }
    }
}
