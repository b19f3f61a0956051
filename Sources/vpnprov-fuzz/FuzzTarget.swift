// Fuzz target for the inventory loader and validator, and for the state directory's files as `status`,
// `generate`, `revoke` and the lifecycle commands read them (docs/testing.md, "Fuzzing").
//
// Built with `-D VPNPROV_FUZZ -sanitize=fuzzer -parse-as-library`, this file only exports libFuzzer's
// entry point and libFuzzer supplies `main`. (Not named main.swift: with -parse-as-library even an
// inactive `#if` branch may not hold top-level statements, so the replayer is an `@main` type.) Built normally (`swift
// build`), it is a plain program
// that replays files or directories of inputs through the same function, so a crash found by the
// fuzzer can be reproduced and debugged without the fuzzer runtime:
//
//     swift run vpnprov-fuzz fuzz/corpus crash-1234...
import Foundation
import VPNProvCLI
import VPNProvModel
import VPNProvPKI
import VPNProvTestSupport

/// One fuzz input, given to every reader in turn (no selector byte: a seed or a crash file is the
/// file itself, an inventory, an index.json or a PEM file; each reader rejects the others' inputs
/// quickly). Any outcome is fine except a crash, a hang or unbounded memory.
func fuzzOne(_ bytes: [UInt8]) {
    fuzzInventory(bytes)
    fuzzState(bytes)
}

/// YAML -> typed inventory -> validation -> the diagnostics as printed (text and JSON, with secret
/// lines and values hidden); and the same bytes as a `file:` secret. When the inventory decodes, even
/// only in part, validation must run to completion.
func fuzzInventory(_ bytes: [UInt8]) {
    let result = InventoryLoader.decode(bytes: bytes, file: "fuzz.yaml")
    var diagnostics = result.diagnostics
    if let inventory = result.inventory {
        diagnostics += Validator.validate(inventory)
    } else if let partial = result.partial {
        diagnostics += Validator.validate(partial, broken: result.broken)
    }
    for format in [DiagnosticPrinter.Format.text, .json] {
        let printer = DiagnosticPrinter(
            format: format, sources: ["fuzz.yaml": bytes], hiddenLines: ["fuzz.yaml": result.secretLines],
            hiddenValues: result.secretValues)
        _ = printer.render(diagnostics)
    }
    _ = SecretFile.value(of: bytes)
}

/// The same bytes as each file of a state directory, through the functions the commands use on the
/// files (StateInputs; no file is opened): index.json as the lifecycle commands load it (and the
/// CRL entries and numbers it decides), secrets.json, `status` over index.json (text and JSON, with
/// --expiring) and over secrets.json, `output-location`, the manifest, the rollout ledger, and PEM
/// certificates, CRLs and keys.
func fuzzState(_ bytes: [UInt8]) {
    _ = try? StateInputs.readIndex(bytes, now: StateInputs.seedClock)
    _ = try? StateInputs.readManifest(bytes)
    _ = try? StateInputs.readRolloutPending(bytes)
    _ = try? StateInputs.readSecrets(bytes)
    _ = try? StateInputs.readIssuingJournal(bytes, now: StateInputs.seedClock)
    _ = try? StateInputs.status(
        indexJSON: bytes, secretsJSON: nil, inventory: StateInputs.statusInventory, now: StateInputs.seedClock,
        expiringWithin: 30)
    _ = try? StateInputs.status(
        indexJSON: StateInputs.emptyIndex, secretsJSON: bytes, inventory: StateInputs.statusInventory,
        now: StateInputs.seedClock, expiringWithin: nil)
    _ = StateInputs.readOutputLocation(bytes)
    _ = StateInputs.readPEM(String(decoding: bytes, as: UTF8.self))
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
            FileHandle.standardError.write(
                Data(
                    "usage: vpnprov-fuzz FILE|DIRECTORY...  (replays inputs through the inventory and state readers)\n"
                        .utf8))
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
