import Netlink

/// The full answer for one target at one moment: the flags, the link and gateway the kernel
/// would use, the boiled-down status, and why the target is not reachable when it is not.
public struct ReachabilityAnswer: Sendable, Hashable, CustomStringConvertible {
    /// The flags, as `SCNetworkReachabilityFlags` would have them.
    public var flags: ReachabilityFlags
    /// The link the kernel would send through, when a route matched.
    public var interface: ReachabilityInterface?
    /// The next-hop gateway, or `nil` when the target is on-link, local or not routed.
    public var gateway: IPAddress?
    /// The address the answer is for (for a host name: the best of its addresses).
    public var address: IPAddress?
    /// Every address considered: the target's, or a host name's resolved addresses in the
    /// resolver's order; empty for the internet and for a name not resolved yet.
    public var addresses: [IPAddress] = []
    /// The route that matched, when one did.
    public var route: Route?
    /// Why the target is not reachable (or waits for a connection); `nil` when it is reachable.
    public var reason: UnreachableReason?

    /// An answer as given.
    public init(flags: ReachabilityFlags, interface: ReachabilityInterface? = nil, gateway: IPAddress? = nil,
                address: IPAddress? = nil, route: Route? = nil, reason: UnreachableReason? = nil) {
        self.flags = flags
        self.interface = interface
        self.gateway = gateway
        self.address = address
        self.route = route
        self.reason = reason
    }

    /// Not reachable, for `reason`.
    public static func notReachable(_ reason: UnreachableReason, address: IPAddress? = nil) -> ReachabilityAnswer {
        ReachabilityAnswer(flags: [], address: address, reason: reason)
    }

    /// Whether the flags say reachable without a connection to establish first (the test every
    /// status mapping starts with).
    public var isReachable: Bool { flags.isActuallyReachable }

    /// This library's status: Wi-Fi, wired, WWAN or other, from the flags and the link's type.
    public var status: ReachabilityStatus { ReachabilityStatus(flags: flags, interfaceType: interface?.type) }

    /// Such as `reachableViaWired -R ------d dev eth0 (wiredEthernet)`.
    public var description: String {
        var text = "\(status) \(flags.compactDescription)"
        if let interface { text += " dev \(interface.name) (\(interface.type))" }
        if let gateway { text += " via \(gateway)" }
        if let reason { text += " (\(reason))" }
        return text
    }
}

/// The link an answer goes through.
public struct ReachabilityInterface: Sendable, Hashable, CustomStringConvertible {
    /// The interface name.
    public var name: String
    /// The interface index.
    public var index: Int32
    /// The classification of the link.
    public var classification: LinkClassification

    /// An interface as given.
    public init(name: String, index: Int32, classification: LinkClassification) {
        self.name = name
        self.index = index
        self.classification = classification
    }

    /// The link's type.
    public var type: InterfaceType { classification.type }

    /// The name.
    public var description: String { name }
}

/// Why a target is not reachable, or waits.
public enum UnreachableReason: Sendable, Hashable, CustomStringConvertible {
    /// No route matched (or a `throw` route ended the lookup).
    case noRoute
    /// An `unreachable` route matched.
    case unreachableRoute
    /// A `prohibit` route matched.
    case prohibitedRoute
    /// A `blackhole` route matched.
    case blackholeRoute
    /// The route's type cannot carry traffic to a host (broadcast, multicast, NAT, ...).
    case unusableRouteType(RouteType)
    /// The route's link is administratively down.
    case linkDown
    /// The route's link is up but has no carrier (the cable is out, the radio not associated).
    case noCarrier
    /// The route's link is dormant: it waits for authentication (802.1X, a Wi-Fi handshake).
    case dormant
    /// The route's link is not among the namespace's links (it went away meanwhile).
    case linkMissing
    /// No default route goes through a usable link (for "the internet").
    case noDefaultRoute
    /// The host name resolved to no address, or resolution failed.
    case unresolved
    /// The kernel lookup failed for another reason.
    case lookupFailed(NetlinkError)

    /// Such as `no route`, `no carrier`.
    public var description: String {
        switch self {
        case .noRoute: return "no route"
        case .unreachableRoute: return "unreachable route"
        case .prohibitedRoute: return "prohibited route"
        case .blackholeRoute: return "blackhole route"
        case .unusableRouteType(let type): return "\(type) route"
        case .linkDown: return "link down"
        case .noCarrier: return "no carrier"
        case .dormant: return "link dormant"
        case .linkMissing: return "link missing"
        case .noDefaultRoute: return "no default route"
        case .unresolved: return "name not resolved"
        case .lookupFailed(let error): return "lookup failed: \(error)"
        }
    }
}
