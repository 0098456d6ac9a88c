import Netlink

extension ReachabilityFlags {
    /// Reachable with no connection to establish first, the test behind every status:
    /// `reachable && (!connectionRequired || ((connectionOnDemand || connectionOnTraffic) && !interventionRequired))`.
    public var isActuallyReachable: Bool {
        guard contains(.reachable) else { return false }
        if !contains(.connectionRequired) { return true }
        return !isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic]) && !contains(.interventionRequired)
    }
}

/// This library's status: like Apple's sample, but Ethernet is not Wi-Fi.
public enum ReachabilityStatus: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not reachable, or only after a connection is established.
    case notReachable = 0
    /// Reachable through a Wi-Fi link.
    case reachableViaWiFi = 1
    /// Reachable through a cellular link.
    case reachableViaWWAN = 2
    /// Reachable through a wired Ethernet link.
    case reachableViaWired = 3
    /// Reachable through another link: loopback, a tunnel, a bridge of unknown uplink, ...
    case reachableViaOther = 4

    /// The status for `flags` through a link of `interfaceType`: not reachable unless
    /// ``ReachabilityFlags/isActuallyReachable``; then WWAN when `isWWAN` is set, else by the
    /// link's type (Wi-Fi, wired, cellular, or other for loopback, other and unknown).
    public init(flags: ReachabilityFlags, interfaceType: InterfaceType?) {
        guard flags.isActuallyReachable else { self = .notReachable; return }
        if flags.contains(.isWWAN) { self = .reachableViaWWAN; return }
        switch interfaceType {
        case .wifi: self = .reachableViaWiFi
        case .wiredEthernet: self = .reachableViaWired
        case .cellular: self = .reachableViaWWAN
        default: self = .reachableViaOther
        }
    }

    /// Whether the status is one of the reachable ones.
    public var isReachable: Bool { self != .notReachable }

    /// `notReachable`, `reachableViaWiFi`, `reachableViaWired`, `reachableViaWWAN`, `reachableViaOther`.
    public var description: String {
        switch self {
        case .notReachable: return "notReachable"
        case .reachableViaWiFi: return "reachableViaWiFi"
        case .reachableViaWWAN: return "reachableViaWWAN"
        case .reachableViaWired: return "reachableViaWired"
        case .reachableViaOther: return "reachableViaOther"
        }
    }
}
