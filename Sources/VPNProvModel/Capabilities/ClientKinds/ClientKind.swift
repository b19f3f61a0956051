import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// One description per client kind (a `Device`), one file each beside this one: the services it can set
// up, the proposals it sends, how it takes the user's certificate, what lets IPv6 bypass an IPv4-only
// tunnel, and whether a user gets it without asking. Every table about kinds is derived from these:
// `Service.devices` (which the validator, the client plan and the catalogue read), the validator's
// device-without-service hint, the consistency check's certificate rule and the p12 in the user's
// folder. `Device.kind` is the one switch that names them, so a `Device` case without its description
// does not compile, nor does a description without one of its parts. How a kind renders and its part
// of the user's README are the rendering layer's (`Device.renderer`,
// VPNProvRendering/Clients/ClientKindRenderer.swift).

/// Proposals one client kind sends, most preferred first (strongSwan keyword syntax).
package struct ProposalOffer: Sendable, Hashable {
    package var ike: [String]
    package var esp: [String]
    package init(ike: [String], esp: [String]) {
        self.ike = ike
        self.esp = esp
    }
}

/// What one client kind can do, as planning, validation and rendering all read it.
package protocol ClientKind {
    /// The `Device` case described.
    static var device: Device { get }
    /// The services the kind can set up, in the order the validator's hint names them.
    static var services: [Service] { get }
    /// Who speaks for the kind in the validator's hint ("the Android app speaks ikev2-eap and ikev2-cert").
    static var speaker: String { get }
    /// A user whose inventory entry names no devices gets this kind (`Device.defaults`).
    static var isDefault: Bool { get }
    /// How the kind takes the user's client certificate.
    static var certificate: ClientCertificateForm { get }
    /// The proposals the kind sends for one service of a node with these proposals; nil where the client
    /// plan sets them from SA parameters it derives once per node (Apple IKEv2 from `AppleSA`, Windows from
    /// `WindowsIPsec`), and leaves the kind out of the connection when the node has none it can express.
    static func offer(for service: Service, proposals: Proposals) -> ProposalOffer?
    /// On a node without an IPv6 pool: what lets IPv6 traffic of the kind bypass the tunnel, as the
    /// `ipv6-leak` warning names it, or nil when the kind drops IPv6 while connected. `killSwitch` is
    /// whether the user's Apple kill switch (`apple.include_all_networks`) is on; only Apple asks.
    static func ipv6Leak(service: Service, killSwitch: () -> Bool) -> String?
    /// What the kind's generated configuration carries of quantum-safe tunnels (docs/quantum-safe.md): the
    /// client planner gives it ML-KEM and the user's PPK only where this says so, and the validator refuses the
    /// kind on a node that requires what it lacks.
    static var quantumSafe: QuantumSafeSupport { get }
}

/// The forms of the user's client certificate a kind reads (the Consistency check requires each one it
/// reads to have been issued; the client renderer puts the p12 in the user's folder).
package struct ClientCertificateForm: Sendable, Hashable {
    /// A PKCS#12 bundle with its password (an Apple profile's payload, the Windows script's import,
    /// the Android app's).
    package var p12: Bool
    /// The passwordless PKCS#12 too (the .sswan file's, which Android's installer imports without a prompt).
    package var openP12: Bool
    /// The certificate and key as PEM files (swanctl, charon-nm).
    package var pem: Bool
    /// The user's folder carries `<user>.p12` and its password file beside the kind's own files, for
    /// importing the certificate by hand on such a device.
    package var p12InFolder: Bool

    package init(p12: Bool, openP12: Bool, pem: Bool, p12InFolder: Bool) {
        self.p12 = p12
        self.openP12 = openP12
        self.pem = pem
        self.p12InFolder = p12InFolder
    }
}

extension Device {
    /// The kind's description: the one switch over the kinds in the model.
    package var kind: any ClientKind.Type {
        switch self {
        case .apple: return AppleClientKind.self
        case .android: return AndroidClientKind.self
        case .linux: return LinuxClientKind.self
        case .windows: return WindowsClientKind.self
        case .networkmanager: return NetworkManagerClientKind.self
        }
    }

    /// The kind can set up the service (its description's `services`).
    package func speaks(_ service: Service) -> Bool { service.devices.contains(self) }

    /// Why the validator's `device-without-service` warning finds nothing for the kind: " (<speaker> speaks
    /// <its services>)", empty for a kind that speaks every service.
    package var servicesHint: String {
        let services = kind.services
        if Set(services) == Set(Service.allCases) { return "" }
        let names = services.map(\.rawValue)
        let list = names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + names.last!
        return " (\(kind.speaker) speaks \(list))"
    }
}

extension Service {
    /// Client kinds that can use the service, in `Device` order: the kinds whose description lists it.
    package var devices: [Device] { Self.devicesByOrder[order] }

    /// `devices` of each service, by `order`: made once, as the planner and the validator ask for every
    /// user, node and service of a fleet.
    private static let devicesByOrder: [[Device]] = allCases.map { service in
        Device.allCases.filter { $0.kind.services.contains(service) }
    }
}
