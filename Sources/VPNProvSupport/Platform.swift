// vpnprov runs where its servers run and its tests can: Linux (network namespaces, /proc, Glibc).
// docs/decisions.md, "Linux only", says why; this turns a build elsewhere into one clear error.
#if !os(Linux)
#error("vpnprov builds and runs on Linux only")
#endif
