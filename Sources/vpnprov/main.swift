import VPNProvKit

// Thin executable: everything lives in VPNProvKit so tests drive it in-process.
let code = CommandLineTool.main(arguments: Array(CommandLine.arguments.dropFirst()))
exit(code)
