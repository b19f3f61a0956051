// vpnprov-bench: fleet-scale figures for `vpnprov generate`/`validate`, next to the same certificate
// work done the openssl-CLI way. Run from the repository root:
//
//     swift build -c release && swift run -c release vpnprov-bench [--nodes 20] [--users 2000] [--cert-users 400]
//     swift run -c release vpnprov-bench --validate-scaling 12500   # validate at 12,500 ... 100,000 nodes
//
// It writes a synthetic inventory into a temporary directory, runs the release `vpnprov` binary as a
// child process (so peak memory is that process's own), and prints wall time, per-user cost and peak
// RSS for each step. Figures, not assertions: the benchmark never fails on speed.
import Foundation
import Glibc

struct Options {
    var nodes = 20
    var users = 2000
    var certUsers = 400
    /// 0: every certificate user (the default); N: time N users and scale.
    var opensslSample = 0
    var binary: String?
    var workDirectory: String?
    var keep = false
    /// N > 0: only time `validate` on N, 2N, 4N and 8N nodes (one user per node), to show how it scales.
    var validateScaling = 0
    /// N > 0: only time `generate` for N nodes whose password users are all RADIUS accounts.
    var radiusNodes = 0
}

func parseOptions() -> Options {
    var o = Options()
    var args = Array(CommandLine.arguments.dropFirst())
    while !args.isEmpty {
        let a = args.removeFirst()
        func value() -> String {
            guard !args.isEmpty else { fail("\(a) needs a value") }
            return args.removeFirst()
        }
        switch a {
        case "--nodes": o.nodes = Int(value()) ?? o.nodes
        case "--users": o.users = Int(value()) ?? o.users
        case "--cert-users": o.certUsers = Int(value()) ?? o.certUsers
        case "--openssl-sample": o.opensslSample = Int(value()) ?? o.opensslSample
        case "--binary": o.binary = value()
        case "--workdir": o.workDirectory = value()
        case "--keep": o.keep = true
        case "--validate-scaling": o.validateScaling = Int(value()) ?? 0
        case "--radius-nodes": o.radiusNodes = Int(value()) ?? 0
        case "-h", "--help":
            print(
                "usage: vpnprov-bench [--nodes N] [--users M] [--cert-users C] [--openssl-sample K] [--binary PATH] [--workdir DIR] [--keep] [--validate-scaling N] [--radius-nodes N]"
            )
            exit(0)
        default: fail("unknown option \(a)")
        }
    }
    return o
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("vpnprov-bench: \(message)\n".utf8))
    exit(2)
}

/// Result of one child process: wall seconds, peak RSS in KiB, exit status.
struct Run {
    var seconds: Double
    var maxRSSKiB: Int
    var status: Int32
}

/// Spawns `argv` with posix_spawn and collects its own rusage with wait4. Output goes to /dev/null,
/// stderr to `stderrPath` when given (so a failing step can show it).
func run(
    _ argv: [String], environment: [String: String] = ProcessInfo.processInfo.environment, stderrPath: String? = nil
) -> Run {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let cArgs = argv.map { strdup($0) } + [nil]
    let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in cArgs + cEnv { free(pointer) }
    }
    let start = DispatchTime.now()
    let rc = posix_spawnp(&pid, argv[0], &actions, nil, cArgs, cEnv)
    guard rc == 0 else { fail("cannot run \(argv[0]): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    var usage = rusage()
    _ = wait4(pid, &status, 0, &usage)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return Run(seconds: seconds, maxRSSKiB: Int(usage.ru_maxrss), status: exitCode)
}

func writeInventory(_ o: Options, to path: String) throws {
    var s = "vpnprov: 1\nname: bench\n"
    s += "defaults:\n  services: [ikev2-cert, ikev2-eap]\n  dns: [192.0.2.53]\n"
    s += "nodes:\n"
    for n in 0..<o.nodes {
        s += "  node-\(n):\n    address: node-\(n).vpn.example.com\n    region: r\(n % 5)\n    country: DE\n"
        s += "    pool: 10.\(100 + n / 250).\(n % 250).0/24\n"
        // An IPv6 pool too: without one, clients that cannot block IPv6 outside the tunnel (Linux,
        // Windows) make the node warn, and the benchmark's inventory must pass `validate --strict`.
        s += "    pool6: fd00:100:\(String(n, radix: 16))::/112\n"
    }
    s += "users:\n"
    for u in 0..<o.users {
        s += "  user-\(u):\n    password: gen\n"
        if u < o.certUsers { s += "    cert: true\n" }
    }
    try s.write(toFile: path, atomically: true, encoding: .utf8)
}

func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
func secs(_ s: Double) -> String { String(format: "%.3f s", s) }

let options = parseOptions()
let binary = options.binary ?? FileManager.default.currentDirectoryPath + "/.build/release/vpnprov"
guard FileManager.default.isExecutableFile(atPath: binary) else {
    fail("no release binary at \(binary); run `swift build -c release` first or pass --binary")
}
let work = (options.workDirectory ?? NSTemporaryDirectory()) + "/vpnprov-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
/// Removes the work directory with rm: FileManager is far slower on a fleet's output tree
/// (docs/benchmarks.md, "Why the code is shaped this way").
@MainActor func cleanUp() {
    if options.keep {
        print("  kept \(work)")
    } else {
        _ = run(["rm", "-rf", work])
    }
}
/// A fleet of `nodes` nodes with IPv4 addresses, IPv4 and IPv6 pools, and one user per node who
/// lists two nodes: every per-node check (addresses, pools, overlaps, identities) and every user
/// reference has work to do.
func writeScalingInventory(nodes: Int, to path: String) throws {
    var s = "vpnprov: 1\nname: bench\ndefaults:\n  services: [ikev2-cert, ikev2-eap]\n  dns: [192.0.2.53]\nnodes:\n"
    for n in 0..<nodes {
        let a = n * 64
        s +=
            "  node-\(n):\n    address: 100.\(64 + (n >> 16) & 63).\((n >> 8) & 255).\(n & 255)\n    id: node-\(n).vpn.example.com\n"
        s +=
            "    country: DE\n    pool: 10.\((a >> 16) & 255).\((a >> 8) & 255).\(a & 255)/26\n    pool6: fd00:\(String(n, radix: 16))::/64\n"
    }
    s += "users:\n"
    for u in 0..<nodes {
        s += "  user-\(u):\n    password: gen\n    cert: true\n    nodes: [node-\(u), node-\((u + 1) % nodes)]\n"
    }
    try s.write(toFile: path, atomically: true, encoding: .utf8)
}

if options.validateScaling > 0 {
    // Validation must stay O(n log n) in nodes: each doubling should about double the time.
    print(
        "vpnprov-bench: validate scaling from \(options.validateScaling) nodes, \(ProcessInfo.processInfo.activeProcessorCount) cores"
    )
    var previous: Double?
    for factor in [1, 2, 4, 8] {
        let nodes = options.validateScaling * factor
        let path = work + "/scaling-\(nodes).yaml"
        try writeScalingInventory(nodes: nodes, to: path)
        let r = run([binary, "validate", path], stderrPath: work + "/stderr.log")
        let ratio = previous.map { String(format: "  x%.2f for twice the nodes", r.seconds / max($0, 1e-9)) } ?? ""
        print(
            String(
                format: "  %7d nodes  validate %@  peak %@  exit %d%@", nodes, secs(r.seconds), mib(r.maxRSSKiB),
                r.status, ratio))
        previous = r.seconds
    }
    cleanUp()
    exit(0)
}

if options.radiusNodes > 0 {
    // A fleet whose password users are all app accounts (accounts: radius): the accounts live in the
    // database, so nothing about them is an input of generate; only the nodes and the servers are.
    print("vpnprov-bench: \(options.radiusNodes) RADIUS nodes, 2 RADIUS servers, no inventory users")
    var s = "vpnprov: 1\nname: bench\naccounts:\n  radius_database: env:VPN_RADIUS_DB\n  servers:\n"
    s += "    rad-1: { address: 192.0.2.11 }\n    rad-2: { address: 192.0.2.12 }\n"
    s +=
        "defaults:\n  services: [ikev2-eap, ipsec-xauth-psk]\n  psk: gen\n  accounts: radius\n  dns: [192.0.2.53]\nnodes:\n"
    for n in 0..<options.radiusNodes {
        s += "  node-\(n):\n    address: node-\(n).vpn.example.com\n    tier: \(n % 2 == 0 ? "free" : "pro")\n"
        s += "    pool: 10.\(100 + n / 250).\(n % 250).0/24\n    pool6: fd00:100:\(String(n, radix: 16))::/112\n"
    }
    let path = work + "/radius.yaml"
    try s.write(toFile: path, atomically: true, encoding: .utf8)
    var radiusEnv = ProcessInfo.processInfo.environment
    radiusEnv["CI"] = "true"
    radiusEnv["VPN_RADIUS_DB"] = "host=db.example.com dbname=vpn user=radius sslmode=verify-full"
    for name in ["from scratch", "no-op"] {
        let r = run(
            [binary, "generate", path, "--out", work + "/out", "--state", work + "/state", "--quiet"],
            environment: radiusEnv, stderrPath: work + "/stderr.log")
        print(
            String(format: "  generate (%@)  %@  peak %@  exit %d", name, secs(r.seconds), mib(r.maxRSSKiB), r.status))
    }
    cleanUp()
    exit(0)
}

let inventory = work + "/inventory.yaml"
try writeInventory(options, to: inventory)

print(
    "vpnprov-bench: \(options.nodes) nodes, \(options.users) users (\(options.certUsers) with certificates), \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
var env = ProcessInfo.processInfo.environment
env["CI"] = "true"  // no progress output
let out = work + "/out"
let state = work + "/state"
/// Runs one vpnprov step; a step that fails stops the benchmark with its stderr (figures of a
/// failed run mean nothing).
@MainActor func step(_ name: String, _ arguments: [String]) -> Run {
    let log = work + "/stderr.log"
    let r = run([binary] + arguments, environment: env, stderrPath: log)
    let perUser = r.seconds / Double(max(options.users, 1)) * 1000
    print(
        String(
            format: "  %-24@ %@  %.3f ms/user  peak %@  exit %d", name as NSString, secs(r.seconds), perUser,
            mib(r.maxRSSKiB), r.status))
    if r.status != 0 {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        FileHandle.standardError.write(
            Data("vpnprov-bench: 'vpnprov \(arguments.joined(separator: " "))' exited \(r.status):\n\(text)".utf8))
        cleanUp()
        exit(1)
    }
    return r
}
let full = step("generate (from scratch)", ["generate", inventory, "--out", out, "--state", state])
let noop = step("generate (no-op)", ["generate", inventory, "--out", out, "--state", state])
_ = step("validate", ["validate", "--strict", inventory])
_ = step("check", ["check", inventory, "--out", out, "--state", state])

// The openssl-CLI way for the certificate part only: per user a key, a request, a CA signature and a
// 3DES/SHA-1 PKCS#12 -- four processes per user, one user after the other, as shell-script tools
// do. Every certificate user by default (--openssl-sample N times N users and scales).
let ossl = work + "/openssl"
try FileManager.default.createDirectory(atPath: ossl, withIntermediateDirectories: true)
@MainActor func need(_ r: Run, _ what: String) {
    if r.status != 0 {
        FileHandle.standardError.write(Data("vpnprov-bench: openssl \(what) exited \(r.status)\n".utf8))
        cleanUp()
        exit(1)
    }
}
need(
    run([
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
        "/CN=bench CA",
        "-days", "3650", "-keyout", "\(ossl)/ca.key", "-out", "\(ossl)/ca.pem",
    ]), "req -x509")
let sample = max(1, options.opensslSample > 0 ? min(options.opensslSample, options.certUsers) : options.certUsers)
var opensslEnv = env
opensslEnv["P12PASS"] = "bench-pass-not-secret"
let t0 = DispatchTime.now()
for u in 0..<sample {
    let base = "\(ossl)/u\(u)"
    need(
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(base).key"]),
        "genpkey")
    need(
        run(["openssl", "req", "-new", "-key", "\(base).key", "-subj", "/CN=user-\(u)@bench", "-out", "\(base).csr"]),
        "req -new")
    need(
        run([
            "openssl", "x509", "-req", "-in", "\(base).csr", "-CA", "\(ossl)/ca.pem", "-CAkey", "\(ossl)/ca.key",
            "-CAcreateserial", "-days", "365", "-out", "\(base).pem",
        ]), "x509 -req")
    need(
        run(
            [
                "openssl", "pkcs12", "-export", "-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-3DES", "-macalg",
                "sha1",
                "-inkey", "\(base).key", "-in", "\(base).pem", "-certfile", "\(ossl)/ca.pem", "-passout", "env:P12PASS",
                "-out", "\(base).p12",
            ], environment: opensslEnv), "pkcs12 -export")
}
let opensslPerUser = Double(DispatchTime.now().uptimeNanoseconds - t0.uptimeNanoseconds) / 1e9 / Double(sample)
let opensslTotal = opensslPerUser * Double(options.certUsers)
print(
    String(
        format: "  openssl-CLI certificate work: %.1f ms per certificate user (sample of %d) -> %@ for %d users",
        opensslPerUser * 1000, sample, secs(opensslTotal), options.certUsers))
print(
    String(
        format: "  ratio: openssl-CLI certificates only / vpnprov full generate = %.1fx",
        opensslTotal / max(full.seconds, 1e-9)))
_ = noop
cleanUp()
