import Foundation
import VPNProvCLI

// Thin executable: everything lives in VPNProvCLI and below, so tests drive it in-process.
let code = CommandLineTool.main(arguments: Array(CommandLine.arguments.dropFirst()), now: Date())
exit(code)
