// Fuzz target for the inventory loader and the validator (docs/testing.md, "Fuzzing").
//
// Built with `-D VPNPROV_FUZZ -sanitize=fuzzer -parse-as-library`, this file only exports libFuzzer's
// entry point and libFuzzer supplies `main`. (Not named main.swift: with -parse-as-library even an
// inactive `#if` branch may not hold top-level statements, so the replayer is an `@main` type.) Built normally (`swift build`), it is a plain program
// that replays files or directories of inputs through the same function, so a crash found by the
// fuzzer can be reproduced and debugged without the fuzzer runtime:
//
//     swift run vpnprov-fuzz fuzz/corpus crash-1234...
import VPNProvKit

/// One fuzz input: YAML -> typed inventory -> validation -> the diagnostics as printed (text and
/// JSON, with secret lines and values hidden); and the same bytes as a `file:` secret. Any outcome
/// is fine except a crash, a hang or unbounded memory; when the inventory decodes, validation must
/// run to completion.
func fuzzOne(_ bytes: [UInt8]) {
    let result = InventoryLoader.decode(bytes: bytes, file: "fuzz.yaml")
    var diagnostics = result.diagnostics
    if let inventory = result.inventory {
        diagnostics += Validator.validate(inventory)
    }
    for format in [DiagnosticPrinter.Format.text, .json] {
        let printer = DiagnosticPrinter(
            format: format, sources: ["fuzz.yaml": bytes], hiddenLines: ["fuzz.yaml": result.secretLines],
            hiddenValues: result.secretValues)
        _ = printer.render(diagnostics)
    }
    _ = SecretFile.value(of: bytes)
}

#if VPNPROV_FUZZ

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    fuzzOne(bytes)
    return 0
}

/// libFuzzer's driver (libclang_rt.fuzzer), which parses the libFuzzer flags and runs the loop.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links executables with `main` renamed to `<target>_main`; this is that entry point,
/// handing over to libFuzzer's driver.
@_cdecl("vpnprov_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
}

#else

import Foundation

@main
struct Replayer {
    static func main() {
        var inputs: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("vpnprov-fuzz: no such file or directory: \(argument)\n".utf8))
                exit(2)
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                inputs += names.sorted().map { "\(argument)/\($0)" }
            } else {
                inputs.append(argument)
            }
        }
        if inputs.isEmpty {
            FileHandle.standardError.write(Data("usage: vpnprov-fuzz FILE|DIRECTORY...  (replays inputs through decode + validate)\n".utf8))
            exit(2)
        }
        for path in inputs {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            fuzzOne([UInt8](data))
        }
        print("replayed \(inputs.count) input(s) without a crash")
    }
}

#endif
